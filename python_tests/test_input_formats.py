"""Every joinery capability reads its inputs stored as parquet, Delta and Iceberg.

The same input rows are written once per format: parquet and Delta tables in spark_catalog, Iceberg
tables in the `iceberg` catalog (sources with `schema: iceberg.<namespace>`). Then one `dbt build`
per format of the project in python_tests/input_formats/ (joinery's macro folders copied beside it)
runs multi_join, collect_join, route + port, route_union + port, changelog_state + fk_join +
fk_join_changes, compact, union_padded, dedup_latest and a joinery_upsert model over those sources.
The routers and the changelog states are stored in the format under test too, as they are the
inputs of port and fk_join. The other models write parquet.

Each model's rows, read back as multisets, must equal a plain-Python reference computed from the
input rows, and on delta and iceberg inputs equal, whole rows included, the rows built from parquet.
The inputs carry what tripped the capabilities before: a 30-field struct and a 30-alternative union,
which `describe` prints cut short, so joinery reads their types again through
`joinery._describe_as_json` (a temporary view, as Delta and Iceberg tables have no JSON describe);
struct field names that need quoting (`page-view`, `x.y`, and `a b`, which Delta allows only with
column mapping); and, on Delta, an input with deletion vectors and column mapping whose columns were
renamed and dropped (on Iceberg the same renames, drop and delete).
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.dbt import REPO_ROOT, DbtProject, DbtResult
from harness.sql import sql_literal
from python_tests.compaction_reference import compact_reference
from python_tests.fk_join_reference import ORDER_COLUMNS, fk_join_reference, latest_state
from python_tests.test_collect_join import reference as collect_join_reference

FORMATS = ["parquet", "delta", "iceberg"]
SCHEMA = "test_input_formats"
PROJECT = Path(__file__).parent / "input_formats"
MACRO_FOLDERS = [
    "adapters",
    "common",
    "joinery_upsert",
    "multi_join",
    "collect_join",
    "splitter",
    "fk_join",
    "compaction",
]
# The models stored in the format under test (the others write parquet, and ports are views).
IN_INPUT_FORMAT = {"route_events", "route_union_events", "changelog_orders_state", "changelog_customers_state"}

# A type is a Spark type name or a struct: ((field name, type), ...).
Type = str | tuple
# Field names that need quoting in SQL and that Delta allows without column mapping.
PAIR = (("page-view", "int"), ("x.y", "string"))
# 30 fields: `describe` prints it as `struct<...,... 5 more fields>`.
ATTRS = (("page-view", "int"), ("a b", "string"), ("x.y", "string"), *((f"f{i:02d}", "int") for i in range(4, 31)))
ALTERNATIVES = tuple((f"a{i:02d}", PAIR if i in (1, 30) else "int" if i % 2 == 0 else "string") for i in range(1, 31))


def attrs(n: int, a_b: bool = True) -> dict:
    return {
        "page-view": n,
        "a b": f"ab{n}" if a_b else None,
        "x.y": f"xy{n}",
        **{f"f{i:02d}": n * 100 + i for i in range(4, 31)},
    }


# accounts as loaded, before `title` is renamed to `name`, `legacy` dropped and negative balances deleted.
ACCOUNTS_LOADED_COLUMNS = {
    "region": "string",
    "acct_id": "int",
    "title": "string",
    "legacy": "string",
    "balance": "int",
    "batch": "int",
}
ACCOUNTS_COLUMNS = {"region": "string", "acct_id": "int", "name": "string", "balance": "int", "batch": "int"}
ACCOUNTS_LOADED = [
    {
        "region": region,
        "acct_id": n,
        "title": f"{region}-{n}",
        "legacy": "old",
        "balance": -n * 10 if (region, n) in {("eu", 3), ("us", 5)} else n * 10,
        "batch": 1,
    }
    for region in ("eu", "us")
    for n in range(1, 7)
]
ACCOUNTS = [
    {"region": r["region"], "acct_id": r["acct_id"], "name": r["title"], "balance": r["balance"], "batch": r["batch"]}
    for r in ACCOUNTS_LOADED
    if r["balance"] >= 0
]
ACCOUNTS_DELTA_COLUMNS = {
    "region": "string",
    "acct_id": "int",
    "name": "string",
    "balance": "int",
    "attrs": ATTRS,
    "is_deleted": "boolean",
    "batch": "int",
}
ACCOUNTS_DELTA = [
    {"region": region, "acct_id": n, "name": name, "balance": balance, "attrs": a, "is_deleted": deleted, "batch": b}
    for region, n, name, balance, a, deleted, b in [
        ("eu", 1, "eu-1b", 11, attrs(1), False, 2),
        ("eu", 1, "eu-1c", 12, attrs(2), False, 3),
        ("eu", 2, "eu-2", 20, attrs(3), True, 2),
        ("eu", 3, "eu-3b", 31, attrs(4, a_b=False), False, 2),
        ("us", 1, "us-1b", 15, attrs(5), False, 1),
        ("us", 2, "us-2", 20, attrs(6), True, 3),
        ("us", 2, "us-2b", 22, attrs(7), False, 2),
        ("us", 7, "us-7", 70, attrs(8), False, 2),
        ("us", 8, "us-8", 80, None, False, 3),
    ]
]
TXNS_COLUMNS = {"region": "string", "acct_id": "int", "txn_id": "int", "amount": "int"}
TXNS = [
    dict(zip(TXNS_COLUMNS, row, strict=True))
    for row in [
        ("eu", 1, 1, 100),
        ("eu", 1, 2, 50),
        ("eu", 1, 2, 50),
        ("us", 1, 3, 70),
        ("us", 3, 4, 5),
        ("eu", 9, 5, 1),
    ]
]


def alternative_value(index: int, n: int) -> Any:
    kind = ALTERNATIVES[index - 1][1]
    return {"page-view": n, "x.y": f"v{n}"} if kind == PAIR else n * 7 if kind == "int" else f"s{n}"


EVENTS_COLUMNS = {"event_id": "int", "payload": ALTERNATIVES}
EVENTS = [
    *({"event_id": i, "payload": {f"a{i:02d}": alternative_value(i, i)}} for i in range(1, 31)),
    {"event_id": 31, "payload": {}},
    {"event_id": 32, "payload": {"a02": alternative_value(2, 32), "a03": alternative_value(3, 32)}},
    {"event_id": 33, "payload": {"a01": {"page-view": 33, "x.y": None}}},
    {"event_id": 34, "payload": {"a30": alternative_value(30, 34)}},
    {"event_id": 35, "payload": None},
]
CJ_ATTRIBUTES_COLUMNS = {"time": "bigint", "uid": "bigint", "attribute_ids": "string"}
CJ_MAPPINGS_COLUMNS = {"time": "bigint", "uid": "bigint", "puid": "string"}
DAY = 1419441590000
CJ_ATTRIBUTES = [
    (DAY, 12345, "1"),
    (DAY, 67890, "1,2"),
    (DAY, 12345, "3,4,5"),
    (DAY, 11111, "1,2"),
    (DAY, 22222, "3"),
    (DAY, 67890, " 10 , 2,, "),
    (DAY, 33333, "7"),
    (DAY, 44444, None),
]
CJ_MAPPINGS = [
    (DAY, 12345, "abc"),
    (DAY, 67890, "xyz"),
    (DAY, 67890, "zzz"),
    (DAY, 33333, "new"),
    (DAY, 22222, "qqq"),
    (DAY, 12345, "xyz"),
    (DAY, 44444, "none"),
    (DAY, 55555, None),
]
ORDERS = [
    dict(zip(ORDER_COLUMNS, row, strict=True))
    for row in [
        (1, 1, 10, "c", 1, 1),
        (2, 1, 20, "c", 1, 1),
        (3, 2, 30, "c", 1, 1),
        (4, None, 40, "c", 1, 1),
        (1, 2, 10, "u", 2, 2),
        (3, 2, 30, "d", 2, 2),
        (5, 3, 50, "c", 1, 2),
        (2, 1, 25, "u", 3, 1),
        (6, 9, 60, "c", 1, 2),
    ]
]
CUSTOMERS_COLUMNS = {
    "customer_id": "int",
    "customer_name": "string",
    "profile": PAIR,
    "op": "string",
    "seq": "bigint",
    "batch_id": "int",
}
CUSTOMERS = [
    dict(zip(CUSTOMERS_COLUMNS, row, strict=True))
    for row in [
        (1, "foo", {"page-view": 1, "x.y": "p1"}, "c", 1, 1),
        (2, "bar", {"page-view": 2, "x.y": None}, "c", 1, 1),
        (2, "bar", None, "d", 2, 2),
        (3, "qux", None, "c", 1, 2),
        (3, "quux", {"page-view": 3, "x.y": "p3"}, "u", 2, 1),
    ]
]
CHANGES_COLUMNS = {"id": "int", "name": "string", "tags": PAIR, "is_deleted": "boolean", "batch": "int"}
CHANGES = [
    dict(zip(CHANGES_COLUMNS, row, strict=True))
    for row in [
        (1, "one", {"page-view": 1, "x.y": "t1"}, False, 1),
        (1, "one-b", {"page-view": 11, "x.y": "t11"}, False, 2),
        (2, "two", None, False, 1),
        (2, "two", None, True, 2),
        (3, "three", {"page-view": 3, "x.y": None}, True, 2),
        (4, "four", {"page-view": 4, "x.y": "t4"}, False, 1),
    ]
]


@dataclass(frozen=True)
class Input:
    columns: dict[str, Type]
    rows: list[dict]
    # Table properties per format.
    properties: dict[str, dict[str, str]]


DELETION_VECTORS_AND_MAPPING = {"delta.enableDeletionVectors": "true", "delta.columnMapping.mode": "name"}
INPUTS = {
    # accounts is created by create_accounts: renamed, dropped and deleted on delta and iceberg.
    "accounts": Input(ACCOUNTS_COLUMNS, ACCOUNTS, {}),
    # `a b` in attrs: Delta needs column mapping for it.
    "accounts_delta": Input(ACCOUNTS_DELTA_COLUMNS, ACCOUNTS_DELTA, {"delta": {"delta.columnMapping.mode": "name"}}),
    "txns": Input(TXNS_COLUMNS, TXNS, {}),
    "events": Input(EVENTS_COLUMNS, EVENTS, {}),
    "cj_attributes": Input(
        CJ_ATTRIBUTES_COLUMNS, [dict(zip(CJ_ATTRIBUTES_COLUMNS, r, strict=True)) for r in CJ_ATTRIBUTES], {}
    ),
    "cj_mappings": Input(
        CJ_MAPPINGS_COLUMNS, [dict(zip(CJ_MAPPINGS_COLUMNS, r, strict=True)) for r in CJ_MAPPINGS], {}
    ),
    "orders_changelog": Input(ORDER_COLUMNS, ORDERS, {}),
    "customers_changelog": Input(CUSTOMERS_COLUMNS, CUSTOMERS, {}),
    "changes": Input(CHANGES_COLUMNS, CHANGES, {}),
}


def type_sql(spec: Type) -> str:
    if isinstance(spec, str):
        return spec
    return "struct<" + ",".join(f"`{name}`:{type_sql(field)}" for name, field in spec) + ">"


def value_sql(value: Any, spec: Type) -> str:
    """A typed SQL literal: a struct as named_struct, each NULL cast to its type."""
    if value is None:
        return f"cast(null as {type_sql(spec)})"
    if isinstance(spec, str):
        return f"cast({sql_literal(value)} as {spec})"
    fields = ", ".join(f"{sql_literal(name)}, {value_sql(value.get(name), field)}" for name, field in spec)
    return f"named_struct({fields})"


def insert(spark, table: str, columns: dict[str, Type], rows: list[dict]) -> None:
    values = ", ".join("(" + ", ".join(value_sql(row[c], t) for c, t in columns.items()) + ")" for row in rows)
    spark.execute(f"insert into {table} values {values}")


def create_table(spark, table: str, fmt: str, columns: dict[str, Type], properties: dict[str, str]) -> None:
    spark.execute(f"drop table if exists {table}")
    ddl = ", ".join(f"`{name}` {type_sql(spec)}" for name, spec in columns.items())
    options = ", ".join(f"'{key}'='{value}'" for key, value in properties.items())
    spark.execute(f"create table {table} ({ddl}) using {fmt}" + (f" tblproperties ({options})" if options else ""))


def create_accounts(spark, schema: str, fmt: str) -> None:
    """accounts with ACCOUNTS' rows and columns; on delta and iceberg by renaming, dropping and deleting."""
    table = f"{schema}.accounts"
    if fmt == "parquet":
        create_table(spark, table, fmt, ACCOUNTS_COLUMNS, {})
        insert(spark, table, ACCOUNTS_COLUMNS, ACCOUNTS)
        return
    properties = {
        "delta": DELETION_VECTORS_AND_MAPPING,
        "iceberg": {"format-version": "2", "write.delete.mode": "merge-on-read"},
    }[fmt]
    create_table(spark, table, fmt, ACCOUNTS_LOADED_COLUMNS, properties)
    insert(spark, table, ACCOUNTS_LOADED_COLUMNS, ACCOUNTS_LOADED)
    spark.execute(f"alter table {table} rename column title to name")
    spark.execute(f"alter table {table} drop column legacy")
    spark.execute(f"delete from {table} where balance < 0")


