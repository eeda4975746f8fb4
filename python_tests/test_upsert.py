"""joinery_upsert: first run, incremental upserts and deletes on a composite key, partitions rewritten
only where touched (parquet and Avro on Hive), no-change runs, replays, tables in the layout before
0.1.0 and argument errors (the delta MERGE: test_upsert_delta).

One short sequence of dbt runs over the example models (models/examples/upsert) feeds every test;
expected rows come from the seed CSV through a plain-Python reference.
"""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from harness.dbt import REPO_ROOT
from harness.sql import leftovers

SCHEMA = "test_upsert"
SEED = REPO_ROOT / "seeds" / "upsert" / "upsert_customer_changes.csv"
MODELS = [
    "upsert_customers",
    "upsert_customers_by_country",
    "upsert_customers_avro",
    "upsert_customers_avro_by_country",
]
PARTITIONED = ["upsert_customers_by_country", "upsert_customers_avro_by_country"]
# dbt parses the whole project again for each new set of vars (about 30 s under the suite's load),
# so the module's invocations share as few as they can: the test-only models (disabled unless their
# var is set) are enabled in all of them and left out of EXAMPLES by EXCLUDE, and
# upsert_through_batch is spelled out at its default, 2, unless a run stops at batch 1.
TEST_ONLY = ["error_cases", "long_journal", "punctuated_partitions", "location_root", "overlap", "schema_change"]
MODULE_VARS = {**{f"upsert_{name}": True for name in TEST_ONLY}, "upsert_through_batch": 2}
EXAMPLES = ["path:seeds/upsert", "path:models/examples/upsert"]
# The same models on delta and iceberg (var upsert_file_format) have their own modules,
# test_upsert_delta and test_iceberg.
EXCLUDE = ["--exclude", *(f"path:models/examples/upsert/{name}" for name in TEST_ONLY)]


def reference(through_batch: int) -> list[tuple]:
    """The customers table after applying batches 1..through_batch: newest batch per key wins, deletes remove."""
    latest: dict[tuple, dict] = {}
    with SEED.open() as handle:
        for row in csv.DictReader(handle):
            batch = int(row["batch_id"])
            key = (row["country"], int(row["customer_id"]))
            if batch <= through_batch and (key not in latest or batch >= latest[key]["batch"]):
                latest[key] = {"batch": batch, **row}
    return sorted(
        (country, customer_id, row["name"], row["tier"], row["batch"])
        for (country, customer_id), row in latest.items()
        if row["is_deleted"] != "true"
    )


def describe_location(spark, what: str) -> str:
    rows = spark.query(f"describe table extended {what}")
    return next(value.strip() for key, value, *_ in rows if (key or "").strip() == "Location")


def state(spark) -> dict:
    """Rows, table location and partition locations of every example table, read back from Spark."""
    result = {}
    for model in MODELS:
        table = f"{SCHEMA}.{model}"
        spark.execute(f"refresh table {table}")
        partitions = {}
        if model in PARTITIONED:
            for (spec,) in spark.query(f"show partitions {table}"):
                country = spec.split("=", 1)[1]
                partitions[country] = describe_location(spark, f"{table} partition (country = '{country}')")
        result[model] = {
            "rows": spark.rows(table, ["country", "customer_id", "name", "tier", "batch_id"]),
            "location": describe_location(spark, table),
            "partitions": partitions,
        }
    return result


def version_dirs(location: str) -> list[str]:
    """The version directories (v_<run id>) beside a non-partitioned table's current one."""
    root = Path(urlparse(location).path).parent
    return sorted(path.name for path in root.iterdir() if path.name.startswith("v_"))


