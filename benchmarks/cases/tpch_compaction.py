"""Case tpch_compaction: TPC-H's orders compacted from a snapshot and TPC-H's refresh batches.

Data: `tpchgen-cli` orders at scale factor 1 (1.5M orders) and 4 (6M), re-keyed in order-date
order (benchmarks/tpch.py says why). The snapshot (`tpch_snapshot`, parquet) is the orders with
`o_updated_at` (their order date) and `loaded_at` 0. Each batch appends to `tpch_deltas` (parquet)
TPC-H's refresh pair and updates: SF x 1,500 new orders (RF1), SF x 1,500 deletes of the oldest
orders (RF2, `is_deleted`), SF x 1,500 updates of recent orders; `loaded_at` is the batch number.

Per table format (delta, iceberg at SF 1 and 4; parquet at SF 1) and scale, each round lands one
batch and times, in a seeded order, the `dbt run` of:
- incremental: bench_tpch_compacted, `compact` under joinery_upsert, applying that batch;
- plain_table: bench_tpch_compacted_plain, the same `compact` SELECT as dbt-spark's `table`;
- dbt_merge (delta, iceberg): bench_tpch_compacted_merge, dbt-spark's `incremental` merge of the
  batch's newest versions, deletes kept as soft deletes (it cannot delete);
- on parquet, monthly and monthly_plain: the same two partitioned by order month;
then no_new_data: bench_tpch_compacted once more, with nothing new. After the rounds, full_build
(`--full-refresh` of bench_tpch_compacted) alternates with plain_table again (plain_for_full).
One untimed round comes first at full size. Each timed step counts its statements and commits.
After each scale every variant's live rows are compared (one agreement check).
Bars (the incremental-cost issue): delta and iceberg incremental <= 0.5 x plain_table and
<= 0.5 x dbt_merge at SF 1, <= 0.3 x plain_table and <= 0.5 x dbt_merge at SF 4; parquet
incremental <= 1.05 x plain_table, monthly <= 0.5 x monthly_plain; no_new_data <= 0.35 x
plain_table (SF 1); full_build <= 1.1 x plain_for_full; statements per incremental run <= dbt_merge
+ 2 and one commit (delta, iceberg).
"""

from __future__ import annotations

import os

from benchmarks import tpch
from benchmarks.core import SCHEMA, Bar, Context, Measurement, agreement_groups, log, round_orders
from benchmarks.dbt_bench import relation

NAME = "tpch_compaction"
TITLE = "TPC-H refresh (RF1 + RF2 + updates) compacted: incremental vs plain table and dbt-spark merge"
DEFAULT_ROWS = tpch.ORDERS_PER_SF
TINY_ROWS = 15_000
SCALES = tuple(float(s) for s in os.environ.get("JOINERY_TPCH_SCALES", "1,4").split(","))
MODEL = "bench_tpch_compacted"
PLAIN = "bench_tpch_compacted_plain"
MERGE = "bench_tpch_compacted_merge"
MONTHLY = "bench_tpch_monthly"
MONTHLY_PLAIN = "bench_tpch_monthly_plain"
MERGE_FORMATS = ("delta", "iceberg")
LIVE = "not coalesce(is_deleted, false)"


def snapshot_sql() -> str:
    return f"""
        select
            {", ".join(tpch.ORDER_COLUMNS)}, cast(o_orderdate as timestamp) as o_updated_at,
            cast(0 as bigint) as loaded_at
        from tpch_orders_raw
    """


def batch_sql(refresh: tpch.Refresh, batch: int) -> str:
    """One batch of delta rows: RF1's new orders, RF2's deletes, the updates; one row per key."""
    stamp = f"{refresh.batch_timestamp(batch)} as o_updated_at, cast({batch} as bigint) as loaded_at"
    first, last = refresh.deleted_keys(batch)
    columns = ", ".join(tpch.ORDER_COLUMNS)
    return f"""
        select {columns}, {stamp}, false as is_deleted from ({refresh.new_orders_sql(batch)})
        union all
        select {columns}, {stamp}, true as is_deleted from tpch_orders_raw where o_orderkey between {first} and {last}
        union all
        select {columns}, {stamp}, false as is_deleted from ({refresh.updated_orders_sql(batch, "tpch_orders_raw")})
    """


