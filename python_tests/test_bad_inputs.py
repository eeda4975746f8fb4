"""The catalogue of bad inputs (docs/guarantees.md): each case ends in a clear error (what, where,
how to fix) or a documented deterministic result, never in silent row loss. A case that fails its
first build leaves nothing of the model: no table, work table, version directory or journal
(harness/sql.py's `leftovers`, shown to see what a built model holds).

One throwaway dbt project installs joinery as a package; each case is one model in it
(the macro call is deferred to execution with `{% if execute %}`, so one bad case cannot stop the
parse of the others) and one `dbt build` runs them all. Inputs are small tables created directly in Spark.
Expected rows are written down from the documented semantics, never copied from an output.
"""

from __future__ import annotations

import re
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from harness.dbt import REPO_ROOT, DbtProject
from harness.sql import leftovers, schema_directory
from harness.thrift_server import free_port

SCHEMA = "test_bad_inputs"
T1, T2, T3 = "timestamp'2024-01-01 00:00:00'", "timestamp'2024-01-02 00:00:00'", "timestamp'2024-01-03 00:00:00'"

# A struct of 32 fields, two of them with names that need quoting, and one of 30 plain fields:
# `describe` prints them cut after 25 fields and with bare field names, neither of which Spark parses back.
WIDE_FIELDS = ", ".join([f"f{i}: int" for i in range(30)] + ["`page-view`: string", "`Mixed Case`: int"])
WIDE_TYPE = "struct<" + ",".join([f"f{i}:int" for i in range(30)] + ["page-view:string", "Mixed Case:int"]) + ">"


def wide_row(key: int, base: int, page_view: str) -> str:
    fields = ", ".join(
        [f"'f{i}', {base + i}" for i in range(30)] + [f"'page-view', '{page_view}'", f"'Mixed Case', {key}"]
    )
    counts = ", ".join(f"'c{i}', {base + i}" for i in range(30))
    return f"({key}, named_struct({fields}), array(named_struct('x y', {key})), named_struct({counts}), {T1})"


# Types Spark cannot compare, order or hash (maps, variants, a struct holding a map), and a string
# collation under which 'bob' equals 'BOB'.
EXOTIC_COLUMNS = (
    "id int, m map<string, int>, sm struct<q: int, r: map<string, int>>, v variant, "
    "name string collate UTF8_LCASE, ts timestamp"
)


def exotic_row(key: int, value: int, name: str, ts: str) -> str:
    return (
        f"({key}, map('k', {value}), named_struct('q', {key}, 'r', map('x', {value})), "
        f"parse_json('[{value}]'), '{name}', {ts})"
    )


def exotic_version(key: int, m: int, r: int, v: int, name: str, ts: str) -> str:
    """A row of EXOTIC_COLUMNS with each map, variant and string value set on its own."""
    return f"({key}, map('k', {m}), named_struct('q', {key}, 'r', map('x', {r})), parse_json('[{v}]'), '{name}', {ts})"


# Two versions per key with the same sequence (ts), differing only in the map (1), the variant (2)
# or the map inside the struct (3): only a comparison of their content can rank them.
EXOTIC_TIES = [
    exotic_version(1, 1, 1, 1, "bob", T1),
    exotic_version(1, 2, 1, 1, "bob", T1),
    exotic_version(2, 5, 5, 5, "ann", T1),
    exotic_version(2, 5, 5, 6, "ann", T1),
    exotic_version(3, 7, 7, 7, "cid", T1),
    exotic_version(3, 7, 8, 7, "cid", T1),
]
# The same versions as (id, to_json(m), to_json(sm.r), to_json(v), name): EXOTIC_VALUES.
EXOTIC_TIE_VERSIONS = {
    1: {(1, '{"k":1}', '{"x":1}', "[1]", "bob"), (1, '{"k":2}', '{"x":1}', "[1]", "bob")},
    2: {(2, '{"k":5}', '{"x":5}', "[5]", "ann"), (2, '{"k":5}', '{"x":5}', "[6]", "ann")},
    3: {(3, '{"k":7}', '{"x":7}', "[7]", "cid"), (3, '{"k":7}', '{"x":8}', "[7]", "cid")},
}

# name -> (columns DDL, rows as SQL tuples)
TABLES = {
    "exotic_snap": (EXOTIC_COLUMNS, [exotic_row(1, 1, "bob", T1), exotic_row(2, 2, "ann", T1)]),
    "exotic_delta": (EXOTIC_COLUMNS, [exotic_row(2, 99, "ann", T2)]),
    # exotic_snap with one value of row 1 changed: its map, its variant.
    "exotic_snap_other_map": (
        EXOTIC_COLUMNS,
        [exotic_version(1, 2, 1, 1, "bob", T1), exotic_row(2, 2, "ann", T1)],
    ),
    "exotic_snap_other_variant": (
        EXOTIC_COLUMNS,
        [exotic_version(1, 1, 1, 2, "bob", T1), exotic_row(2, 2, "ann", T1)],
    ),
    "exotic_changelog": (EXOTIC_COLUMNS, EXOTIC_TIES),
    "exotic_changelog_reversed": (EXOTIC_COLUMNS, EXOTIC_TIES[::-1]),
    "collated_ties": ("k int, ts int, name string collate UTF8_LCASE", ["(1, 1, 'a')", "(1, 1, 'A')", "(2, 1, 'b')"]),
    "collated_ties_reversed": (
        "k int, ts int, name string collate UTF8_LCASE",
        ["(2, 1, 'b')", "(1, 1, 'A')", "(1, 1, 'a')"],
    ),
    "collated_lower": ("k int, name string collate UTF8_LCASE", ["(1, 'a')"]),
    "exotic_customers_cl": (
        "customer_id int, attrs map<string, string>, name string collate UTF8_LCASE, seq int",
        ["(1, map('tier', 'gold'), 'ann', 1)"],
    ),
    "exotic_orders_cl": ("order_id int, customer_id int, seq int", ["(10, 1, 1)"]),
    "collated_upper": ("k int, name string collate UTF8_LCASE", ["(1, 'A')"]),
    "plain_names": ("k int, name string", ["(1, 'a')"]),
    "nested_snap": (
        f"id int, payload struct<{WIDE_FIELDS}>, tags array<struct<`x y`: int>>, "
        f"counts struct<{', '.join(f'c{i}: int' for i in range(30))}>, ts timestamp",
        [wide_row(1, 0, "pv1"), wide_row(2, 100, "pv2")],
    ),
    "nested_delta": ("id int, v string, ts timestamp", [f"(1, 'new', {T2})", f"(3, 'c', {T2})"]),
    "snap": ("id int, v string, ts timestamp", [f"(1, 'a', {T1})", f"(2, 'b', {T1})"]),
    "snap_nullkey": ("id int, v string, ts timestamp", [f"(1, 'a', {T1})", f"(null, 'n', {T1})"]),
    "delta_nullkey": ("id int, v string, ts timestamp", [f"(null, 'n2', {T2})"]),
    # The NULL key's snapshot version is newer than its delta version.
    "snap_nullkey_newer": ("id int, v string, ts timestamp", [f"(1, 'a', {T1})", f"(null, 'n', {T3})"]),
    # A composite key (k1, k2) with a NULL part: (1, NULL) is one key, apart from (1, 2).
    "snap_nullpart": ("k1 int, k2 int, v string, ts timestamp", [f"(1, null, 'a', {T1})", f"(1, 2, 'b', {T1})"]),
    "delta_nullpart": ("k1 int, k2 int, v string, ts timestamp", [f"(1, null, 'a2', {T2})", f"(null, 2, 'c', {T2})"]),
    "delta_dup": ("id int, v string, ts timestamp", [f"(1, 'a1', {T2})", f"(1, 'a2', {T3})"]),
    # Key 4 has only a NULL-ts version.
    "delta_nullts": ("id int, v string, ts timestamp", ["(1, 'z', null)", f"(3, 'c', {T2})", "(4, 'd', null)"]),
    "loaded_snap": ("id int, v string, ts timestamp, la int", [f"(1, 'a', {T1}, 1)", f"(2, 'b', {T1}, 1)"]),
    "loaded_delta": ("id int, v string, ts timestamp, la int", [f"(1, 'a2', {T2}, 2)"]),
    # Rows an incremental model reads by arrival (la), through new_rows_filter and previous_max.
    "arrivals": ("id int, v string, la int", ["(1, 'a', 1)", "(2, 'b', 1)"]),
    # Key 1: a newer ts beats the snapshot before loaded_at is compared. Key 2: the same ts as the
    # snapshot's row, so loaded_at decides (NULL lowest) before the source position (delta over snapshot).
    "loaded_delta_null": (
        "id int, v string, ts timestamp, la int",
        [f"(1, 'a2', {T2}, null)", f"(2, 'b2', {T1}, null)"],
    ),
    "delta_equalts": ("id int, v string, ts timestamp", [f"(1, 'b1', {T1})"]),
    "delta_strid": ("id string, v string, ts timestamp", [f"('1', 'z', {T2})"]),
    "delta_nokey": ("v string, ts timestamp", [f"('z', {T2})"]),
    "delta_extra": ("id int, v string, ts timestamp, extra string", [f"(2, 'b2', {T2}, 'new')"]),
    "snap_empty": ("id int, v string, ts timestamp", []),
    "delta_empty": ("id int, v string, ts timestamp", []),
    "events_tie": ("id int, v string, ts int", ["(1, 'p', 5)", "(1, 'q', 5)", "(2, 'r', 1)"]),
    "events_tie_reversed": ("id int, v string, ts int", ["(2, 'r', 1)", "(1, 'q', 5)", "(1, 'p', 5)"]),
    "changelog_badop": ("k int, v string, seq int, op string", ["(1, 'a', 1, 'c')", "(1, 'b', 2, 'x')"]),
    "customers_cl": ("customer_id int, name string, seq int", ["(1, 'ann', 1)"]),
    "gone_snap": (
        "id int, v string, ts timestamp, is_deleted boolean, la int",
        [f"(1, 'a', {T1}, false, 1)", f"(2, 'b', {T1}, false, 1)"],
    ),
    "gone_delta": ("id int, v string, ts timestamp, is_deleted boolean, la int", [f"(2, 'b2', {T2}, false, 2)"]),
    "gone_customers_cl": ("customer_id int, name string, seq int", ["(1, 'ann', 1)"]),
    "gone_orders_cl": ("order_id int, customer_id int, seq int", ["(10, 1, 1)", "(11, 1, 1)"]),
    "orders_cl": ("order_id int, customer_id string, seq int", ["(10, '1', 1)"]),
    "orders": ("order_id int, customer_id int, amount int, v string", ["(10, 1, 5, 'o')", "(11, 2, 1, 'p')"]),
    "customers": ("customer_id int, name string, v string", ["(1, 'ann', 'c')"]),
    "uid_values": ("uid string, value string", ["('u1', '2,1')", "('u2', '3')"]),
    "uid_groups": ("uid string, puid string", ["('u1', 'p1')", "('u2', 'p1')"]),
    "value_keyed_values": ("value string, attributes string", ["('u1', '2,1')", "('u2', '3')"]),
    "value_keyed_groups": ("value string, puid string", ["('u1', 'p1')", "('u3', 'p2')"]),
    "events_dashed": ("id int, payload struct<`page-view`: struct<x: int>, click: struct<y: int>>", []),
    "amount_whole": ("id int, amount decimal(38,0)", ["(1, 12345678901234567890123456789012345678)"]),
    "amount_fraction": ("id int, amount decimal(38,10)", ["(2, 1.0123456789)"]),
    "amount_wide": ("id int, amount decimal(20,0)", ["(1, 12345678901234567890)"]),
    "amount_precise": ("id int, amount decimal(18,10)", ["(2, 12345678.0123456789)"]),
    "events_hive_null": ("id int, payload struct<__HIVE_DEFAULT_PARTITION__: int, click: int>", []),
    "weird": (
        '`we;ird` int, `sp ace` string, `dot.ted` string, `back``tick` string, `quo"te` string',
        ["(2, 'k', 'd1', 'b1', 'q1')", "(1, 'k', 'd0', 'b0', 'q0')", "(5, 'm', 'd2', 'b2', 'q2')"],
    ),
    "failed_rows": (
        "id int, joinery_error_code int, joinery_error_message string",
        ["(1, 500, 'upstream failed')", "(2, null, null)"],
    ),
    "canary": ("id int", ["(1)"]),
}

