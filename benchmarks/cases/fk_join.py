"""Case 3: FK join over changelogs, incremental runs against the plain rebuild, per table format and width.

Two changelogs (orders referencing customers) start with one initial batch (every key created) and
then receive batches that each change 1% of each side (updates, foreign-key changes, deletes).
Copies of the same three models (orders state, customers state, their fk_join) run through dbt,
once per table format of the run (`--formats`, default parquet, delta and iceberg) and per width:
narrow (the orders hold an amount) and wide (the orders hold about 30 columns of mixed types, all of
them in the join result). Variants are named `<format>.<variant>` (narrow) and
`<format>.wide.<variant>`:
- incremental (bench_fk_*, joinery_upsert): after each batch lands, `dbt run` merges just the new
  events, rebuilding instead where that costs less (joinery_upsert's rebuild_threshold);
- dbt_merge (bench_fkm_*, delta and iceberg): the same three SELECTs as dbt-spark's own
  `incremental` models with the `merge` strategy, after each batch: dbt-spark's merge of the same
  models (its merge has no delete clause, so deleted results stay in its table, flagged);
- plain_recompute (bench_fkp_*): the same three SELECTs as dbt-spark `table` models, rebuilt from
  all events so far, after the last batch of a round (the history at its largest): what a user
  would write; the bars' baseline;
- full_build (bench_fkf_*): joinery_upsert's full build of the same models (`--full-refresh`), after
  the last batch of a round;
- on delta and iceberg (narrow), upsert_joinery and upsert_dbt_merge: after each batch, the same
  changed rows of the join result (the batch's upserted orders with their customer, no deletes:
  dbt-spark's merge has no delete clause) merged into a copy of a join result by joinery_upsert and
  by dbt-spark's `merge`: the MERGE alone, on changes the harness computed.
Each timed dbt step also counts, per model, the statements dbt sent and the table's commits.
A round is a fresh history of `batches` batches; every format's steps run after every batch, in a
seeded random order per batch. At full size an untimed warm-up round of one batch comes first.
`repeats` is the number of rounds; `samples` the timed samples per variant.
Scaling: then a fresh history at 0.25x and 4x the orders (narrow) and 4x (wide) with the same number
of changed rows per batch; after each of `repeats` batches the incremental run and the plain
recompute are timed (`<format>.incremental.x4`, ...), for the bars and RESULTS.md's chart.
Bars (joinery_upsert v2): incremental <= 1.05 x plain_recompute, narrow, every format and size
(never slower than a rebuild); wide on delta and iceberg <= 0.7 x at 1x and <= 0.4 x at 4x; full_build
<= 1.2 x plain_recompute; upsert_joinery <= 1.2 x upsert_dbt_merge; and as checks, an incremental
run's statements per model <= dbt_merge's + 2 and its commits per model <= 1 (delta and iceberg).
After the last batch the joined tables of every format and variant must be equal.
At `--rows tiny` only the narrow width runs, one batch per round, without the scaling measurement.
"""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.core import SCHEMA, Bar, Context, Measurement, agreement_groups, log, round_orders
from benchmarks.dbt_bench import relation
from benchmarks.statements import count_checks

NAME = "fk_join"
TITLE = "FK join: incremental runs vs the plain rebuild, 5 batches of 1% change, per table format and width"
DEFAULT_ROWS = 1_000_000
TINY_ROWS = 1_000
INCREMENTAL = ["bench_fk_orders_state", "bench_fk_customers_state", "bench_fk_join"]
FULL = ["bench_fkf_orders_state", "bench_fkf_customers_state", "bench_fkf_join"]
PLAIN = ["bench_fkp_orders_state", "bench_fkp_customers_state", "bench_fkp_join"]
MERGE = ["bench_fkm_orders_state", "bench_fkm_customers_state", "bench_fkm_join"]
UPSERT_JOINERY = "bench_fk_upsert_joinery"
UPSERT_DBT = "bench_fk_upsert_dbt"
MERGE_FORMATS = ("delta", "iceberg")  # dbt-spark's merge strategy exists only for these
WIDTHS = ("narrow", "wide")
SCALES = {"narrow": (0.25, 4), "wide": (4,)}  # history sizes besides 1x
JOIN_COLUMNS = ["order_id", "customer_id", "amount", "customer_name"]
WIDE_GROUPS = 9  # the wide orders' extra columns: a double, a string and an int per group


