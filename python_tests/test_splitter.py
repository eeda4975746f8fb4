"""The splitter (seed document 002) on real Spark tables: route / port / route_union routers built
by dbt, their ports read back and checked against a plain-Python reading of the seed CSVs, the
partition pruning of a port, the generic test failing on a tampered router, and compile errors."""

from __future__ import annotations

import csv
import re

import pytest

from harness.dbt import REPO_ROOT

SCHEMA = "test_splitter"
SEEDS = REPO_ROOT / "seeds" / "splitter"
RECORD_TYPES = {"click": ("url", "duration_ms"), "purchase": ("sku", "amount"), "signup": ("plan", "referrer")}


def seed(name: str) -> list[dict[str, str | None]]:
    with (SEEDS / f"{name}.csv").open() as handle:
        return [{k: (v if v != "" else None) for k, v in row.items()} for row in csv.DictReader(handle)]


def as_int(value: str | None) -> int | None:
    return None if value is None else int(value)


@pytest.fixture(scope="module")
def built(dbt):
    # One dbt invocation: input seeds, routers, ports and the routing tests (rows are checked below
    # against the CSVs in Python, so the equal_rows tests and expected seeds are left to `make demo`).
    result = dbt.invoke(
        "build",
        "--select",
        "path:seeds/splitter",
        "path:models/examples/splitter",
        "--exclude",
        "path:seeds/splitter/expected",
        "test_name:equal_rows",
        "test_name:unique",
        "test_name:not_null",
        "test_name:accepted_values",
        schema=SCHEMA,
    )
    return result


def test_generic_tests_pass_on_every_example_router(built):
    statuses = {node: info["status"] for node, info in built.nodes.items() if "ports_partition_input" in node}
    assert len(statuses) == 3, statuses
    assert set(statuses.values()) == {"pass"}, statuses


def test_union_router_splits_one_port_per_record_type(built, spark):
    expected: dict[str, list[tuple]] = {name: [] for name in RECORD_TYPES}
    expected_errors = []
    for row in seed("splitter_raw_events"):
        filled = [name for name, (first, _) in RECORD_TYPES.items() if row[first] is not None]
        if len(filled) == 1:
            first, second = RECORD_TYPES[filled[0]]
            expected[filled[0]].append((int(row["event_id"]), row[first], row[second]))
        else:
            expected_errors.append((int(row["event_id"]), 102 if not filled else 103))

    for name, (first, second) in RECORD_TYPES.items():
        # The port's `payload` is the alternative's own record: its fields are read directly.
        rows = spark.query(
            f"select event_id, cast(payload.{first} as string), cast(payload.{second} as string) "
            f"from {SCHEMA}.splitter_events_{name}"
        )
        assert sorted(rows) == sorted(expected[name]), name
        payload_type = dict((r[0], r[1]) for r in spark.query(f"describe {SCHEMA}.splitter_events_{name}"))["payload"]
        assert payload_type.startswith("struct<") and f"{first}:" in payload_type and "click:" not in payload_type

    errors = spark.query(
        f"select event_id, joinery_error_code, joinery_error_message from {SCHEMA}.splitter_events_error"
    )
    assert sorted((e, c) for e, c, _ in errors) == sorted(expected_errors)
    assert all(message.startswith(f"InvalidEntry({code})") for _, code, message in errors)


def filled_contacts(contacts: list[dict], directory_rows: list[dict]) -> list[tuple]:
    """splitter_contacts_filled in plain Python: a contact without an email takes the directory's."""
    directory = {int(r["contact_id"]): r["email"] for r in directory_rows}
    expected = []
    for row in contacts:
        contact_id, email = int(row["contact_id"]), row["email"]
        if email is None or not email.strip():
            email, source = directory.get(contact_id), "directory" if contact_id in directory else "none"
        else:
            source = "input"
        expected.append((contact_id, row["name"], email, as_int(row["lifetime_value"]), source))
    return sorted(expected)


def missing_email_ids(contacts: list[dict]) -> list[int]:
    """The contact ids port missing_email holds."""
    return sorted(int(r["contact_id"]) for r in contacts if r["email"] is None or not r["email"].strip())


def test_contacts_without_email_are_filled_and_every_contact_appears_once(built, spark):
    expected = filled_contacts(seed("splitter_contacts"), seed("splitter_directory"))
    assert spark.rows(f"{SCHEMA}.splitter_contacts_filled", order_by="contact_id") == expected
    missing = [r[0] for r in spark.rows(f"{SCHEMA}.splitter_contacts_missing_email", order_by="contact_id")]
    assert missing == missing_email_ids(seed("splitter_contacts"))


