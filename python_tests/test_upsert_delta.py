"""joinery_upsert on Delta Lake: the first run and a full refresh are one `create or replace`, an
incremental run one MERGE (deletion vectors: untouched rows keep their files; a partitioned table's
MERGE names the changes' partitions), a run with nothing new writes no version, a changed key is a
clear error, a former parquet table is rebuilt as delta, and joinery.maintain purges and vacuums.

One short sequence of dbt runs over the upsert example models (models/examples/upsert) on delta (var
upsert_file_format) feeds the tests; expected rows come from the seed CSV through test_upsert's
plain-Python reference.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlparse

import pytest

from harness.sql import unique_mapping
from python_tests.test_upsert import reference

SCHEMA = "test_upsert_delta"
PLAIN = "upsert_customers"
PARTITIONED = "upsert_customers_by_country"
MODELS = [PLAIN, PARTITIONED]
COLUMNS = ["country", "customer_id", "name", "tier", "batch_id"]
SELECT = ["--select", "path:seeds/upsert", *MODELS]
VARS = {"upsert_file_format": "delta", "upsert_through_batch": 2}


def table_state(spark, model: str) -> dict:
    """Rows, the file each row is read from, the history (oldest first) and the details of a delta table."""
    table = f"{SCHEMA}.{model}"
    files = spark.query(f"select country, customer_id, input_file_name() from {table}")
    history = spark.query_dicts(f"describe history {table}")
    return {
        "rows": spark.rows(table, COLUMNS),
        "files": unique_mapping(((country, customer_id), path) for country, customer_id, path in files),
        "history": sorted(history, key=lambda entry: entry["version"]),
        "detail": spark.query_dicts(f"describe detail {table}")[0],
        # Read apart: describe detail renders a map of strings holding JSON without escaping it.
        "properties": dict(spark.query(f"show tblproperties {table}")),
    }


def states(spark) -> dict:
    return {model: table_state(spark, model) for model in MODELS}


def statements_of(result, model: str) -> list[str]:
    return [sql for node, sql in result.statements if node == f"model.joinery.{model}"]


@pytest.fixture(scope="module")
def delta_history(dbt, spark):
    """A former parquet table, batch 1 as a first run, batch 2 incrementally, a run with nothing new,
    a full refresh, then a run whose key differs from the table's."""
    found = {}
    spark.execute(f"create schema if not exists {SCHEMA}")
    # A parquet table where the delta model's table goes (a model switched to delta): rebuilt.
    spark.execute(f"drop table if exists {SCHEMA}.{PLAIN}")
    spark.execute(f"create table {SCHEMA}.{PLAIN} using parquet as select 'XX' as country, 0 as customer_id")
    only_build = ["--resource-type", "seed", "--resource-type", "model"]
    dbt.invoke("build", *SELECT, *only_build, schema=SCHEMA, vars={**VARS, "upsert_through_batch": 1})
    found["batch 1"] = states(spark)
    found["batch 2 result"] = dbt.invoke("build", *SELECT, "--indirect-selection", "cautious", schema=SCHEMA, vars=VARS)
    found["batch 2"] = states(spark)
    found["nothing new result"] = dbt.invoke("run", "--select", *MODELS, schema=SCHEMA, vars=VARS)
    found["nothing new"] = states(spark)
    dbt.invoke("run", "--select", *MODELS, "--full-refresh", schema=SCHEMA, vars=VARS)
    found["full refresh"] = states(spark)
    # The model's key changed without --full-refresh: the run must stop before it merges anything.
    found["key mismatch"] = dbt.invoke(
        "run",
        "--select",
        PLAIN,
        schema=SCHEMA,
        vars={**VARS, "upsert_unique_key": ["customer_id"]},
        expect_success=False,
    )
    found["after key mismatch"] = table_state(spark, PLAIN)
    return found


def test_first_run_creates_a_delta_table_with_deletion_vectors(delta_history):
    for model in MODELS:
        state = delta_history["batch 1"][model]
        assert state["rows"] == reference(1), model
        assert state["detail"]["format"] == "delta", model
        properties = state["properties"]
        assert properties["delta.enableDeletionVectors"] == "true", properties
        assert json.loads(properties["joinery.unique_key"]) == ["country", "customer_id"], properties
        # One atomic statement; the former parquet table (PLAIN) was dropped first, so it is version 0.
        assert [entry["operation"] for entry in state["history"]] == ["CREATE OR REPLACE TABLE AS SELECT"], model
    assert json.loads(delta_history["batch 1"][PARTITIONED]["detail"]["partitionColumns"]) == ["country"]


def test_incremental_run_merges_updates_inserts_and_deletes(delta_history):
    result = delta_history["batch 2 result"]
    for model in MODELS:
        state = delta_history["batch 2"][model]
        assert state["rows"] == reference(2), model
        assert [entry["operation"] for entry in state["history"]][1:] == ["MERGE"], model
        # Batch 2 inserts BE 6, updates NL 2 and DE 4, deletes DE 3 and FR 5 (BE 7's delete matches no row).
        assert result.nodes[f"model.joinery.{model}"]["message"] == "MERGE 1 inserted, 2 updated, 2 deleted"
        metrics = state["history"][-1]["operationMetrics"]
        assert json.loads(metrics)["numTargetRowsInserted"] == "1", metrics
    # The dbt tests of the examples (equal_rows against the expected seed) ran in that build and passed.
    tests = {name: node["status"] for name, node in result.nodes.items() if name.startswith("test.")}
    assert tests and set(tests.values()) == {"pass"}, tests