# The Thrift sessions' current database (dbt-spark issues no `use`), where an unqualified name lands.
CANARY_DATABASE = "default"

INJECTIONS = {
    "backtick": "o`rders",
    "quote": "o'rders",
    "semicolon": "orders; drop table canary",
    "space": "my orders",
    "dot": "test_bad_inputs.orders",
}


EXOTIC_COMPACT = (
    "joinery.compact(source('bad', 'exotic_snap'), [source('bad', 'exotic_delta')], key='id', updated_at='ts')"
)
EXOTIC_VALUES = ["id", "to_json(m)", "to_json(sm.r)", "to_json(v)", "cast(name as string)"]
EXOTIC_COMPACTED = [(1, '{"k":1}', '{"x":1}', "[1]", "bob"), (2, '{"k":99}', '{"x":99}', "[99]", "ann")]

# The last field of the struct, the two quoted ones, a field of a struct in an array, a padded column.
NESTED_COLUMNS = [
    "id",
    "payload.f29",
    "payload.`page-view`",
    "payload.`Mixed Case`",
    "tags[0].`x y`",
    "counts.c29",
    "v",
]

# Every column of `weird`, quoted.
WEIRD_COLUMNS = ["`we;ird`", "`sp ace`", "`dot.ted`", "`back``tick`", '`quo"te`']

# compact with loaded_at over loaded_snap and one delta (`delta`).
LOADED_COMPACT = (
    "joinery.compact(source('bad', 'loaded_snap'), [source('bad', '{delta}')], key='id', "
    "updated_at='ts', loaded_at='la')"
)

