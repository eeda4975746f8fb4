"""Case fk_join_feed: the FK join over two Delta tables' change data feeds vs the plain rebuild.

Two Delta tables with `delta.enableChangeDataFeed`: orders (the wide orders of case fk_join: about 30
columns of mixed types) referencing customers (a tenth as many). Each batch changes 1% of the orders
by SQL (one MERGE: 70% new amounts, 20% moved to another customer, 10% deleted, every changed row's
27 other columns changed too) and 1% of the customers (one MERGE of new names). After each batch,
in alternating order:
- change_feed (bench_fkcf_join, joinery_upsert on delta): fk_join(change_feed=true) reads both feeds
  since the versions its last commit recorded and merges the new results of the affected orders;
- plain_rebuild (bench_fkcf_plain): dbt-spark's `table` of the same join from the current tables,
  what a user would write; the bar's baseline.
The first batch after the build is untimed at full size. Then the same on a fresh history of 4x the
orders, 1% of them changed per batch (`.x4`).
Bars (the change-feed issue): change_feed <= 0.7 x plain_rebuild at 1x, <= 0.4 x at the larger scale;
as a check, the change-feed run's statements per batch (its one model) <= 10: one joinery_upsert run
of the result (8 with the note's SET and RESET) plus 2.
After the last batch both tables must hold the same rows.
"""

from __future__ import annotations

from benchmarks.cases.fk_join import WIDE_GROUPS, wide_columns
from benchmarks.core import SCHEMA, Bar, Context, Measurement, agreement, log

NAME = "fk_join_feed"
TITLE = "FK join over Delta change feeds: incremental runs vs the plain rebuild, wide, 1% change per batch"
DEFAULT_ROWS = 1_000_000
TINY_ROWS = 1_000
SCALES = (1, 4)
FEED = "bench_fkcf_join"
PLAIN = "bench_fkcf_plain"
STATEMENTS_LIMIT = 10
COLUMNS = [
    "order_id",
    "customer_id",
    "amount",
    *(f"{k}{i}" for i in range(WIDE_GROUPS) for k in "dsn"),
    "customer_name",
]


def orders_sql(orders: int, customers: int) -> str:
    return f"""
        select id as order_id, pmod(xxhash64(id, 11), {customers}) as customer_id,
            cast(pmod(xxhash64(id, 12), 100000) as decimal(10, 2)) / 100 as amount, {wide_columns("id")[1:]}
        from range({orders})
    """