def target_schema(fmt: str) -> str:
    return f"{SCHEMA}_{fmt}"


def input_schema(fmt: str) -> str:
    return ("iceberg." if fmt == "iceberg" else "") + f"{SCHEMA}_{fmt}_inputs"


def table_of(fmt: str, model: str) -> str:
    """Where a model of the format's build is: file_format='iceberg' lands in the Iceberg catalog."""
    catalog = "iceberg." if fmt == "iceberg" and model in IN_INPUT_FORMAT else ""
    return f"{catalog}{target_schema(fmt)}.{model}"


def build_leg(project: DbtProject, spark, fmt: str) -> DbtResult:
    """The inputs in `fmt`, then one dbt build of every model over them (its failures are in the result)."""
    schema = input_schema(fmt)
    spark.execute(f"create schema if not exists {schema}")
    create_accounts(spark, schema, fmt)
    for name, source in INPUTS.items():
        if name != "accounts":
            create_table(spark, f"{schema}.{name}", fmt, source.columns, source.properties.get(fmt, {}))
            insert(spark, f"{schema}.{name}", source.columns, source.rows)
    return project.invoke(
        "build",
        "--full-refresh",
        schema=target_schema(fmt),
        vars={"input_format": fmt, "input_schema": schema},
        expect_success=None,
    )