@pytest.fixture(scope="module")
def history(dbt, spark):
    """Batch 1 as a first run, batch 2 incrementally, a run with nothing new, then batch 2 replayed."""
    states = {}
    only_build = ["--resource-type", "seed", "--resource-type", "model"]
    first = dbt.invoke(
        "build",
        "--select",
        *EXAMPLES,
        *EXCLUDE,
        *only_build,
        schema=SCHEMA,
        vars={**MODULE_VARS, "upsert_through_batch": 1},
    )
    states["batch 1"] = state(spark)
    states["batch 1 statements"] = first.statements
    result = dbt.invoke("build", "--select", *EXAMPLES, *EXCLUDE, schema=SCHEMA, vars=MODULE_VARS)
    states["batch 2"] = state(spark)
    states["batch 2 tests"] = result
    dbt.invoke("run", "--select", *EXAMPLES, *EXCLUDE, schema=SCHEMA, vars=MODULE_VARS)
    states["nothing new"] = state(spark)
    dbt.invoke(
        "run", "--select", *EXAMPLES, *EXCLUDE, schema=SCHEMA, vars={**MODULE_VARS, "upsert_replay_after_batch": 1}
    )
    states["batch 2 replayed"] = state(spark)
    return states


def test_first_run_builds_the_whole_content(history):
    for model in MODELS:
        assert history["batch 1"][model]["rows"] == reference(1), model


def test_incremental_run_applies_updates_inserts_and_deletes_on_a_composite_key(history):
    for model in MODELS:
        assert history["batch 2"][model]["rows"] == reference(2), model
    # The dbt tests of the examples (equal_rows against the expected seed) ran in that build and passed.
    tests = {name: node["status"] for name, node in history["batch 2 tests"].nodes.items() if name.startswith("test.")}
    assert tests and set(tests.values()) == {"pass"}, tests


def test_incremental_run_commits_a_new_version_directory(history):
    before, after = history["batch 1"]["upsert_customers"], history["batch 2"]["upsert_customers"]
    assert after["location"] != before["location"]
    assert "/v_" in after["location"] and "/v_" in before["location"]


@pytest.mark.parametrize("model", PARTITIONED)
def test_only_touched_partitions_are_rewritten_and_emptied_ones_dropped(history, model):
    before = history["batch 1"][model]["partitions"]
    after = history["batch 2"][model]["partitions"]
    assert sorted(before) == ["DE", "FR", "NL", "US"]
    # Batch 2 deletes FR's only customer, adds BE, changes NL and DE, and leaves US alone.
    assert sorted(after) == ["BE", "DE", "NL", "US"]
    assert after["US"] == before["US"]
    assert after["NL"] != before["NL"] and after["DE"] != before["DE"]
    # The four new partitions' locations were derived (their names and values need no escaping),
    # and one of them checked against the metastore: one describe, not one per partition.
    described = [
        sql
        for node, sql in history["batch 1 statements"]
        if node == f"model.joinery.{model}"
        and f"describe table extended {SCHEMA}.{model}__joinery_stage partition" in sql
    ]
    assert len(described) == 1, described


def test_a_run_without_changes_leaves_table_and_locations_unchanged(history):
    assert history["nothing new"] == history["batch 2"]


def test_applying_the_same_batch_twice_changes_nothing(history):
    for model in MODELS:
        assert history["batch 2 replayed"][model]["rows"] == history["batch 2"][model]["rows"], model


def test_old_versions_are_removed_keeping_the_previous_one(history):
    # Three versions were written (batch 1, batch 2, replay): the oldest is gone.
    for model in ("upsert_customers", "upsert_customers_avro"):
        current = history["batch 2 replayed"][model]["location"]
        previous = history["batch 2"][model]["location"]
        names = [Path(urlparse(location).path).name for location in (previous, current)]
        assert version_dirs(current) == sorted(names), model


@pytest.mark.parametrize("model", ["upsert_customers_avro", "upsert_customers_avro_by_country"])
def test_avro_table_is_a_hive_serde_table_of_avro_files(history, spark, model):
    table = f"{SCHEMA}.{model}"
    rows = spark.query(f"describe formatted {table}")
    details = {(key or "").strip(): (value or "").strip() for key, value, *_ in rows}
    assert details["Serde Library"] == "org.apache.hadoop.hive.serde2.avro.AvroSerDe"
    final = history["batch 2 replayed"][model]
    directories = [Path(urlparse(location).path) for location in [final["location"], *final["partitions"].values()]]
    files = [
        path
        for directory in directories
        for path in directory.iterdir()
        if path.is_file() and not path.name.startswith((".", "_"))
    ]
    assert files
    for path in files:
        assert path.read_bytes()[:4] == b"Obj\x01", path


