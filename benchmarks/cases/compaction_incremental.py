"""Case 2: incremental compaction of a 100-partition table, per table format and width.

The model bench_compaction_incremental (`joinery.compact` with `loaded_at`, materialized
`joinery_upsert`, partitioned by `part`) is run through dbt, in-process on the same Spark, once per
table format of the run (`--formats`, default parquet, delta and iceberg) and width (narrow: 5
columns; wide: about 30 columns of mixed types); variants are named `<format>.<variant>` (narrow)
and `<format>.wide.<variant>`:
- incremental: a new delta batch (1% of the snapshot's rows, all in one partition, half updates,
  half new keys) lands untimed, then `dbt run` merges it. It is timed in steady state, after an
  untimed incremental run: on parquet every commit deletes the directories the previous commit
  superseded, and after a full rebuild those are all 100 partitions';
- spread: the same size of batch spread over every partition (the worst case for a partitioned
  MERGE), applied by bench_compaction_spread; spread_plain is its plain rebuild;
- full_rebuild: `dbt run --full-refresh` of the same model (snapshot + every delta so far);
- no_new_data: `dbt run` with nothing new, shown for scale;
- plain_table_rebuild: `dbt run` of bench_compaction_plain, the same `compact` SELECT materialized
  by dbt-spark's own `table` (also partitioned by `part`): what a plain dbt user would run;
- dbt_merge (delta and iceberg): the same model as dbt-spark's own `incremental` model with the
  `merge` strategy (bench_compaction_merge; compact selects its full compaction there, so it merges
  every row);
- on delta and iceberg (narrow), upsert_joinery and upsert_dbt_merge: the same changed rows (a batch
  of the same shape, one row per key, no deletes) merged into a copy of the snapshot by
  joinery_upsert and by dbt-spark's `merge`; both merge the same rows in every round.
The formats and widths run one after the other (a batch lands in the delta table every format
reads, so their rounds cannot interleave); within one the variants run in a seeded random order
each round. Each timed dbt step also counts, per model, the statements dbt sent and the commits.
Scaling: then, per format, the narrow snapshot at 0.25x and 4x with the same batch size, incremental
and plain_table_rebuild timed (`<format>.incremental.x4`, ...), for the bars and RESULTS.md's chart.
Bars (joinery_upsert v2): incremental <= 1.05 x plain_table_rebuild on every format and size (narrow),
spread <= 1.05 x spread_plain, and on delta and iceberg incremental <= 0.4 x the plain rebuild (both
widths); full_rebuild <= 1.2 x plain_table_rebuild; upsert_joinery <= 1.2 x upsert_dbt_merge; and as
checks, an incremental run's statements per model <= dbt_merge's + 2 and commits <= 1 (delta, iceberg).
At `--rows tiny` the table has 2 partitions, no untimed run precedes the timed one, and only the
narrow width runs.
"""

from __future__ import annotations

from benchmarks.core import SCHEMA, Bar, Context, Measurement, Variant, agreement_groups, log
from benchmarks.dbt_bench import relation
from benchmarks.statements import count_checks

NAME = "compaction_incremental"
TITLE = "incremental compaction: a 1% delta in 1 (or all) of 100 partitions vs a rebuild, per format and width"
DEFAULT_ROWS = 2_000_000
TINY_ROWS = 1_000
PARTITIONS = 100
MODEL = "bench_compaction_incremental"
PLAIN_MODEL = "bench_compaction_plain"
SPREAD_MODEL = "bench_compaction_spread"
SPREAD_PLAIN_MODEL = "bench_compaction_spread_plain"
MERGE_MODEL = "bench_compaction_merge"
UPSERT_JOINERY = "bench_ci_upsert_joinery"
UPSERT_DBT = "bench_ci_upsert_dbt"
MERGE_FORMATS = ("delta", "iceberg")  # dbt-spark's merge strategy exists only for these
WIDTHS = ("narrow", "wide")
SCALES = (0.25, 4)  # narrow table sizes besides 1x for the scaling measurement and the chart
COLUMNS = ["id", "part", "name", "amount", "ts"]
EPOCH = 1_600_000_000  # the snapshot's first ts (2020-09-13), in seconds
CHANGES_BATCH = 1_000  # batch numbers of the upsert comparison's changes, apart from the compaction's
WIDE_GROUPS = 9  # the wide rows' extra columns: a double, a string and an int per group