@pytest.fixture(scope="module")
def legs(dbt, spark, tmp_path_factory):
    """The build of each format, made on first use: legs('delta')."""
    root = tmp_path_factory.mktemp("input_formats") / "project"
    shutil.copytree(PROJECT, root)
    for folder in MACRO_FOLDERS:
        shutil.copytree(REPO_ROOT / "macros" / folder, root / "macros" / folder)
    project = DbtProject(
        root, target="thrift", schema=target_schema("parquet"), target_path=root / "target", env=dbt.env
    )
    built: dict[str, DbtResult] = {}

    def leg(fmt: str) -> DbtResult:
        if fmt not in built:
            built[fmt] = build_leg(project, spark, fmt)
        return built[fmt]

    return leg


def rows(spark, legs, fmt: str, model: str, select: str = "*") -> Counter:
    """The model's rows on the format's inputs as a multiset, once its build says it succeeded."""
    result = legs(fmt)
    nodes = {unique_id.split(".")[-1]: node for unique_id, node in result.nodes.items()}
    assert model in nodes, f"{model} is not in the build of {fmt}: {sorted(nodes)}"
    node = nodes[model]
    # The first lines of dbt's message: Spark's error, without the server's stack trace.
    message = "\n".join((node["message"] or "").splitlines()[:3])
    assert node["status"] == "success", f"{model} on {fmt} inputs: {node['status']}: {message}"
    table = table_of(fmt, model)
    spark.execute(f"refresh table {table}")
    return Counter(spark.query(f"select {select} from {table}"))


