"""Case 5: collect join, probe side 100x the build side, 1% of probe rows with a build key.

Variants: joinery (the SELECT of model bench_collect_join, CTAS); join_then_group (the plain query:
join, explode the values, group with collect_set, CTAS); floor (one scan of the probe side's key and
group columns, read to Spark's noop sink). Bars: joinery/join_then_group <= 0.7, joinery/floor <= 2.0.
joinery's and join_then_group's outputs must agree: per row the puid and its values, each row's
values sorted as strings on both sides (joinery orders them numerically, the baseline as strings).
"""

from __future__ import annotations

from benchmarks.core import SCHEMA, Bar, Context, Variant, agreement

NAME = "collect_join"
TITLE = "collect join: probe 100x build, 1% overlap, vs join-then-group and vs one probe scan"
DEFAULT_ROWS = 5_000_000
DEFAULT_REPEATS = 5
TINY_ROWS = 1_000


def run(ctx: Context) -> dict:
    probe_rows = ctx.rows
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
    joinery_sql = ctx.dbt.compiled_sql("bench_collect_join")
    s = SCHEMA
    join_then_group = f"""
        select p.puid, concat_ws(',', array_sort(collect_set(trim(v)))) as attribute_ids
        from {s}.cj_probe p
        join {s}.cj_build b on p.uid = b.uid
        lateral view explode(split(b.attribute_ids, ',')) e as v
        where trim(v) <> ''
        group by p.puid
    """
    measurements = ctx.measure(
        [
            Variant("joinery", lambda: ctx.ctas("j_collect_join", joinery_sql)),
            Variant("join_then_group", lambda: ctx.ctas("b_collect_join", join_then_group)),
            Variant("floor", lambda: ctx.consume(f"select uid, puid from {s}.cj_probe")),
        ]
    )
    content = ["puid", "array_sort(split(attribute_ids, ','))"]
    outputs = {"joinery": ctx.fingerprint("j_collect_join", content)}
    outputs["join_then_group"] = ctx.fingerprint("b_collect_join", content)
    return ctx.result(
        NAME,
        {"probe_rows": probe_rows, "build_rows": build_rows, "overlap": "1%"},
        measurements,
        [
            Bar("vs_join_then_group", "joinery", "join_then_group", 0.7),
            Bar("vs_floor", "joinery", "floor", 2.0),
        ],
        checks=[agreement("same_result", outputs)],
        output_rows=outputs["joinery"][0],
    )
