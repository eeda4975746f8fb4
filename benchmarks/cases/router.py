"""Case 6: routing an expensive upstream (a join plus an aggregation) into 5 ports vs 5 independent filters.

The upstream is the view rt_upstream: facts joined to dims, then aggregated per (group, category,
region): an aggregation over a join, which Spark computes again for each of five separate queries
(it reuses nothing between statements). Variants:
- joinery: the router (model bench_router: `joinery.route`, 4 conditions + default port) written
  once as a parquet table partitioned by joinery_port, then every port model's SELECT read in full
  (Spark's noop sink);
- five_filters: for each port, the upstream view filtered by that port's condition, read in full;
- upstream: the upstream read once in full (noop sink), no bar: the cost routing saves four times.
Bar: joinery/five_filters <= 0.6 at the case's size. Each port's rows must be its filter's.
Crossover: then the same at smaller sizes, the upstream's output fixed (SWEEP_GROUPS of the case's
rows) and its input growing (SWEEP_FACTS times the output): `crossover` lists, per point, the
upstream's seconds and joinery/five_filters; routing pays from the first point under 1.0.
"""

from __future__ import annotations

from benchmarks.core import SCHEMA, Bar, Context, Variant, agreement, log

NAME = "router"
TITLE = "router: route an expensive upstream (join + aggregation) into 5 ports + read them vs 5 filters"
DEFAULT_ROWS = 2_000_000
DEFAULT_REPEATS = 5
TINY_ROWS = 1_000
PORTS = ["p0", "p1", "p2", "p3", "p4"]
CONDITIONS = ["category = 0", "category = 1", "category = 2", "category = 3"]
GROUPS_PER_FACT = 4  # the upstream aggregates 4 facts per output row at the case's size
SWEEP_GROUPS = 20  # the crossover sweep's output: 1/20 of the case's rows
SWEEP_FACTS = (1, 2, 4, 8)  # facts per output row at the sweep's points
COLUMNS = ["id", "category", "region", "amount", "events"]


def upstream(ctx: Context, facts: int, groups: int) -> None:
    """The inputs and the view rt_upstream: `facts` fact rows aggregated into about `groups` x categories rows."""
    dims = max(facts // 2, 10)
    s = SCHEMA
    ctx.ctas(
        "rt_facts",
        f"""select id, pmod(xxhash64(id, 6), {groups}) as grp, pmod(xxhash64(id, 1), {dims}) as dim_id,
            cast(pmod(xxhash64(id, 2), 10) as int) as category,
            cast(pmod(xxhash64(id, 3), 100000) as decimal(10, 2)) / 100 as amount from range({facts})""",
    )
    ctx.ctas(
        "rt_dims",
        f"""select id as dim_id, concat('region_', cast(pmod(xxhash64(id, 4), 5) as string)) as region,
            concat('segment_', cast(pmod(xxhash64(id, 5), 1000) as string)) as segment from range({dims})""",
    )
    ctx.sql(f"drop view if exists {s}.rt_upstream")  # a view: `drop table` on it is an error
    ctx.sql(
        f"""create view {s}.rt_upstream as
        select f.grp as id, f.category, d.region, sum(f.amount) as amount, count(*) as events
        from {s}.rt_facts f join {s}.rt_dims d on f.dim_id = d.dim_id
        group by f.grp, f.category, d.region"""
    )


def variants(ctx: Context, router_sql: str, port_sqls: dict[str, str], filters: list[str], suffix: str = ""):
    def route_and_read() -> None:
        ctx.ctas("bench_router", router_sql, partitioned_by=["joinery_port"])
        for port in PORTS:
            ctx.consume(port_sqls[f"bench_router_{port}"])

    def five_filters() -> None:
        for condition in filters:
            ctx.consume(f"select * from {SCHEMA}.rt_upstream where {condition}")

    return [
        Variant(f"joinery{suffix}", route_and_read),
        Variant(f"five_filters{suffix}", five_filters),
        Variant(f"upstream{suffix}", lambda: ctx.consume(f"select * from {SCHEMA}.rt_upstream")),
    ]


def crossover(ctx: Context, router_sql: str, port_sqls: dict[str, str], filters: list[str]):
    """The sweep: the upstream's output fixed, its input growing; per point the medians and the ratio."""
    groups = max(ctx.rows // SWEEP_GROUPS, 10)
    points, measurements = [], {}
    for per_group in SWEEP_FACTS:
        facts = groups * per_group
        log(f"  crossover: {facts:,} facts into {groups:,} groups")
        upstream(ctx, facts, groups)
        suffix = f".facts_{facts}"
        measured = ctx.measure(variants(ctx, router_sql, port_sqls, filters, suffix))
        measurements.update(measured)
        joinery, filtered = measured[f"joinery{suffix}"].median, measured[f"five_filters{suffix}"].median
        points.append(
            {
                "facts": facts,
                "groups": groups,
                "upstream_seconds": round(measured[f"upstream{suffix}"].median, 3),
                "joinery_seconds": round(joinery, 3),
                "five_filters_seconds": round(filtered, 3),
                "ratio": round(joinery / filtered, 3),
            }
        )
    paying = [point for point in points if point["ratio"] < 1.0]
    return measurements, {
        "points": points,
        "routing_pays_from_upstream_seconds": paying[0]["upstream_seconds"] if paying else None,
    }


def run(ctx: Context) -> dict:
    rows = ctx.rows
    groups = max(rows // GROUPS_PER_FACT, 10)
    upstream(ctx, rows, groups)
    router_sql = ctx.dbt.compiled_sql("bench_router")
    # Port models read the router table, so it must exist when they compile.
    ctx.ctas("bench_router", router_sql, partitioned_by=["joinery_port"])
    port_sqls = ctx.dbt.compiled_sqls(*[f"bench_router_{port}" for port in PORTS])
    default_condition = "not (" + " or ".join(f"coalesce({c}, false)" for c in CONDITIONS) + ")"
    filters = [*CONDITIONS, default_condition]
    measurements = ctx.measure(variants(ctx, router_sql, port_sqls, filters))
    # New lines around the SELECTs: a compiled model may end in a `--` comment.
    ports = {port: ctx.fingerprint_of(f"(\n{port_sqls[f'bench_router_{port}']}\n)", COLUMNS) for port in PORTS}
    filtered = {
        port: ctx.fingerprint_of(f"(select * from {SCHEMA}.rt_upstream where {condition})", COLUMNS)
        for port, condition in zip(PORTS, filters, strict=True)
    }
    swept, found = crossover(ctx, router_sql, port_sqls, filters)
    return ctx.result(
        NAME,
        {"fact_rows": rows, "upstream_rows": sum(fp[0] for fp in ports.values()), "ports": len(PORTS)},
        {**measurements, **swept},
        [Bar("vs_five_filters", "joinery", "five_filters", 0.6)],
        info_ratios=[("joinery", "upstream")],
        checks=[agreement("same_result", {"joinery": ports, "five_filters": filtered})],
        port_rows={port: fingerprint[0] for port, fingerprint in ports.items()},
        crossover=found,
    )