# Each case: model SQL (the macro call) and what must happen. `error`: every fragment appears in the
# error; `rows`: the model's rows (sorted) on the listed columns. `config`: a config() call kept at
# parse time. Documented in docs/guarantees.md under the same names.
CASES: dict[str, dict] = {
    # --- keys and timestamps (compact, dedup_latest) ---
    "null_key_is_a_key_value": dict(
        sql="joinery.compact(source('bad', 'snap_nullkey'), [source('bad', 'delta_nullkey')], key='id', "
        "updated_at='ts')",
        rows=(["id", "v"], [(None, "n2"), (1, "a")]),
    ),
    "null_key_newer_in_the_snapshot_stays": dict(
        sql="joinery.compact(source('bad', 'snap_nullkey_newer'), [source('bad', 'delta_nullkey')], key='id', "
        "updated_at='ts')",
        rows=(["id", "v"], [(None, "n"), (1, "a")]),
    ),
    "null_key_part_is_a_key_value": dict(
        sql="joinery.compact(source('bad', 'snap_nullpart'), [source('bad', 'delta_nullpart')], key=['k1', 'k2'], "
        "updated_at='ts')",
        rows=(["k1", "k2", "v"], [(None, 2, "c"), (1, None, "a2"), (1, 2, "b")]),
    ),
    "duplicate_keys_in_a_delta_newest_wins": dict(
        sql="joinery.compact(source('bad', 'snap'), [source('bad', 'delta_dup')], key='id', updated_at='ts')",
        rows=(["id", "v"], [(1, "a2"), (2, "b")]),
    ),
    "null_timestamp_is_oldest": dict(
        sql="joinery.compact(source('bad', 'snap'), [source('bad', 'delta_nullts')], key='id', updated_at='ts')",
        rows=(["id", "v"], [(1, "a"), (2, "b"), (3, "c"), (4, "d")]),
    ),
    "a_delta_row_without_loaded_at_stops_an_upserted_compaction": dict(
        config="config(materialized='joinery_upsert', unique_key='id', file_format='parquet')",
        sql=LOADED_COMPACT.format(delta="loaded_delta_null"),
        error=["joinery.compact", "loaded_delta_null has a NULL loaded_at (la)", "give every delta row a loaded_at"],
    ),
    "a_delta_row_without_loaded_at_ranks_lowest_in_a_table": dict(
        sql=LOADED_COMPACT.format(delta="loaded_delta_null"),
        rows=(["id", "v"], [(1, "a2"), (2, "b")]),
    ),
    "an_upserted_compaction_with_loaded_at": dict(
        config="config(materialized='joinery_upsert', unique_key='id', file_format='parquet')",
        sql=LOADED_COMPACT.format(delta="loaded_delta"),
        rows=(["id", "v"], [(1, "a2"), (2, "b")]),
    ),
    "equal_timestamps_later_source_wins": dict(
        sql="joinery.compact(source('bad', 'snap'), [source('bad', 'delta_equalts')], key='id', updated_at='ts')",
        rows=(["id", "v"], [(1, "b1"), (2, "b")]),
    ),
    "equal_order_by_ties_resolve_by_row_content": dict(
        sql="joinery.dedup_latest(source('bad', 'events_tie'), key='id', order_by='ts')",
        same_as="equal_order_by_ties_reversed_input",
        row_count=2,
    ),
    "equal_order_by_ties_reversed_input": dict(
        sql="joinery.dedup_latest(source('bad', 'events_tie_reversed'), key='id', order_by='ts')",
        row_count=2,
    ),
    # --- schema drift between snapshot and deltas ---
    "delta_column_type_conflicts_with_snapshot": dict(
        sql="joinery.compact(source('bad', 'snap'), [source('bad', 'delta_strid')], key='id', updated_at='ts')",
        error=[
            "joinery.compact",
            "relations",
            '"id"',
            f"{SCHEMA}.snap",
            f"{SCHEMA}.delta_strid",
            "int",
            "string",
            "widen",
            "Cast the column",
            "in a model before this one",
        ],
    ),
    "delta_missing_a_key_column": dict(
        sql="joinery.compact(source('bad', 'snap'), [source('bad', 'delta_nokey')], key='id', updated_at='ts')",
        error=["joinery.compact", "`key`", "every key column must be a column of every input", "delta_nokey"],
    ),
    "delta_with_an_extra_column_is_padded": dict(
        sql="joinery.compact(source('bad', 'snap'), [source('bad', 'delta_extra')], key='id', updated_at='ts')",
        rows=(["id", "v", "extra"], [(1, "a", None), (2, "b2", "new")]),
    ),
    # --- empty inputs ---
    "empty_snapshot": dict(
        sql="joinery.compact(source('bad', 'snap_empty'), [source('bad', 'delta_dup')], key='id', updated_at='ts')",
        rows=(["id", "v"], [(1, "a2")]),
    ),
    "empty_delta": dict(
        sql="joinery.compact(source('bad', 'snap'), [source('bad', 'delta_empty')], key='id', updated_at='ts')",
        rows=(["id", "v"], [(1, "a"), (2, "b")]),
    ),
    "no_deltas_at_all": dict(
        sql="joinery.compact(source('bad', 'snap'), [], key='id', updated_at='ts')",
        rows=(["id", "v"], [(1, "a"), (2, "b")]),
    ),
    "empty_input_to_a_join": dict(
        sql="joinery.multi_join({'orders': source('bad', 'orders'), 'nothing': source('bad', 'snap_empty')}, "
        "keys={'orders': ['order_id'], 'nothing': ['id']}, join_type='left', drop=['nothing.v'])",
        # Every order kept; the empty input's one non-key column left (`ts`) is NULL in each.
        rows=(["order_id", "customer_id", "amount", "v", "ts"], [(10, 1, 5, "o", None), (11, 2, 1, "p", None)]),
    ),
    # --- changelogs and foreign keys ---
    "changelog_with_an_unknown_operation": dict(
        sql="joinery.changelog_state(source('bad', 'changelog_badop'), key='k', sequence_by='seq', "
        "deleted=\"op = 'd'\", operation='op', operation_values=['c', 'u', 'd'])",
        error=["joinery.changelog_state: unknown operation value x", "operation_values"],
    ),
    "foreign_key_of_the_wrong_type": dict(
        sql="joinery.fk_join(left=ref('bi_orders_state'), right=ref('bi_customers_state'), left_key='order_id', "
        "foreign_key='customer_id', right_key='customer_id')",
        error=["joinery.fk_join", "`foreign_key`", "customer_id", "string", "int"],
    ),
    "unknown_foreign_key_column": dict(
        sql="joinery.fk_join(left=ref('bi_orders_state'), right=ref('bi_customers_state'), left_key='order_id', "
        "foreign_key='cust', right_key='customer_id')",
        error=["joinery.fk_join", "`foreign_key`", "cust"],
    ),
    # --- splitter ---
    "split_condition_that_is_not_boolean": dict(
        sql="joinery.route(source('bad', 'orders'), ports=[{'name': 'big', 'when': 'amount'}])",
        error=["joinery.route", "ports[0].when", "amount", "boolean"],
    ),
    "union_column_that_is_not_a_struct": dict(
        sql="joinery.route_union(source('bad', 'orders'), 'v')",
        error=["joinery.route_union", '`column` got "v"', "struct", "of type string"],
    ),
    "union_alternative_that_is_not_an_identifier": dict(
        sql="joinery.route_union(source('bad', 'events_dashed'), 'payload')",
        error=["joinery.route_union", "`column`", "payload", "page-view", "not an identifier", "port name"],
    ),
    # A port is a partition of the router; Spark reads a partition of this name back as NULL.
    "port_named_like_the_hive_null_partition": dict(
        sql="joinery.route(source('bad', 'orders'), "
        "ports=[{'name': '__HIVE_DEFAULT_PARTITION__', 'when': 'amount > 4'}])",
        error=["joinery.route", "ports[0].name", "__HIVE_DEFAULT_PARTITION__", "NULL"],
    ),
    "union_alternative_named_like_the_hive_null_partition": dict(
        sql="joinery.route_union(source('bad', 'events_hive_null'), 'payload')",
        error=["joinery.route_union", "`column`", "payload", "__HIVE_DEFAULT_PARTITION__", "NULL partition"],
    ),
    "a_condition_ending_in_a_line_comment": dict(
        sql="joinery.route(source('bad', 'orders'), ports=[{'name': 'big', 'when': 'amount > 4 -- big orders'}])",
        rows=(["order_id", "joinery_port"], [(10, "big"), (11, "default")]),
    ),
    # Every other argument joinery pastes as SQL text (row 40 of docs/guarantees.md).
    "a_deleted_expression_ending_in_a_line_comment": dict(
        sql="joinery.compact(source('bad', 'snap'), [source('bad', 'delta_dup')], key='id', updated_at='ts', "
        "deleted=\"v = 'a2' -- the newest version of key 1 deletes it\")",
        rows=(["id", "v"], [(2, "b")]),
    ),
    "an_order_by_ending_in_a_line_comment": dict(
        sql="joinery.dedup_latest(source('bad', 'delta_dup'), key='id', order_by='ts -- newest first')",
        rows=(["id", "v"], [(1, "a2")]),
    ),
    "a_changelog_deleted_expression_ending_in_a_line_comment": dict(
        sql="joinery.changelog_state(source('bad', 'changelog_badop'), key='k', sequence_by='seq', "
        "deleted=\"op = 'x' -- x marks a delete here\")",
        rows=(["k", "_joinery_tombstone"], [(1, True)]),
    ),
    "a_probe_where_ending_in_a_line_comment": dict(
        sql="joinery.collect_join(build=source('bad', 'uid_values'), probe=source('bad', 'uid_groups'), key='uid', "
        "values='value', group='puid', probe_where=\"uid = 'u1' -- only u1\")",
        rows=(["puid", "value"], [("p1", "1,2")]),
    ),
    "a_default_literal_ending_in_a_line_comment": dict(
        sql="joinery.union_padded([source('bad', 'snap'), source('bad', 'delta_extra')], "
        "defaults={'extra': \"'none' -- for rows before the column existed\"})",
        rows=(["id", "extra"], [(1, "none"), (2, "new"), (2, "none")]),
    ),
    # An incremental model reading new arrivals, with both watermark macros given commented SQL text.
    "watermark_arguments_ending_in_a_line_comment": dict(
        config="config(materialized='joinery_upsert', unique_key='id', file_format='parquet')",
        sql="'select id, v, la from ' ~ source('bad', 'arrivals') ~ ' as deltas where '"
        " ~ joinery.new_rows_filter('deltas.la -- the arrival', column='la')"
        " ~ ' and deltas.la > ' ~ joinery.previous_max('la', '0 -- before the first batch')",
        rows=(["id", "v", "la"], [(1, "a", 1), (2, "b", 1)]),
    ),
    "input_columns_named_like_the_error_columns_kept_by_a_port": dict(
        sql="joinery.port(ref('bi_router_of_failed_rows'), 'failed')",
        rows=(["id", "joinery_error_code", "joinery_error_message"], [(1, 500, "upstream failed")]),
    ),
    "unknown_port": dict(
        sql="joinery.port(ref('bi_router'), 'huge')",
        error=["joinery.port", "`name`", "huge", "big", "default"],
    ),
    "duplicate_port_names": dict(
        sql="joinery.route(source('bad', 'orders'), ports=[{'name': 'big', 'when': 'amount > 4'}, "
        "{'name': 'BIG', 'when': 'amount > 9'}])",
        error=["joinery.route", "ports[1].name", "BIG", "unique"],
    ),
    # --- joins: unknown inputs / columns, duplicate outputs ---
    "unknown_input_in_keys": dict(
        sql="joinery.multi_join({'orders': source('bad', 'orders'), 'customers': source('bad', 'customers')}, "
        "keys={'orders': ['customer_id'], 'clients': ['customer_id']})",
        error=["joinery.multi_join", "`keys`", "clients", "orders", "customers"],
    ),
    "unknown_column_in_select": dict(
        sql="joinery.multi_join({'orders': source('bad', 'orders'), 'customers': source('bad', 'customers')}, "
        "keys={'orders': ['customer_id'], 'customers': ['customer_id']}, select=['orders.price'])",
        error=["joinery.multi_join", "`select`", "orders.price"],
    ),
    "duplicate_output_names": dict(
        sql="joinery.multi_join({'orders': source('bad', 'orders'), 'customers': source('bad', 'customers')}, "
        "keys={'orders': ['customer_id'], 'customers': ['customer_id']})",
        error=["joinery.multi_join", "`v` from orders.v and customers.v", "rename", "drop", "select", "qualify"],
    ),
    "unknown_key_column": dict(
        sql="joinery.dedup_latest(source('bad', 'snap'), key='ident', order_by='ts')",
        error=["joinery.dedup_latest", "`key`", "ident", '"id"', '"v"', '"ts"'],
    ),
    "a_values_column_named_value": dict(
        sql="joinery.collect_join(build=source('bad', 'uid_values'), probe=source('bad', 'uid_groups'), key='uid', "
        "values='value', group='puid', build_where='value is not null -- every row')",
        rows=(["puid", "value"], [("p1", "1,2,3")]),
    ),
    "a_key_column_named_value": dict(
        sql="joinery.collect_join(build=source('bad', 'value_keyed_values'), "
        "probe=source('bad', 'value_keyed_groups'), key='value', values='attributes', group='puid')",
        rows=(["puid", "attributes"], [("p1", "1,2")]),
    ),
    "unknown_collect_join_column": dict(
        sql="joinery.collect_join(build=source('bad', 'customers'), probe=source('bad', 'orders'), "
        "key='customer_id', values='names', group='order_id')",
        error=["joinery.collect_join", "names"],
    ),
    # --- identifiers that would change the SQL around them ---
    **{
        f"input_name_with_{kind}": dict(
            sql=f"joinery.multi_join({{{name!r}: source('bad', 'orders'), 'customers': source('bad', 'customers')}}, "
            f"keys={{{name!r}: ['customer_id'], 'customers': ['customer_id']}}, drop=['customers.v'])",
            error=["joinery.multi_join", "`inputs`", "expected an identifier"],
        )
        for kind, name in INJECTIONS.items()
    },
    "injection_through_a_key_argument": dict(
        sql="joinery.dedup_latest(source('bad', 'snap'), key='id` is not null; drop table canary; --', order_by='ts')",
        error=["joinery.dedup_latest", "`key`", "drop table canary"],
    ),
    "column_names_with_special_characters_are_quoted": dict(
        sql="joinery.dedup_latest(source('bad', 'weird'), key='sp ace', order_by='`we;ird`')",
        rows=(
            WEIRD_COLUMNS,
            [(2, "k", "d1", "b1", "q1"), (5, "m", "d2", "b2", "q2")],
        ),
    ),
    # 38 whole digits and 10 after the point: no decimal holds both, so the capped decimal(38,10)
    # that Spark's own union picks would fail on id 1's value (or make it NULL with ANSI off).
    "decimals_no_decimal_holds_together": dict(
        sql="joinery.union_padded([source('bad', 'amount_whole'), source('bad', 'amount_fraction')])",
        error=["joinery.union_padded", "`relations`", "amount", "decimal(38,0)", "decimal(38,10)", "38"],
    ),
    "decimals_widen_to_one_that_holds_both": dict(
        sql="joinery.union_padded([source('bad', 'amount_wide'), source('bad', 'amount_precise')])",
        rows=(
            ["id", "cast(amount as string)", "typeof(amount)"],
            [
                (1, "12345678901234567890.0000000000", "decimal(30,10)"),
                (2, "12345678.0123456789", "decimal(30,10)"),
            ],
        ),
    ),
    "special_column_names_survive_a_union": dict(
        sql="joinery.union_padded([source('bad', 'weird'), source('bad', 'weird')])",
        rows=(
            WEIRD_COLUMNS,
            [(2, "k", "d1", "b1", "q1"), (1, "k", "d0", "b0", "q0"), (5, "m", "d2", "b2", "q2")] * 2,
        ),
        row_count=6,
    ),
    # --- nested types ---
    "a_struct_of_32_fields_with_quoted_names_is_upserted": dict(
        config="config(materialized='joinery_upsert', unique_key='id', file_format='parquet')",
        sql="'select * from ' ~ source('bad', 'nested_snap')",
        rows=(NESTED_COLUMNS[:6], [(1, 29, "pv1", 1, 1, 29), (2, 129, "pv2", 2, 2, 129)]),
    ),
    "a_struct_of_32_fields_missing_from_a_delta_is_padded": dict(
        config="config(materialized='joinery_upsert', unique_key='id', file_format='parquet')",
        sql="joinery.compact(source('bad', 'nested_snap'), [source('bad', 'nested_delta')], key='id', updated_at='ts')",
        rows=(
            NESTED_COLUMNS,
            [
                (1, None, None, None, None, None, "new"),
                (2, 129, "pv2", 2, 2, 129, None),
                (3, None, None, None, None, None, "c"),
            ],
        ),
    ),
    "a_struct_of_32_fields_missing_from_a_relation_is_padded_by_union_padded": dict(
        sql="joinery.union_padded([source('bad', 'nested_snap'), source('bad', 'nested_delta')])",
        rows=(
            NESTED_COLUMNS,
            [
                (1, 29, "pv1", 1, 1, 29, None),
                (1, None, None, None, None, None, "new"),
                (2, 129, "pv2", 2, 2, 129, None),
                (3, None, None, None, None, None, "c"),
            ],
        ),
    ),
    # --- types Spark cannot compare (maps, variants) and collated strings ---
    "maps_variants_and_collated_strings_are_compacted": dict(
        config="config(materialized='joinery_upsert', unique_key='id', file_format='parquet')",
        sql=EXOTIC_COMPACT,
        rows=(EXOTIC_VALUES, EXOTIC_COMPACTED),
    ),
    "maps_variants_and_collated_strings_compacted_in_full": dict(
        sql=EXOTIC_COMPACT,
        rows=(EXOTIC_VALUES, EXOTIC_COMPACTED),
    ),
    "collated_ties_resolve_by_binary_value": dict(
        sql="joinery.dedup_latest(source('bad', 'collated_ties'), key='k', order_by='ts')",
        same_as="collated_ties_reversed_input",
        rows=(["k", "cast(name as string)"], [(1, "a"), (2, "b")]),
    ),
    "collated_ties_reversed_input": dict(
        sql="joinery.dedup_latest(source('bad', 'collated_ties_reversed'), key='k', order_by='ts')",
        rows=(["k", "cast(name as string)"], [(1, "a"), (2, "b")]),
    ),
    "a_changelog_with_maps_and_variants": dict(
        sql="joinery.changelog_state(source('bad', 'exotic_changelog'), key='id', sequence_by='ts', deleted='false')",
        rows=(["id", "_joinery_tombstone"], [(1, False), (2, False), (3, False)]),
    ),
    # The same ties in dedup_latest, whose default tie_breaker is every other column.
    "maps_and_variants_tying_on_order_by_in_dedup_latest": dict(
        sql="joinery.dedup_latest(source('bad', 'exotic_changelog'), key='id', order_by='ts')",
        row_count=3,
    ),
    "maps_and_variants_tying_on_order_by_in_dedup_latest_reversed": dict(
        sql="joinery.dedup_latest(source('bad', 'exotic_changelog_reversed'), key='id', order_by='ts')",
        row_count=3,
    ),
    "upsert_unique_key_of_a_map": dict(
        config="config(materialized='joinery_upsert', unique_key='m', file_format='parquet')",
        sql="'select * from ' ~ source('bad', 'exotic_snap')",
        error=["joinery_upsert", "`unique_key`", "map<string,int>", "cannot compare"],
    ),
    "join_on_a_variant_key": dict(
        sql="joinery.multi_join({'a': source('bad', 'exotic_snap'), 'b': source('bad', 'exotic_delta')}, "
        "keys={'a': ['v'], 'b': ['v']}, select=['a.id'])",
        error=["joinery.multi_join", "`keys`", "a.v", "variant", "cannot compare"],
    ),
    "join_of_two_collations": dict(
        sql="joinery.multi_join({'a': source('bad', 'plain_names'), 'b': source('bad', 'collated_lower')}, "
        "keys={'a': ['name'], 'b': ['name']}, select=['a.k'])",
        error=["joinery.multi_join", "`keys`", "b.name", "UTF8_LCASE", "a.name", "UTF8_BINARY"],
    ),
    # --- inputs that are not tables or views ---
    "an_input_that_does_not_exist": dict(
        sql="joinery.compact(source('bad', 'never_created'), [source('bad', 'snap')], key='id', updated_at='ts')",
        error=["never_created does not exist", "Build it first"],
    ),
    # The same for every other macro that reads an input's columns (row 49 of docs/guarantees.md).
    **{
        f"an_input_that_does_not_exist_in_{macro}": dict(
            sql=sql, error=["never_created does not exist", "Build it first"]
        )
        for macro, sql in {
            "compact_deltas": "joinery.compact(source('bad', 'snap'), [source('bad', 'never_created')], key='id', "
            "updated_at='ts')",
            "union_padded": "joinery.union_padded([source('bad', 'snap'), source('bad', 'never_created')])",
            "dedup_latest": "joinery.dedup_latest(source('bad', 'never_created'), key='id', order_by='ts')",
            "multi_join": "joinery.multi_join({'orders': source('bad', 'orders'), "
            "'gone': source('bad', 'never_created')}, keys={'orders': ['order_id'], 'gone': ['id']})",
            "collect_join_build": "joinery.collect_join(build=source('bad', 'never_created'), "
            "probe=source('bad', 'uid_groups'), key='uid', values='value', group='puid')",
            "collect_join_probe": "joinery.collect_join(build=source('bad', 'uid_values'), "
            "probe=source('bad', 'never_created'), key='uid', values='value', group='puid')",
            "route": "joinery.route(source('bad', 'never_created'), ports=[{'name': 'big', 'when': 'amount > 4'}])",
            "route_union": "joinery.route_union(source('bad', 'never_created'), 'payload')",
            "changelog_state": "joinery.changelog_state(source('bad', 'never_created'), key='k', sequence_by='seq', "
            "deleted='false')",
            "fk_join": "joinery.fk_join(left=source('bad', 'never_created'), right=ref('bi_customers_state'), "
            "left_key='order_id', foreign_key='customer_id', right_key='customer_id')",
            "fk_join_changes": "joinery.fk_join_changes(source('bad', 'never_created'), key='order_id')",
        }.items()
    },
    # A router model of the project that was not built (`outcome` excludes it).
    "an_input_that_does_not_exist_in_port": dict(
        sql="joinery.port(ref('bi_router_never_built'), 'big')",
        error=["bi_router_never_built does not exist", "Build it first"],
    ),
    "an_ephemeral_model_as_an_input": dict(
        sql="joinery.multi_join({'orders': ref('bi_ephemeral_orders'), 'customers': source('bad', 'customers')}, "
        "keys={'orders': ['customer_id'], 'customers': ['customer_id']}, drop=['customers.v'])",
        error=["__dbt__cte__bi_ephemeral_orders", "is a CTE", "ephemeral model", "as a view or a table"],
    ),
    "upsert_unique_key_not_in_the_select": dict(
        config="config(materialized='joinery_upsert', unique_key='ident', file_format='parquet')",
        sql="'select * from ' ~ source('bad', 'snap')",
        error=["joinery_upsert", "`unique_key`", "ident", '"id"', '"v"', '"ts"'],
    ),
    # Found before the parquet path writes its version: a first build it fails leaves no directory.
    "upsert_tombstones_column_not_in_the_select": dict(
        config="config(materialized='joinery_upsert', unique_key='id', file_format='parquet', tombstones=['seen'])",
        sql="'select * from ' ~ source('bad', 'snap')",
        error=["joinery_upsert", "`tombstones`", "column seen is not a column of the model's SELECT", '"id"'],
    ),
    # Avro maps have string keys: Spark refuses the Hive Avro table's definition.
    "upsert_hive_avro_map_with_int_keys": dict(
        config="config(materialized='joinery_upsert', unique_key='id', file_format='hive', "
        "options={'fileFormat': 'avro'})",
        sql="'select id, map(id, v) as m from ' ~ source('bad', 'snap')",
        error=["Key of Map can only be a String"],
    ),
    "upsert_duplicate_keys_in_the_changes": dict(
        config="config(materialized='joinery_upsert', unique_key='id', file_format='parquet')",
        sql="'select * from ' ~ source('bad', 'delta_dup')",
        error=["joinery_upsert", "2 rows for the key"],
    ),
    # --- the contract between the macros and joinery_upsert: one key, one delete marker ---
    "compaction_key_other_than_the_unique_key": dict(
        config="config(materialized='joinery_upsert', unique_key='v', file_format='parquet')",
        sql="joinery.compact(source('bad', 'snap'), [source('bad', 'delta_dup')], key='id', updated_at='ts')",
        error=["joinery.compact", "argument `key`", "unique_key", '["v"]', "drop `key`"],
    ),
    "compaction_key_defaults_to_the_unique_key": dict(
        config="config(materialized='joinery_upsert', unique_key='id', file_format='parquet')",
        sql="joinery.compact(source('bad', 'snap'), [source('bad', 'delta_dup')], updated_at='ts')",
        rows=(["id", "v"], [(1, "a2"), (2, "b")]),
    ),
    "compaction_without_a_key_or_a_unique_key": dict(
        sql="joinery.compact(source('bad', 'snap'), [source('bad', 'delta_dup')], updated_at='ts')",
        error=["joinery.compact", "argument `key`", "unique_key"],
    ),
    "deleted_column_that_is_a_column_of_the_inputs": dict(
        config="config(materialized='joinery_upsert', unique_key='id', deleted_column='v', file_format='parquet')",
        sql="joinery.compact(source('bad', 'snap'), [source('bad', 'delta_dup')], updated_at='ts')",
        error=["joinery.compact", "deleted_column `v`", "also a column of its inputs", "_joinery_deleted"],
    ),
    "fk_join_left_key_other_than_the_unique_key": dict(
        config="config(materialized='joinery_upsert', unique_key='customer_id', file_format='parquet')",
        sql="joinery.fk_join(left=ref('bi_exotic_orders_state'), right=ref('bi_exotic_customers_state'), "
        "left_key='order_id', foreign_key='customer_id', right_key='customer_id')",
        error=["joinery.fk_join", "argument `left_key`", "unique_key", '["customer_id"]'],
    ),
    "changelog_state_key_other_than_the_unique_key": dict(
        config="config(materialized='joinery_upsert', unique_key='seq', file_format='parquet')",
        sql="joinery.changelog_state(source('bad', 'customers_cl'), key='customer_id', sequence_by='seq', "
        "deleted='false')",
        error=["joinery.changelog_state", "argument `key`", "unique_key", '["seq"]'],
    ),
    # The repro: a delete marker under the model's own deleted_column (test below deletes key 1).
    "a_compaction_with_its_own_deleted_column": dict(
        config="config(materialized='joinery_upsert', unique_key='id', deleted_column='is_gone', "
        "file_format='parquet')",
        sql="joinery.compact(source('bad', 'gone_snap'), [source('bad', 'gone_delta')], updated_at='ts', "
        "deleted='is_deleted', loaded_at='la')",
        rows=(["id", "v"], [(1, "a"), (2, "b2")]),
    ),
    "an_fk_join_with_its_own_deleted_column": dict(
        config="config(materialized='joinery_upsert', unique_key='order_id', deleted_column='is_gone', "
        "file_format='parquet')",
        sql="joinery.fk_join(left=ref('bi_gone_orders_state'), right=ref('bi_gone_customers_state'), "
        "foreign_key='customer_id', right_key='customer_id', right_columns=['name'])",
        rows=(["order_id", "name"], [(10, "ann"), (11, "ann")]),
    ),
}