def test_argument_errors(dbt, spark):
    result = dbt.invoke(
        "run",
        "--select",
        "path:models/examples/upsert/error_cases",
        schema=SCHEMA,
        vars=MODULE_VARS,
        expect_success=False,
    )
    messages = {node_id.split(".")[-1]: node["message"] or "" for node_id, node in result.nodes.items()}
    assert "argument `unique_key`" in messages["upsert_error_no_key"]
    assert '`unique_key` got "country": no such column' in messages["upsert_error_key_missing"]
    assert "must be a boolean column, but it is string" in messages["upsert_error_marker_type"]
    assert '`partition_by` got "country": no such column' in messages["upsert_error_partition_missing"]
    assert '`file_format` got "csv"' in messages["upsert_error_file_format"]
    assert '2 rows for the key {"country":"NL","customer_id":1}' in messages["upsert_error_duplicate_key"]
    assert '`partition_by` got "home city": a partition column' in messages["upsert_error_partition_name"]
    assert "argument `clustered_by`" in messages["upsert_error_buckets"]
    assert "does not write bucketed tables" in messages["upsert_error_buckets"]
    assert "enforced contract" in messages["upsert_error_contract"], messages["upsert_error_contract"]
    assert "| amount      | DOUBLE_TYPE     | DECIMAL_TYPE  | data type mismatch |" in messages["upsert_error_contract"]
    assert 'argument `tombstones` got ["seen"]: column seen is not a column' in messages["upsert_error_tombstones"]
    # The errors found once the changes are cached drop them first, not leaving them in the session.
    for model in ["key_missing", "marker_type", "partition_missing", "duplicate_key", "tombstones"]:
        view = f"upsert_error_{model}__joinery_changes_"
        dropped = [sql for _, sql in result.statements if f"drop view if exists {view}" in sql]
        assert len(dropped) == 1, (model, dropped)
    # Each failed on its first build: no table, work table, version directory or journal is left.
    models = sorted(node_id.split(".")[-1] for node_id in result.nodes if node_id.startswith("model."))
    assert len(models) == 10, models
    for model in models:
        assert leftovers(spark, SCHEMA, model) == [], model