def test_all_mode_puts_a_row_in_every_port_whose_condition_holds(built, spark):
    expected = []
    for row in seed("splitter_contacts"):
        value, email = as_int(row["lifetime_value"]), row["email"]
        conditions = {
            "high_value": None if value is None else value >= 1000,
            "academic": None if email is None else email.endswith(".edu"),
        }
        ports = [name for name, holds in conditions.items() if holds]
        if None in conditions.values():
            ports.append("unroutable")
        expected += [(int(row["contact_id"]), port) for port in ports or ["other"]]
    actual = spark.query(f"select contact_id, joinery_port from {SCHEMA}.splitter_contacts_segments")
    assert sorted(actual) == sorted(expected)


def test_a_port_reads_only_its_partition(built, spark):
    partitions = sorted(r[0] for r in spark.query(f"show partitions {SCHEMA}.splitter_events_by_type"))
    assert partitions == ["joinery_port=click", "joinery_port=error", "joinery_port=purchase", "joinery_port=signup"]
    plan = spark.explain(f"select * from {SCHEMA}.splitter_events_purchase")
    partition_filters = re.findall(r"PartitionFilters: \[(.*)\]", plan)
    assert partition_filters and "= purchase)" in partition_filters[0], plan
    # Only the filter on the partition column: no row-level filter over the other ports' files.
    assert not re.search(r"PushedFilters: \[.*joinery_port", plan), plan


def test_describe_ports_prints_each_port_and_its_schema(built, dbt, capfd):
    dbt.invoke("run-operation", "describe_ports", "--args", "{router: splitter_events_by_type}", schema=SCHEMA)
    printed = capfd.readouterr().out
    assert "4 ports" in printed
    assert re.search(r"port purchase: .*\n\s+event_id int\n\s+user_id string\n\s+payload struct<sku:string", printed)
    assert re.search(r"port error: .*(\n\s+\w+ \S+)*\n\s+joinery_error_code int", printed)


@pytest.mark.parametrize(
    ("inline", "message"),
    [
        (
            "{{ joinery.port(ref('splitter_contacts_routed'), 'nope') }}",
            r"argument `name` got \"nope\": no such port .*\[\"missing_email\", \"has_email\"\]",
        ),
        (
            "{{ joinery.route(ref('splitter_contacts'), [{'name': 'big', 'when': 'lifetime_value + 1'}]) }}",
            r"condition of port big has type int, expected a boolean",
        ),
        ("{{ joinery.route_union(ref('splitter_contacts'), 'nope') }}", r"InvalidEntry\(100\): field nope does not"),
        ("{{ joinery.route_union(ref('splitter_contacts'), 'email') }}", r"InvalidEntry\(101\): .* of type string"),
        (
            "{{ joinery.route(ref('splitter_contacts'), [{'name': 'a; drop', 'when': 'true'}]) }}",
            r"argument `ports\[0\]\.name` got \"a; drop\": expected an identifier",
        ),
    ],
)
def test_bad_arguments_are_compile_errors(built, dbt, capfd, inline, message):
    result = dbt.invoke("compile", "--inline", inline, schema=SCHEMA, expect_success=False)
    # Errors raised while dbt parses the inline query are printed, not returned.
    said = result.messages + capfd.readouterr().out
    assert re.search(message, said), said


def test_ports_partition_input_fails_on_a_tampered_router(built, dbt, spark):
    # A duplicated row in the all-mode router and a row moved to a wrong port in the first-match one.
    spark.execute(
        f"insert into {SCHEMA}.splitter_contacts_segments "
        f"select * from {SCHEMA}.splitter_contacts_segments where contact_id = 7 and joinery_port = 'academic'"
    )
    spark.execute(
        f"insert into {SCHEMA}.splitter_contacts_routed "
        f"select contact_id, name, email, lifetime_value, 'missing_email' from {SCHEMA}.splitter_contacts_routed "
        "where contact_id = 8"
    )
    result = dbt.invoke(
        "test",
        "--select",
        "splitter_contacts_segments,test_name:ports_partition_input",
        "splitter_contacts_routed,test_name:ports_partition_input",
        schema=SCHEMA,
        expect_success=False,
    )
    failures = {node: info["failures"] for node, info in result.nodes.items() if node.startswith("test.")}
    assert list(failures.values()) == [1, 1], failures
