"""Case 2: incremental compaction of a 100-partition table when a delta touches one partition, per table format.

The model bench_compaction_incremental (`joinery.compact` with `loaded_at`, materialized
`joinery_upsert`, partitioned by `part`) is run through dbt, in-process on the same Spark, once per
table format of the run (`--formats`, default parquet, delta and iceberg; variants are named
`<format>.<variant>`, each format's tables have their own names):
- incremental: a new delta batch (one partition) lands untimed, then `dbt run` merges it. It is
  timed in steady state, after an untimed incremental run: on parquet every commit deletes the
  directories the previous commit superseded, and after a full rebuild those are all 100
  partitions' (about 0.7 s more, which belongs to the rebuild, not to a run that touches one partition);
- full_rebuild: `dbt run --full-refresh` of the same model (snapshot + every delta so far);
- no_new_data: `dbt run` with nothing new: dbt's fixed cost (parse, metadata), shown for scale;
- plain_table_rebuild: `dbt run` of bench_compaction_plain, the same `compact` SELECT materialized
  by dbt-spark's own `table` (also partitioned by `part`): the rebuild without joinery_upsert's
  bookkeeping, what a plain dbt user would run;
- on delta and iceberg, upsert_joinery and upsert_dbt_merge: the same changed rows (a batch of the
  same shape, one row per key, no deletes) merged into a copy of the snapshot by joinery_upsert
  (bench_ci_upsert_joinery) and by dbt-spark's own `incremental` model with its `merge` strategy
  (bench_ci_upsert_dbt); both merge the same rows in every round.
The formats run one after the other (a format's batches land in the delta table all formats read,
so their rounds cannot interleave); within a format the variants alternate as in every case.
Scaling: then, per format, the snapshot at each of SCALES times the size with the same batch size,
incremental and plain_table_rebuild timed (`<format>.incremental.x4`, ...): the incremental run's
cost should not grow with the table (bar on the 4x one), and RESULTS.md charts both against size.
Bars: incremental/full_rebuild <= 0.15 on every format (the issue defines it against joinery's own
full rebuild); on delta and iceberg also upsert_joinery/upsert_dbt_merge <= 1.2 and incremental.x4/incremental
<= 1.5. Every variant includes dbt's fixed cost of one invocation.
At `--rows tiny` the table has 4 partitions: the materialization makes metastore calls per
partition, which would dominate the smoke test's time budget. Nor is there an untimed incremental
run before the timed one: tiny timings are not read, and the smoke test is among the suite's longest.
"""

from __future__ import annotations

from benchmarks.core import SCHEMA, Bar, Context, Measurement, Variant, agreement_groups, log
from benchmarks.dbt_bench import relation

NAME = "compaction_incremental"
TITLE = "incremental compaction: a delta touching 1 of 100 partitions vs a full rebuild, per table format"
DEFAULT_ROWS = 2_000_000
TINY_ROWS = 1_000
PARTITIONS = 100
MODEL = "bench_compaction_incremental"
PLAIN_MODEL = "bench_compaction_plain"
UPSERT_JOINERY = "bench_ci_upsert_joinery"
UPSERT_DBT = "bench_ci_upsert_dbt"
MERGE_FORMATS = ("delta", "iceberg")  # dbt-spark's merge strategy exists only for these
SCALES = (0.25, 4)  # table sizes besides 1x for the scaling measurement and the chart
SCALING_BAR = (4, 1.5)  # with the table 4x larger, the incremental run grows at most 1.5x
COLUMNS = ["id", "part", "name", "amount", "ts"]
EPOCH = 1_600_000_000  # the snapshot's first ts (2020-09-13), in seconds
CHANGES_BATCH = 1_000  # batch numbers of the upsert comparison's changes, apart from the compaction's


def snapshot_sql(rows: int, partitions: int) -> str:
    return f"""
        select
            id,
            cast(id % {partitions} as int) as part,
            concat('name_', cast(pmod(xxhash64(id, 1), 1000000) as string)) as name,
            cast(pmod(xxhash64(id, 2), 10000000) as decimal(12, 2)) / 100 as amount,
            timestamp_seconds({EPOCH} + id) as ts
        from range({rows})
    """


def delta_sql(rows: int, partitions: int, batch: int, batch_rows: int) -> str:
    """Batch `batch` (1, 2, ...): all rows in one partition; half update existing keys of it, half are
    new keys. Its ts follow the snapshot's and batch-1's, one second apart, at any size."""
    part = (batch * 37) % partitions
    keys_per_partition = rows // partitions
    return f"""
        select
            case
                when r % 2 = 0 then pmod(xxhash64({batch}, r), {keys_per_partition}) * {partitions} + {part}
                else {rows} * 10 + {batch} * {batch_rows} + r
            end as id,
            {part} as part,
            concat('name_b{batch}_', cast(r as string)) as name,
            cast(pmod(xxhash64(r, {batch}, 3), 10000000) as decimal(12, 2)) / 100 as amount,
            timestamp_seconds({EPOCH + rows + (batch - 1) * batch_rows} + r) as ts,
            {batch} as loaded_at
        from (select id as r from range({batch_rows}))
    """


