"""Property: the incremental FK join over changelogs, run once per arriving batch, equals a full
recompute and a plain-Python reference after every run, whatever the batch boundaries and arrival
order; so do its two changelog states, and the rows its output changelog appends in each run are
the changes between the reference's results before and after the run.

Hypothesis generates the histories (derandomized, so CI sees the same ones every time): change
events on both sides with versions arriving out of order (an older `seq` in a later batch, also
after a delete), versions tying on `seq` (resolved as docs/fk_join.md says: later batch, then the
delete, then the greater xxhash64 of the row, which the reference computes as Spark does), foreign
keys changing to NULL, to a key with no live customer and back to a present one, deletes followed by
re-inserts on both sides and re-publishes of an unchanged row. test_the_histories_hold_every_case
counts each kind over all histories, batch by batch in arrival order (Coverage), and asserts at
least 20 of each and the exact counts (COVERAGE, which docs/guarantees.md quotes). A tie is counted
where a run has to decide it: two or more different versions at a key's winning `seq` among those
the run compares (the stored winner and the batch's own), under the rule that ranks the winner
above the runner-up (later batch, the delete, the row's hash). Each history lives in its own
disjoint key space inside one pair of source tables, so one short sequence of dbt runs checks all
of them at once.

On each of delta, parquet and iceberg (the var fk_join_file_format), after each of the BATCHES
batches lands:
- the incremental models run (states, inner and left join, and fk_orders_customers_changes), and a
  full recompute runs in its own schema: the same state and join models as plain tables (vars
  fk_join_state_materialization / fk_join_result_materialization = table) over the events landed
  so far;
- both states and both joins, incremental and full, are read back as multisets and compared with
  the reference over the events landed so far;
- the rows the output changelog appended in the run (the next `_joinery_run`; none when nothing
  changed) equal result_changes(inner result before, inner result after): on the first run an
  upsert per result row, then an upsert per changed order and a tombstone per vanished one;
- every joinery_upsert model took the path the run should: a full build on the first batch, then
  the incremental path: a MERGE on delta and iceberg (the node's message), a version holding the
  changed rows or no commit at all on parquet (the materialization's log line, never "full build").
  The examples' rebuild_threshold is 'always_incremental' (dbt_project.yml, var
  joinery_rebuild_threshold, which this test leaves unset), so the cost rule never turns one of
  these runs into a rebuild; the assertion would catch it if it did.

On iceberg the state and join models land in the `iceberg` catalog (namespaces `iceberg.<schema>`);
the sources and the output changelog (a parquet table) stay in spark_catalog.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import strategies as st

from harness.dbt import REPO_ROOT
from harness.sql import create_source, land, read_rows
from python_tests.fk_join_reference import (
    CUSTOMER_COLUMNS,
    ORDER_COLUMNS,
    RESULT_COLUMNS,
    derandomized_examples,
    fk_join_reference,
    latest_state,
    result_changes,
    version_rank,
)

SCHEMA = "test_fk_join_property"
FULL_SCHEMA = "test_fk_join_property_full"
ORDERS_SOURCE = "fk_property_orders"
CUSTOMERS_SOURCE = "fk_property_customers"
BATCHES = 4
HISTORIES = 500
KEY_SPACE = 100  # history h owns keys h*100 .. h*100+99 on both sides
MISSING_CUSTOMER = 9  # never gets a row
STATES = {"fk_orders_state": ("order_id", ORDER_COLUMNS), "fk_customers_state": ("customer_id", CUSTOMER_COLUMNS)}
JOINS = {"inner": "fk_orders_customers", "left": "fk_orders_customers_left"}
CHANGES = "fk_orders_customers_changes"
UPSERT_MODELS = [*STATES, *JOINS.values()]
CHANGE_COLUMNS = [*RESULT_COLUMNS, "_joinery_tombstone"]
SOURCE_VARS = {
    "fk_join_source_schema": SCHEMA,
    "fk_join_orders_changelog": ORDERS_SOURCE,
    "fk_join_customers_changelog": CUSTOMERS_SOURCE,
}
# A parquet run's log line (directory_commit/rewrite.sql): a version of changed rows, or no commit.
PARQUET_INCREMENTAL = re.compile(
    r"^joinery_upsert \S+: (\d+ inserted, \d+ updated, \d+ deleted;|no changed rows,|\d+ tombstones changed,)"
)
# What the histories hold, counted by Coverage. The histories are derandomized, so the counts are
# exact: docs/guarantees.md quotes them and test_the_histories_hold_every_case asserts both.
COVERAGE = {
    "deletes followed by a re-insert": 106,
    "ties at a key's winning sequence_by": 328,
    "ties decided by the later batch": 215,
    "ties decided by the delete": 49,
    "ties decided by the row's hash": 64,
    "foreign keys to NULL": 37,
    "foreign keys to a missing key": 114,
    "foreign keys back to a present key": 23,
    "re-publishes of an unchanged row": 66,
    "versions arriving out of order": 687,
    "late versions after a delete": 238,
}
MIN_COVERAGE = 20
GUARANTEES = REPO_ROOT / "docs" / "guarantees.md"

# Few keys, values and versions, so that ties, re-publishes and late versions are frequent.
order_events = st.lists(
    st.fixed_dictionaries(
        {
            "order_id": st.integers(0, 2),
            "customer_id": st.sampled_from([None, 0, 1, 2, MISSING_CUSTOMER]),
            "amount": st.sampled_from([10, 20]),
            "op": st.sampled_from(["c", "u", "u", "d"]),
            "seq": st.integers(1, 6),
            "batch_id": st.integers(1, BATCHES),
        }
    ),
    max_size=16,
)
customer_events = st.lists(
    st.fixed_dictionaries(
        {
            "customer_id": st.integers(0, 2),
            "customer_name": st.sampled_from(["ann", "bob"]),
            "op": st.sampled_from(["c", "u", "d"]),
            "seq": st.integers(1, 5),
            "batch_id": st.integers(1, BATCHES),
        }
    ),
    max_size=8,
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


class Coverage:
    """What the histories hold, counted batch by batch in arrival order against the reference's states:
    per arriving event, late versions; per key a batch touches, the tie its run decides (ties); per
    key between the states before and after a batch, re-inserts, unchanged re-publishes and the
    foreign key of a live order moving to NULL, to a key with no live customer, or from either to a
    live customer."""

    def __init__(self):
        self.counts = Counter()

    def add(self, orders: list[dict], customers: list[dict]) -> None:
        order_states = self.side(orders, "order_id", ("customer_id", "amount"))
        customer_states = self.side(customers, "customer_id", ("customer_name",))
        for batch in range(1, BATCHES + 1):
            present = {k for k, c in customer_states[batch].items() if c["op"] != "d"}
            previously_present = {k for k, c in customer_states[batch - 1].items() if c["op"] != "d"}
            for order_id, new in order_states[batch].items():
                old = order_states[batch - 1].get(order_id)
                if new["op"] == "d" or old is None or old["op"] == "d" or old["customer_id"] == new["customer_id"]:
                    continue
                if new["customer_id"] is None:
                    self.counts["foreign keys to NULL"] += 1
                elif new["customer_id"] not in present:
                    self.counts["foreign keys to a missing key"] += 1
                if old["customer_id"] not in previously_present and new["customer_id"] in present:
                    self.counts["foreign keys back to a present key"] += 1

    def ties(self, batch_events: list[dict], before: dict, after: dict, key: str) -> None:
        """The ties a batch's run must decide: per key, the versions at its winning `seq` that the
        run compares (the stored winner, if it has that `seq`, and the batch's own), when two or more
        differ; each counted once, under the rule that puts the winner above the runner-up."""
        columns = ORDER_COLUMNS if key == "order_id" else CUSTOMER_COLUMNS
        for k in {e[key] for e in batch_events}:
            top = after[k]["seq"]
            rivals = [e for e in batch_events if e[key] == k and e["seq"] == top]
            if before.get(k) is not None and before[k]["seq"] == top:
                rivals.append(before[k])
            ranks = sorted({version_rank(e, columns) for e in rivals}, reverse=True)
            if len(ranks) < 2:
                continue
            self.counts["ties at a key's winning sequence_by"] += 1
            (_, batch, delete, _), (_, rival_batch, rival_delete, _) = ranks[:2]
            rule = "later batch" if batch != rival_batch else "delete" if delete != rival_delete else "row's hash"
            self.counts[f"ties decided by the {rule}"] += 1

    def side(self, events: list[dict], key: str, values: tuple[str, ...]) -> list[dict]:
        """The reference's state after each batch (index 0: before the first), counting the cases of
        one side on the way."""
        states, landed = [{}], []
        for batch in range(1, BATCHES + 1):
            before = states[-1]
            arriving = [e for e in events if e["batch_id"] == batch]
            for event in arriving:
                same_key = [e for e in landed if e[key] == event[key]]
                if any(e["batch_id"] < batch and e["seq"] > event["seq"] for e in same_key):
                    self.counts["versions arriving out of order"] += 1
                stored = before.get(event[key])
                if stored is not None and stored["op"] == "d" and stored["seq"] > event["seq"]:
                    self.counts["late versions after a delete"] += 1
                landed.append(event)
            after = latest_state(landed, key)
            self.ties(arriving, before, after, key)
            for k, new in after.items():
                old = before.get(k)
                if old is None or new is old or new["op"] == "d":
                    continue
                if old["op"] == "d":
                    self.counts["deletes followed by a re-insert"] += 1
                elif all(old[v] == new[v] for v in values):
                    self.counts["re-publishes of an unchanged row"] += 1
            states.append(after)
        return states


def test_the_histories_hold_every_case(request):
    coverage = Coverage()
    for orders, customers in generated_histories():
        coverage.add(orders, customers)
    counts = {case: coverage.counts[case] for case in COVERAGE}
    request.config.cache.set("joinery/fk_join_property_coverage", counts)
    too_few = {case: n for case, n in counts.items() if n < MIN_COVERAGE}
    assert not too_few, f"the histories hold too few of: {too_few} (all counts: {counts})"
    assert counts == COVERAGE, f"the histories' counts changed: {counts}; update COVERAGE and docs/guarantees.md"
    documented = " ".join(GUARANTEES.read_text().split())
    missing = [f"{n} {case}" for case, n in counts.items() if f"{n} {case}" not in documented]
    assert not missing, f"docs/guarantees.md does not quote the asserted counts: {missing}"


def expected_state(events: list[dict], key: str, columns: dict[str, str]) -> Counter[tuple]:
    """The state rows changelog_state holds: the winning version, its tombstone flag and arrival."""
    return Counter(
        (*(e[name] for name in columns), e["op"] == "d", e["batch_id"]) for e in latest_state(events, key).values()
    )


def assert_same(what: str, got: Counter, expected: Counter, histories: list) -> None:
    """Equal multisets, or an error naming the first history (by key space) whose rows differ."""
    if got == expected:
        return
    wrong = {row[0] // KEY_SPACE for row in (got - expected) + (expected - got)}
    first = min(wrong)
    mine = sorted((r for r in got.elements() if r[0] // KEY_SPACE == first), key=str)
    want = sorted((r for r in expected.elements() if r[0] // KEY_SPACE == first), key=str)
    raise AssertionError(
        f"{what} differs in {len(wrong)} histories, e.g. history {first}: events {histories[first]}, "
        f"got {mine}, expected {want}"
    )


def assert_path(result, file_format: str, batch: int) -> None:
    """The first batch builds every joinery_upsert model in full; every later one takes the incremental path."""
    for model in UPSERT_MODELS:
        node = next(i for i in result.nodes if i.endswith("." + model))
        if file_format == "parquet":
            lines = [line for n, line in result.logs if n == node and line.startswith("joinery_upsert ")]
            assert len(lines) == 1, (batch, model, lines)
            incremental = PARQUET_INCREMENTAL.match(lines[0]) is not None
            assert incremental != (batch == 1), (batch, model, lines[0])
            assert batch > 1 or "(first build)" in lines[0], (batch, model, lines[0])
        else:
            message = result.nodes[node]["message"]
            assert message.startswith("MERGE") == (batch > 1), (batch, model, message)


@pytest.mark.parametrize("file_format", ["delta", "parquet", "iceberg"])
def test_incremental_equals_full_recompute_equals_reference_after_every_batch(dbt, spark, file_format):
    histories = generated_histories()
    assert len(histories) == HISTORIES
    shifted = [in_key_space(number, orders, customers) for number, (orders, customers) in enumerate(histories)]
    all_orders = [event for orders, _ in shifted for event in orders]
    all_customers = [event for _, customers in shifted for event in customers]

    # The sources and the output changelog stay in spark_catalog; each format's models get schemas of their own.
    incremental_schema, full_schema = f"{SCHEMA}_{file_format}", f"{FULL_SCHEMA}_{file_format}"
    run_vars = {**SOURCE_VARS, "fk_join_file_format": file_format}
    full_vars = {**run_vars, "fk_join_state_materialization": "table", "fk_join_result_materialization": "table"}
    # file_format='iceberg' puts the models in the Iceberg catalog (docs/iceberg.md).
    catalog = "iceberg." if file_format == "iceberg" else ""
    for schema in (SCHEMA, incremental_schema, f"{catalog}{incremental_schema}", f"{catalog}{full_schema}"):
        spark.execute(f"create schema if not exists {schema}")
        for model in [*UPSERT_MODELS, CHANGES]:
            spark.execute(f"drop table if exists {schema}.{model}")
    create_source(spark, f"{SCHEMA}.{ORDERS_SOURCE}", ORDER_COLUMNS)
    create_source(spark, f"{SCHEMA}.{CUSTOMERS_SOURCE}", CUSTOMER_COLUMNS)

    sources = [(ORDERS_SOURCE, ORDER_COLUMNS, all_orders), (CUSTOMERS_SOURCE, CUSTOMER_COLUMNS, all_customers)]
    previous_inner, last_run = Counter(), 0
    for batch in range(1, BATCHES + 1):
        for source, columns, events in sources:
            land(spark, f"{SCHEMA}.{source}", columns, [e for e in events if e["batch_id"] == batch])
        incremental = dbt.invoke("run", "--select", *UPSERT_MODELS, CHANGES, schema=incremental_schema, vars=run_vars)
        assert_path(incremental, file_format, batch)
        dbt.invoke("run", "--select", *UPSERT_MODELS, schema=full_schema, vars=full_vars)

        orders = [e for e in all_orders if e["batch_id"] <= batch]
        customers = [e for e in all_customers if e["batch_id"] <= batch]
        for model, (key, columns) in STATES.items():
            expected = expected_state(orders if key == "order_id" else customers, key, columns)
            state_columns = [*columns, "_joinery_tombstone", "_joinery_changed_at"]
            for schema in (incremental_schema, full_schema):
                got = read_rows(spark, f"{catalog}{schema}.{model}", state_columns)
                assert_same(f"batch {batch}, {schema}.{model}", got, expected, histories)
        for join_type, model in JOINS.items():
            expected = fk_join_reference(orders, customers, join_type)
            for schema in (incremental_schema, full_schema):
                got = read_rows(spark, f"{catalog}{schema}.{model}", RESULT_COLUMNS)
                assert_same(f"batch {batch}, {schema}.{model}", got, expected, histories)

        # The output changelog's rows of this run: the next run number, or no row when nothing changed.
        inner = fk_join_reference(orders, customers, "inner")
        logged = read_rows(spark, f"{incremental_schema}.{CHANGES}", [*CHANGE_COLUMNS, "_joinery_run"])
        appended = Counter({row: n for row, n in logged.items() if row[-1] > last_run})
        expected_changes = result_changes(previous_inner, inner)
        runs = {row[-1] for row in appended}
        assert runs == ({last_run + 1} if expected_changes else set()), (batch, last_run, runs)
        got = Counter({row[:-1]: n for row, n in appended.items()})
        assert_same(f"batch {batch}, the changes run {last_run + 1} appended", got, expected_changes, histories)
        previous_inner, last_run = inner, max(runs, default=last_run)

    for model in UPSERT_MODELS:
        details = spark.query(f"describe table extended {catalog}{incremental_schema}.{model}")
        assert next(value for key, value, *_ in details if key == "Provider").lower() == file_format, model