def assert_matches(spark, legs, fmt: str, model: str, select: str, expected: Counter) -> None:
    """The model equals the reference on `select`, and, on delta and iceberg inputs, equals the parquet
    inputs' result in every column."""
    assert rows(spark, legs, fmt, model, select) == expected
    if fmt != "parquet":
        assert spark.columns(table_of(fmt, model)) == spark.columns(table_of("parquet", model))
        assert rows(spark, legs, fmt, model) == rows(spark, legs, "parquet", model)


def struct_fields(spark, table: str, column: str) -> list[str]:
    """The field names of a struct column of a spark_catalog V1 (parquet) table, from its JSON describe."""
    described = json.loads(spark.query(f"describe table extended {table} as json")[0][0])
    spec = next(c["type"] for c in described["columns"] if c["name"] == column)
    return [field["name"] for field in spec["fields"]]


ATTRS_SELECT = "attrs is null, attrs.`page-view`, attrs.`a b`, attrs.`x.y`, attrs.f30"


def attrs_values(value: dict | None) -> tuple:
    if value is None:
        return (True, None, None, None, None)
    return (False, value["page-view"], value["a b"], value["x.y"], value["f30"])


def key_of(row: dict) -> tuple:
    return (row["region"], row["acct_id"])


@pytest.mark.parametrize("fmt", FORMATS)
def test_multi_join_reads_three_inputs_on_a_composite_key(legs, spark, fmt):
    expected = Counter()
    for account in ACCOUNTS:
        txns = [t for t in TXNS if key_of(t) == key_of(account)] or [None]
        updates = [u for u in ACCOUNTS_DELTA if key_of(u) == key_of(account)] or [None]
        for txn in txns:
            for update in updates:
                expected[
                    (
                        *key_of(account),
                        account["name"],
                        account["balance"],
                        txn and txn["txn_id"],
                        txn and txn["amount"],
                        update and update["batch"],
                        *attrs_values(update and update["attrs"]),
                    )
                ] += 1
    select = f"region, acct_id, name, balance, txn_id, amount, batch, {ATTRS_SELECT}"
    assert_matches(spark, legs, fmt, "multi_join_accounts", select, expected)
    assert struct_fields(spark, table_of(fmt, "multi_join_accounts"), "attrs") == [name for name, _ in ATTRS]