def test_a_commit_journal_longer_than_a_table_property_is_stored_in_parts(dbt, spark):
    # Every commit of this model rewrites 30 partitions (15 values of `part`, 240 characters long,
    # times 2 of `shelf`). By the fourth run the journal (30 new locations, 30 superseded ones, 30 to
    # delete) is about 40,000 characters: more than the 32,672 the metastore's property column holds.
    # The second run is a full refresh, which supersedes the first one's version directory whole (the
    # third run deletes it); the third and fourth are incremental, superseding partition by partition.
    table = f"{SCHEMA}.upsert_long_journal"
    select = ["--select", "path:models/examples/upsert/long_journal"]
    work_tables = [f"{table}__joinery_stage", f"{table}__joinery_janitor"]
    statements = {}
    for version, full_refresh in [(1, False), (2, True), (3, False), (4, False)]:
        flags = ["--full-refresh"] if full_refresh else []
        if version == 4:
            # Work tables a killed run left: the run drops them before it needs them.
            for work_table in work_tables:
                spark.execute(f"create table {work_table} (left_by_a_killed_run int) using parquet")
        result = dbt.invoke(
            "run",
            *select,
            *flags,
            schema=SCHEMA,
            vars=MODULE_VARS,
            env={"JOINERY_LONG_JOURNAL_VERSION": str(version)},
        )
        statements[version] = [sql for _, sql in result.statements]
        spark.execute(f"refresh table {table}")
        expected = sorted((i, version, "p" * 237 + f"{i % 15:03d}") for i in range(90))
        assert sorted(spark.rows(table, ["id", "version", "part"])) == expected, version

    properties = dict((row[0], row[1]) for row in spark.query(f"show tblproperties {table}"))
    assert properties["joinery.pending"] == ""
    # The superseded directories of the last commit (about 10,000 characters) fill several parts,
    # read back in order up to the first empty one.
    parts = [properties["joinery.garbage"]]
    while properties.get(f"joinery.garbage.{len(parts)}"):
        parts.append(properties[f"joinery.garbage.{len(parts)}"])
    assert len(parts) >= 3 and properties[f"joinery.garbage.{len(parts)}"] == "", len(parts)
    assert len(json.loads("".join(parts))) == 30
    # Only the current version and the one before it are still on disk: each older version's folder
    # went with its last partition, and no emptied folder is left at any level.
    root = Path(urlparse(describe_location(spark, table)).path)
    holding_data = {path.relative_to(root).parts[0] for path in root.rglob("*.parquet")}
    assert len(holding_data) == 2 and all(name.startswith("v_") for name in holding_data), holding_data
    assert {path.name for path in root.iterdir()} == holding_data
    # The last commit deleted the 30 directories of the version before the one it kept: in each of
    # the 15 `part` folders, one in bulk and the other dropped as a partition of 3 levels.
    added = [sql for _, sql in result.statements if "__joinery_janitor add partition" in sql]
    assert [sql.count(" location ") for sql in added] == [15, 15], added
    assert "joinery_level_2" not in added[0] and "joinery_level_3 = 0) location" in added[1], added
    assert [path for path in root.rglob("*") if path.is_dir() and not any(path.iterdir())] == []
    # A work table is dropped first only where one was left: dbt's relation cache knows the schema's
    # tables, so the runs before spent no statement on it.
    for version, run_statements in statements.items():
        dropped = [sql for sql in run_statements if sql.startswith("drop table if exists") and "__joinery_" in sql]
        assert dropped == ([f"drop table if exists {name}" for name in work_tables] if version == 4 else []), dropped
    assert spark.query(f"show tables in {SCHEMA} like 'upsert_long_journal__joinery_*'") == []


def test_partition_values_with_a_comma_and_a_quote_are_upserted_in_place(dbt, spark):
    # The incremental run touches 'Paris, FR' (one row changed, one carried) and adds 'Nice, FR';
    # "O'Hare, IL" is not touched and keeps its location.
    table = f"{SCHEMA}.upsert_punctuated_partitions"
    select = ["--select", "path:models/examples/upsert/punctuated_partitions"]
    locations = []
    for run in (1, 2):
        dbt.invoke(
            "run",
            *select,
            schema=SCHEMA,
            vars=MODULE_VARS,
            env={"JOINERY_PUNCTUATED_RUN": str(run)},
        )
        spark.execute(f"refresh table {table}")
        locations.append(describe_location(spark, f"{table} partition (city = 'O\\'Hare, IL')"))
    assert spark.rows(table, ["customer_id", "name", "city"]) == [
        (1, "Ada Lovelace", "Paris, FR"),
        (2, "Bo", "Paris, FR"),
        (3, "Cy", "O'Hare, IL"),
        (4, "Di", "Nice, FR"),
    ]
    assert locations[0] == locations[1]

    # Run 3 moves customer 2 to "O'Hare, IL" and customer 3 from there to 'Nice, FR': each key once,
    # in its new partition (the partitions holding the moved keys are rewritten too).
    dbt.invoke("run", *select, schema=SCHEMA, vars=MODULE_VARS, env={"JOINERY_PUNCTUATED_RUN": "3"})
    spark.execute(f"refresh table {table}")
    assert spark.rows(table, ["customer_id", "name", "city"]) == [
        (1, "Ada Lovelace", "Paris, FR"),
        (2, "Bo", "O'Hare, IL"),
        (3, "Cy", "Nice, FR"),
        (4, "Di", "Nice, FR"),
    ]