# Helper models the cases build on (they must succeed).
HELPERS = {
    "bi_customers_state": "{{ joinery.changelog_state(source('bad', 'customers_cl'), key='customer_id', "
    "sequence_by='seq', deleted='false') }}",
    "bi_orders_state": "{{ joinery.changelog_state(source('bad', 'orders_cl'), key='order_id', "
    "sequence_by='seq', deleted='false') }}",
    "bi_router": "{{ joinery.route(source('bad', 'orders'), ports=[{'name': 'big', 'when': 'amount > 4'}]) }}",
    # Never built: `outcome` excludes it (a port of a router that does not exist yet).
    "bi_router_never_built": "{{ joinery.route(source('bad', 'orders'), "
    "ports=[{'name': 'big', 'when': 'amount > 4'}]) }}",
    # A router of rows that carry another router's error columns, without an error port of its own.
    "bi_router_of_failed_rows": "{{ joinery.route(source('bad', 'failed_rows'), "
    "ports=[{'name': 'failed', 'when': 'joinery_error_code is not null'}], default_port='ok') }}",
    "bi_router_of_maps_and_variants": "{{ joinery.route(source('bad', 'exotic_snap'), "
    "ports=[{'name': 'big', 'when': \"m['k'] > 1\"}], default_port='small') }}",
    # States without loaded_at: every run re-reads every state row, and the incremental fk_join compares
    # each recomputed value with the stored one.
    "bi_exotic_customers_state": "{{ joinery.changelog_state(source('bad', 'exotic_customers_cl'), "
    "key='customer_id', sequence_by='seq', deleted='false') }}",
    "bi_exotic_orders_state": "{{ joinery.changelog_state(source('bad', 'exotic_orders_cl'), key='order_id', "
    "sequence_by='seq', deleted='false') }}",
    "bi_exotic_fk_join": "{{ config(materialized='joinery_upsert', unique_key='order_id', file_format='parquet') }}\n"
    "{{ joinery.fk_join(left=ref('bi_exotic_orders_state'), right=ref('bi_exotic_customers_state'), "
    "left_key='order_id', foreign_key='customer_id', right_key='customer_id', right_columns=['attrs', 'name']) }}",
    "bi_gone_customers_state": "{{ joinery.changelog_state(source('bad', 'gone_customers_cl'), "
    "key='customer_id', sequence_by='seq', deleted='false') }}",
    "bi_gone_orders_state": "{{ joinery.changelog_state(source('bad', 'gone_orders_cl'), key='order_id', "
    "sequence_by='seq', deleted='false') }}",
    "bi_collated_lower": "select * from {{ source('bad', 'collated_lower') }}",
    "bi_exotic_snap_copy": "select * from {{ source('bad', 'exotic_snap') }}",
    "bi_changelog_of_maps_and_variants_reversed": "{{ joinery.changelog_state(source('bad', "
    "'exotic_changelog_reversed'), key='id', sequence_by='ts', deleted='false') }}",
    "bi_ephemeral_orders": "{{ config(materialized='ephemeral') }}\nselect * from {{ source('bad', 'orders') }}",
    # Built, but first unit-tested (dbt build runs a model's unit tests before it).
    "bi_unit_tested_join": "{{ joinery.multi_join({'orders': source('bad', 'orders'), "
    "'customers': source('bad', 'customers')}, keys={'orders': ['customer_id'], 'customers': ['customer_id']}, "
    "drop=['customers.v']) }}",
}
# dbt unit tests replace every input by a CTE of fixture rows.
UNIT_TESTS = """version: 2
unit_tests:
  - name: bi_unit_test_of_a_join
    model: bi_unit_tested_join
    given:
      - input: source('bad', 'orders')
        rows: [{order_id: 10, customer_id: 1, amount: 5, v: o}]
      - input: source('bad', 'customers')
        rows: [{customer_id: 1, name: ann, v: c}]
    expect:
      rows: [{order_id: 10, customer_id: 1, amount: 5, v: o, name: ann}]
"""