def changes_sql(rows: int, partitions: int, batch: int, batch_rows: int) -> str:
    """The upsert comparison's changed rows: a batch of the compaction's shape, one row per key (the
    newest), without loaded_at: the columns of the snapshot it is merged into."""
    return f"""
        select id, part, name, amount, ts from (
            select *, row_number() over (partition by id, part order by ts desc) as joinery_rank
            from ({delta_sql(rows, partitions, batch, batch_rows)})
        ) where joinery_rank = 1
    """


class Batches:
    """The delta batches landed in ci_delta (all formats' models read it) and the upsert comparison's
    changes (ci_changes), one set per round, merged by both sides."""

    def __init__(self, ctx: Context, rows: int, partitions: int, batch_rows: int):
        self.ctx, self.rows, self.partitions, self.batch_rows = ctx, rows, partitions, batch_rows
        self.next = 1
        self.changes_batch = CHANGES_BATCH
        self.merged: set[str] = set()

    def land(self) -> None:
        sql = delta_sql(self.rows, self.partitions, self.next, self.batch_rows)
        if self.next == 1:
            self.ctx.ctas("ci_delta", sql)
        else:
            self.ctx.sql(f"insert into {SCHEMA}.ci_delta {sql}")
        self.next += 1

    def new_changes(self) -> None:
        self.changes_batch += 1
        self.ctx.ctas("ci_changes", changes_sql(self.rows, self.partitions, self.changes_batch, self.batch_rows))
        self.merged = set()

    def changes_for(self, side: str) -> None:
        """Before `side` merges: new changes once this side has merged the current ones, so both sides
        merge the same rows in each round, whichever runs first."""
        if side in self.merged:
            self.new_changes()
        self.merged.add(side)


def format_variants(ctx: Context, table_format: str, batches: Batches) -> list[Variant]:
    def dbt_run(*models: str, full_refresh: bool = False):
        return lambda: ctx.dbt.run(*models, full_refresh=full_refresh, table_format=table_format)

    def settle_then_land() -> None:
        batches.land()
        ctx.dbt.run(MODEL, table_format=table_format)
        batches.land()

    variants = [
        Variant("incremental", dbt_run(MODEL), prepare=batches.land if ctx.tiny else settle_then_land),
        Variant("full_rebuild", dbt_run(MODEL, full_refresh=True)),
        Variant("no_new_data", dbt_run(MODEL)),
        Variant("plain_table_rebuild", dbt_run(PLAIN_MODEL)),
    ]
    if table_format in MERGE_FORMATS:
        variants += [
            Variant("upsert_joinery", dbt_run(UPSERT_JOINERY), prepare=lambda: batches.changes_for("joinery")),
            Variant("upsert_dbt_merge", dbt_run(UPSERT_DBT), prepare=lambda: batches.changes_for("dbt")),
        ]
    return [Variant(f"{table_format}.{v.name}", v.run, v.prepare) for v in variants]


def first_builds(ctx: Context, table_format: str) -> None:
    """Untimed: every model of the format built once (this also lets dbt parse the project with the
    format's vars once)."""
    models = [MODEL] + ([UPSERT_JOINERY, UPSERT_DBT] if table_format in MERGE_FORMATS else [])
    ctx.dbt.run(*models, full_refresh=True, table_format=table_format)


def scaling(ctx: Context, table_format: str, rows: int, partitions: int, batch_rows: int) -> dict[str, Measurement]:
    """At each of SCALES times `rows` (the batch size unchanged): incremental and plain rebuild."""
    found: dict[str, Measurement] = {}
    for scale in scales_of(ctx):
        scaled_rows = max(int(rows * scale), partitions * 10)
        log(f"  {table_format}: scaling, snapshot {scaled_rows:,} rows")
        ctx.ctas("ci_snapshot", snapshot_sql(scaled_rows, partitions))
        batches = Batches(ctx, scaled_rows, partitions, batch_rows)
        batches.land()
        ctx.dbt.run(MODEL, full_refresh=True, table_format=table_format)

        def settle_then_land(batches=batches) -> None:
            batches.land()
            ctx.dbt.run(MODEL, table_format=table_format)
            batches.land()

        suffix = f".x{scale:g}"
        measured = ctx.measure(
            [
                Variant(
                    f"{table_format}.incremental{suffix}",
                    lambda: ctx.dbt.run(MODEL, table_format=table_format),
                    prepare=batches.land if ctx.tiny else settle_then_land,
                ),
                Variant(
                    f"{table_format}.plain_table_rebuild{suffix}",
                    lambda: ctx.dbt.run(PLAIN_MODEL, table_format=table_format),
                ),
            ]
        )
        found.update(measured)
    return found


