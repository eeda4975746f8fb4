"""Case tpch_fk_feed: TPC-H's orders joined to their customer over the two tables' change data feeds.

Data: `tpchgen-cli` orders and customers at scale factor 1 and 4 (benchmarks/tpch.py), written as
Delta tables with `delta.enableChangeDataFeed` (`tpch_orders`, `tpch_customer`). Each batch is
upstream SQL as an OLTP system sends it: an INSERT of TPC-H's RF1 (SF x 1,500 new orders), a DELETE
of RF2 (the SF x 1,500 oldest orders), an UPDATE of SF x 1,500 recent orders; in the `customers`
variant also an UPDATE of 0.1% of the customers, whose orders are spread over the whole table.
After each batch, in alternating order:
- incremental: bench_tpch_fk_feed, `fk_join(change_feed=true)` under joinery_upsert on delta, reading
  both feeds since the versions its last commit recorded;
- plain_table: bench_tpch_fk_plain, dbt-spark's `table` of the same join from the current tables.
Then no_new_data: the incremental model again with no upstream change. After each variant the two
tables must hold the same rows. Bars (the incremental-cost issue): orders refreshed, incremental <=
0.5 x plain_table at SF 1 and <= 0.3 x at SF 4; with the customers, <= 1.0 x and <= 0.6 x; no new
data <= 0.35 x at SF 1, and no commit. At `--rows tiny` (the smoke test): SF 1's `orders` variant only.
"""

from __future__ import annotations

import os

from benchmarks import tpch
from benchmarks.core import SCHEMA, Bar, Context, Measurement, agreement_groups, log, round_orders

NAME = "tpch_fk_feed"
TITLE = "TPC-H refresh over change feeds: fk_join(change_feed=true) of orders and customers vs the plain table"
DEFAULT_ROWS = tpch.ORDERS_PER_SF
TINY_ROWS = 15_000
SCALES = tuple(float(s) for s in os.environ.get("JOINERY_TPCH_SCALES", "1,4").split(","))
FEED = "bench_tpch_fk_feed"
PLAIN = "bench_tpch_fk_plain"
VARIANTS = ("orders", "customers")
COLUMNS = [*tpch.ORDER_COLUMNS, "c_name", "c_mktsegment", "c_nationkey"]