def formats_at(ctx: Context, scale: float) -> list[str]:
    """The formats measured at `scale`: all at SF 1, those with MERGE bars beyond."""
    return [f for f in ctx.formats if scale == 1 or f in MERGE_FORMATS]


def models_of(table_format: str) -> list[str]:
    if table_format in MERGE_FORMATS:
        return [MODEL, PLAIN, MERGE]
    return [MODEL, PLAIN, MONTHLY, MONTHLY_PLAIN]


class History:
    """The snapshot and the batches landed so far at one scale."""

    def __init__(self, ctx: Context, orders: int):
        self.ctx = ctx
        folder = tpch.generate(ctx.work_dir, tpch.scale_factor(orders))
        tpch.register(ctx.spark, folder)
        self.orders = ctx.spark.sql("select count(*) from tpch_orders_raw").collect()[0][0]
        customers = ctx.spark.sql("select count(*) from tpch_customer_raw").collect()[0][0]
        self.refresh = tpch.Refresh(self.orders, customers)
        ctx.ctas("tpch_snapshot", snapshot_sql())
        self.batch = 0
        self.land()

    def land(self) -> None:
        self.batch += 1
        if self.batch == 1:
            self.ctx.ctas("tpch_deltas", batch_sql(self.refresh, 1))
        else:
            self.ctx.sql(f"insert into {SCHEMA}.tpch_deltas {batch_sql(self.refresh, self.batch)}")


def variant(table_format: str, scale: float, name: str) -> str:
    return f"{table_format}.{name}" + ("" if scale == 1 else f".sf{scale:g}")


def measure_format(ctx: Context, history: History, table_format: str, scale: float, found: dict) -> None:
    models = models_of(table_format)
    ctx.dbt.run(*models, full_refresh=True, table_format=table_format)
    if not ctx.tiny:
        history.land()
        ctx.dbt.run(*models, table_format=table_format)

    def step(model: str, full_refresh: bool = False):
        return ctx.dbt_step(model, table_format=table_format, full_refresh=full_refresh)

    pairs = {"incremental": step(MODEL), "plain_table": step(PLAIN)}
    if table_format in MERGE_FORMATS:
        pairs["dbt_merge"] = step(MERGE)
    elif scale == 1:
        pairs.update({"monthly": step(MONTHLY), "monthly_plain": step(MONTHLY_PLAIN)})
    last = ctx.repeats - 1
    for round_index, order in enumerate(round_orders(list(pairs), ctx.repeats, seed=int(scale * 100))):
        history.land()
        for name in [*order, "no_new_data"]:
            timed(ctx, found, variant(table_format, scale, name), pairs.get(name) or step(MODEL), round_index == last)
    full = {"full_build": step(MODEL, full_refresh=True), "plain_for_full": step(PLAIN)}
    for round_index, order in enumerate(round_orders(list(full), ctx.repeats, seed=int(scale * 100) + 1)):
        for name in order:
            timed(ctx, found, variant(table_format, scale, name), full[name], round_index == last)


def timed(ctx: Context, found: dict[str, Measurement], name: str, step, keep_facts: bool) -> None:
    seconds = ctx.timed(step, found.setdefault(name, Measurement(name)), keep_facts=keep_facts)
    log(f"  {name}: {seconds:.2f}s")


def outputs_at(ctx: Context, table_format: str, scale: float) -> dict:
    """Every model's live rows at the end of a scale, fingerprinted over the order columns."""
    columns = [*tpch.ORDER_COLUMNS, "o_updated_at"]
    found = {}
    for model in models_of(table_format):
        table = relation(model, table_format)
        source = f"(select * from {table} where {LIVE})" if model == MERGE else table
        found[variant(table_format, scale, model)] = ctx.fingerprint_of(source, columns)
    return found