def final_outputs(ctx: Context, batches: Batches) -> dict[str, dict]:
    """Correctness guard, the same data for every format: one more batch, each format's incremental
    run, then its full rebuild and plain table, all equal; and each format's two upserts equal."""
    batches.land()
    compaction, upserts = {}, {}
    for table_format in ctx.formats:
        ctx.dbt.run(MODEL, table_format=table_format)
        compaction[f"{table_format}.incremental"] = ctx.fingerprint_of(relation(MODEL, table_format), COLUMNS)
    for table_format in ctx.formats:
        ctx.dbt.run(MODEL, full_refresh=True, table_format=table_format)
        compaction[f"{table_format}.full_rebuild"] = ctx.fingerprint_of(relation(MODEL, table_format), COLUMNS)
        ctx.dbt.run(PLAIN_MODEL, table_format=table_format)
        compaction[f"{table_format}.plain_table_rebuild"] = ctx.fingerprint_of(
            relation(PLAIN_MODEL, table_format), COLUMNS
        )
        if table_format in MERGE_FORMATS:
            group = upserts.setdefault(table_format, {})
            group["upsert_joinery"] = ctx.fingerprint_of(relation(UPSERT_JOINERY, table_format), COLUMNS)
            group["upsert_dbt_merge"] = ctx.fingerprint_of(relation(UPSERT_DBT, table_format), COLUMNS)
    return {"compaction": compaction, **{f"upsert.{name}": group for name, group in upserts.items()}}


def scales_of(ctx: Context) -> tuple[float, ...]:
    """The scaling measurement's sizes: none at `--rows tiny`, whose timings mean nothing (the smoke
    test runs every other variant)."""
    return () if ctx.tiny else SCALES


def bars_of(formats: tuple[str, ...], scaled: bool = True) -> tuple[list[Bar], list[tuple[str, str]]]:
    bars, info = [], []
    scale, limit = SCALING_BAR
    for f in formats:
        bars.append(Bar(f"{f}.vs_full_rebuild", f"{f}.incremental", f"{f}.full_rebuild", 0.15))
        info += [(f"{f}.incremental", f"{f}.plain_table_rebuild"), (f"{f}.full_rebuild", f"{f}.plain_table_rebuild")]
        if f in MERGE_FORMATS:
            bars.append(Bar(f"{f}.vs_dbt_merge", f"{f}.upsert_joinery", f"{f}.upsert_dbt_merge", 1.2))
        if scaled and f in MERGE_FORMATS:
            bars.append(Bar(f"{f}.scaling_x{scale}", f"{f}.incremental.x{scale}", f"{f}.incremental", limit))
        elif scaled:
            info.append((f"{f}.incremental.x{scale}", f"{f}.incremental"))
    return bars, info


def scaling_points(measurements: dict[str, Measurement], formats, rows: int) -> list[dict]:
    """Median seconds of the incremental run and of the plain rebuild per format and table size:
    what RESULTS.md's chart draws."""
    points = []
    for f in formats:
        for scale in sorted((1, *SCALES)):
            suffix = "" if scale == 1 else f".x{scale:g}"
            incremental = measurements.get(f"{f}.incremental{suffix}")
            rebuild = measurements.get(f"{f}.plain_table_rebuild{suffix}")
            if incremental and rebuild:
                points.append(
                    {
                        "format": f,
                        "rows": int(rows * scale),
                        "incremental": round(incremental.median, 3),
                        "rebuild": round(rebuild.median, 3),
                    }
                )
    return points


def run(ctx: Context) -> dict:
    rows = ctx.rows
    partitions = 2 if ctx.tiny else PARTITIONS
    batch_rows = max(rows // (partitions * 2), 10)
    ctx.ctas("ci_snapshot", snapshot_sql(rows, partitions))
    batches = Batches(ctx, rows, partitions, batch_rows)
    batches.land()
    batches.new_changes()
    measurements: dict[str, Measurement] = {}
    for table_format in ctx.formats:
        first_builds(ctx, table_format)
        measurements.update(ctx.measure(format_variants(ctx, table_format, batches)))
    outputs = final_outputs(ctx, batches)
    for table_format in ctx.formats:
        measurements.update(scaling(ctx, table_format, rows, partitions, batch_rows))
    bars, info = bars_of(ctx.formats, scaled=bool(scales_of(ctx)))
    return ctx.result(
        NAME,
        {
            "snapshot_rows": rows,
            "partitions": partitions,
            "delta_rows_per_batch": batch_rows,
            "formats": ",".join(ctx.formats),
            "scales": ",".join(f"{s:g}" for s in scales_of(ctx)),
        },
        measurements,
        bars,
        info_ratios=info,
        checks=[agreement_groups("same_result", outputs)],
        output_rows=outputs["compaction"][f"{ctx.formats[0]}.incremental"][0],
        scaling=scaling_points(measurements, ctx.formats, rows),
    )