@pytest.mark.parametrize("fmt", FORMATS)
def test_collect_join_collects_the_values_of_each_group(legs, spark, fmt):
    collected = collect_join_reference(CJ_ATTRIBUTES, CJ_MAPPINGS)
    expected = Counter((group, ",".join(values)) for group, values in collected.items())
    assert_matches(spark, legs, fmt, "collect_join_puids", "puid, attribute_ids", expected)


@pytest.mark.parametrize("fmt", FORMATS)
def test_route_and_port_split_the_events_by_condition(legs, spark, fmt):
    def port(event_id: int) -> str:
        return "low" if event_id <= 10 else "mid" if event_id <= 20 else "high"

    expected = Counter((e["event_id"], port(e["event_id"])) for e in EVENTS)
    assert_matches(spark, legs, fmt, "route_events", "event_id, joinery_port", expected)
    mid = Counter((e["event_id"],) for e in EVENTS if port(e["event_id"]) == "mid")
    assert_matches(spark, legs, fmt, "route_events_mid", "event_id", mid)


def union_port(event: dict) -> tuple[str, int | None]:
    """(port, error code) of an event: its one alternative that is set, else the error port."""
    set_names = [name for name, _ in ALTERNATIVES if (event["payload"] or {}).get(name) is not None]
    if len(set_names) == 1:
        return set_names[0], None
    return "error", 102 if not set_names else 103


@pytest.mark.parametrize("fmt", FORMATS)
def test_route_union_routes_every_row_of_a_30_alternative_union(legs, spark, fmt):
    expected = Counter((e["event_id"], *union_port(e)) for e in EVENTS)
    assert len({port for _, port, _ in expected}) == 31
    assert_matches(spark, legs, fmt, "route_union_events", "event_id, joinery_port, joinery_error_code", expected)
    for port in ("a01", "a30"):
        values = Counter(
            (e["event_id"], e["payload"][port]["page-view"], e["payload"][port]["x.y"])
            for e in EVENTS
            if union_port(e)[0] == port
        )
        select = "event_id, payload.`page-view`, payload.`x.y`"
        assert_matches(spark, legs, fmt, f"route_union_{port}", select, values)
    a02 = Counter((e["event_id"], e["payload"]["a02"]) for e in EVENTS if union_port(e)[0] == "a02")
    assert_matches(spark, legs, fmt, "route_union_a02", "event_id, payload", a02)
    errors = Counter((e["event_id"], union_port(e)[1]) for e in EVENTS if union_port(e)[0] == "error")
    assert_matches(spark, legs, fmt, "route_union_error", "event_id, joinery_error_code", errors)


@pytest.mark.parametrize("fmt", FORMATS)
def test_changelog_state_keeps_the_newest_version_of_each_key(legs, spark, fmt):
    orders = Counter(
        (o["order_id"], o["customer_id"], o["amount"], o["op"], o["seq"], o["op"] == "d", o["batch_id"])
        for o in latest_state(ORDERS, "order_id").values()
    )
    select = "order_id, customer_id, amount, op, seq, _joinery_tombstone, _joinery_changed_at"
    assert_matches(spark, legs, fmt, "changelog_orders_state", select, orders)
    customers = Counter(
        (c["customer_id"], c["customer_name"], (c["profile"] or {}).get("page-view"), c["op"] == "d")
        for c in latest_state(CUSTOMERS, "customer_id").values()
    )
    select = "customer_id, customer_name, profile.`page-view`, _joinery_tombstone"
    assert_matches(spark, legs, fmt, "changelog_customers_state", select, customers)