# Generic tests on values Spark cannot compare as they are: each must reach a verdict, and the
# right one (names that differ only in case are different rows).
DATA_TESTS = """version: 2
models:
  - name: bi_router_of_maps_and_variants
    data_tests:
      - joinery.ports_partition_input:
          arguments:
            input: source('bad', 'exotic_snap')
  - name: bi_maps_variants_and_collated_strings_compacted_in_full
    data_tests:
      - joinery.equal_rows:
          name: bi_equal_rows_of_equal_maps_and_variants
          arguments:
            expected: ref('bi_maps_variants_and_collated_strings_are_compacted')
  - name: bi_exotic_snap_copy
    data_tests:
      - joinery.equal_rows:
          name: bi_equal_rows_of_the_same_maps_and_variants
          arguments:
            expected: source('bad', 'exotic_snap')
      - joinery.equal_rows:
          name: bi_equal_rows_tells_one_map_value_from_another
          arguments:
            expected: source('bad', 'exotic_snap_other_map')
      - joinery.equal_rows:
          name: bi_equal_rows_tells_one_variant_value_from_another
          arguments:
            expected: source('bad', 'exotic_snap_other_variant')
  - name: bi_collated_lower
    data_tests:
      - joinery.equal_rows:
          name: bi_equal_rows_tells_a_from_upper_case_a
          arguments:
            expected: source('bad', 'collated_upper')
"""