def test_untouched_rows_stay_in_the_first_versions_files(delta_history):
    # Deletion vectors: the MERGE marks changed rows deleted instead of rewriting their files.
    for model in MODELS:
        before, after = delta_history["batch 1"][model]["files"], delta_history["batch 2"][model]["files"]
        for key in [("NL", 1), ("US", 8)]:
            assert after[key] == before[key], (model, key)
        assert after[("NL", 2)] not in before.values(), model


def test_partitioned_merge_names_the_changes_partitions(delta_history):
    (merge,) = [sql for sql in statements_of(delta_history["batch 2 result"], PARTITIONED) if "merge into" in sql]
    assert (
        "and ((target.`country` = cast('BE' as string)) or (target.`country` = cast('DE' as string))"
        " or (target.`country` = cast('FR' as string)) or (target.`country` = cast('NL' as string)))" in merge
    ), merge
    # The predicate Delta recorded (its operationParameters map renders nested JSON unescaped).
    predicate = delta_history["batch 2"][PARTITIONED]["history"][-1]["operationParameters"]
    assert "= NL)" in predicate and "= US)" not in predicate, predicate
    # Unpartitioned: keys alone.
    (plain,) = [sql for sql in statements_of(delta_history["batch 2 result"], PLAIN) if "merge into" in sql]
    assert "target.`country` = " not in plain, plain


def test_a_run_with_nothing_new_writes_no_version(delta_history):
    # No commit: the partitioned model's preflight counted no changed row and sent no MERGE; the
    # unpartitioned one's MERGE found nothing to change, and a Delta MERGE that changes nothing commits
    # nothing. Neither sets properties.
    assert delta_history["nothing new"] == delta_history["batch 2"]
    for model in MODELS:
        statements = statements_of(delta_history["nothing new result"], model)
        assert not [sql for sql in statements if "tblproperties (" in sql], statements
    assert not [sql for sql in statements_of(delta_history["nothing new result"], PARTITIONED) if "merge into" in sql]


def test_full_refresh_replaces_the_table_and_keeps_the_old_version_readable(delta_history, spark):
    for model in MODELS:
        state = delta_history["full refresh"][model]
        previous = delta_history["batch 2"][model]["history"][-1]["version"]
        assert state["history"][-1]["operation"] == "CREATE OR REPLACE TABLE AS SELECT", model
        assert state["history"][-1]["version"] == previous + 1, model
        assert state["rows"] == reference(2), model
        select = f"select {', '.join(COLUMNS)} from {SCHEMA}.{model} version as of {previous}"
        assert sorted(spark.query(select)) == reference(2), model
        # First version, as docs/upsert.md shows how to go back to one.
        assert sorted(spark.query(select.replace(f"as of {previous}", "as of 0"))) == reference(1), model


def test_a_changed_unique_key_is_a_clear_error(delta_history):
    message = delta_history["key mismatch"].nodes[f"model.joinery.{PLAIN}"]["message"]
    assert 'the table was built with unique_key ["country", "customer_id"]' in message, message
    assert "change unique_key with --full-refresh" in message, message
    after, before = delta_history["after key mismatch"], delta_history["full refresh"][PLAIN]
    assert after["rows"] == before["rows"]
    assert len(after["history"]) == len(before["history"])


def test_maintain_purges_and_vacuums_a_delta_table(delta_history, dbt, spark, capsys):
    table = f"{SCHEMA}.{PARTITIONED}"
    # A delete leaves a deletion vector on the file of NL's rows (the full refresh left none).
    spark.execute(f"delete from {table} where customer_id = 1")
    before = table_state(spark, PARTITIONED)
    assert before["rows"] == [row for row in reference(2) if row[1] != 1]
    refused = dbt.invoke(
        "run-operation", "joinery.maintain", "--args", json.dumps({"relation": table, "retain_hours": 0}),
        schema=SCHEMA, vars=VARS, expect_success=False,
    )  # fmt: skip
    assert "allow_short_retention=true" in refused.messages + capsys.readouterr().out
    dbt.invoke(
        "run-operation", "joinery.maintain",
        "--args", json.dumps({"relation": table, "retain_hours": 0, "allow_short_retention": True}),
        schema=SCHEMA, vars=VARS,
    )  # fmt: skip
    after = table_state(spark, PARTITIONED)
    assert after["rows"] == before["rows"]
    operations = [entry["operation"] for entry in after["history"][len(before["history"]) :]]
    assert operations[0] in ("OPTIMIZE", "REORG") and operations[-2:] == ["VACUUM START", "VACUUM END"], operations
    # Only the files the current version reads are left, none of them with a deletion vector.
    location = Path(urlparse(after["detail"]["location"]).path)
    on_disk = {
        path
        for path in location.rglob("*")
        if path.is_file() and "_delta_log" not in path.parts and not path.name.startswith(".")  # Hadoop's .crc
    }
    read = {Path(urlparse(path).path) for path in after["files"].values()}
    assert on_disk == read, sorted(on_disk ^ read)
    assert read != {Path(urlparse(path).path) for path in before["files"].values()}


def test_maintain_on_a_parquet_table_is_a_clear_error(delta_history, dbt, capsys):
    result = dbt.invoke(
        "run-operation", "joinery.maintain", "--args", json.dumps({"relation": f"{SCHEMA}.upsert_customer_changes"}),
        schema=SCHEMA, vars=VARS, expect_success=False,
    )  # fmt: skip
    said = result.messages + capsys.readouterr().out
    assert "it is a parquet table; maintain keeps delta and iceberg tables" in said, said
