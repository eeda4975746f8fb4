"""Property: the incremental FK join, run once per arriving batch, ends equal to a full recompute from
all events and to a plain-Python reference, whatever the batch boundaries and arrival order.

Hypothesis generates the histories (derandomized, so CI sees the same ones every time): change
events on both sides with versions arriving out of order, foreign keys changing (to NULL, to keys
with no right row), deletes on both sides and re-publishes. Each history lives in its own disjoint
key space inside one pair of source tables, so one short sequence of dbt runs (one run per batch
index, then one full recompute) checks all of them at once.

The models run on delta, parquet and iceberg (the var fk_join_file_format), 120 histories on each:
the time is the sequence of dbt runs, one per format, not the number of histories. On iceberg the
models (incremental and full recompute) land in the `iceberg` catalog, namespaces
`iceberg.<schema>`; the sources stay in spark_catalog.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import strategies as st

from harness.sql import create_source, land, read_rows
from python_tests.fk_join_reference import (
    CUSTOMER_COLUMNS,
    ORDER_COLUMNS,
    RESULT_COLUMNS,
    derandomized_examples,
    fk_join_reference,
)

SCHEMA = "test_fk_join_property"
FULL_SCHEMA = "test_fk_join_property_full"
ORDERS_SOURCE = "fk_property_orders"
CUSTOMERS_SOURCE = "fk_property_customers"
BATCHES = 4
HISTORIES = 120
KEY_SPACE = 100  # history h owns keys h*100 .. h*100+99 on both sides
MODELS = ["fk_orders_state", "fk_customers_state", "fk_orders_customers", "fk_orders_customers_left"]
SOURCE_VARS = {
    "fk_join_source_schema": SCHEMA,
    "fk_join_orders_changelog": ORDERS_SOURCE,
    "fk_join_customers_changelog": CUSTOMERS_SOURCE,
}

# Foreign keys: NULL, one of three customers, or customer 9 that never gets a row.
foreign_keys = st.sampled_from([None, 0, 1, 2, 9])
order_events = st.lists(
    st.fixed_dictionaries(
        {
            "order_id": st.integers(0, 3),
            "customer_id": foreign_keys,
            "amount": st.sampled_from([10, 20]),  # few values: re-publishes of an unchanged row
            "op": st.sampled_from(["c", "u", "u", "d"]),
            "seq": st.integers(1, 12),
            "batch_id": st.integers(1, BATCHES),
        }
    ),
    max_size=10,
    unique_by=lambda event: (event["order_id"], event["seq"]),  # a version is unique per key
)
customer_events = st.lists(
    st.fixed_dictionaries(
        {
            "customer_id": st.integers(0, 2),
            "customer_name": st.sampled_from(["ann", "bob"]),
            "op": st.sampled_from(["c", "u", "d"]),
            "seq": st.integers(1, 8),
            "batch_id": st.integers(1, BATCHES),
        }
    ),
    max_size=6,
    unique_by=lambda event: (event["customer_id"], event["seq"]),
)


def generated_histories() -> list[tuple[list[dict], list[dict]]]:
    """HISTORIES (orders, customers) event lists from hypothesis, in a fixed (derandomized) order."""
    return derandomized_examples(st.tuples(order_events, customer_events), HISTORIES)


def in_key_space(history: int, orders: list[dict], customers: list[dict]) -> tuple[list[dict], list[dict]]:
    base = history * KEY_SPACE
    shifted_orders = [
        {
            **e,
            "order_id": base + e["order_id"],
            "customer_id": None if e["customer_id"] is None else base + e["customer_id"],
        }
        for e in orders
    ]
    shifted_customers = [{**e, "customer_id": base + e["customer_id"]} for e in customers]
    return shifted_orders, shifted_customers


@pytest.mark.parametrize("file_format", ["delta", "parquet", "iceberg"])
def test_incremental_equals_full_recompute_equals_reference(dbt, spark, file_format):
    histories = generated_histories()
    assert len(histories) >= 100
    all_orders, all_customers = [], []
    for number, (orders, customers) in enumerate(histories):
        shifted = in_key_space(number, orders, customers)
        all_orders += shifted[0]
        all_customers += shifted[1]

    # The sources stay in SCHEMA; each format's models get schemas of their own.
    incremental_schema, full_schema = f"{SCHEMA}_{file_format}", f"{FULL_SCHEMA}_{file_format}"
    run_vars = {**SOURCE_VARS, "fk_join_file_format": file_format}
    # file_format='iceberg' puts the models in the Iceberg catalog (docs/iceberg.md).
    catalog = "iceberg." if file_format == "iceberg" else ""
    for schema in (SCHEMA, f"{catalog}{incremental_schema}", f"{catalog}{full_schema}"):
        spark.execute(f"create schema if not exists {schema}")
        for model in MODELS:
            spark.execute(f"drop table if exists {schema}.{model}")
    create_source(spark, f"{SCHEMA}.{ORDERS_SOURCE}", ORDER_COLUMNS)
    create_source(spark, f"{SCHEMA}.{CUSTOMERS_SOURCE}", CUSTOMER_COLUMNS)

    by_batch_orders, by_batch_customers = defaultdict(list), defaultdict(list)
    for event in all_orders:
        by_batch_orders[event["batch_id"]].append(event)
    for event in all_customers:
        by_batch_customers[event["batch_id"]].append(event)
    for batch in range(1, BATCHES + 1):
        land(spark, f"{SCHEMA}.{ORDERS_SOURCE}", ORDER_COLUMNS, by_batch_orders[batch])
        land(spark, f"{SCHEMA}.{CUSTOMERS_SOURCE}", CUSTOMER_COLUMNS, by_batch_customers[batch])
        dbt.invoke("run", "--select", *MODELS, schema=incremental_schema, vars=run_vars)

    # The full recompute: the same models as plain tables over all events, in their own schema.
    dbt.invoke(
        "run",
        "--select",
        *MODELS,
        schema=full_schema,
        vars={**run_vars, "fk_join_state_materialization": "table", "fk_join_result_materialization": "table"},
    )

    for model, join_type in (("fk_orders_customers", "inner"), ("fk_orders_customers_left", "left")):
        expected = fk_join_reference(all_orders, all_customers, join_type)
        incremental = read_rows(spark, f"{catalog}{incremental_schema}.{model}", RESULT_COLUMNS)
        full = read_rows(spark, f"{catalog}{full_schema}.{model}", RESULT_COLUMNS)
        assert full == expected, f"{join_type}: full recompute differs from the reference"
        if incremental != expected:
            wrong = {row[0] // KEY_SPACE for row in (incremental - expected) + (expected - incremental)}
            first = min(wrong)
            got = sorted((r for r in incremental.elements() if r[0] // KEY_SPACE == first), key=str)
            want = sorted((r for r in expected.elements() if r[0] // KEY_SPACE == first), key=str)
            raise AssertionError(
                f"{join_type}: incremental result differs in {len(wrong)} histories, e.g. history {first}: "
                f"events {histories[first]}, got {got}, expected {want}"
            )
    for model in MODELS:
        details = spark.query(f"describe table extended {catalog}{incremental_schema}.{model}")
        assert next(value for key, value, *_ in details if key == "Provider").lower() == file_format, model
