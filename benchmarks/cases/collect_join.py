"""Case 5: collect join on two shapes of data in the same run, each against the hand-written query.

Shapes (variants named `<shape>.<variant>`):
- seed: seed document 001's workload. Build = M=7 days of attribute rows: each of its uids has a
  row on every day, and consecutive days share two of their three attribute ids (overlapping sets).
  Probe = N=30 days of mappings: each uid mapped to 1-3 puids, the same mappings every day; 10% of
  the probe's uids have attributes.
- one_row: one build row per key (probe 100x the build, 1% of probe rows with a build key).
Variants on each: joinery (the SELECT of the shape's model with the plan chosen for it, CTAS);
join_then_group (the query a user writes by hand: join, explode, `collect_set`, sort; CTAS);
floor (one scan of the probe side's key and group columns, to Spark's noop sink); and
other_plan (joinery with the other `build_rows_per_key` plan, CTAS; shown without a bar: it is
why the macro takes the argument). Bars: seed.joinery/seed.join_then_group <= 1.0,
one_row.joinery/one_row.join_then_group <= 1.15. Outputs must agree on each shape: per row the puid
and its values, each row's values sorted as strings on both sides (joinery orders them numerically,
the baseline as strings).
"""

from __future__ import annotations

from benchmarks.core import SCHEMA, Bar, Context, Variant, agreement_groups

NAME = "collect_join"
TITLE = "collect join: the seed's shape (7 days x 30 days) and one build row per key, vs join-then-group"
DEFAULT_ROWS = 5_000_000
DEFAULT_REPEATS = 5
TINY_ROWS = 20_000
ATTRIBUTE_DAYS = 7  # M
MAPPING_DAYS = 30  # N
MODELS = {
    "seed": ("bench_collect_join_seed", "bench_collect_join_seed_one"),
    "one_row": ("bench_collect_join", "bench_collect_join_many"),
}
INPUTS = {"seed": ("cjs_build", "cjs_probe"), "one_row": ("cj_build", "cj_probe")}


def one_row_inputs(ctx: Context, probe_rows: int) -> dict:
    build_rows = max(probe_rows // 100, 10)
    ctx.ctas(
        "cj_build",
        f"""
        select id as uid,
            concat_ws(',', cast(pmod(xxhash64(id, 1), 50) as string), cast(pmod(xxhash64(id, 2), 50) as string),
                cast(pmod(xxhash64(id, 3), 50) as string)) as attribute_ids
        from range({build_rows})
        """,
    )
    ctx.ctas(
        "cj_probe",
        f"""
        select
            case when id % 100 = 0 then pmod(xxhash64(id, 4), {build_rows}) else {build_rows} + id end as uid,
            concat('p', cast(pmod(xxhash64(id, 5), {max(probe_rows // 10, 1)}) as string)) as puid
        from range({probe_rows})
        """,
    )
    return {"probe_rows": probe_rows, "build_rows": build_rows, "overlap": "1% of probe rows"}


def seed_inputs(ctx: Context, probe_rows: int) -> dict:
    """About `probe_rows` probe rows: uids x 2 puids on average x 30 days."""
    uids = max(probe_rows // (2 * MAPPING_DAYS), 10)
    ctx.ctas(
        "cjs_build",
        f"""
        select uid, day,
            concat_ws(',', cast(pmod(xxhash64(uid, pmod(day, 5)), 50) as string),
                cast(pmod(xxhash64(uid, pmod(day + 1, 5)), 50) as string),
                cast(pmod(xxhash64(uid, pmod(day + 2, 5)), 50) as string)) as attribute_ids
        from (select id * 10 as uid from range({max(uids // 10, 1)}))
        cross join (select id as day from range({ATTRIBUTE_DAYS}))
        """,
    )
    ctx.ctas(
        "cjs_probe",
        f"""
        select uid, day, concat('p', cast(pmod(xxhash64(uid, mapping), {uids}) as string)) as puid
        from (select id as uid, 1 + pmod(xxhash64(id, 6), 3) as mappings from range({uids}))
        cross join (select id as mapping from range(3))
        cross join (select id as day from range({MAPPING_DAYS}))
        where mapping < mappings
        """,
    )
    return {
        "probe_rows": ctx.count("cjs_probe"),
        "build_rows": ctx.count("cjs_build"),
        "uids": uids,
        "attribute_days": ATTRIBUTE_DAYS,
        "mapping_days": MAPPING_DAYS,
        "overlap": "10% of probe uids",
    }


def join_then_group(build: str, probe: str) -> str:
    return f"""
        select p.puid, concat_ws(',', array_sort(collect_set(trim(v)))) as attribute_ids
        from {SCHEMA}.{probe} p
        join {SCHEMA}.{build} b on p.uid = b.uid
        lateral view explode(split(b.attribute_ids, ',')) e as v
        where trim(v) <> ''
        group by p.puid
    """


def run(ctx: Context) -> dict:
    sizes = {"one_row": one_row_inputs(ctx, ctx.rows), "seed": seed_inputs(ctx, ctx.rows)}
    compiled = ctx.dbt.compiled_sqls(*[model for pair in MODELS.values() for model in pair])
    variants = []
    for shape, (model, other_model) in MODELS.items():
        build, probe = INPUTS[shape]
        variants += [
            Variant(f"{shape}.joinery", lambda s=shape, m=model: ctx.ctas(f"j_{s}", compiled[m])),
            Variant(
                f"{shape}.join_then_group", lambda s=shape, b=build, p=probe: ctx.ctas(f"b_{s}", join_then_group(b, p))
            ),
            Variant(f"{shape}.floor", lambda p=probe: ctx.consume(f"select uid, puid from {SCHEMA}.{p}")),
            Variant(f"{shape}.other_plan", lambda s=shape, m=other_model: ctx.ctas(f"o_{s}", compiled[m])),
        ]
    measurements = ctx.measure(variants)
    content = ["puid", "array_sort(split(attribute_ids, ','))"]
    outputs = {
        shape: {
            variant: ctx.fingerprint(f"{prefix}_{shape}", content)
            for variant, prefix in (("joinery", "j"), ("join_then_group", "b"), ("other_plan", "o"))
        }
        for shape in MODELS
    }
    return ctx.result(
        NAME,
        {f"{shape}.{key}": value for shape, facts in sizes.items() for key, value in facts.items()},
        measurements,
        [
            Bar("seed.vs_join_then_group", "seed.joinery", "seed.join_then_group", 1.0),
            Bar("one_row.vs_join_then_group", "one_row.joinery", "one_row.join_then_group", 1.15),
        ],
        info_ratios=[
            (f"{shape}.{variant}", f"{shape}.{other}")
            for shape in MODELS
            for variant, other in (("joinery", "floor"), ("other_plan", "join_then_group"))
        ],
        checks=[agreement_groups("same_result", outputs)],
        output_rows={shape: outputs[shape]["joinery"][0] for shape in MODELS},
        plans={"seed": "build_rows_per_key='many'", "one_row": "build_rows_per_key='one'"},
    )
