"""Case 6: routing an expensive upstream (a join) into 5 ports vs 5 independent filters.

The upstream is the view rt_upstream: facts joined to dims. Variants:
- joinery: the router (model bench_router: `joinery.route`, 4 conditions + default port) written
  once as a parquet table partitioned by joinery_port, then every port model's SELECT read in full
  (Spark's noop sink);
- five_filters: for each port, the upstream view filtered by that port's condition, read in full.
Bar: joinery/five_filters <= 0.6. Each port's rows must be its filter's (row count and hash sum).
"""

from __future__ import annotations

from benchmarks.core import SCHEMA, Bar, Context, Variant, agreement

NAME = "router"
TITLE = "router: route an expensive upstream (a join) into 5 ports + read them vs 5 filters"
DEFAULT_ROWS = 2_000_000
DEFAULT_REPEATS = 5
TINY_ROWS = 1_000
PORTS = ["p0", "p1", "p2", "p3", "p4"]
CONDITIONS = ["category = 0", "category = 1", "category = 2", "category = 3"]


def run(ctx: Context) -> dict:
    rows = ctx.rows
    dims = max(rows // 2, 10)
    s = SCHEMA
    ctx.ctas(
        "rt_facts",
        f"""select id, pmod(xxhash64(id, 1), {dims}) as dim_id, cast(pmod(xxhash64(id, 2), 10) as int) as category,
            cast(pmod(xxhash64(id, 3), 100000) as decimal(10, 2)) / 100 as amount from range({rows})""",
    )
    ctx.ctas(
        "rt_dims",
        f"""select id as dim_id, concat('region_', cast(pmod(xxhash64(id, 4), 50) as string)) as region,
            concat('segment_', cast(pmod(xxhash64(id, 5), 1000) as string)) as segment from range({dims})""",
    )
    ctx.drop("rt_upstream")
    ctx.sql(
        f"""create view {s}.rt_upstream as
        select f.id, f.category, f.amount, d.region, d.segment
        from {s}.rt_facts f join {s}.rt_dims d on f.dim_id = d.dim_id"""
    )
    router_sql = ctx.dbt.compiled_sql("bench_router")
    # Port models read the router table, so it must exist when they compile.
    ctx.ctas("bench_router", router_sql, partitioned_by=["joinery_port"])
    port_sqls = ctx.dbt.compiled_sqls(*[f"bench_router_{port}" for port in PORTS])
    default_condition = "not (" + " or ".join(f"coalesce({c}, false)" for c in CONDITIONS) + ")"
    filters = [*CONDITIONS, default_condition]

    def route_and_read() -> None:
        ctx.ctas("bench_router", router_sql, partitioned_by=["joinery_port"])
        for port in PORTS:
            ctx.consume(port_sqls[f"bench_router_{port}"])

    def five_filters() -> None:
        for condition in filters:
            ctx.consume(f"select * from {s}.rt_upstream where {condition}")

    measurements = ctx.measure([Variant("joinery", route_and_read), Variant("five_filters", five_filters)])
    columns = ["id", "category", "amount", "region", "segment"]
    # New lines around the SELECTs: a compiled model may end in a `--` comment.
    ports = {port: ctx.fingerprint_of(f"(\n{port_sqls[f'bench_router_{port}']}\n)", columns) for port in PORTS}
    filtered = {
        port: ctx.fingerprint_of(f"(select * from {s}.rt_upstream where {condition})", columns)
        for port, condition in zip(PORTS, filters, strict=True)
    }
    return ctx.result(
        NAME,
        {"fact_rows": rows, "dim_rows": dims, "ports": len(PORTS)},
        measurements,
        [Bar("vs_five_filters", "joinery", "five_filters", 0.6)],
        checks=[agreement("same_result", {"joinery": ports, "five_filters": filtered})],
        port_rows={port: fingerprint[0] for port, fingerprint in ports.items()},
    )
