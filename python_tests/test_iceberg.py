"""Iceberg: the upsert examples (models/examples/upsert, var upsert_file_format=iceberg) and test-only
models (models/examples/iceberg/test_only) in the `iceberg` catalog (docs/iceberg.md) built by
joinery_upsert as format-v2 merge-on-read tables: first run, incremental MERGE with deletes (position
delete files), partition predicate, new columns, --full-refresh as one `create or replace` whose old
version stays readable, joinery.maintain's Iceberg procedures, `dbt docs generate`, and the compile
errors for a file_format that does not fit its catalog.
"""

from __future__ import annotations

import json

import pytest

from harness.sql import leftovers
from python_tests.test_upsert import reference

SCHEMA = "test_iceberg"
# file_format='iceberg' with no schema of its own: the target schema's namespace in the catalog.
NAMESPACE = f"iceberg.{SCHEMA}"
PLAIN, PARTITIONED = "upsert_customers", "upsert_customers_by_country"
MODELS = [PLAIN, PARTITIONED]
EXAMPLES = ["path:seeds/upsert", *MODELS]
# The test-only models name their schema: 'iceberg.examples'.
SCHEMA_CHANGE = f"iceberg.{SCHEMA}_examples.iceberg_schema_change"
VARS = {"upsert_file_format": "iceberg", "iceberg_test_models": True, "upsert_through_batch": 2}
# Only the tests of the selected models: the expected seed is also tested against every other
# upsert example.
BUILD = [*EXAMPLES, "--indirect-selection", "cautious"]


def rows(spark, table: str) -> list[tuple]:
    return spark.rows(table, ["country", "customer_id", "name", "tier", "batch_id"])


def snapshots(spark, table: str) -> list[tuple]:
    return spark.query(f"select snapshot_id, operation from {table}.snapshots order by committed_at")


@pytest.fixture(scope="module")
def history(dbt, spark):
    states = {}
    # Batch 1's rows are not the expected seed's (batch 2's): models only.
    only_build = ["--resource-type", "seed", "--resource-type", "model"]
    dbt.invoke("build", "--select", *BUILD, *only_build, schema=SCHEMA, vars={**VARS, "upsert_through_batch": 1})
    states["batch 1"] = {model: rows(spark, f"{NAMESPACE}.{model}") for model in MODELS}
    states["batch 1 snapshots"] = snapshots(spark, f"{NAMESPACE}.{PLAIN}")
    result = dbt.invoke("build", "--select", *BUILD, schema=SCHEMA, vars=VARS)
    states["batch 2"] = {model: rows(spark, f"{NAMESPACE}.{model}") for model in MODELS}
    states["batch 2 build"] = result
    states["batch 2 snapshots"] = snapshots(spark, f"{NAMESPACE}.{PLAIN}")
    states["delete files"] = {
        model: spark.query(f"select count(*) from {NAMESPACE}.{model}.delete_files")[0][0] for model in MODELS
    }
    return states


def test_first_run_and_incremental_merge_on_iceberg(history):
    for model in MODELS:
        assert history["batch 1"][model] == reference(1), model
        assert history["batch 2"][model] == reference(2), model
    tests = {name: node["status"] for name, node in history["batch 2 build"].nodes.items() if name.startswith("test.")}
    assert tests and set(tests.values()) == {"pass"}, tests


def test_tables_are_format_v2_merge_on_read_and_merges_write_delete_files(history, spark):
    for model in MODELS:
        properties = dict(spark.query(f"show tblproperties {NAMESPACE}.{model}"))
        assert properties["format-version"] == "2", model
        for mode in ("merge", "update", "delete"):
            assert properties[f"write.{mode}.mode"] == "merge-on-read", (model, properties)
        assert history["delete files"][model] > 0, model
    # Batch 1 built the table (one snapshot), batch 2 merged into it: no rewrite of the table.
    assert [operation for _, operation in history["batch 2 snapshots"]][-1] in ("overwrite", "delete")
    assert history["batch 2 snapshots"][: len(history["batch 1 snapshots"])] == history["batch 1 snapshots"]


