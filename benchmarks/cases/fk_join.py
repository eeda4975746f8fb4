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
Both are timed after every batch, so the JSON shows how each cost grows with the history
(`per_batch`). Bar: median incremental / median full recompute <= 0.3. After the last batch the two
joined tables must be equal.
"""

from __future__ import annotations

import statistics
import time

from benchmarks.core import SCHEMA, Bar, Context, Measurement, agreement, log

NAME = "fk_join"
TITLE = "FK join: incremental runs vs full recompute from the history, over 5 batches of 1% change"
DEFAULT_ROWS = 1_000_000
TINY_ROWS = 10_000
INCREMENTAL = ["bench_fk_orders_state", "bench_fk_customers_state", "bench_fk_join"]
FULL = ["bench_fkf_orders_state", "bench_fkf_customers_state", "bench_fkf_join"]


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


def run(ctx: Context) -> dict:
    orders = ctx.rows
    customers = max(orders // 10, 10)
    batches = 1 if ctx.tiny else 5
    per_batch: dict[int, dict[str, list[float]]] = {
        batch: {"incremental": [], "full_recompute": []} for batch in range(1, batches + 1)
    }
    incremental = Measurement("incremental")
    full = Measurement("full_recompute")
    floor = Measurement("copy_floor")
    for round_index in range(ctx.repeats):
        ctx.ctas("fk_orders_log", orders_batch_sql(orders, customers, 0))
        ctx.ctas("fk_customers_log", customers_batch_sql(customers, 0))
        ctx.dbt.run(*INCREMENTAL, full_refresh=True)
        for batch in range(1, batches + 1):
            ctx.sql(f"insert into {SCHEMA}.fk_orders_log {orders_batch_sql(orders, customers, batch)}")
            ctx.sql(f"insert into {SCHEMA}.fk_customers_log {customers_batch_sql(customers, batch)}")
            last = round_index == ctx.repeats - 1 and batch == batches
            mark_inc = ctx.recorder.mark()
            seconds = ctx.dbt.run(*INCREMENTAL)
            facts_inc = ctx.recorder.facts_since(mark_inc) if last else None
            per_batch[batch]["incremental"].append(seconds)
            incremental.seconds.append(seconds)
            mark_full = ctx.recorder.mark()
            seconds_full = ctx.dbt.run(*FULL, full_refresh=True)
            facts_full = ctx.recorder.facts_since(mark_full) if last else None
            per_batch[batch]["full_recompute"].append(seconds_full)
            full.seconds.append(seconds_full)
            mark_floor = ctx.recorder.mark()
            started = time.perf_counter()
            for table in INCREMENTAL:
                ctx.ctas(f"{table}_copy", f"select * from {SCHEMA}.{table}")
            seconds_floor = time.perf_counter() - started
            floor.seconds.append(seconds_floor)
            log(
                f"  batch {batch} round {round_index + 1}: incremental {seconds:.2f}s, full {seconds_full:.2f}s,"
                f" copy floor {seconds_floor:.2f}s"
            )
            if last:
                incremental.facts, full.facts = facts_inc, facts_full
                floor.facts = ctx.recorder.facts_since(mark_floor)
    columns = ["order_id", "customer_id", "amount", "customer_name"]
    incremental_out = ctx.fingerprint("bench_fk_join", columns)
    growth = [
        {
            "batch": batch,
            "history_events": orders + customers + batch * (max(orders // 100, 1) + max(customers // 100, 1)),
            "incremental": round(statistics.median(times["incremental"]), 3),
            "full_recompute": round(statistics.median(times["full_recompute"]), 3),
        }
        for batch, times in per_batch.items()
    ]
    return ctx.result(
        NAME,
        {"left_rows": orders, "right_rows": customers, "batches": batches, "change_per_batch": "1%"},
        {"incremental": incremental, "full_recompute": full, "copy_floor": floor},
        [Bar("vs_full_recompute", "incremental", "full_recompute", 0.3)],
        info_ratios=[("incremental", "copy_floor"), ("copy_floor", "full_recompute")],
        checks=[
            agreement(
                "same_result",
                {"incremental": incremental_out, "full_recompute": ctx.fingerprint("bench_fkf_join", columns)},
            )
        ],
        per_batch=growth,
        output_rows=incremental_out[0],
    )