def wide_columns(seed_sql: str) -> str:
    return "".join(
        f", cast(pmod(xxhash64({seed_sql}, {100 + i}), 10000000) as double) / 100 as d{i}"
        f", concat('s{i}_', cast(pmod(xxhash64({seed_sql}, {200 + i}), 100000) as string)) as s{i}"
        f", cast(pmod(xxhash64({seed_sql}, {300 + i}), 100000) as int) as n{i}"
        for i in range(WIDE_GROUPS)
    )


def snapshot_sql(rows: int, partitions: int, width: str = "narrow") -> str:
    extra = wide_columns("id") if width == "wide" else ""
    return f"""
        select
            id,
            cast(id % {partitions} as int) as part,
            concat('name_', cast(pmod(xxhash64(id, 1), 1000000) as string)) as name,
            cast(pmod(xxhash64(id, 2), 10000000) as decimal(12, 2)) / 100 as amount,
            timestamp_seconds({EPOCH} + id) as ts {extra}
        from range({rows})
    """


def delta_sql(
    rows: int, partitions: int, batch: int, batch_rows: int, width: str = "narrow", spread: bool = False
) -> str:
    """Batch `batch` (1, 2, ...): half updates of existing keys, half new keys, all in one partition
    (or with `spread`, over every partition). Its ts follow the snapshot's and batch-1's, one second
    apart, at any size."""
    part = (batch * 37) % partitions
    keys_per_partition = rows // partitions
    if spread:
        new_key = f"{rows} * 10 + {batch} * {batch_rows} + r"
        id_sql = f"case when r % 2 = 0 then pmod(xxhash64({batch}, r), {rows}) else {new_key} end"
        part_sql = f"cast(({id_sql}) % {partitions} as int)"
    else:
        id_sql = (
            f"case when r % 2 = 0 then pmod(xxhash64({batch}, r), {keys_per_partition}) * {partitions} + {part} "
            f"else {rows} * 10 + {batch} * {batch_rows} + r end"
        )
        part_sql = str(part)
    extra = wide_columns(f"xxhash64({batch}, r)") if width == "wide" else ""
    return f"""
        select
            {id_sql} as id,
            {part_sql} as part,
            concat('name_b{batch}_', cast(r as string)) as name,
            cast(pmod(xxhash64(r, {batch}, 3), 10000000) as decimal(12, 2)) / 100 as amount,
            timestamp_seconds({EPOCH + rows + (batch - 1) * batch_rows} + r) as ts {extra},
            {batch} as loaded_at
        from (select id as r from range({batch_rows}))
    """


def changes_sql(rows: int, partitions: int, batch: int, batch_rows: int) -> str:
    """The upsert comparison's changed rows: a narrow batch of the compaction's shape, one row per key
    (the newest), without loaded_at: the columns of the snapshot it is merged into."""
    return f"""
        select id, part, name, amount, ts from (
            select *, row_number() over (partition by id, part order by ts desc) as joinery_rank
            from ({delta_sql(rows, partitions, batch, batch_rows)})
        ) where joinery_rank = 1
    """


class Batches:
    """The delta batches of one width landed in ci_delta and ci_delta_spread (every format's models
    read them) and the upsert comparison's changes (ci_changes), one set per round."""

    def __init__(self, ctx: Context, rows: int, partitions: int, batch_rows: int, width: str = "narrow"):
        self.ctx, self.rows, self.partitions, self.batch_rows, self.width = ctx, rows, partitions, batch_rows, width
        self.suffix = "" if width == "narrow" else f"_{width}"
        self.next = {False: 1, True: 1}
        self.changes_batch = CHANGES_BATCH
        self.merged: set[str] = set()

    def land(self, spread: bool = False) -> None:
        table = f"ci_delta{'_spread' if spread else ''}{self.suffix}"
        sql = delta_sql(self.rows, self.partitions, self.next[spread], self.batch_rows, self.width, spread)
        if self.next[spread] == 1:
            self.ctx.ctas(table, sql)
        else:
            self.ctx.sql(f"insert into {SCHEMA}.{table} {sql}")
        self.next[spread] += 1

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


def variant_name(table_format: str, width: str, variant: str) -> str:
    return f"{table_format}.{variant}" if width == "narrow" else f"{table_format}.{width}.{variant}"