MALFORMED_SEED = "id,name\n1,ann\n2,bob,extra\n3,cid\n"


def model_sql(case: dict) -> str:
    dependencies = re.findall(r"(?:source|ref)\([^)]*\)", case["sql"])
    lines = [f"-- depends_on: {{{{ {dependency} }}}}" for dependency in dependencies]
    if case.get("config"):
        lines.append(f"{{{{ {case['config']} }}}}")
    lines += [
        "{% if execute %}",
        f"{{{{ {case['sql']} }}}}",
        "{% else %}",
        "select 1 as parse_placeholder",
        "{% endif %}",
    ]
    return "\n".join(lines) + "\n"


def write_project(root: Path) -> None:
    (root / "models").mkdir(parents=True)
    (root / "seeds").mkdir()
    (root / "dbt_project.yml").write_text(
        "name: bad_inputs\nconfig-version: 2\nversion: '1.0'\nprofile: joinery_integration_tests\n"
        "models: {bad_inputs: {+materialized: table, +file_format: parquet}}\n"
        "seeds: {bad_inputs: {+file_format: parquet}}\n"
    )
    (root / "packages.yml").write_text(f"packages:\n  - local: {REPO_ROOT}\n")
    # `never_created` is declared as a source but never created in Spark.
    tables = "\n".join(f"      - name: {name}" for name in [*TABLES, "never_created"])
    (root / "models" / "sources.yml").write_text(
        f"version: 2\nsources:\n  - name: bad\n    schema: {SCHEMA}\n    tables:\n{tables}\n"
    )
    for name, case in CASES.items():
        (root / "models" / f"bi_{name}.sql").write_text(model_sql(case))
    for name, sql in HELPERS.items():
        (root / "models" / f"{name}.sql").write_text(sql + "\n")
    (root / "models" / "unit_tests.yml").write_text(UNIT_TESTS)
    (root / "models" / "data_tests.yml").write_text(DATA_TESTS)
    (root / "seeds" / "bi_malformed_seed.csv").write_text(MALFORMED_SEED)


@pytest.fixture(scope="module")
def project(thrift_server, tmp_path_factory) -> DbtProject:
    root = tmp_path_factory.mktemp("bad_inputs_project")
    write_project(root)
    dbt = DbtProject(
        project_dir=root,
        target="thrift",
        schema=SCHEMA,
        target_path=root / "target",
        env={"JOINERY_THRIFT_PORT": str(thrift_server.port), "JOINERY_THRIFT_HOST": "127.0.0.1"},
    )
    dbt.deps()
    return dbt