def test_a_location_root_as_users_write_it_gets_its_versions_and_their_clean_up(dbt, spark, tmp_path):
    # location_root as users write it: a plain path (no scheme) for the flat model, a URI with an
    # empty authority and a trailing slash for the partitioned one. The metastore stores either as
    # `file:/...`. Three runs, each rewriting every row: the current version and the previous one
    # stay under the root, nothing older (superseded versions were never deleted when the root was
    # compared, as written, with the metastore's locations).
    root = tmp_path / "lake"
    roots = {"JOINERY_LOCATION_ROOT": str(root), "JOINERY_LOCATION_ROOT_BY_CITY": f"file://{root}/"}
    models = ("upsert_location_root_flat", "upsert_location_root_by_city")
    for model in models:  # a table keeps the root it was built with
        spark.execute(f"drop table if exists {SCHEMA}.{model}")
    # The flat model starts as a plain `table` at the root, as a project switching to joinery_upsert
    # has it: joinery_upsert's versions go beside it (dropping a managed table deletes its folder).
    built = dbt.invoke(
        "run",
        "--select",
        "upsert_location_root_flat",
        schema=SCHEMA,
        vars=MODULE_VARS,
        env={
            **roots,
            "JOINERY_LOCATION_ROOT_RUN": "0",
            "JOINERY_LOCATION_ROOT_MATERIALIZED": "table",
        },
    )
    assert built.success and (root / "upsert_location_root_flat").is_dir()
    statements = []
    for run in (1, 2, 3):
        statements = dbt.invoke(
            "run",
            "--select",
            "path:models/examples/upsert/location_root",
            schema=SCHEMA,
            vars=MODULE_VARS,
            env={**roots, "JOINERY_LOCATION_ROOT_RUN": str(run)},
        ).statements
    expected = [(1, "Ada", "Paris"), (2, "Bo", "Nice"), (11, "Run", "Lyon"), (12, "Run", "Lyon"), (13, "Run", "Lyon")]
    for model, folder in zip(
        models, ("upsert_location_root_flat__joinery", "upsert_location_root_by_city"), strict=True
    ):
        table = f"{SCHEMA}.{model}"
        spark.execute(f"refresh table {table}")
        assert spark.rows(table, ["customer_id", "name", "city"], order_by="customer_id") == expected, model
        location = describe_location(spark, table)
        assert Path(urlparse(location).path).is_relative_to(root / folder), location
        versions = sorted(path.name for path in (root / folder).iterdir() if path.name.startswith("v_"))
        assert len(versions) == 2, (model, versions)
    # The partitions of the last version live in it, at the locations derived from the qualified
    # root: one staged partition described to check them, not each of the three.
    by_city = root / "upsert_location_root_by_city"
    current = max(path.name for path in by_city.iterdir() if path.name.startswith("v_"))
    for city in ("Paris", "Nice", "Lyon"):
        partition = describe_location(spark, f"{SCHEMA}.upsert_location_root_by_city partition (city = '{city}')")
        assert Path(urlparse(partition).path) == by_city / current / f"city={city}"
    described = [sql for _, sql in statements if "upsert_location_root_by_city__joinery_stage partition" in sql]
    assert len(described) == 1, described
    # The partitioned one is ORC, its files too.
    provider = [
        row for row in spark.query(f"describe formatted {SCHEMA}.upsert_location_root_by_city") if row[0] == "Provider"
    ]
    assert provider[0][1].strip() == "orc", provider
    files = list((by_city / current).rglob("part-*"))
    assert files and all(path.read_bytes()[:3] == b"ORC" for path in files), files
    # The first build stored the qualified root: later runs need no probe table to qualify it.
    assert not [sql for _, sql in statements if "__joinery_probe" in sql]
    # joinery does not move a table: another location_root, even with --full-refresh, is an error.
    moved = dbt.invoke(
        "run",
        "--select",
        "upsert_location_root_by_city",
        "--full-refresh",
        schema=SCHEMA,
        vars=MODULE_VARS,
        env={"JOINERY_LOCATION_ROOT_BY_CITY": str(tmp_path / "elsewhere"), "JOINERY_LOCATION_ROOT_RUN": "3"},
        expect_success=False,
    )
    message = " ".join(node["message"] or "" for node in moved.nodes.values())
    assert "argument `location_root`" in message and "does not move a table" in message, message
    assert not (tmp_path / "elsewhere").exists()
    assert describe_location(spark, f"{SCHEMA}.upsert_location_root_by_city") == location