def order_changes_sql(orders: int, customers: int, batch: int) -> str:
    """1% of the orders, one row per order: a new amount (70%), another customer (20%) or a delete
    (10%, `op` 'd'); the other columns change with the batch."""
    changes = max(orders // 100, 1)
    return f"""
        select order_id, first(customer_id) as customer_id, first(amount) as amount,
            {", ".join(f"first({c}) as {c}" for c in COLUMNS[3:-1])}, first(op) as op
        from (
            select pmod(xxhash64({batch}, r, 13), {orders}) as order_id,
                case when r % 10 between 7 and 8 then pmod(xxhash64({batch}, r, 14), {customers})
                    else pmod(xxhash64(pmod(xxhash64({batch}, r, 13), {orders}), 11), {customers}) end as customer_id,
                cast(pmod(xxhash64({batch}, r, 15), 100000) as decimal(10, 2)) / 100 as amount,
                {wide_columns(f"xxhash64({batch}, r)")[1:]},
                case when r % 10 = 9 then 'd' else 'u' end as op
            from (select id as r from range({changes}))
        )
        group by order_id
    """


def customer_changes_sql(customers: int, batch: int) -> str:
    changes = max(customers // 100, 1)
    return f"""
        select distinct pmod(xxhash64({batch}, id, 21), {customers}) as customer_id,
            concat('customer_b{batch}_', cast(pmod(xxhash64({batch}, id, 21), {customers}) as string)) as customer_name
        from range({changes})
    """


def start(ctx: Context, orders: int) -> int:
    customers = max(orders // 10, 10)
    for name, select in [
        ("fkcf_orders", orders_sql(orders, customers)),
        (
            "fkcf_customers",
            f"""
            select id as customer_id, concat('customer_', cast(id as string)) as customer_name
            from range({customers})""",
        ),
    ]:
        ctx.drop(name)
        ctx.sql(
            f"create table {SCHEMA}.{name} using delta tblproperties (delta.enableChangeDataFeed = true) as {select}"
        )
    ctx.dbt.run(FEED, PLAIN, full_refresh=True, table_format="delta")
    return customers


def land(ctx: Context, orders: int, customers: int, batch: int) -> None:
    """One batch of upstream SQL: a MERGE into the orders, one into the customers."""
    ctx.sql(f"""
        merge into {SCHEMA}.fkcf_orders as target
        using ({order_changes_sql(orders, customers, batch)}) as changes
            on target.order_id = changes.order_id
        when matched and changes.op = 'd' then delete
        when matched then update set {", ".join(f"{c} = changes.{c}" for c in COLUMNS[1:-1])}
        when not matched and changes.op <> 'd' then insert ({", ".join(COLUMNS[:-1])})
            values ({", ".join(f"changes.{c}" for c in COLUMNS[:-1])})
    """)
    ctx.sql(f"""
        merge into {SCHEMA}.fkcf_customers as target
        using ({customer_changes_sql(customers, batch)}) as changes
            on target.customer_id = changes.customer_id
        when matched then update set customer_name = changes.customer_name
    """)


def play(ctx: Context, measurements: dict[str, Measurement], scale: int) -> None:
    orders = max(int(ctx.rows * scale), 100)
    suffix = "" if scale == 1 else f".x{scale}"
    log(f"  delta wide: change feeds, {orders:,} orders")
    customers = start(ctx, orders)
    batch = 0
    if not ctx.tiny:
        batch += 1
        land(ctx, orders, customers, batch)
        ctx.dbt.run(FEED, table_format="delta")
    for round_index in range(ctx.repeats):
        batch += 1
        land(ctx, orders, customers, batch)
        steps = [
            (f"change_feed{suffix}", ctx.dbt_step(FEED, table_format="delta")),
            (f"plain_rebuild{suffix}", ctx.dbt_step(PLAIN, table_format="delta")),
        ]
        ctx.timed_alternating(steps, measurements, round_index, f"batch {batch}, ")


def run(ctx: Context) -> dict:
    measurements: dict[str, Measurement] = {}
    scales = SCALES[:1] if ctx.tiny else SCALES
    outputs = {}
    for scale in scales:
        play(ctx, measurements, scale)
    for variant, model in [("change_feed", FEED), ("plain_rebuild", PLAIN)]:
        table = f"{SCHEMA}.{model}_delta"
        ctx.sql(f"refresh table {table}")
        outputs[variant] = ctx.fingerprint_of(table, COLUMNS)
    # The median batch: a batch the cost rule turns into a rebuild sends the full build's statements.
    statements = max(
        m.count_medians()[FEED]["statements"] for name, m in measurements.items() if name.startswith("change_feed")
    )
    bars = [Bar("change_feed_vs_plain_rebuild", "change_feed", "plain_rebuild", 0.7)]
    if len(scales) > 1:
        bars.append(
            Bar(
                f"change_feed_vs_plain_rebuild_x{scales[-1]}",
                f"change_feed.x{scales[-1]}",
                f"plain_rebuild.x{scales[-1]}",
                0.4,
            )
        )
    return ctx.result(
        NAME,
        {"orders": ctx.rows, "scales": list(scales), "changes_per_batch": "1% of the orders, 1% of the customers"},
        measurements,
        bars,
        checks=[
            {
                "name": "statements_per_batch",
                "value": statements,
                "limit": STATEMENTS_LIMIT,
                "pass": statements <= STATEMENTS_LIMIT,
            },
            agreement("same_result", outputs),
        ],
        repeats=ctx.repeats,
        output_rows=outputs["plain_rebuild"][0],
    )