@pytest.fixture(scope="module")
def outcome(project, spark):
    spark.execute(f"create schema if not exists {SCHEMA}")
    for name, (columns, rows) in TABLES.items():
        spark.execute(f"drop table if exists {SCHEMA}.{name}")
        spark.execute(f"create table {SCHEMA}.{name} ({columns}) using parquet")
        if rows:
            spark.execute(f"insert into {SCHEMA}.{name} values {', '.join(rows)}")
    # An unqualified `drop table canary` would run in the session's current database, not in SCHEMA.
    spark.execute(f"drop table if exists {CANARY_DATABASE}.canary")
    spark.execute(f"create table {CANARY_DATABASE}.canary (id int) using parquet")
    spark.execute(f"insert into {CANARY_DATABASE}.canary values (1)")
    return project.invoke("build", "--exclude", "bi_router_never_built", expect_success=None)


def node(outcome, name: str) -> dict:
    matches = [value for key, value in outcome.nodes.items() if key.split(".")[-1] == name]
    assert matches, f"{name} did not run; ran: {sorted(outcome.nodes)}"
    return matches[0]


def sort_key(row):
    return tuple((value is not None, str(value)) for value in row)


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input(name, outcome, spark):
    case = CASES[name]
    result = node(outcome, f"bi_{name}")
    if "error" in case:
        assert result["status"] == "error", f"bi_{name} was expected to fail, got {result['status']}"
        message = result["message"] or ""
        missing = [fragment for fragment in case["error"] if fragment.lower() not in message.lower()]
        assert not missing, f"the error of bi_{name} does not say {missing}:\n{message}"
        # A failed first build leaves no table, work table, version directory or journal.
        assert leftovers(spark, SCHEMA, f"bi_{name}") == []
        return
    assert result["status"] == "success", f"bi_{name} failed: {result['message']}"
    table = f"{SCHEMA}.bi_{name}"
    if "rows" in case:
        columns, expected = case["rows"]
        assert sorted(spark.rows(table, columns=columns), key=sort_key) == sorted(expected, key=sort_key)
    if "row_count" in case:
        assert spark.query(f"select count(*) from {table}")[0][0] == case["row_count"]
    if "same_as" in case:
        assert spark.rows(table) == spark.rows(f"{SCHEMA}.bi_{case['same_as']}")


def test_leftovers_lists_what_a_built_model_holds(outcome, spark):
    # What the failed cases are checked for, seen on models that built: a `table` model's table and
    # folder; a joinery_upsert model's table and its version root, with one version directory in it.
    location = schema_directory(spark, SCHEMA)
    assert leftovers(spark, SCHEMA, "bi_empty_delta") == [f"path {location / 'bi_empty_delta'}", "table bi_empty_delta"]
    upserted = "bi_an_upserted_compaction_with_loaded_at"
    root = location / f"{upserted}__joinery"
    assert leftovers(spark, SCHEMA, upserted) == [f"path {root}", f"table {upserted}"]
    assert [path.name[:2] for path in root.iterdir()] == ["v_"], list(root.iterdir())


def test_equal_order_by_ties_keep_exactly_one_row_per_key(outcome, spark):
    rows = spark.rows(f"{SCHEMA}.bi_equal_order_by_ties_resolve_by_row_content", columns=["id", "v"])
    assert [row[0] for row in rows] == [1, 2] and rows[0][1] in ("p", "q")


def test_a_unit_test_of_a_model_that_reads_its_inputs_columns_fails_with_a_clear_message(outcome, spark):
    result = node(outcome, "bi_unit_test_of_a_join")
    assert result["status"] == "error", result
    for fragment in ["is a CTE", "dbt unit test", "introspective queries"]:
        assert fragment in (result["message"] or ""), result["message"]
    # `dbt build` skips a model whose unit test failed: it never builds.
    assert node(outcome, "bi_unit_tested_join")["status"] == "skipped"
    assert leftovers(spark, SCHEMA, "bi_unit_tested_join") == []


def test_structs_of_32_fields_keep_their_rows_through_an_incremental_run(outcome, project, spark):
    # The incremental path writes the table's own types back (a staging table's DDL, casts of the
    # table's rows), which the first build did not.
    names = [
        "a_struct_of_32_fields_with_quoted_names_is_upserted",
        "a_struct_of_32_fields_missing_from_a_delta_is_padded",
    ]
    before = {name: spark.rows(f"{SCHEMA}.bi_{name}") for name in names}
    project.invoke("run", "--select", *[f"bi_{name}" for name in names])
    for name in names:
        assert spark.rows(f"{SCHEMA}.bi_{name}") == before[name], name
        (payload_type,) = spark.query(f"select typeof(payload) from {SCHEMA}.bi_{name} limit 1")[0]
        assert payload_type == WIDE_TYPE, name


def test_watermark_arguments_ending_in_a_line_comment_work_on_an_incremental_run(outcome, project, spark):
    # The first build pastes only previous_max's default (new_rows_filter is `true`); the watermark
    # subqueries, into which both macros paste their arguments, are only written on incremental runs.
    name = "bi_watermark_arguments_ending_in_a_line_comment"
    spark.execute(f"insert into {SCHEMA}.arrivals values (1, 'a2', 2), (3, 'c', 2)")
    result = project.invoke("run", "--select", name, expect_success=None)
    assert node(result, name)["status"] == "success", node(result, name)["message"]
    assert spark.rows(f"{SCHEMA}.{name}", ["id", "v", "la"]) == [(1, "a2", 2), (2, "b", 1), (3, "c", 2)]


def test_generic_tests_compare_maps_variants_and_collated_strings_exactly(outcome):
    def status(prefix: str) -> str:
        (found,) = [result["status"] for name, result in outcome.nodes.items() if name.startswith(prefix)]
        return found

    assert status("test.bad_inputs.bi_equal_rows_of_equal_maps_and_variants.") == "pass"
    # The same rows but for one map (one variant) value of one row.
    assert status("test.bad_inputs.bi_equal_rows_of_the_same_maps_and_variants.") == "pass"
    assert status("test.bad_inputs.bi_equal_rows_tells_one_map_value_from_another.") == "fail"
    assert status("test.bad_inputs.bi_equal_rows_tells_one_variant_value_from_another.") == "fail"
    assert status("test.bad_inputs.bi_equal_rows_tells_a_from_upper_case_a.") == "fail"
    assert status("test.bad_inputs.joinery_ports_partition_input_bi_router_of_maps_and_variants") == "pass"


def assert_one_whole_tie_version_per_key(spark, table: str, reversed_table: str) -> None:
    """Each key of `table` holds one whole version among its tying ones (EXOTIC_TIE_VERSIONS), and
    `reversed_table`, built from the versions in the other order, holds the same rows."""
    winners = spark.rows(table, EXOTIC_VALUES)
    assert [row[0] for row in winners] == [1, 2, 3], winners
    for row in winners:
        assert row in EXOTIC_TIE_VERSIONS[row[0]], row
    assert spark.rows(reversed_table, EXOTIC_VALUES) == winners


def test_changelog_versions_tying_on_sequence_by_resolve_by_maps_and_variants(outcome, spark):
    # Ties on sequence_by (no loaded_at, no deletes) resolve by the rows' content, so the winner is one
    # whole version of each key, the same whatever order the versions arrived in.
    assert_one_whole_tie_version_per_key(
        spark, f"{SCHEMA}.bi_a_changelog_with_maps_and_variants", f"{SCHEMA}.bi_changelog_of_maps_and_variants_reversed"
    )


def test_dedup_latest_ties_resolve_by_maps_and_variants(outcome, spark):
    # One whole version per key, the same whatever order the versions were read in.
    table = f"{SCHEMA}.bi_maps_and_variants_tying_on_order_by_in_dedup_latest"
    assert_one_whole_tie_version_per_key(spark, table, f"{table}_reversed")