def test_merge_names_the_partitions_of_its_changes(history):
    merges = [
        sql
        for node, sql in history["batch 2 build"].statements
        if node == f"model.joinery.{PARTITIONED}" and sql.lower().startswith("merge into")
    ]
    assert len(merges) == 1, merges
    assert f"merge into {NAMESPACE}.{PARTITIONED} as target" in merges[0]
    assert "target.`country` = " in merges[0], merges[0]


def test_new_columns_are_added_and_struct_types_read_back(dbt, spark, history):
    dbt.invoke("run", "--select", "iceberg_schema_change", schema=SCHEMA, vars=VARS, env={"JOINERY_ICEBERG_STEP": "1"})
    dbt.invoke("run", "--select", "iceberg_schema_change", schema=SCHEMA, vars=VARS, env={"JOINERY_ICEBERG_STEP": "2"})
    got = spark.query(f"select id, part, value, hits.`page-view`, note from {SCHEMA_CHANGE} order by id")
    assert got == [(1, 1, "v1", 1, None), (2, 0, "w2", 20, "note 2"), (4, 0, "v4", 4, None), (5, 1, "w5", 50, "note 5")]


def test_full_refresh_replaces_atomically_and_keeps_the_old_version(dbt, spark, history):
    table = f"{NAMESPACE}.{PLAIN}"
    before = snapshots(spark, table)
    dbt.invoke("run", "--select", PLAIN, "--full-refresh", schema=SCHEMA, vars=VARS)
    after = snapshots(spark, table)
    assert after[: len(before)] == before and len(after) == len(before) + 1
    assert rows(spark, table) == reference(2)
    # The version before the replace is still there, by time travel.
    old = spark.query(f"select country, customer_id, name, tier, batch_id from {table} version as of {before[-1][0]}")
    assert sorted(old) == reference(2)
    assert spark.query(f"select count(*) from {table}.delete_files")[0][0] == 0


def test_maintain_compacts_and_expires_snapshots_in_the_tables_catalog(dbt, spark, history):
    table = f"{NAMESPACE}.{PARTITIONED}"
    assert len(snapshots(spark, table)) > 1
    args = json.dumps({"relation": table, "retain_hours": 0})
    result = dbt.invoke("run-operation", "joinery.maintain", "--args", args, schema=SCHEMA, vars=VARS)
    calls = [sql for _, sql in result.statements if sql.lower().startswith("call ")]
    assert calls and all(sql.startswith("call iceberg.system.") for sql in calls), calls
    assert len(snapshots(spark, table)) == 1
    assert rows(spark, table) == reference(2)


def test_docs_generate_lists_iceberg_tables_with_their_columns(dbt, history):
    dbt.invoke("docs", "generate", "--select", *EXAMPLES, schema=SCHEMA, vars=VARS)
    catalog = json.loads((dbt.target_path / "catalog.json").read_text())
    for model in MODELS:
        node = catalog["nodes"][f"model.joinery.{model}"]
        assert node["metadata"]["schema"] in (SCHEMA, NAMESPACE), node["metadata"]
        # A partition column is stored last (upsert_customers_by_country's country).
        assert sorted(node["columns"]) == ["batch_id", "country", "customer_id", "name", "tier"], node["columns"]


@pytest.mark.parametrize(
    ("model", "catalog", "message"),
    [
        ("iceberg_outside_catalog", "spark_catalog", "which is not an Iceberg catalog"),
        ("delta_in_iceberg_catalog", "iceberg", "which holds only Iceberg tables"),
        ("parquet_table_in_iceberg_catalog", "iceberg", "which holds only Iceberg tables"),
    ],
)
def test_a_file_format_that_does_not_fit_the_catalog_is_a_compile_error(dbt, spark, history, model, catalog, message):
    result = dbt.invoke("run", "--select", model, schema=SCHEMA, vars=VARS, expect_success=False)
    assert "joinery.validate_catalog_format: argument `file_format`" in result.messages, result.messages
    assert message in result.messages, result.messages
    # A first build that failed: nothing of the model in its schema (`schema='<catalog>.examples'`).
    assert leftovers(spark, f"{catalog}.{SCHEMA}_examples", model) == []
