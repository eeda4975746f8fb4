"""TPC-H data and its refresh batches for the tpch_* cases.

The orders and customers come from `tpchgen-cli` (a Rust implementation of TPC-H's dbgen, pinned in
requirements.txt), written once per scale factor as parquet under the run's work folder and read by
Spark from there. Each refresh batch is TPC-H's refresh pair at its own sizes, plus updates:

- RF1: SF x 1,500 new orders with new keys (above every key so far) and the newest order dates;
- RF2: SF x 1,500 deletes of the oldest orders (the lowest keys still present);
- SF x 1,500 updates of recent orders (a slice of the highest original keys): a new status, price
  and comment;
- with `customers=True`, 0.1% of the customers get a new name and segment: their orders are spread
  over the whole table.

dbgen draws an order's date independently of its key; an OLTP system hands out keys in time order.
The orders are re-keyed in order-date order (o_orderkey = rank by o_orderdate, then dbgen's key),
so that "new", "oldest" and "recent" agree in keys and in dates, as in a system whose rows arrive
over time: RF1 and RF2 then each fall in one key slice (as in dbgen, whose refresh keys are slices
too) and in one or two order months.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ORDERS_PER_SF = 1_500_000
REFRESH_PER_SF = 1_500
ORDER_COLUMNS = [
    "o_orderkey",
    "o_custkey",
    "o_orderstatus",
    "o_totalprice",
    "o_orderdate",
    "o_orderpriority",
    "o_clerk",
    "o_shippriority",
    "o_comment",
    "o_ordermonth",
]
CUSTOMER_COLUMNS = [
    "c_custkey",
    "c_name",
    "c_address",
    "c_nationkey",
    "c_phone",
    "c_acctbal",
    "c_mktsegment",
    "c_comment",
]
# The first batch's o_updated_at; batch b's is b hours later. Every original order is older.
BATCH_EPOCH = "1999-01-01 00:00:00"
# The newest original order date is 1998-08-02; batch b's new orders are dated b days after it.
NEWEST_ORDER_DATE = "1998-08-02"


def scale_factor(orders: int) -> float:
    """The scale factor whose orders table has about `orders` rows (SF 1: 1.5M)."""
    return round(orders / ORDERS_PER_SF, 4)


def generate(work_dir: Path, sf: float) -> Path:
    """The folder of orders.parquet and customer.parquet at scale factor `sf`, generated once."""
    folder = work_dir / "tpch" / f"sf{sf:g}"
    if (folder / "orders.parquet").exists() and (folder / "customer.parquet").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    binary = Path(sys.executable).with_name("tpchgen-cli")
    subprocess.run(
        [str(binary), "parquet", "-s", f"{sf:g}", "--tables", "orders,customer", "--output-dir", str(folder)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return folder


def register(spark, folder: Path) -> None:
    """Temporary views `tpch_orders_raw` and `tpch_customer_raw` over the generated files, the orders
    re-keyed in date order with their order month."""
    spark.sql(
        f"create or replace temporary view tpch_orders_file using parquet options (path '{folder}/orders.parquet')"
    )
    spark.sql(
        f"create or replace temporary view tpch_customer_raw using parquet options (path '{folder}/customer.parquet')"
    )
    spark.sql("""
        create or replace temporary view tpch_orders_raw as
        select
            row_number() over (order by o_orderdate, o_orderkey) as o_orderkey,
            o_custkey, o_orderstatus, cast(o_totalprice as decimal(15, 2)) as o_totalprice, o_orderdate,
            o_orderpriority, o_clerk, o_shippriority, o_comment,
            date_format(o_orderdate, 'yyyy-MM') as o_ordermonth
        from tpch_orders_file
    """)


class Refresh:
    """The refresh batches of one scale factor: which keys each batch inserts, deletes and updates."""

    def __init__(self, orders: int, customers: int):
        self.orders = orders
        self.customers = customers
        self.size = max(round(orders * REFRESH_PER_SF / ORDERS_PER_SF), 1)

    def new_keys(self, batch: int) -> tuple[int, int]:
        """RF1 of `batch` (1, 2, ...): keys after every earlier batch's."""
        first = self.orders + (batch - 1) * self.size + 1
        return first, first + self.size - 1

    def deleted_keys(self, batch: int) -> tuple[int, int]:
        """RF2 of `batch`: the oldest original orders not deleted yet."""
        first = (batch - 1) * self.size + 1
        return first, first + self.size - 1

    def updated_keys(self, batch: int) -> tuple[int, int]:
        """The recent orders `batch` updates: a slice below the previous batch's, from the top."""
        last = self.orders - (batch - 1) * self.size
        return last - self.size + 1, last

    def changed_customers(self, batch: int) -> int:
        """0.1% of the customers, spread over all of them."""
        return max(self.customers // 1000, 1)

    def new_orders_sql(self, batch: int, source: str = "tpch_orders_raw") -> str:
        """RF1's rows, the columns of the orders: a template order's customer and amounts, a new key
        and the batch's date."""
        first, last = self.new_keys(batch)
        return f"""
            select
                {first} + t.o_orderkey - 1 as o_orderkey, t.o_custkey, 'O' as o_orderstatus,
                t.o_totalprice, date_add(date'{NEWEST_ORDER_DATE}', {batch}) as o_orderdate,
                t.o_orderpriority, t.o_clerk, t.o_shippriority, concat('rf1 batch {batch} ', t.o_comment) as o_comment,
                date_format(date_add(date'{NEWEST_ORDER_DATE}', {batch}), 'yyyy-MM') as o_ordermonth
            from {source} as t
            where t.o_orderkey between 1 and {last - first + 1}
        """

    def updated_orders_sql(self, batch: int, source: str) -> str:
        """The updated rows of the recent orders, read from `source` (the orders as they are)."""
        first, last = self.updated_keys(batch)
        return f"""
            select
                o_orderkey, o_custkey, 'F' as o_orderstatus, o_totalprice + 1 as o_totalprice, o_orderdate,
                o_orderpriority, o_clerk, o_shippriority, concat('updated in batch {batch}') as o_comment, o_ordermonth
            from {source}
            where o_orderkey between {first} and {last}
        """

    def customer_updates_sql(self, batch: int, source: str) -> str:
        step = max(self.customers // self.changed_customers(batch), 1)
        return f"""
            select
                c_custkey, concat('Customer#renamed#{batch}#', cast(c_custkey as string)) as c_name, c_address,
                c_nationkey, c_phone, c_acctbal, 'REFRESHED{batch}' as c_mktsegment, c_comment
            from {source}
            where pmod(c_custkey + {batch}, {step}) = 0
        """

    def batch_timestamp(self, batch: int) -> str:
        return f"timestamp'{BATCH_EPOCH}' + make_interval(0, 0, 0, 0, {batch}, 0, 0)"