def test_a_run_that_read_the_table_before_an_overlapping_run_committed_commits_nothing(dbt, spark, tmp_path):
    # A slow run (its SELECT sleeps 30 s) reads the table; a second invocation commits meanwhile.
    # Committing the slow run's version, computed from the table before that commit, would undo it.
    table = f"{SCHEMA}.upsert_overlap"
    select = ["--select", "path:models/examples/upsert/overlap"]
    spark.execute(f"drop table if exists {table}")
    dbt.invoke("run", *select, schema=SCHEMA, vars=MODULE_VARS, env={"JOINERY_OVERLAP_RUN": "1"})
    slow_dir = tmp_path / "slow"
    slow = dbt.start(
        "run",
        *select,
        work_dir=slow_dir,
        schema=SCHEMA,
        vars=MODULE_VARS,
        env={"JOINERY_OVERLAP_RUN": "2", "JOINERY_OVERLAP_SLEEP_MS": "30000"},
    )
    # The slow run has read the table once it caches its changes (the statement that sleeps).
    log = slow_dir / "logs" / "dbt.log"
    deadline = time.monotonic() + 180
    while not (log.exists() and "cache table upsert_overlap__joinery_changes" in log.read_text()):
        assert slow.poll() is None, (slow_dir / "output.log").read_text()
        assert time.monotonic() < deadline, "the slow run never reached its SELECT"
        time.sleep(0.5)
    dbt.invoke("run", *select, schema=SCHEMA, vars=MODULE_VARS, env={"JOINERY_OVERLAP_RUN": "3"})
    assert slow.poll() is None, "the fast run did not finish within the slow run's 30 s sleep"
    returncode = slow.wait(timeout=300)
    output = (slow_dir / "output.log").read_text()
    assert returncode != 0 and "another run of this model committed version" in output, output
    spark.execute(f"refresh table {table}")
    assert spark.rows(table, ["customer_id"], order_by="customer_id") == [(1,), (3,)]
    # The slow run deleted its own version directory: the current version and the one before it stay.
    assert len(version_dirs(describe_location(spark, table))) == 2