def wide_columns(seed_sql: str) -> str:
    """The wide orders' 27 extra columns, derived from `seed_sql` (an expression that differs per row
    and per batch): doubles, strings and ints."""
    return "".join(
        f", cast(pmod(xxhash64({seed_sql}, {100 + i}), 10000000) as double) / 100 as d{i}"
        f", concat('s{i}_', cast(pmod(xxhash64({seed_sql}, {200 + i}), 100000) as string)) as s{i}"
        f", cast(pmod(xxhash64({seed_sql}, {300 + i}), 100000) as int) as n{i}"
        for i in range(WIDE_GROUPS)
    )


def orders_batch_sql(orders: int, customers: int, batch: int, changes: int | None = None, width: str = "narrow") -> str:
    """Batch 0 creates every order; a later batch touches `changes` orders (default 1%): 70% change the
    amount, 20% move to another customer, 10% delete (a deleted order may come back later). Wide:
    with 27 more columns, which every change also changes."""
    if batch == 0:
        extra = wide_columns("id") if width == "wide" else ""
        return f"""
            select id as order_id, pmod(xxhash64(id, 11), {customers}) as customer_id,
                cast(pmod(xxhash64(id, 12), 100000) as decimal(10, 2)) / 100 as amount {extra},
                cast(0 as bigint) as seq, 'c' as op, 0 as batch_id
            from range({orders})
        """
    changes = changes or max(orders // 100, 1)
    extra = wide_columns(f"xxhash64({batch}, r)") if width == "wide" else ""
    return f"""
        select pmod(xxhash64({batch}, r, 13), {orders}) as order_id,
            case when r % 10 between 7 and 8 then pmod(xxhash64({batch}, r, 14), {customers})
                else pmod(xxhash64(pmod(xxhash64({batch}, r, 13), {orders}), 11), {customers}) end as customer_id,
            cast(pmod(xxhash64({batch}, r, 15), 100000) as decimal(10, 2)) / 100 as amount {extra},
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
    """One history of the two changelogs of a width, at a size, with a fixed number of changed rows per
    batch; and (narrow) the upsert comparison's changes of each batch (fk_changes)."""

    def __init__(self, ctx: Context, orders: int, order_changes: int, customer_changes: int, width: str):
        self.ctx, self.orders, self.customers = ctx, orders, max(orders // 10, 10)
        self.order_changes, self.customer_changes, self.width = order_changes, customer_changes, width
        self.suffix = "" if width == "narrow" else f"_{width}"
        self.batch = 0

    def start(self, formats: tuple[str, ...], upserts: bool = True) -> None:
        """Changelogs holding batch 0 only, and each format's incremental models (and dbt-spark merge
        models) built from them, and with `upserts` the upsert comparison's tables (untimed)."""
        self.ctx.ctas(f"fk_orders_log{self.suffix}", orders_batch_sql(self.orders, self.customers, 0, width=self.width))
        self.ctx.ctas(f"fk_customers_log{self.suffix}", customers_batch_sql(self.customers, 0))
        self.batch = 0
        for table_format in formats:
            models = [*INCREMENTAL]
            if table_format in MERGE_FORMATS:
                models += MERGE + ([UPSERT_JOINERY, UPSERT_DBT] if upserts and self.width == "narrow" else [])
            self.ctx.dbt.run(*models, full_refresh=True, table_format=table_format, width=self.width)

    def land(self) -> None:
        self.batch += 1
        orders = orders_batch_sql(self.orders, self.customers, self.batch, self.order_changes, self.width)
        customers = customers_batch_sql(self.customers, self.batch, self.customer_changes)
        self.ctx.sql(f"insert into {SCHEMA}.fk_orders_log{self.suffix} {orders}")
        self.ctx.sql(f"insert into {SCHEMA}.fk_customers_log{self.suffix} {customers}")
        if self.width == "narrow":
            self.ctx.ctas("fk_changes", self.changes_sql())

    def changes_sql(self) -> str:
        """The batch's upserted orders with a customer name, one row per order (the newest): rows of
        the narrow join result's shape."""
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


def variant_name(table_format: str, width: str, variant: str) -> str:
    return f"{table_format}.{variant}" if width == "narrow" else f"{table_format}.{width}.{variant}"


def batch_steps(ctx: Context, width: str, last_batch: bool) -> dict[str, Any]:
    """A batch's timed steps of every format: {variant name: the dbt step}."""
    steps: dict[str, Any] = {}
    for f in ctx.formats:
        steps[variant_name(f, width, "incremental")] = ctx.dbt_step(*INCREMENTAL, table_format=f, width=width)
        if f in MERGE_FORMATS:
            steps[variant_name(f, width, "dbt_merge")] = ctx.dbt_step(*MERGE, table_format=f, width=width)
            if width == "narrow":
                steps[f"{f}.upsert_joinery"] = ctx.dbt_step(UPSERT_JOINERY, table_format=f)
                steps[f"{f}.upsert_dbt_merge"] = ctx.dbt_step(UPSERT_DBT, table_format=f)
        if last_batch:
            steps[variant_name(f, width, "plain_recompute")] = ctx.dbt_step(*PLAIN, table_format=f, width=width)
            steps[variant_name(f, width, "full_build")] = ctx.dbt_step(
                *FULL, table_format=f, width=width, full_refresh=True
            )
    return steps


def play_round(
    ctx: Context, measurements: dict[str, Measurement] | None, batches: int, round_index: int, width: str
) -> None:
    """A fresh history, then each batch lands and the steps run in a seeded random order.
    `measurements` None: the untimed warm-up round."""
    orders = ctx.rows
    history = History(ctx, orders, max(orders // 100, 1), max(orders // 1000, 1), width)
    history.start(ctx.formats)
    label = "warm-up, not counted" if measurements is None else f"{width} round {round_index + 1}/{ctx.repeats}"
    for batch in range(1, batches + 1):
        history.land()
        keep = measurements is not None and round_index == ctx.repeats - 1 and batch == batches
        steps = batch_steps(ctx, width, batch == batches)
        (order,) = round_orders(list(steps), 1, seed=round_index * 100 + batch)
        for variant in order:
            measurement = None if measurements is None else measurements.setdefault(variant, Measurement(variant))
            seconds = ctx.timed(steps[variant], measurement, keep_facts=keep)
            log(f"  batch {batch} {variant}: {seconds:.2f}s ({label})")


def scaling(ctx: Context, measurements: dict[str, Measurement], width: str) -> None:
    """Per format and each of the width's SCALES: a fresh history of that many times the orders, with
    the 1x number of changes per batch; after each of `repeats` batches the incremental run and the
    plain recompute, in alternating order (the first batch after the build untimed at full size)."""
    for scale in scales_of(ctx, width):
        orders = max(int(ctx.rows * scale), 100)
        suffix = f".x{scale:g}"
        for f in ctx.formats:
            log(f"  {f} {width}: scaling, {orders:,} orders")
            history = History(ctx, orders, max(ctx.rows // 100, 1), max(ctx.rows // 1000, 1), width)
            history.start((f,), upserts=False)
            if not ctx.tiny:
                history.land()
                ctx.dbt.run(*INCREMENTAL, table_format=f, width=width)
            for round_index in range(ctx.repeats):
                history.land()
                steps = [
                    (
                        variant_name(f, width, "incremental") + suffix,
                        ctx.dbt_step(*INCREMENTAL, table_format=f, width=width),
                    ),
                    (
                        variant_name(f, width, "plain_recompute") + suffix,
                        ctx.dbt_step(*PLAIN, table_format=f, width=width),
                    ),
                ]
                ctx.timed_alternating(steps, measurements, round_index, "")


def join_columns(width: str) -> list[str]:
    extra = [f"{kind}{i}" for i in range(WIDE_GROUPS) for kind in ("d", "s", "n")] if width == "wide" else []
    return JOIN_COLUMNS + extra


def final_outputs(ctx: Context, width: str) -> dict[str, dict]:
    """After the last batch of the last round: every format's joined tables equal (dbt-spark's merge
    has no delete: it keeps a deleted result's row, with NULL values, so only its rows with a customer
    count); each format's two upserts equal."""
    joins, groups = {}, {}
    columns = join_columns(width)
    live = "(select * from {} where customer_name is not null)"
    for f in ctx.formats:
        for variant, model in (
            ("incremental", "bench_fk_join"),
            ("full_build", "bench_fkf_join"),
            ("plain_recompute", "bench_fkp_join"),
        ):
            joins[f"{f}.{variant}"] = ctx.fingerprint_of(relation(model, f, width), columns)
        if f in MERGE_FORMATS:
            joins[f"{f}.dbt_merge"] = ctx.fingerprint_of(live.format(relation("bench_fkm_join", f, width)), columns)
            if width == "narrow":
                groups[f"upsert.{f}"] = {
                    "upsert_joinery": ctx.fingerprint_of(relation(UPSERT_JOINERY, f), JOIN_COLUMNS),
                    "upsert_dbt_merge": ctx.fingerprint_of(relation(UPSERT_DBT, f), JOIN_COLUMNS),
                }
    return {f"join.{width}": joins, **groups}


def scales_of(ctx: Context, width: str) -> tuple[float, ...]:
    """The scaling measurement's sizes: none at `--rows tiny`, whose timings mean nothing (the smoke
    test runs every other variant)."""
    return () if ctx.tiny else SCALES[width]


def widths_of(ctx: Context) -> tuple[str, ...]:
    return ctx.measured(WIDTHS)


def bars_of(ctx: Context) -> tuple[list[Bar], list[tuple[str, str]]]:
    bars, info = [], []
    for f in ctx.formats:
        for width in widths_of(ctx):
            name = lambda variant, f=f, width=width: variant_name(f, width, variant)  # noqa: E731
            plain, incremental = name("plain_recompute"), name("incremental")
            bars.append(Bar(f"{name('full_build')} vs plain", name("full_build"), plain, 1.2))
            if width == "narrow":
                bars.append(Bar(f"{incremental} vs plain", incremental, plain, 1.05))
            elif f in MERGE_FORMATS:
                bars.append(Bar(f"{incremental} vs plain", incremental, plain, 0.7))
            else:
                info.append((incremental, plain))
            for scale in scales_of(ctx, width):
                suffix = f".x{scale:g}"
                limit = 1.05 if width == "narrow" else (0.4 if f in MERGE_FORMATS else None)
                if limit is None:
                    info.append((incremental + suffix, plain + suffix))
                else:
                    bars.append(Bar(f"{incremental}{suffix} vs plain", incremental + suffix, plain + suffix, limit))
            if f in MERGE_FORMATS:
                info.append((incremental, name("dbt_merge")))
        if f in MERGE_FORMATS:
            bars.append(Bar(f"{f}.vs_dbt_merge", f"{f}.upsert_joinery", f"{f}.upsert_dbt_merge", 1.2))
    return bars, info


def run(ctx: Context) -> dict:
    orders = ctx.rows
    batches = 1 if ctx.tiny else 5
    upsert_base(ctx, orders)
    measurements: dict[str, Measurement] = {}
    outputs: dict[str, dict] = {}
    for width in widths_of(ctx):
        if not ctx.tiny:
            play_round(ctx, None, 1, 0, width)
        for round_index in range(ctx.repeats):
            play_round(ctx, measurements, batches, round_index, width)
        outputs.update(final_outputs(ctx, width))
        scaling(ctx, measurements, width)
    bars, info = bars_of(ctx)
    checks = [agreement_groups("same_result", outputs)]
    checks += count_checks(
        measurements, [f for f in ctx.formats if f in MERGE_FORMATS], widths_of(ctx), INCREMENTAL, MERGE, variant_name
    )
    return ctx.result(
        NAME,
        {
            "left_rows": orders,
            "right_rows": max(orders // 10, 10),
            "batches": batches,
            "change_per_batch": "1%",
            "formats": ",".join(ctx.formats),
            "widths": "narrow only (--rows tiny)" if ctx.tiny else "narrow (4 result columns), wide (33)",
        },
        measurements,
        bars,
        info_ratios=info,
        checks=checks,
        repeats=ctx.repeats,
        per_batch=per_batch_medians(measurements, ctx.formats, batches),
        scaling=scaling_points(measurements, ctx, orders),
        output_rows=outputs["join.narrow"][f"{ctx.formats[0]}.incremental"][0],
    )


def per_batch_medians(measurements: dict[str, Measurement], formats, batches: int) -> list[dict]:
    """Median seconds of the incremental run after each batch over the rounds (samples are in
    round-major order): how its cost moves as the history grows and the cost rule decides."""
    growth = []
    for batch in range(1, batches + 1):
        row: dict[str, Any] = {"batch": batch}
        for f in formats:
            for width in WIDTHS:
                name = variant_name(f, width, "incremental")
                if name in measurements:
                    row[name] = round(statistics.median(measurements[name].seconds[batch - 1 :: batches]), 3)
        growth.append(row)
    return growth


def scaling_points(measurements: dict[str, Measurement], ctx: Context, orders: int) -> list[dict]:
    """Median seconds of the incremental run and of the plain recompute per format, width and
    history size (orders): what RESULTS.md's chart draws."""
    points = []
    for f in ctx.formats:
        for width in widths_of(ctx):
            for scale in sorted((1, *scales_of(ctx, width))):
                suffix = "" if scale == 1 else f".x{scale:g}"
                incremental = measurements.get(variant_name(f, width, "incremental") + suffix)
                rebuild = measurements.get(variant_name(f, width, "plain_recompute") + suffix)
                if incremental and rebuild:
                    points.append(
                        {
                            "format": f if width == "narrow" else f"{f} {width}",
                            "rows": max(int(orders * scale), 100),
                            "incremental": round(incremental.median, 3),
                            "rebuild": round(rebuild.median, 3),
                        }
                    )
    return points