def format_variants(ctx: Context, table_format: str, width: str, batches: Batches) -> list[Variant]:
    def step(*models: str, full_refresh: bool = False):
        return ctx.dbt_step(*models, table_format=table_format, width=width, full_refresh=full_refresh)

    def settled(model: str, spread: bool):
        """Land a batch, apply it untimed, land the next one: the timed run is a steady-state one."""

        def prepare() -> None:
            batches.land(spread)
            if not ctx.tiny:
                ctx.dbt.run(model, table_format=table_format, width=width)
                batches.land(spread)

        return prepare

    variants = [
        Variant("incremental", step(MODEL), prepare=settled(MODEL, False)),
        Variant("spread", step(SPREAD_MODEL), prepare=settled(SPREAD_MODEL, True)),
        Variant("full_rebuild", step(MODEL, full_refresh=True)),
        Variant("no_new_data", step(MODEL)),
        Variant("plain_table_rebuild", step(PLAIN_MODEL)),
        Variant("spread_plain", step(SPREAD_PLAIN_MODEL)),
    ]
    if table_format in MERGE_FORMATS:
        variants.append(Variant("dbt_merge", step(MERGE_MODEL)))
        if width == "narrow":
            variants += [
                Variant("upsert_joinery", step(UPSERT_JOINERY), prepare=lambda: batches.changes_for("joinery")),
                Variant("upsert_dbt_merge", step(UPSERT_DBT), prepare=lambda: batches.changes_for("dbt")),
            ]
    return [Variant(variant_name(table_format, width, v.name), v.run, v.prepare) for v in variants]


def first_builds(ctx: Context, table_format: str, width: str) -> None:
    """Untimed: every model of the format and width built once."""
    models = [MODEL, SPREAD_MODEL]
    if table_format in MERGE_FORMATS:
        models += [MERGE_MODEL] + ([UPSERT_JOINERY, UPSERT_DBT] if width == "narrow" else [])
    ctx.dbt.run(*models, full_refresh=True, table_format=table_format, width=width)


def start(ctx: Context, rows: int, partitions: int, batch_rows: int, width: str) -> Batches:
    """The width's snapshot and the first batch of each delta table."""
    suffix = "" if width == "narrow" else f"_{width}"
    ctx.ctas(f"ci_snapshot{suffix}", snapshot_sql(rows, partitions, width))
    batches = Batches(ctx, rows, partitions, batch_rows, width)
    batches.land()
    batches.land(spread=True)
    if width == "narrow":
        batches.new_changes()
    return batches


def scaling(ctx: Context, table_format: str, rows: int, partitions: int, batch_rows: int) -> dict[str, Measurement]:
    """At each of SCALES times `rows` (narrow, the batch size unchanged): incremental and plain rebuild."""
    found: dict[str, Measurement] = {}
    for scale in scales_of(ctx):
        scaled_rows = max(int(rows * scale), partitions * 10)
        log(f"  {table_format}: scaling, snapshot {scaled_rows:,} rows")
        batches = start(ctx, scaled_rows, partitions, batch_rows, "narrow")
        ctx.dbt.run(MODEL, full_refresh=True, table_format=table_format)

        def settle_then_land(batches=batches) -> None:
            batches.land()
            ctx.dbt.run(MODEL, table_format=table_format)
            batches.land()

        suffix = f".x{scale:g}"
        found.update(
            ctx.measure(
                [
                    Variant(
                        f"{table_format}.incremental{suffix}",
                        ctx.dbt_step(MODEL, table_format=table_format),
                        prepare=batches.land if ctx.tiny else settle_then_land,
                    ),
                    Variant(
                        f"{table_format}.plain_table_rebuild{suffix}",
                        ctx.dbt_step(PLAIN_MODEL, table_format=table_format),
                    ),
                ]
            )
        )
    return found


def columns_of(width: str) -> list[str]:
    extra = [f"{kind}{i}" for i in range(WIDE_GROUPS) for kind in ("d", "s", "n")] if width == "wide" else []
    return COLUMNS + extra