def test_a_full_refresh_replaces_changed_types_and_removed_columns(dbt, spark):
    table = f"{SCHEMA}.upsert_schema_change"
    select = ["--select", "path:models/examples/upsert/schema_change"]
    spark.execute(f"drop table if exists {table}")

    def run(phase: str, *flags: str, expect_success: bool = True, policy: str = "ignore", **env: str):
        return dbt.invoke(
            "run",
            *select,
            *flags,
            schema=SCHEMA,
            vars=MODULE_VARS,
            env={"JOINERY_SCHEMA_CHANGE_PHASE": phase, "JOINERY_SCHEMA_CHANGE_POLICY": policy}
            | {f"JOINERY_SCHEMA_CHANGE_{name.upper()}": value for name, value in env.items()},
            expect_success=expect_success,
        )

    def error_of(result) -> str:
        return " ".join(node["message"] or "" for node in result.nodes.values())

    def properties() -> dict[str, str]:
        return dict(spark.query(f"show tblproperties {table}"))

    run("1")
    # A float is not a bigint: the incremental run refuses it rather than truncating 1.75 to 1.
    failed = run("2", expect_success=False)
    message = " ".join(node["message"] or "" for node in failed.nodes.values())
    assert "column n is float in the model but bigint" in message, message
    assert spark.rows(table, ["id", "n"]) == [(1, 10)]

    run("3", "--full-refresh")
    types = {name: kind for name, kind, _ in spark.query(f"describe {table}")}
    assert types == {"id": "int", "amount": "decimal(12,4)", "seen": "timestamp", "n": "bigint"}
    assert spark.query(f"select id, cast(amount as string), cast(seen as string), n from {table}") == [
        (1, "2.7512", "2024-05-05 23:59:59", 7)
    ]
    # The new definition has the model's tblproperties and its description as the table comment.
    assert properties()["owner_team"] == "data"
    comment = [value for name, value, _ in spark.query(f"describe table extended {table}") if name == "Comment"]
    assert comment and comment[0].startswith("joinery_upsert whose SELECT changes shape"), comment

    failed = run("4", expect_success=False, policy="fail")
    message = " ".join(node["message"] or "" for node in failed.nodes.values())
    assert "argument `on_schema_change`" in message and '["extra"]' in message, message
    assert spark.columns(table) == ["id", "amount", "seen", "n"]

    # Matched on another key, the table's rows could merge or vanish; written as ORC, they would be
    # files the parquet table cannot read. Both stop an incremental run before anything is written.
    message = error_of(run("3", expect_success=False, key="n"))
    assert "argument `unique_key`" in message and '["id"]' in message and "--full-refresh" in message, message
    message = error_of(run("3", expect_success=False, format="orc"))
    assert "argument `file_format`" in message and "stored as parquet" in message, message
    run("3", "--full-refresh", format="orc")
    provider = [value for name, value, _ in spark.query(f"describe table extended {table}") if name == "Provider"]
    assert provider == ["orc"], provider
    assert spark.query(f"select id, n from {table}") == [(1, 7)]

    # Switched to dbt-spark's `table` and back: joinery's default root is not the managed table's
    # folder, which `table` creates after dropping the joinery table.
    run("3", materialized="table")
    assert spark.query(f"select id, n from {table}") == [(1, 7)]
    run("3")
    assert spark.query(f"select id, n from {table}") == [(1, 7)]


def test_a_full_refresh_that_changes_the_partitioning_leaves_no_superseded_version(dbt, spark):
    # A full refresh that partitions the table supersedes its unpartitioned version, and one that
    # unpartitions it supersedes its partitions: the commit after deletes them, as any superseded
    # version (they used to stay on disk for good).
    table = f"{SCHEMA}.upsert_schema_change"
    spark.execute(f"drop table if exists {table}")

    def run(partition_by: str, *flags: str) -> str:
        """Run phase 3 with `partition_by`; the name of the version directory it committed."""
        dbt.invoke(
            "run",
            "--select",
            "path:models/examples/upsert/schema_change",
            *flags,
            schema=SCHEMA,
            vars=MODULE_VARS,
            env={"JOINERY_SCHEMA_CHANGE_PHASE": "3", "JOINERY_SCHEMA_CHANGE_PARTITION_BY": partition_by},
        )
        spark.execute(f"refresh table {table}")
        assert spark.query(f"select id, n from {table}") == [(1, 7)]
        partitions = [spec for (spec,) in spark.query(f"show partitions {table}")] if partition_by else []
        assert partitions == (["n=7"] if partition_by else []), partitions
        location = describe_location(spark, f"{table} partition (n = 7)" if partition_by else table)
        path = Path(urlparse(location).path)
        return path.parent.name if partition_by else path.name

    unpartitioned = run("")
    root = Path(urlparse(describe_location(spark, table)).path).parent
    left_before = {path.name for path in root.iterdir()} - {unpartitioned}  # earlier tests' tables

    partitioned = [run("n", "--full-refresh"), run("n", "--full-refresh")]
    assert {path.name for path in root.iterdir()} - left_before == set(partitioned)

    unpartitioned_again = [run("", "--full-refresh"), run("", "--full-refresh")]
    assert {path.name for path in root.iterdir()} - left_before == set(unpartitioned_again)


