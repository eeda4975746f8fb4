"""Case 3: FK join over changelogs, incremental runs vs a full recompute from the whole history.

Two changelogs (orders referencing customers) start with one initial batch (every key created) and
then receive batches that each change 1% of each side (updates, foreign-key changes, deletes).
Two copies of the same three models (orders state, customers state, their fk_join) run through dbt:
- incremental (bench_fk_*): after each batch lands, `dbt run` merges just the new events;
- full_recompute (bench_fkf_*): after each batch, `dbt run --full-refresh` from all events so far.
- copy_floor: a plain copy (CTAS) of the three incremental tables, after each batch: what any
  copy-on-write commit of them must at least do (read and write every row once). parquet and Hive
  tables have no row-level delete, so joinery_upsert rewrites an unpartitioned table whole when 1% of
  its random keys change; `copy_floor/full_recompute` shows how far the bar is within reach of that.
- plain_recompute (bench_fkp_*): the same three SELECTs materialized by dbt-spark's own `table`,
  `dbt run` from all events so far: the recompute without joinery_upsert's bookkeeping (staging,
  checks, journal). Timed once per round, after the last batch (the history at its largest, 4% more
  events than after batch 1), to keep the case's wall time down; reported as ratios without a bar.
Incremental, full recompute and copy floor are timed after every batch, so the JSON shows how each
cost grows with the history (`per_batch`). A round is a fresh history of `batches` batches; the
steps of a batch run in an order rotated each round. At full size an untimed warm-up round of one
batch comes first (JVM compilation, Spark's codegen). `repeats` is the number of rounds; `samples`
the timed samples per variant (rounds x batches, rounds for plain_recompute).
Bar: median incremental / median full recompute <= 0.3 (over every batch of every round). After the
last batch the three joined tables must be equal.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from benchmarks.core import SCHEMA, Bar, Context, Measurement, agreement, log

NAME = "fk_join"
TITLE = "FK join: incremental runs vs full recompute from the history, over 5 batches of 1% change"
DEFAULT_ROWS = 1_000_000
TINY_ROWS = 1_000
INCREMENTAL = ["bench_fk_orders_state", "bench_fk_customers_state", "bench_fk_join"]
FULL = ["bench_fkf_orders_state", "bench_fkf_customers_state", "bench_fkf_join"]
PLAIN = ["bench_fkp_orders_state", "bench_fkp_customers_state", "bench_fkp_join"]


def orders_batch_sql(orders: int, customers: int, batch: int) -> str:
    """Batch 0 creates every order; a later batch touches 1% of the orders: 70% change the amount,
    20% move to another customer, 10% delete (a deleted order may come back later)."""
    if batch == 0:
        return f"""
            select id as order_id, pmod(xxhash64(id, 11), {customers}) as customer_id,
                cast(pmod(xxhash64(id, 12), 100000) as decimal(10, 2)) / 100 as amount,
                cast(0 as bigint) as seq, 'c' as op, 0 as batch_id
            from range({orders})
        """
    changes = max(orders // 100, 1)
    return f"""
        select pmod(xxhash64({batch}, r, 13), {orders}) as order_id,
            case when r % 10 between 7 and 8 then pmod(xxhash64({batch}, r, 14), {customers})
                else pmod(xxhash64(pmod(xxhash64({batch}, r, 13), {orders}), 11), {customers}) end as customer_id,
            cast(pmod(xxhash64({batch}, r, 15), 100000) as decimal(10, 2)) / 100 as amount,
            cast({batch} * {changes} + r + 1 as bigint) as seq,
            case when r % 10 = 9 then 'd' else 'u' end as op,
            {batch} as batch_id
        from (select id as r from range({changes}))
    """


def customers_batch_sql(customers: int, batch: int) -> str:
    """Batch 0 creates every customer; a later batch renames 1% of them (every 50th change deletes)."""
    if batch == 0:
        return f"""
            select id as customer_id, concat('customer_', cast(id as string)) as customer_name,
                cast(0 as bigint) as seq, 'c' as op, 0 as batch_id
            from range({customers})
        """
    changes = max(customers // 100, 1)
    return f"""
        select pmod(xxhash64({batch}, r, 21), {customers}) as customer_id,
            concat('customer_b{batch}_', cast(r as string)) as customer_name,
            cast({batch} * {changes} + r + 1 as bigint) as seq,
            case when r % 50 = 49 then 'd' else 'u' end as op,
            {batch} as batch_id
        from (select id as r from range({changes}))
    """


def start_history(ctx: Context, orders: int, customers: int) -> None:
    """Changelogs holding batch 0 only, and the incremental models built from them (untimed)."""
    ctx.ctas("fk_orders_log", orders_batch_sql(orders, customers, 0))
    ctx.ctas("fk_customers_log", customers_batch_sql(customers, 0))
    ctx.dbt.run(*INCREMENTAL, full_refresh=True)


def land_batch(ctx: Context, orders: int, customers: int, batch: int) -> None:
    ctx.sql(f"insert into {SCHEMA}.fk_orders_log {orders_batch_sql(orders, customers, batch)}")
    ctx.sql(f"insert into {SCHEMA}.fk_customers_log {customers_batch_sql(customers, batch)}")


def copy_floor(ctx: Context) -> None:
    for table in INCREMENTAL:
        ctx.ctas(f"{table}_copy", f"select * from {SCHEMA}.{table}")


def batch_steps(ctx: Context, last_batch: bool) -> dict[str, list[tuple[str, Callable[[], Any]]]]:
    """A batch's timed steps, each a list of (variant, what is timed). The copy floor copies the
    incremental tables, so it runs right after the incremental run, in the same step."""
    steps = {
        "incremental": [("incremental", lambda: ctx.dbt.run(*INCREMENTAL)), ("copy_floor", lambda: copy_floor(ctx))],
        "full_recompute": [("full_recompute", lambda: ctx.dbt.run(*FULL, full_refresh=True))],
    }
    if last_batch:
        steps["plain_recompute"] = [("plain_recompute", lambda: ctx.dbt.run(*PLAIN))]
    return steps


def play_round(ctx: Context, measurements: dict[str, Measurement] | None, batches: int, round_index: int) -> None:
    """A fresh history, then each batch lands and the steps run in this round's rotated order (so no
    variant always runs first after a batch). `measurements` None: the untimed warm-up round."""
    orders, customers = ctx.rows, max(ctx.rows // 10, 10)
    start_history(ctx, orders, customers)
    label = "warm-up, not counted" if measurements is None else f"round {round_index + 1}/{ctx.repeats}"
    for batch in range(1, batches + 1):
        land_batch(ctx, orders, customers, batch)
        keep = measurements is not None and round_index == ctx.repeats - 1 and batch == batches
        steps = batch_steps(ctx, batch == batches)
        names = list(steps)
        first = round_index % len(names)
        for name in names[first:] + names[:first]:
            for variant, step in steps[name]:
                measurement = measurements[variant] if measurements is not None else None
                seconds = ctx.timed(step, measurement, keep_facts=keep)
                log(f"  batch {batch} {variant}: {seconds:.2f}s ({label})")


def run(ctx: Context) -> dict:
    orders = ctx.rows
    customers = max(orders // 10, 10)
    batches = 1 if ctx.tiny else 5
    names = ["incremental", "full_recompute", "copy_floor", "plain_recompute"]
    measurements = {name: Measurement(name) for name in names}
    if not ctx.tiny:
        play_round(ctx, None, 1, 0)
    for round_index in range(ctx.repeats):
        play_round(ctx, measurements, batches, round_index)
    columns = ["order_id", "customer_id", "amount", "customer_name"]
    outputs = {"incremental": ctx.fingerprint("bench_fk_join", columns)}
    outputs["full_recompute"] = ctx.fingerprint("bench_fkf_join", columns)
    outputs["plain_recompute"] = ctx.fingerprint("bench_fkp_join", columns)
    return ctx.result(
        NAME,
        {"left_rows": orders, "right_rows": customers, "batches": batches, "change_per_batch": "1%"},
        measurements,
        [Bar("vs_full_recompute", "incremental", "full_recompute", 0.3)],
        info_ratios=[
            ("incremental", "copy_floor"),
            ("copy_floor", "full_recompute"),
            ("incremental", "plain_recompute"),
            ("full_recompute", "plain_recompute"),
        ],
        checks=[agreement("same_result", outputs)],
        repeats=ctx.repeats,
        per_batch=per_batch_medians(measurements, orders, customers, batches),
        output_rows=outputs["incremental"][0],
    )


def per_batch_medians(measurements: dict[str, Measurement], orders: int, customers: int, batches: int) -> list[dict]:
    """Median seconds after each batch over the rounds (samples are in round-major order): how each
    cost grows with the history. plain_recompute is timed after the last batch only."""
    growth = []
    for batch in range(1, batches + 1):
        row = {
            "batch": batch,
            "history_events": orders + customers + batch * (max(orders // 100, 1) + max(customers // 100, 1)),
        }
        for name in ("incremental", "full_recompute"):
            row[name] = round(statistics.median(measurements[name].seconds[batch - 1 :: batches]), 3)
        if batch == batches:
            row["plain_recompute"] = round(measurements["plain_recompute"].median, 3)
        growth.append(row)
    return growth