class Upstream:
    """The two Delta tables at one scale, and the batches landed in them so far."""

    def __init__(self, ctx: Context, orders: int):
        self.ctx = ctx
        tpch.register(ctx.spark, tpch.generate(ctx.work_dir, tpch.scale_factor(orders)))
        self.orders = ctx.spark.sql("select count(*) from tpch_orders_raw").collect()[0][0]
        customers = ctx.spark.sql("select count(*) from tpch_customer_raw").collect()[0][0]
        self.refresh = tpch.Refresh(self.orders, customers)
        properties = "tblproperties (delta.enableChangeDataFeed = true, delta.enableDeletionVectors = true)"
        for name, select in [
            ("tpch_orders", f"select {', '.join(tpch.ORDER_COLUMNS)} from tpch_orders_raw order by o_orderkey"),
            ("tpch_customer", f"select {', '.join(tpch.CUSTOMER_COLUMNS)} from tpch_customer_raw"),
        ]:
            ctx.drop(name)
            ctx.sql(f"create table {SCHEMA}.{name} using delta {properties} as {select}")
        self.batch = 0

    def land(self, customers: bool) -> None:
        """One batch of upstream statements, as an OLTP system's change capture would write them."""
        self.batch += 1
        batch, refresh = self.batch, self.refresh
        first, last = refresh.deleted_keys(batch)
        low, high = refresh.updated_keys(batch)
        orders = f"{SCHEMA}.tpch_orders"
        self.ctx.sql(f"insert into {orders} {refresh.new_orders_sql(batch)}")
        self.ctx.sql(f"delete from {orders} where o_orderkey between {first} and {last}")
        self.ctx.sql(f"""
            update {orders} set o_orderstatus = 'F', o_totalprice = o_totalprice + 1,
                o_comment = 'updated in batch {batch}'
            where o_orderkey between {low} and {high}
        """)
        if customers:
            step = max(refresh.customers // refresh.changed_customers(batch), 1)
            self.ctx.sql(f"""
                update {SCHEMA}.tpch_customer
                set c_name = concat('Customer#renamed#{batch}#', cast(c_custkey as string)),
                    c_mktsegment = 'REFRESHED{batch}'
                where pmod(c_custkey + {batch}, {step}) = 0
            """)


def variant(name: str, kind: str, scale: float) -> str:
    return f"{kind}.{name}" + ("" if scale == 1 else f".sf{scale:g}")


def measure(ctx: Context, upstream: Upstream, kind: str, scale: float, found: dict) -> None:
    customers = kind == "customers"
    ctx.dbt.run(FEED, PLAIN, full_refresh=True, table_format="delta")
    if not ctx.tiny:
        upstream.land(customers)
        ctx.dbt.run(FEED, PLAIN, table_format="delta")
    steps = {
        "incremental": ctx.dbt_step(FEED, table_format="delta"),
        "plain_table": ctx.dbt_step(PLAIN, table_format="delta"),
    }
    last = ctx.repeats - 1
    for round_index, order in enumerate(round_orders(list(steps), ctx.repeats, seed=int(scale * 100) + len(kind))):
        upstream.land(customers)
        for name in [*order, "no_new_data"]:
            label = variant(name, kind, scale)
            seconds = ctx.timed(
                steps.get(name) or steps["incremental"],
                found.setdefault(label, Measurement(label)),
                keep_facts=round_index == last,
            )
            log(f"  {label}: {seconds:.2f}s")


def outputs(ctx: Context, kind: str, scale: float) -> dict:
    found = {}
    for model in (FEED, PLAIN):
        table = f"{SCHEMA}.{model}_delta"
        ctx.sql(f"refresh table {table}")
        found[variant(model, kind, scale)] = ctx.fingerprint_of(table, COLUMNS)
    return found


def bars_of(scales, variants) -> list[Bar]:
    limits = {("orders", 1): 0.5, ("orders", 4): 0.3, ("customers", 1): 1.0, ("customers", 4): 0.6}
    bars = []
    for scale in scales:
        for kind in variants:
            name = lambda v, kind=kind, scale=scale: variant(v, kind, scale)  # noqa: E731
            limit = limits.get((kind, scale), 1.0)
            bars.append(Bar(f"{name('incremental')} vs plain", name("incremental"), name("plain_table"), limit))
            if scale == 1:
                bars.append(Bar(f"{name('no_new_data')} vs plain", name("no_new_data"), name("plain_table"), 0.35))
    return bars


def commit_check(found: dict[str, Measurement]) -> dict:
    idle = {}
    for name, measured in found.items():
        if ".no_new_data" in name:
            counts = measured.count_medians()[FEED]
            idle[name] = {"commits": counts["commits"], "statements": counts["statements"]}
            idle[name]["pass"] = counts["commits"] == 0
    return {
        "name": "no_commit_without_new_data",
        "kind": "count",
        "value": idle,
        "pass": all(entry["pass"] for entry in idle.values()),
    }


def run(ctx: Context) -> dict:
    scales = SCALES[:1] if ctx.tiny else SCALES
    variants = ctx.measured(VARIANTS)
    found: dict[str, Measurement] = {}
    groups: dict[str, dict] = {}
    for scale in scales:
        orders = int(ctx.rows * scale)
        for kind in variants:
            log(f"  TPC-H at SF {tpch.scale_factor(orders):g}, {kind}")
            upstream = Upstream(ctx, orders)
            measure(ctx, upstream, kind, scale, found)
            ctx.dbt.run(FEED, PLAIN, table_format="delta")
            groups[f"sf{scale:g}.{kind}"] = outputs(ctx, kind, scale)
    return ctx.result(
        NAME,
        {
            "orders": ctx.rows,
            "scales": ",".join(f"{s:g}" for s in scales),
            "variants": ",".join(variants),
            "batch": "RF1 insert, RF2 delete, SF x 1,500 updates; customers: + 0.1% of the customers updated",
        },
        found,
        bars_of(scales, variants),
        checks=[agreement_groups("same_result", groups), commit_check(found)],
        repeats=ctx.repeats,
    )