def bars_of(ctx: Context, scales) -> list[Bar]:
    bars = []
    for scale in scales:
        for f in formats_at(ctx, scale):
            name = lambda v, f=f, scale=scale: variant(f, scale, v)  # noqa: E731
            if f in MERGE_FORMATS:
                limit = 0.5 if scale == 1 else 0.3
                bars.append(Bar(f"{name('incremental')} vs plain", name("incremental"), name("plain_table"), limit))
                bars.append(Bar(f"{name('incremental')} vs dbt merge", name("incremental"), name("dbt_merge"), 0.5))
            else:
                bars.append(Bar(f"{name('incremental')} vs plain", name("incremental"), name("plain_table"), 1.05))
                bars.append(Bar(f"{name('monthly')} vs plain", name("monthly"), name("monthly_plain"), 0.5))
            if scale == 1:
                bars.append(Bar(f"{name('no_new_data')} vs plain", name("no_new_data"), name("plain_table"), 0.35))
            bars.append(Bar(f"{name('full_build')} vs plain", name("full_build"), name("plain_for_full"), 1.1))
    return bars


def statement_checks(found: dict[str, Measurement], formats, scales) -> list[dict]:
    """Per format and scale: an incremental run's statements <= dbt_merge's + 2, and one commit at most;
    a run with no new data commits nothing."""
    statements, commits = {}, {}
    for scale in scales:
        for f in formats:
            ours = found.get(variant(f, scale, "incremental"))
            if ours is None:
                continue
            mine = ours.count_medians()[MODEL]
            idle = found[variant(f, scale, "no_new_data")].count_medians()[MODEL]
            key = variant(f, scale, "incremental")
            commits[key] = {"incremental": mine["commits"], "no_new_data": idle["commits"]}
            commits[key]["pass"] = mine["commits"] <= 1 and idle["commits"] == 0
            theirs = found.get(variant(f, scale, "dbt_merge"))
            limit = theirs.count_medians()[MERGE]["statements"] + 2 if theirs else 12
            statements[key] = {"joinery": mine["statements"], "limit": limit, "pass": mine["statements"] <= limit}
    return [
        {
            "name": "statements_per_incremental_run",
            "kind": "count",
            "value": statements,
            "pass": all(v["pass"] for v in statements.values()),
        },
        {
            "name": "commits_per_run",
            "kind": "count",
            "value": commits,
            "pass": all(v["pass"] for v in commits.values()),
        },
    ]


def run(ctx: Context) -> dict:
    scales = SCALES[:1] if ctx.tiny else SCALES
    found: dict[str, Measurement] = {}
    outputs: dict[str, dict] = {}
    for scale in scales:
        orders = int(ctx.rows * scale)
        log(f"  TPC-H at SF {tpch.scale_factor(orders):g}")
        history = History(ctx, orders)
        for table_format in formats_at(ctx, scale):
            measure_format(ctx, history, table_format, scale, found)
        for table_format in formats_at(ctx, scale):
            # Every model brought to the last batch before comparing.
            ctx.dbt.run(*models_of(table_format), table_format=table_format)
            outputs[f"sf{scale:g}.{table_format}"] = outputs_at(ctx, table_format, scale)
    formats = sorted({f for scale in scales for f in formats_at(ctx, scale)})
    checks = [agreement_groups("same_result", _by_scale(outputs)), *statement_checks(found, formats, scales)]
    return ctx.result(
        NAME,
        {
            "orders": ctx.rows,
            "scales": ",".join(f"{s:g}" for s in scales),
            "formats": ",".join(ctx.formats),
            "batch": "SF x 1,500 new orders (RF1), SF x 1,500 deletes (RF2), SF x 1,500 updates",
        },
        found,
        bars_of(ctx, scales),
        checks=checks,
        repeats=ctx.repeats,
    )


def _by_scale(outputs: dict[str, dict]) -> dict[str, dict]:
    """One agreement group per scale, over every format's models (all must hold the same live rows)."""
    groups: dict[str, dict] = {}
    for key, fingerprints in outputs.items():
        groups.setdefault(key.split(".")[0], {}).update(fingerprints)
    return groups