@pytest.mark.parametrize("fmt", FORMATS)
def test_fk_join_and_its_changes_join_the_live_states(legs, spark, fmt):
    joined = fk_join_reference(ORDERS, CUSTOMERS, "inner")
    assert joined, "the reference joins some orders"
    select = "order_id, customer_id, amount, customer_name"
    assert_matches(spark, legs, fmt, "fk_orders_customers", select, Counter(joined))
    changes = Counter((*row, False, 1) for row in joined)
    select = "order_id, customer_id, amount, customer_name, _joinery_tombstone, _joinery_run"
    assert_matches(spark, legs, fmt, "fk_orders_customers_changes", select, changes)


ACCOUNT_SELECT = f"region, acct_id, name, balance, batch, is_deleted, {ATTRS_SELECT}"


def account_values(row: dict) -> tuple:
    return (
        *key_of(row),
        row["name"],
        row["balance"],
        row["batch"],
        row.get("is_deleted"),
        *attrs_values(row.get("attrs")),
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_compact_pads_the_snapshot_and_applies_the_newest_changes(legs, spark, fmt):
    columns = ["region", "acct_id", "name", "balance", "batch", "attrs", "is_deleted"]
    compacted = compact_reference(
        ACCOUNTS, [ACCOUNTS_DELTA], ["region", "acct_id"], columns, loaded_at="batch", deleted="is_deleted"
    )
    expected = Counter(account_values(row) for row in compacted)
    assert_matches(spark, legs, fmt, "compact_accounts", ACCOUNT_SELECT, expected)
    assert struct_fields(spark, table_of(fmt, "compact_accounts"), "attrs") == [name for name, _ in ATTRS]


@pytest.mark.parametrize("fmt", FORMATS)
def test_union_padded_unions_the_snapshot_and_the_changes(legs, spark, fmt):
    expected = Counter((*account_values(row), 0) for row in ACCOUNTS)
    expected += Counter((*account_values(row), 1) for row in ACCOUNTS_DELTA)
    assert_matches(spark, legs, fmt, "union_padded_accounts", f"{ACCOUNT_SELECT}, src", expected)
    assert struct_fields(spark, table_of(fmt, "union_padded_accounts"), "attrs") == [name for name, _ in ATTRS]


@pytest.mark.parametrize("fmt", FORMATS)
def test_dedup_latest_keeps_the_newest_change_per_key(legs, spark, fmt):
    latest: dict[tuple, dict] = {}
    for row in ACCOUNTS_DELTA:
        if key_of(row) not in latest or row["batch"] > latest[key_of(row)]["batch"]:
            latest[key_of(row)] = row
    expected = Counter(account_values(row) for row in latest.values())
    assert_matches(spark, legs, fmt, "dedup_latest_changes", ACCOUNT_SELECT, expected)


@pytest.mark.parametrize("fmt", FORMATS)
def test_joinery_upsert_applies_the_changes_and_their_deletes(legs, spark, fmt):
    latest: dict[int, dict] = {}
    for row in CHANGES:
        if row["id"] not in latest or row["batch"] > latest[row["id"]]["batch"]:
            latest[row["id"]] = row
    expected = Counter(
        (row["id"], row["name"], (row["tags"] or {}).get("page-view"), row["batch"])
        for row in latest.values()
        if not row["is_deleted"]
    )
    assert_matches(spark, legs, fmt, "upsert_changes", "id, name, tags.`page-view`, batch", expected)


def test_the_delta_input_has_deletion_vectors_and_renamed_and_dropped_columns(legs, spark):
    """What the delta build's accounts input went through before the build (so the tests above read it)."""
    legs("delta")
    table = f"{input_schema('delta')}.accounts"
    properties = dict(spark.query(f"show tblproperties {table}"))
    assert properties["delta.enableDeletionVectors"] == "true"
    assert properties["delta.columnMapping.mode"] == "name"
    history = spark.query_dicts(f"describe history {table}")
    operations = [entry["operation"] for entry in sorted(history, key=lambda entry: entry["version"])]
    assert operations[-3:] == ["RENAME COLUMN", "DROP COLUMNS", "DELETE"], operations
    delete = next(entry for entry in history if entry["operation"] == "DELETE")
    assert int(json.loads(delete["operationMetrics"])["numDeletionVectorsAdded"]) > 0
    assert spark.columns(table) == list(ACCOUNTS_COLUMNS)