def test_a_hive_tables_file_format_option_changes_only_with_a_full_refresh(dbt, spark):
    # A Hive SerDe table reads its files through the SerDe its definition names: a version written
    # with another fileFormat would be unreadable. The full refresh used to keep the Avro definition
    # over Parquet files.
    table = f"{SCHEMA}.upsert_schema_change"
    spark.execute(f"drop table if exists {table}")

    def run(phase: str, hive_format: str, *flags: str, expect_success: bool = True):
        return dbt.invoke(
            "run",
            "--select",
            "path:models/examples/upsert/schema_change",
            *flags,
            schema=SCHEMA,
            vars=MODULE_VARS,
            env={
                "JOINERY_SCHEMA_CHANGE_PHASE": phase,
                "JOINERY_SCHEMA_CHANGE_FORMAT": "hive",
                "JOINERY_SCHEMA_CHANGE_HIVE_FORMAT": hive_format,
            },
            expect_success=expect_success,
        )

    def serde() -> str:
        rows = spark.query(f"describe table extended {table}")
        return next(value for name, value, *_ in rows if name == "Serde Library")

    run("3", "avro")
    assert serde().endswith("AvroSerDe")
    failed = run("3", "PARQUET", expect_success=False)
    message = " ".join(node["message"] or "" for node in failed.nodes.values())
    assert "argument `options`" in message and '"fileformat": "avro"' in message, message
    assert "--full-refresh" in message, message
    assert spark.query(f"select id, n from {table}") == [(1, 7)]

    run("3", "PARQUET", "--full-refresh")
    spark.execute(f"refresh table {table}")
    assert serde().endswith("ParquetHiveSerDe")
    assert spark.query(f"select id, n from {table}") == [(1, 7)]
    run("4", "parquet")  # the same fileFormat, spelled in another case: an incremental run
    spark.execute(f"refresh table {table}")
    assert spark.query(f"select id, n from {table} order by id") == [(1, 7), (3, 8)]


def test_a_full_refresh_supersedes_whole_version_directories_without_a_describe_per_partition(history, dbt, spark):
    # Runs last in the module: it rebuilds the partitioned example tables. After the history, their
    # partitions lie in more than one version directory (US was last written by batch 1). A full
    # refresh supersedes every partition, so it records those directories whole, read from the
    # files' paths in its check: no describe per partition. The commit after it deletes them.
    def version_dir_of(location: str) -> Path:
        return Path(urlparse(location).path).parent

    before = {model: state(spark)[model] for model in PARTITIONED}
    for model in PARTITIONED:
        assert len({version_dir_of(location) for location in before[model]["partitions"].values()}) > 1, before[model]
    refreshed = dbt.invoke("run", "--select", *PARTITIONED, "--full-refresh", schema=SCHEMA, vars=MODULE_VARS)
    described = [sql for _, sql in refreshed.statements if "describe table extended" in sql and " partition (" in sql]
    # One for the stage (the check of a derived location), none for the table's partitions.
    assert len(described) == len(PARTITIONED), described
    after_refresh = state(spark)
    dbt.invoke("run", "--select", *PARTITIONED, schema=SCHEMA, vars={**MODULE_VARS, "upsert_replay_after_batch": 1})
    final = state(spark)
    for model in PARTITIONED:
        assert after_refresh[model]["rows"] == final[model]["rows"] == reference(2), model
        current = {version_dir_of(location) for location in final[model]["partitions"].values()}
        previous = {version_dir_of(location) for location in after_refresh[model]["partitions"].values()}
        superseded = {version_dir_of(location) for location in before[model]["partitions"].values()}
        assert len(previous) == 1 and not previous & superseded, (previous, superseded)
        # The replay rewrote the touched partitions; the others stay in the full refresh's directory.
        assert previous < current, (previous, current)
        root = next(iter(previous)).parent
        assert sorted(path for path in root.iterdir() if path.name.startswith("v_")) == sorted(current)