def final_outputs(ctx: Context, batches: Batches, width: str) -> dict[str, dict]:
    """Correctness guard, the same data for every format: one more batch of each kind, each format's
    incremental runs, then its full rebuild and plain tables, all equal; dbt-spark's merge of the same
    compaction too; and each format's two upserts equal."""
    batches.land()
    batches.land(spread=True)
    compaction, spread, upserts = {}, {}, {}
    columns = columns_of(width)
    for f in ctx.formats:
        ctx.dbt.run(MODEL, SPREAD_MODEL, *([MERGE_MODEL] if f in MERGE_FORMATS else []), table_format=f, width=width)
        compaction[f"{f}.incremental"] = ctx.fingerprint_of(relation(MODEL, f, width), columns)
        spread[f"{f}.spread"] = ctx.fingerprint_of(relation(SPREAD_MODEL, f, width), columns)
        if f in MERGE_FORMATS:
            compaction[f"{f}.dbt_merge"] = ctx.fingerprint_of(relation(MERGE_MODEL, f, width), columns)
    for f in ctx.formats:
        ctx.dbt.run(MODEL, full_refresh=True, table_format=f, width=width)
        ctx.dbt.run(PLAIN_MODEL, SPREAD_PLAIN_MODEL, table_format=f, width=width)
        compaction[f"{f}.full_rebuild"] = ctx.fingerprint_of(relation(MODEL, f, width), columns)
        compaction[f"{f}.plain_table_rebuild"] = ctx.fingerprint_of(relation(PLAIN_MODEL, f, width), columns)
        spread[f"{f}.spread_plain"] = ctx.fingerprint_of(relation(SPREAD_PLAIN_MODEL, f, width), columns)
        if f in MERGE_FORMATS and width == "narrow":
            upserts[f"upsert.{f}"] = {
                "upsert_joinery": ctx.fingerprint_of(relation(UPSERT_JOINERY, f), COLUMNS),
                "upsert_dbt_merge": ctx.fingerprint_of(relation(UPSERT_DBT, f), COLUMNS),
            }
    return {f"compaction.{width}": compaction, f"spread.{width}": spread, **upserts}


def scales_of(ctx: Context) -> tuple[float, ...]:
    """The scaling measurement's sizes: none at `--rows tiny`, whose timings mean nothing."""
    return () if ctx.tiny else SCALES


def widths_of(ctx: Context) -> tuple[str, ...]:
    return ctx.measured(WIDTHS)


def bars_of(ctx: Context) -> tuple[list[Bar], list[tuple[str, str]]]:
    bars, info = [], []
    for f in ctx.formats:
        for width in widths_of(ctx):
            name = lambda variant, f=f, width=width: variant_name(f, width, variant)  # noqa: E731
            plain = name("plain_table_rebuild")
            limit = 0.4 if f in MERGE_FORMATS else (1.05 if width == "narrow" else None)
            if limit is None:
                info.append((name("incremental"), plain))
            else:
                bars.append(Bar(f"{name('incremental')} vs plain", name("incremental"), plain, limit))
            if width == "narrow":
                bars.append(Bar(f"{name('spread')} vs plain", name("spread"), name("spread_plain"), 1.05))
            else:
                info.append((name("spread"), name("spread_plain")))
            bars.append(Bar(f"{name('full_rebuild')} vs plain", name("full_rebuild"), plain, 1.2))
            info.append((name("no_new_data"), plain))
            if f in MERGE_FORMATS:
                info.append((name("incremental"), name("dbt_merge")))
        for scale in scales_of(ctx):
            suffix = f".x{scale:g}"
            limit = 0.4 if f in MERGE_FORMATS else 1.05
            bars.append(
                Bar(
                    f"{f}.incremental{suffix} vs plain",
                    f"{f}.incremental{suffix}",
                    f"{f}.plain_table_rebuild{suffix}",
                    limit,
                )
            )
        if f in MERGE_FORMATS:
            bars.append(Bar(f"{f}.vs_dbt_merge", f"{f}.upsert_joinery", f"{f}.upsert_dbt_merge", 1.2))
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
    batch_rows = max(rows // 100, 10)
    measurements: dict[str, Measurement] = {}
    outputs: dict[str, dict] = {}
    for width in widths_of(ctx):
        batches = start(ctx, rows, partitions, batch_rows, width)
        for table_format in ctx.formats:
            first_builds(ctx, table_format, width)
            measurements.update(ctx.measure(format_variants(ctx, table_format, width, batches)))
        outputs.update(final_outputs(ctx, batches, width))
    for table_format in ctx.formats:
        measurements.update(scaling(ctx, table_format, rows, partitions, batch_rows))
    bars, info = bars_of(ctx)
    merge_formats = [f for f in ctx.formats if f in MERGE_FORMATS]
    checks = [agreement_groups("same_result", outputs)]
    checks += count_checks(measurements, merge_formats, widths_of(ctx), [MODEL], [MERGE_MODEL], variant_name)
    return ctx.result(
        NAME,
        {
            "snapshot_rows": rows,
            "partitions": partitions,
            "delta_rows_per_batch": batch_rows,
            "formats": ",".join(ctx.formats),
            "widths": "narrow only (--rows tiny)" if ctx.tiny else "narrow (5 columns), wide (32)",
            "scales": ",".join(f"{s:g}" for s in scales_of(ctx)),
        },
        measurements,
        bars,
        info_ratios=info,
        checks=checks,
        output_rows=outputs["compaction.narrow"][f"{ctx.formats[0]}.incremental"][0],
        scaling=scaling_points(measurements, ctx.formats, rows),
    )
