"""Case 1: full compaction of a snapshot and 3 deltas (updates, inserts, duplicate keys in a delta).

Variants, each writing a new parquet table from the same inputs:
- joinery: the SELECT `joinery.compact(...)` generates (model bench_compaction_full), as CTAS;
- gobblin_recipe: seed document 004's Hive recipe, statement by statement: each delta deduplicated
  with the correlated `MAX(ts)` subquery, the deltas merged pairwise (one anti-join pass per delta
  into tmp_delta), the snapshot's not-updated rows by a left outer join, then UNION ALL;
- floor: a plain copy of snapshot and deltas into one new table (no dedup at all).
Bar (issue 43): joinery/floor <= 1.5; joinery/gobblin_recipe is reported without a bar (0.25 of the
recipe would be the floor itself). The measurement is made RUNS times in a row, each a full set of
alternating rounds (`runs` in the JSON: each run's medians and ratios), since the ratio to the floor
moved between runs; the bar is on the medians of all runs' samples together. joinery's and the recipe's outputs are
checked to be equal (row count and hash sum): timestamps grow with the delta number, so "newest ts
wins" (joinery) and "later delta wins" (the recipe) agree.
"""

from __future__ import annotations

from benchmarks.core import SCHEMA, Bar, Context, Measurement, Variant, agreement, log

NAME = "compaction_full"
TITLE = "full compaction: snapshot + 3 deltas vs Gobblin's Hive recipe and vs a plain copy"
DEFAULT_ROWS = 2_000_000
DEFAULT_REPEATS = 5
TINY_ROWS = 1_000
DELTAS = 3
RUNS = 3  # separate measurements in one case run (1 at --rows tiny)
COLUMNS = ["id", "name", "amount", "ts"]
EPOCH = 1_600_000_000  # the snapshot's first ts (2020-09-13), in seconds


def generate(ctx: Context, snapshot_rows: int, delta_rows: int) -> None:
    """Snapshot ids 0..n-1; each delta: 50% updates of snapshot keys, 40% new keys, 10% a second,
    newer version of one of its own updates (duplicate key). Every row has its own ts, one second
    apart: the snapshot's first, then delta 1's, delta 2's, ... (offsets from the sizes, so at any
    size every delta k ts is later than every delta k-1 and snapshot ts, and "newest ts wins" and
    "later delta wins" agree)."""
    ctx.ctas(
        "cmp_snapshot",
        f"""
        select
            id,
            concat('name_', cast(pmod(xxhash64(id, 1), 1000000) as string)) as name,
            cast(pmod(xxhash64(id, 2), 10000000) as decimal(12, 2)) / 100 as amount,
            timestamp_seconds({EPOCH} + id) as ts
        from range({snapshot_rows})
        """,
    )
    for k in range(1, DELTAS + 1):
        ctx.ctas(
            f"cmp_delta_{k}",
            f"""
            select
                case
                    when r % 10 < 5 then pmod(xxhash64({k}, r), {snapshot_rows})
                    when r % 10 < 9 then {snapshot_rows} + {k} * {delta_rows} + r
                    else pmod(xxhash64({k}, r - 9), {snapshot_rows})
                end as id,
                concat('name_d{k}_', cast(r as string)) as name,
                cast(pmod(xxhash64(r, {k}, 3), 10000000) as decimal(12, 2)) / 100 as amount,
                timestamp_seconds({EPOCH + snapshot_rows + (k - 1) * delta_rows} + r) as ts
            from (select id as r from range({delta_rows}))
            """,
        )


def gobblin_recipe(ctx: Context) -> None:
    """Seed document 004's statements, with TEMPORARY TABLE as TABLE (its advice for older Hive)."""
    columns = ", ".join(COLUMNS)
    s = SCHEMA
    for k in range(1, DELTAS + 1):
        # "Duplicate Keys in Delta": keep each key's row with the latest timestamp.
        ctx.ctas(
            f"g_delta_{k}",
            f"""select t.* from {s}.cmp_delta_{k} t
            where t.ts in (select max(ts) from {s}.cmp_delta_{k} s where s.id = t.id)""",
        )
    # "Multiple Deltas": merged_delta = delta_1; for i in 2..k: diff = anti-join; tmp_delta = diff + delta_i.
    ctx.ctas("g_tmp_delta", f"select * from {s}.g_delta_1")
    for k in range(2, DELTAS + 1):
        ctx.ctas(
            "g_diff",
            f"""select {", ".join("m." + c for c in COLUMNS)} from {s}.g_tmp_delta m
            left outer join {s}.g_delta_{k} d on m.id = d.id where d.id is null""",
        )
        ctx.sql(
            f"""insert overwrite table {s}.g_tmp_delta
            select * from {s}.g_diff union all select * from {s}.g_delta_{k}"""
        )
    # "A Simple Example": not_updated by a left outer join, then UNION ALL into new_snapshot.
    ctx.ctas(
        "g_not_updated",
        f"""select {", ".join("snapshot." + c for c in COLUMNS)} from {s}.cmp_snapshot snapshot
        left outer join {s}.g_tmp_delta delta on snapshot.id = delta.id where delta.id is null""",
    )
    ctx.ctas(
        "g_new_snapshot",
        f"select {columns} from {s}.g_not_updated union all select {columns} from {s}.g_tmp_delta",
    )


def run(ctx: Context) -> dict:
    snapshot_rows = ctx.rows
    delta_rows = max(ctx.rows // 20, 10)
    generate(ctx, snapshot_rows, delta_rows)
    joinery_sql = ctx.dbt.compiled_sql("bench_compaction_full")
    floor_sql = " union all ".join(
        [f"select * from {SCHEMA}.cmp_snapshot"]
        + [f"select * from {SCHEMA}.cmp_delta_{k}" for k in range(1, DELTAS + 1)]
    )
    variants = [
        Variant("joinery", lambda: ctx.ctas("j_compacted", joinery_sql)),
        Variant("gobblin_recipe", lambda: gobblin_recipe(ctx)),
        Variant("floor", lambda: ctx.ctas("f_copy", floor_sql)),
    ]
    runs, measurements = [], {variant.name: Measurement(variant.name) for variant in variants}
    for run_index in range(1 if ctx.tiny else RUNS):
        log(f"  run {run_index + 1}")
        measured = ctx.measure(variants)
        medians = {name: round(m.median, 3) for name, m in measured.items()}
        runs.append(
            {
                "median_seconds": medians,
                "joinery/floor": round(medians["joinery"] / medians["floor"], 3),
                "joinery/gobblin_recipe": round(medians["joinery"] / medians["gobblin_recipe"], 3),
            }
        )
        for name, m in measured.items():
            measurements[name].seconds += m.seconds
            measurements[name].facts = m.facts
    joinery_out = ctx.fingerprint("j_compacted", COLUMNS)
    recipe_out = ctx.fingerprint("g_new_snapshot", COLUMNS)
    return ctx.result(
        NAME,
        {"snapshot_rows": snapshot_rows, "delta_rows": delta_rows, "deltas": DELTAS},
        measurements,
        [Bar("vs_floor", "joinery", "floor", 1.5)],
        info_ratios=[("joinery", "gobblin_recipe")],
        checks=[agreement("same_result", {"joinery": joinery_out, "gobblin_recipe": recipe_out})],
        repeats=len(runs) * ctx.repeats,
        output_rows=joinery_out[0],
        runs=runs,
    )
