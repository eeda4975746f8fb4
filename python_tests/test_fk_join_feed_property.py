"""Property: fk_join over change feeds, run after every round of upstream SQL, equals a full
recompute and a plain-Python reference after every run, inner and left.

Hypothesis generates the histories (derandomized): per round, two commits' worth of changes on each
of two Delta tables, applied by the SQL an upstream job would send (DELETE, MERGE, INSERT and
UPDATE statements). They include deletes followed by re-inserts (in one round and across rounds),
foreign keys moved to NULL, to a customer that does not exist and back, customers deleted while
orders reference them, keys changed twice in one round and unchanged re-publishes; the test counts
each kind over all histories and asserts at least 20 of each. Each history has its own key space
in one pair of tables, so one dbt run per round checks all of them: the incremental models, then
the full-recompute models (--full-refresh), both read back as multisets and compared with the
reference. Every incremental run must have taken the MERGE path.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import strategies as st

from harness.sql import read_rows, sql_literal
from python_tests.fk_join_reference import derandomized_examples
from python_tests.test_fk_join_feed import RESULT_COLUMNS, Tables, copy_project, values

SCHEMA = "test_fk_join_feed_property"
PROPERTY_SOURCES = "test_fk_join_feed_property_sources"
ROUNDS = 4
HISTORIES = 200
KEY_SPACE = 100
INCREMENTAL = ["feed_orders_customers", "feed_orders_customers_left"]
FULL = {"inner": "feed_full_inner", "left": "feed_full_left"}
MISSING_CUSTOMER = 9

order_change = st.one_of(
    st.tuples(
        st.just("upsert"),
        st.integers(0, 3),
        st.sampled_from([None, None, 0, 1, 2, MISSING_CUSTOMER]),
        st.sampled_from([10, 20]),
    ),
    st.tuples(st.just("delete"), st.integers(0, 3), st.none(), st.none()),
)
customer_change = st.one_of(
    st.tuples(st.just("upsert"), st.integers(0, 2), st.sampled_from(["ann", "bob"])),
    st.tuples(st.just("delete"), st.integers(0, 2), st.none()),
)
# A round: two commits, each with its changes to orders and to customers.
commit = st.tuples(st.lists(order_change, max_size=4), st.lists(customer_change, max_size=3))
history = st.lists(st.lists(commit, min_size=2, max_size=2), min_size=ROUNDS, max_size=ROUNDS)


def generated_histories() -> list:
    return derandomized_examples(history, HISTORIES)


class Coverage:
    """What the histories contain, counted while they are applied in Python."""

    def __init__(self):
        self.counts = Counter()

    def order_upsert(
        self, tables: Tables, order_id: int, customer_id, amount, deleted_before: set, round_keys: Counter
    ):
        old = tables.orders.get(order_id)
        if order_id in deleted_before:
            self.counts["order deleted, then inserted again"] += 1
        if old is not None and old == (customer_id, amount):
            self.counts["unchanged re-publish"] += 1
        if old is not None and old[0] is not None and customer_id is None:
            self.counts["foreign key to NULL"] += 1
        if old is not None and customer_id is not None and customer_id not in tables.customers:
            self.counts["foreign key to a missing customer"] += 1
        if old is not None and (old[0] is None or old[0] not in tables.customers) and customer_id in tables.customers:
            self.counts["foreign key back to a present customer"] += 1
        round_keys[order_id] += 1
        if round_keys[order_id] == 2:
            self.counts["order changed twice in one round"] += 1

    def customer_delete(self, tables: Tables, customer_id: int):
        if any(order[0] == customer_id for order in tables.orders.values()):
            self.counts["customer deleted while orders reference it"] += 1


def apply_commit(
    tables: Tables,
    base: dict,
    coverage: Coverage,
    changes: list,
    deleted_before: set,
    round_keys: Counter,
    use_merge: bool,
) -> None:
    """One commit of every history: deletes first, then upserts (MERGE, or INSERT and UPDATE), per table.
    `changes`: [(history index, order changes, customer changes)]."""
    order_deletes, order_upserts, customer_deletes, customer_upserts = {}, {}, {}, {}
    for h, orders, customers in changes:
        for kind, key, name in customers:
            target = customer_deletes if kind == "delete" else customer_upserts
            customer_deletes.pop(base[h] + key, None)
            customer_upserts.pop(base[h] + key, None)
            target[base[h] + key] = name
        for kind, key, customer, amount in orders:
            order_deletes.pop(base[h] + key, None)
            order_upserts.pop(base[h] + key, None)
            fk = None if customer is None else base[h] + customer
            (order_deletes if kind == "delete" else order_upserts)[base[h] + key] = (fk, amount)
    for customer_id in customer_deletes:
        if customer_id in tables.customers:
            coverage.customer_delete(tables, customer_id)
            del tables.customers[customer_id]
    if customer_deletes:
        tables.sql(f"delete from {{s}}.customers where customer_id in ({', '.join(map(str, customer_deletes))})")
    for order_id in order_deletes:
        if order_id in tables.orders:
            del tables.orders[order_id]
            deleted_before.add(order_id)
    if order_deletes:
        tables.sql(f"delete from {{s}}.orders where order_id in ({', '.join(map(str, order_deletes))})")
    upsert(tables, "customers", "customer_id", {k: (v,) for k, v in customer_upserts.items()}, use_merge)
    tables.customers.update(customer_upserts)
    for order_id, (fk, amount) in order_upserts.items():
        coverage.order_upsert(tables, order_id, fk, amount, deleted_before, round_keys)
        deleted_before.discard(order_id)
    upsert(tables, "orders", "order_id", order_upserts, use_merge)
    tables.orders.update(order_upserts)


def upsert(tables: Tables, table: str, key: str, rows: dict, use_merge: bool) -> None:
    """Rows {key: values} into a source table: one MERGE, or one INSERT of the new keys and one UPDATE."""
    if not rows:
        return
    columns = ["order_id", "customer_id", "amount"] if table == "orders" else ["customer_id", "customer_name"]
    existing = tables.orders if table == "orders" else tables.customers
    if use_merge:
        source = " union all ".join(
            "select "
            + ", ".join(f"{sql_literal(value)} as {column}" for value, column in zip((k, *v), columns, strict=True))
            for k, v in rows.items()
        )
        tables.sql(
            f"merge into {{s}}.{table} as t using ({source}) as s on t.{key} = s.{key} "
            "when matched then update set * when not matched then insert *"
        )
        return
    new = {k: v for k, v in rows.items() if k not in existing}
    if new:
        tables.sql(f"insert into {{s}}.{table} values " + ", ".join(values((k, *v)) for k, v in new.items()))
    old = [k for k in rows if k in existing]
    if old:
        assignments = ", ".join(
            f"{column} = case {key} " + " ".join(f"when {k} then {sql_literal(rows[k][i])}" for k in old) + " end"
            for i, column in enumerate(columns[1:])
        )
        tables.sql(f"update {{s}}.{table} set {assignments} where {key} in ({', '.join(map(str, old))})")


@pytest.fixture(scope="module")
def project(dbt, tmp_path_factory):
    return copy_project(dbt, tmp_path_factory, SCHEMA)


def run(project, *args):
    return project.invoke("run", *args, schema=SCHEMA, vars={"feed_schema": PROPERTY_SOURCES})


def test_incremental_equals_full_recompute_equals_reference_after_every_run(project, spark):
    histories = generated_histories()
    tables = Tables(spark, PROPERTY_SOURCES)
    tables.create()
    base = {h: h * KEY_SPACE for h in range(len(histories))}
    coverage = Coverage()
    deleted_before: set = set()
    run(project, "--full-refresh", "--select", *INCREMENTAL)
    for round_index in range(ROUNDS):
        round_keys: Counter = Counter()
        for position in range(2):
            changes = [(h, *rounds[round_index][position]) for h, rounds in enumerate(histories)]
            apply_commit(tables, base, coverage, changes, deleted_before, round_keys, use_merge=position == 0)
        incremental = run(project, "--select", *INCREMENTAL)
        for model in INCREMENTAL:
            message = next(n["message"] for i, n in incremental.nodes.items() if i.endswith("." + model))
            assert message.startswith("MERGE"), f"round {round_index + 1}, {model}: {message}"
        run(project, "--full-refresh", "--select", *FULL.values())
        for join_type, model in [("inner", INCREMENTAL[0]), ("left", INCREMENTAL[1])]:
            expected = tables.expected(join_type)
            assert read_rows(spark, f"{SCHEMA}.{model}", RESULT_COLUMNS) == expected, (round_index, join_type)
            assert read_rows(spark, f"{SCHEMA}.{FULL[join_type]}", RESULT_COLUMNS) == expected, (round_index, join_type)
    too_few = {
        kind: coverage.counts[kind]
        for kind in [
            "order deleted, then inserted again",
            "unchanged re-publish",
            "foreign key to NULL",
            "foreign key to a missing customer",
            "foreign key back to a present customer",
            "order changed twice in one round",
            "customer deleted while orders reference it",
        ]
        if coverage.counts[kind] < 20
    }
    assert not too_few, f"the histories hold too few of: {too_few} (all counts: {dict(coverage.counts)})"
