"""Case 3: FK join over changelogs, incremental runs vs a full recompute from the whole history, per table format.

Two changelogs (orders referencing customers) start with one initial batch (every key created) and
then receive batches that each change 1% of each side (updates, foreign-key changes, deletes).
Copies of the same three models (orders state, customers state, their fk_join) run through dbt,
once per table format of the run (`--formats`, default parquet, delta and iceberg; variants are named
`<format>.<variant>`, each format's tables have their own names):
- incremental (bench_fk_*): after each batch lands, `dbt run` merges just the new events;
- full_recompute (bench_fkf_*): after each batch, `dbt run --full-refresh` from all events so far.
- copy_floor (parquet): a plain copy (CTAS) of the three incremental tables, after each batch: what
  any copy-on-write commit of them must at least do (read and write every row once). parquet and
  Hive tables have no row-level delete, so joinery_upsert rewrites an unpartitioned table whole when
  1% of its random keys change; `copy_floor/full_recompute` shows how far the bar is within reach.
- plain_recompute (bench_fkp_*): the same three SELECTs materialized by dbt-spark's own `table`,
  `dbt run` from all events so far: the recompute without joinery_upsert's bookkeeping. Timed once
  per round, after the last batch (the history at its largest).
- on delta and iceberg, upsert_joinery and upsert_dbt_merge: after each batch, the same changed rows
  of the join result (the batch's upserted orders with their customer, one row per order, no
  deletes: dbt-spark's merge has no delete clause) merged into a copy of a 1x-sized join result by
  joinery_upsert (bench_fk_upsert_joinery) and by dbt-spark's own `incremental` model with its
  `merge` strategy (bench_fk_upsert_dbt): joinery's bookkeeping against what a user writes.
Every format's steps run after every batch, in an order rotated each round. A round is a fresh
history of `batches` batches. At full size an untimed warm-up round of one batch comes first.
`repeats` is the number of rounds; `samples` the timed samples per variant.
Scaling: then, per format, a fresh history at each of SCALES times the size with the same number of
changed rows per batch; after each of `repeats` batches the incremental run and the plain recompute
are timed (`<format>.incremental.x4`, ...), for the scaling bar and RESULTS.md's chart.
Bars: incremental/full_recompute <= 0.3 on every format; on delta and iceberg also incremental/plain_recompute
<= 0.5, upsert_joinery/upsert_dbt_merge <= 1.2, incremental.x4/incremental <= 1.5. After the last
batch the joined tables of every format and variant must be equal.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from benchmarks.core import SCHEMA, Bar, Context, Measurement, agreement_groups, log
from benchmarks.dbt_bench import relation

NAME = "fk_join"
TITLE = "FK join: incremental runs vs full recompute from the history, 5 batches of 1% change, per table format"
DEFAULT_ROWS = 1_000_000
TINY_ROWS = 1_000
INCREMENTAL = ["bench_fk_orders_state", "bench_fk_customers_state", "bench_fk_join"]
FULL = ["bench_fkf_orders_state", "bench_fkf_customers_state", "bench_fkf_join"]
PLAIN = ["bench_fkp_orders_state", "bench_fkp_customers_state", "bench_fkp_join"]
UPSERT_JOINERY = "bench_fk_upsert_joinery"
UPSERT_DBT = "bench_fk_upsert_dbt"
MERGE_FORMATS = ("delta", "iceberg")  # dbt-spark's merge strategy exists only for these
COPY_FLOOR_FORMATS = ("parquet",)  # copy-on-write formats, whose commit rewrites the table
SCALES = (0.25, 4)  # history sizes besides 1x for the scaling measurement and the chart
SCALING_BAR = (4, 1.5)  # with the tables 4x larger, the incremental run grows at most 1.5x
JOIN_COLUMNS = ["order_id", "customer_id", "amount", "customer_name"]


def orders_batch_sql(orders: int, customers: int, batch: int, changes: int | None = None) -> str:
    """Batch 0 creates every order; a later batch touches `changes` orders (default 1%): 70% change the
    amount, 20% move to another customer, 10% delete (a deleted order may come back later)."""
    if batch == 0:
        return f"""
            select id as order_id, pmod(xxhash64(id, 11), {customers}) as customer_id,
                cast(pmod(xxhash64(id, 12), 100000) as decimal(10, 2)) / 100 as amount,
                cast(0 as bigint) as seq, 'c' as op, 0 as batch_id
            from range({orders})
        """
    changes = changes or max(orders // 100, 1)
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


def customers_batch_sql(customers: int, batch: int, changes: int | None = None) -> str:
    """Batch 0 creates every customer; a later batch renames `changes` of them (default 1%; every 50th
    change deletes)."""
    if batch == 0:
        return f"""
            select id as customer_id, concat('customer_', cast(id as string)) as customer_name,
                cast(0 as bigint) as seq, 'c' as op, 0 as batch_id
            from range({customers})
        """
    changes = changes or max(customers // 100, 1)
    return f"""
        select pmod(xxhash64({batch}, r, 21), {customers}) as customer_id,
            concat('customer_b{batch}_', cast(r as string)) as customer_name,
            cast({batch} * {changes} + r + 1 as bigint) as seq,
            case when r % 50 = 49 then 'd' else 'u' end as op,
            {batch} as batch_id
        from (select id as r from range({changes}))
    """


class History:
    """One history of the two changelogs, at a size, with a fixed number of changed rows per batch;
    and the upsert comparison's changes of each batch (fk_changes), merged once by each side."""

    def __init__(self, ctx: Context, orders: int, order_changes: int, customer_changes: int):
        self.ctx, self.orders, self.customers = ctx, orders, max(orders // 10, 10)
        self.order_changes, self.customer_changes = order_changes, customer_changes
        self.batch = 0

    def start(self, formats: tuple[str, ...], upserts: bool = True) -> None:
        """Changelogs holding batch 0 only, and each format's incremental models built from them, and
        with `upserts` the upsert comparison's tables from their base (untimed)."""
        self.ctx.ctas("fk_orders_log", orders_batch_sql(self.orders, self.customers, 0))
        self.ctx.ctas("fk_customers_log", customers_batch_sql(self.customers, 0))
        self.batch = 0
        for table_format in formats:
            pair = [UPSERT_JOINERY, UPSERT_DBT] if upserts and table_format in MERGE_FORMATS else []
            self.ctx.dbt.run(*INCREMENTAL, *pair, full_refresh=True, table_format=table_format)

    def land(self) -> None:
        self.batch += 1
        orders = orders_batch_sql(self.orders, self.customers, self.batch, self.order_changes)
        customers = customers_batch_sql(self.customers, self.batch, self.customer_changes)
        self.ctx.sql(f"insert into {SCHEMA}.fk_orders_log {orders}")
        self.ctx.sql(f"insert into {SCHEMA}.fk_customers_log {customers}")
        self.ctx.ctas("fk_changes", self.changes_sql())

    def changes_sql(self) -> str:
        """The batch's upserted orders with a customer name, one row per order (the newest): rows of
        the join result's shape."""
        batch = orders_batch_sql(self.orders, self.customers, self.batch, self.order_changes)
        return f"""
            select order_id, customer_id, amount, concat('customer_', cast(customer_id as string)) as customer_name
            from (
                select *, row_number() over (partition by order_id order by seq desc) as joinery_rank
                from ({batch}) where op <> 'd'
            ) where joinery_rank = 1
        """


def upsert_base(ctx: Context, orders: int) -> None:
    """The table the upsert comparison merges into: a join result of `orders` rows."""
    customers = max(orders // 10, 10)
    ctx.ctas(
        "fk_upsert_base",
        f"""select order_id, customer_id, amount, concat('customer_', cast(customer_id as string)) as customer_name
        from ({orders_batch_sql(orders, customers, 0)})""",
    )


def copy_floor(ctx: Context, table_format: str) -> None:
    for model in INCREMENTAL:
        ctx.ctas(f"{model}_copy", f"select * from {relation(model, table_format)}")


def batch_steps(ctx: Context, last_batch: bool) -> dict[str, list[tuple[str, Callable[[], Any]]]]:
    """A batch's timed steps of every format, each a list of (variant, what is timed). The copy floor
    copies the incremental tables, so it runs right after the incremental run, in the same step."""

    def dbt_run(models: list[str], table_format: str, full_refresh: bool = False) -> Callable[[], Any]:
        return lambda: ctx.dbt.run(*models, full_refresh=full_refresh, table_format=table_format)

    steps: dict[str, list[tuple[str, Callable[[], Any]]]] = {}
    for f in ctx.formats:
        incremental = [(f"{f}.incremental", dbt_run(INCREMENTAL, f))]
        if f in COPY_FLOOR_FORMATS:
            incremental.append((f"{f}.copy_floor", lambda f=f: copy_floor(ctx, f)))
        steps[f"{f}.incremental"] = incremental
        steps[f"{f}.full_recompute"] = [(f"{f}.full_recompute", dbt_run(FULL, f, full_refresh=True))]
        if last_batch:
            steps[f"{f}.plain_recompute"] = [(f"{f}.plain_recompute", dbt_run(PLAIN, f))]
        if f in MERGE_FORMATS:
            steps[f"{f}.upsert_joinery"] = [(f"{f}.upsert_joinery", dbt_run([UPSERT_JOINERY], f))]
            steps[f"{f}.upsert_dbt_merge"] = [(f"{f}.upsert_dbt_merge", dbt_run([UPSERT_DBT], f))]
    return steps


def play_round(ctx: Context, measurements: dict[str, Measurement] | None, batches: int, round_index: int) -> None:
    """A fresh history, then each batch lands and the steps run in this round's rotated order (so no
    variant always runs first after a batch). `measurements` None: the untimed warm-up round."""
    orders = ctx.rows
    history = History(ctx, orders, max(orders // 100, 1), max(orders // 1000, 1))
    history.start(ctx.formats)
    label = "warm-up, not counted" if measurements is None else f"round {round_index + 1}/{ctx.repeats}"
    for batch in range(1, batches + 1):
        history.land()
        keep = measurements is not None and round_index == ctx.repeats - 1 and batch == batches
        steps = batch_steps(ctx, batch == batches)
        names = list(steps)
        first = round_index % len(names)
        for name in names[first:] + names[:first]:
            for variant, step in steps[name]:
                measurement = None if measurements is None else measurements.setdefault(variant, Measurement(variant))
                seconds = ctx.timed(step, measurement, keep_facts=keep)
                log(f"  batch {batch} {variant}: {seconds:.2f}s ({label})")


def scaling(ctx: Context, measurements: dict[str, Measurement]) -> None:
    """Per format and each of SCALES: a fresh history of that many times the orders, with the 1x
    number of changes per batch; after each of `repeats` batches the incremental run and the plain
    recompute, in alternating order (the first batch after the build untimed at full size)."""
    for scale in scales_of(ctx):
        orders = max(int(ctx.rows * scale), 100)
        suffix = f".x{scale:g}"
        for f in ctx.formats:
            log(f"  {f}: scaling, {orders:,} orders")
            history = History(ctx, orders, max(ctx.rows // 100, 1), max(ctx.rows // 1000, 1))
            history.start((f,), upserts=False)
            if not ctx.tiny:
                history.land()
                ctx.dbt.run(*INCREMENTAL, table_format=f)
            for round_index in range(ctx.repeats):
                history.land()
                steps = [
                    (f"{f}.incremental{suffix}", lambda f=f: ctx.dbt.run(*INCREMENTAL, table_format=f)),
                    (f"{f}.plain_recompute{suffix}", lambda f=f: ctx.dbt.run(*PLAIN, table_format=f)),
                ]
                if round_index % 2:
                    steps.reverse()
                for variant, step in steps:
                    measurement = measurements.setdefault(variant, Measurement(variant))
                    seconds = ctx.timed(step, measurement, keep_facts=round_index == ctx.repeats - 1)
                    log(f"  {variant}: {seconds:.2f}s (round {round_index + 1}/{ctx.repeats})")


def final_outputs(ctx: Context) -> dict[str, dict]:
    """After the last batch of the last round: every format's joined tables equal; each format's two
    upserts equal."""
    joins, groups = {}, {}
    for f in ctx.formats:
        for variant, model in (("incremental", "bench_fk_join"), ("full_recompute", "bench_fkf_join")):
            joins[f"{f}.{variant}"] = ctx.fingerprint_of(relation(model, f), JOIN_COLUMNS)
        joins[f"{f}.plain_recompute"] = ctx.fingerprint_of(relation("bench_fkp_join", f), JOIN_COLUMNS)
        if f in MERGE_FORMATS:
            groups[f"upsert.{f}"] = {
                "upsert_joinery": ctx.fingerprint_of(relation(UPSERT_JOINERY, f), JOIN_COLUMNS),
                "upsert_dbt_merge": ctx.fingerprint_of(relation(UPSERT_DBT, f), JOIN_COLUMNS),
            }
    return {"join": joins, **groups}


def scales_of(ctx: Context) -> tuple[float, ...]:
    """The scaling measurement's sizes: none at `--rows tiny`, whose timings mean nothing (the smoke
    test runs every other variant)."""
    return () if ctx.tiny else SCALES


def bars_of(formats: tuple[str, ...], scaled: bool = True) -> tuple[list[Bar], list[tuple[str, str]]]:
    bars, info = [], []
    scale, limit = SCALING_BAR
    for f in formats:
        bars.append(Bar(f"{f}.vs_full_recompute", f"{f}.incremental", f"{f}.full_recompute", 0.3))
        info.append((f"{f}.full_recompute", f"{f}.plain_recompute"))
        if f in COPY_FLOOR_FORMATS:
            info += [(f"{f}.incremental", f"{f}.copy_floor"), (f"{f}.copy_floor", f"{f}.full_recompute")]
        if f in MERGE_FORMATS:
            bars.append(Bar(f"{f}.vs_plain_recompute", f"{f}.incremental", f"{f}.plain_recompute", 0.5))
            bars.append(Bar(f"{f}.vs_dbt_merge", f"{f}.upsert_joinery", f"{f}.upsert_dbt_merge", 1.2))
        else:
            info.append((f"{f}.incremental", f"{f}.plain_recompute"))
        if scaled and f in MERGE_FORMATS:
            bars.append(Bar(f"{f}.scaling_x{scale}", f"{f}.incremental.x{scale}", f"{f}.incremental", limit))
        elif scaled:
            info.append((f"{f}.incremental.x{scale}", f"{f}.incremental"))
    return bars, info


def run(ctx: Context) -> dict:
    orders = ctx.rows
    customers = max(orders // 10, 10)
    batches = 1 if ctx.tiny else 5
    upsert_base(ctx, orders)
    measurements: dict[str, Measurement] = {}
    if not ctx.tiny:
        play_round(ctx, None, 1, 0)
    for round_index in range(ctx.repeats):
        play_round(ctx, measurements, batches, round_index)
    outputs = final_outputs(ctx)
    scaling(ctx, measurements)
    bars, info = bars_of(ctx.formats, scaled=bool(scales_of(ctx)))
    return ctx.result(
        NAME,
        {
            "left_rows": orders,
            "right_rows": customers,
            "batches": batches,
            "change_per_batch": "1%",
            "formats": ",".join(ctx.formats),
            "scales": ",".join(f"{s:g}" for s in scales_of(ctx)),
        },
        measurements,
        bars,
        info_ratios=info,
        checks=[agreement_groups("same_result", outputs)],
        repeats=ctx.repeats,
        per_batch=per_batch_medians(measurements, ctx.formats, orders, customers, batches),
        scaling=scaling_points(measurements, ctx.formats, orders),
        output_rows=outputs["join"][f"{ctx.formats[0]}.incremental"][0],
    )


def per_batch_medians(
    measurements: dict[str, Measurement], formats, orders: int, customers: int, batches: int
) -> list[dict]:
    """Median seconds after each batch over the rounds (samples are in round-major order): how each
    cost grows with the history. plain_recompute is timed after the last batch only."""
    growth = []
    for batch in range(1, batches + 1):
        row = {
            "batch": batch,
            "history_events": orders + customers + batch * (max(orders // 100, 1) + max(customers // 100, 1)),
        }
        for f in formats:
            for name in (f"{f}.incremental", f"{f}.full_recompute"):
                row[name] = round(statistics.median(measurements[name].seconds[batch - 1 :: batches]), 3)
            if batch == batches:
                row[f"{f}.plain_recompute"] = round(measurements[f"{f}.plain_recompute"].median, 3)
        growth.append(row)
    return growth


def scaling_points(measurements: dict[str, Measurement], formats, orders: int) -> list[dict]:
    """Median seconds of the incremental run and of the plain recompute per format and history size
    (orders): what RESULTS.md's chart draws."""
    points = []
    for f in formats:
        for scale in sorted((1, *SCALES)):
            suffix = "" if scale == 1 else f".x{scale:g}"
            incremental = measurements.get(f"{f}.incremental{suffix}")
            rebuild = measurements.get(f"{f}.plain_recompute{suffix}")
            if incremental and rebuild:
                points.append(
                    {
                        "format": f,
                        "rows": max(int(orders * scale), 100),
                        "incremental": round(incremental.median, 3),
                        "rebuild": round(rebuild.median, 3),
                    }
                )
    return points