def test_an_incremental_compaction_of_maps_variants_and_collated_strings_equals_a_full_one(outcome, project, spark):
    incremental = f"{SCHEMA}.bi_maps_variants_and_collated_strings_are_compacted"
    full = f"{SCHEMA}.bi_maps_variants_and_collated_strings_compacted_in_full"
    models = [
        "bi_maps_variants_and_collated_strings_are_compacted",
        "bi_maps_variants_and_collated_strings_compacted_in_full",
    ]
    # A newer version with a changed map, variant, struct of a map, and name.
    spark.execute(f"insert into {SCHEMA}.exotic_delta values {exotic_row(2, 7, 'ANN', T3)}")
    project.invoke("run", "--select", *models)
    expected = [(1, '{"k":1}', '{"x":1}', "[1]", "bob"), (2, '{"k":7}', '{"x":7}', "[7]", "ANN")]
    assert spark.rows(full, EXOTIC_VALUES) == expected
    assert spark.rows(incremental, EXOTIC_VALUES) == expected
    # A case-only change ('bob' -> 'BOB' under UTF8_LCASE) and nothing else: the snapshot's row of key 1
    # again, with the same ts, in a delta, which wins the tie (the later source).
    spark.execute(f"insert into {SCHEMA}.exotic_delta values {exotic_row(1, 1, 'BOB', T1)}")
    project.invoke("run", "--select", *models)
    expected = [(1, '{"k":1}', '{"x":1}', "[1]", "BOB"), (2, '{"k":7}', '{"x":7}', "[7]", "ANN")]
    assert spark.rows(full, EXOTIC_VALUES) == expected
    assert spark.rows(incremental, EXOTIC_VALUES) == expected


def test_an_incremental_fk_join_sees_a_changed_map_and_a_case_only_change(outcome, project, spark):
    table = f"{SCHEMA}.bi_exotic_fk_join"
    columns = ["order_id", "to_json(attrs)", "cast(name as string)"]
    assert spark.rows(table, columns) == [(10, '{"tier":"gold"}', "ann")]
    models = ["bi_exotic_customers_state", "bi_exotic_orders_state", "bi_exotic_fk_join"]
    spark.execute(f"insert into {SCHEMA}.exotic_customers_cl values (1, map('tier', 'platinum'), 'ANN', 2)")
    project.invoke("run", "--select", *models)
    assert spark.rows(table, columns) == [(10, '{"tier":"platinum"}', "ANN")]
    # Only the case of the joined name changes.
    spark.execute(f"insert into {SCHEMA}.exotic_customers_cl values (1, map('tier', 'platinum'), 'Ann', 3)")
    project.invoke("run", "--select", *models)
    assert spark.rows(table, columns) == [(10, '{"tier":"platinum"}', "Ann")]


def test_a_delta_row_without_loaded_at_stops_an_incremental_compaction(outcome, project, spark):
    # An incremental run reads the delta rows above its watermark: a NULL loaded_at must stop it, not
    # be skipped for good (a full rebuild would have the row).
    table = f"{SCHEMA}.bi_an_upserted_compaction_with_loaded_at"
    before = spark.rows(table, ["id", "v", "la"])
    spark.execute(f"insert into {SCHEMA}.loaded_delta values (2, 'b3', {T3}, null), (1, 'a3', {T3}, 3)")
    result = project.invoke("run", "--select", "bi_an_upserted_compaction_with_loaded_at", expect_success=False)
    assert "loaded_delta has a NULL loaded_at (la)" in result.messages
    assert spark.rows(table, ["id", "v", "la"]) == before == [(1, "a2", 2), (2, "b", 1)]


def test_a_delete_under_the_models_deleted_column_deletes_its_key_on_an_incremental_run(outcome, project, spark):
    # compact and fk_join emit their delete marker under the model's deleted_column (`is_gone`), which
    # joinery_upsert reads as the marker: the key goes, and no marker column is stored.
    compaction = f"{SCHEMA}.bi_a_compaction_with_its_own_deleted_column"
    spark.execute(f"insert into {SCHEMA}.gone_delta values (1, null, {T3}, true, 3)")
    project.invoke("run", "--select", "bi_a_compaction_with_its_own_deleted_column")
    assert spark.rows(compaction, ["id", "v"]) == [(2, "b2")]
    join = f"{SCHEMA}.bi_an_fk_join_with_its_own_deleted_column"
    # Order 11 now points at a customer that does not exist: the inner join's row of it is deleted.
    spark.execute(f"insert into {SCHEMA}.gone_orders_cl values (11, 2, 2)")
    models = ["bi_gone_orders_state", "bi_gone_customers_state", "bi_an_fk_join_with_its_own_deleted_column"]
    project.invoke("run", "--select", *models)
    assert spark.rows(join, ["order_id", "name"]) == [(10, "ann")]
    for table in (compaction, join):
        columns = [column.lower() for column in spark.columns(table)]
        assert "is_gone" not in columns and "_joinery_deleted" not in columns, (table, columns)


def without_quoted_text(sql: str) -> str:
    """`sql` with every string literal ('...', "...") and backtick-quoted identifier blanked out: what
    is left is what Spark parses as SQL keywords, names and operators."""
    return QUOTED_TEXT.sub("''", sql)


QUOTED_TEXT = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`", re.DOTALL)
# The statements each injection would add if pasted into SQL as written.
INJECTED_SQL = re.compile(r"drop\s+table\s+canary", re.IGNORECASE)


def test_injected_identifiers_changed_nothing(outcome, spark):
    # Thrift runs one statement per call, so an injected `; drop table canary` would make a statement
    # fail rather than drop a table: look for the payload in the SQL itself, outside quoted text.
    assert INJECTED_SQL.search(without_quoted_text("select * from orders; drop table canary; --`"))
    assert not INJECTED_SQL.search(without_quoted_text("select `id`` is not null; drop table canary; --` from t"))
    assert len(outcome.statements) >= len(CASES), "the build sent (almost) no SQL: nothing to check"
    injected = [(node, sql) for node, sql in outcome.statements if INJECTED_SQL.search(without_quoted_text(sql))]
    assert not injected, f"SQL with an injected statement outside quoted text was sent: {injected}"
    for database in (SCHEMA, CANARY_DATABASE):
        assert spark.rows(f"{database}.canary") == [(1,)], database


def test_malformed_seed_row_is_an_error_naming_the_file(outcome, spark):
    result = node(outcome, "bi_malformed_seed")
    assert result["status"] == "error"
    # agate counts data rows from 0: the second data row has one field too many.
    assert re.search(r"Row 1 has 3 values, but Table only has 2 columns", result["message"] or ""), result["message"]
    assert leftovers(spark, SCHEMA, "bi_malformed_seed") == []


# A guard against a hang, not a measure of speed: dbt is expected to fail long before it.
HANG_GUARD_SECONDS = 240


def thrift_failure(project: DbtProject, port: int, work_dir: Path, **env: str) -> str:
    """dbt's output of a query against a Thrift server on `port`, in a process of its own, which
    must fail (a non-zero exit) rather than hang."""
    failing = DbtProject(
        project_dir=project.project_dir,
        target="thrift",
        schema=SCHEMA,
        target_path=project.target_path,
        env={"JOINERY_THRIFT_PORT": str(port), "JOINERY_THRIFT_HOST": "127.0.0.1", **env},
    )
    process = failing.start("show", "--inline", "select 1 as one", work_dir=work_dir)
    try:
        code = process.wait(timeout=HANG_GUARD_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"dbt had neither failed nor succeeded after {HANG_GUARD_SECONDS} s: it hangs")
    output = (work_dir / "output.log").read_text()
    assert code != 0, output
    return output


def test_thrift_server_down_fails_fast_with_a_connection_message(project, outcome, tmp_path):
    port = free_port()  # nothing listens there
    message = thrift_failure(project, port, tmp_path)
    # dbt-spark names the address as ('127.0.0.1', <port>).
    assert "failed to connect" in message.lower() and "127.0.0.1" in message and str(port) in message, message


def test_thrift_server_that_never_answers_fails_in_bounded_time(project, outcome, tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted = []

    def accept_and_stay_silent():
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept_and_stay_silent, daemon=True).start()
    try:
        message = thrift_failure(project, listener.getsockname()[1], tmp_path, JOINERY_THRIFT_SOCKET_TIMEOUT="5")
    finally:
        listener.close()
        for connection in accepted:
            connection.close()
    assert accepted, "dbt never connected"
    # The socket wait timed out: not a refused connection, not any other failure.
    assert re.search(r"timed out|timeout", message, re.I), message
