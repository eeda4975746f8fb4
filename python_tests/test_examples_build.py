"""`make demo`'s build in `make test`: `dbt build` of every seed, example model, data test and unit
test of joinery, with the demo's vars (harness/demo.py's DEMO_VARS: the build summary on, the upsert
examples on iceberg), on the suite's Thrift server in a schema of its own.

It proves, from the manifest of that one invocation:
- every enabled seed, model, data test and unit test of the project was part of the run and
  succeeded (a test that finds rows fails it), so an example added with tests cannot be skipped;
- every example that is not enabled is in a folder of opt-in examples, each built by the test module
  named in OPT_IN under its var, so an example cannot be left out by a stray `enabled`;
- each table format the README names (parquet, delta, iceberg, Hive Avro) holds at least one built
  example table, read back from Spark's `describe table extended`;
- a second `dbt build` of the compaction examples (their incremental runs, no new data) passes every
  one of their dbt tests (equal_rows against each example's expected seed) and keeps its tables.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from harness.dbt import REPO_ROOT
from harness.demo import DEMO_VARS

SCHEMA = "test_examples_build"
# Folders of examples that are off unless a var turns them on: misconfigured models, test-only
# models, lint-only models and scenarios that need batches landed between runs. Folder -> (var, the
# module building it).
OPT_IN = {
    "models/examples/compaction/lint/": ("compaction_lint_models", "harness/compile_examples.py"),
    "models/examples/compaction/property/": ("compaction_property_tests", "test_compaction_property.py"),
    "models/examples/iceberg/test_only/": ("iceberg_test_models", "test_iceberg.py"),
    "models/examples/operations/": ("operations_tests", "test_operations.py"),
    "models/examples/upsert/constraints/": ("upsert_constraints", "test_constraints.py"),
    "models/examples/upsert/error_cases/": ("upsert_error_cases", "test_upsert.py"),
    "models/examples/upsert/location_root/": ("upsert_location_root", "test_upsert.py"),
    "models/examples/upsert/long_journal/": ("upsert_long_journal", "test_upsert.py"),
    "models/examples/upsert/overlap/": ("upsert_overlap", "test_upsert.py"),
    "models/examples/upsert/punctuated_partitions/": ("upsert_punctuated_partitions", "test_upsert.py"),
    "models/examples/upsert/schema_change/": ("upsert_schema_change", "test_upsert.py"),
}
BUILT = {"model", "seed", "test", "unit_test"}
SUCCEEDED = {"model": "success", "seed": "success", "test": "pass", "unit_test": "pass"}
# The formats of the README's "Table formats" table that the examples use.
README_FORMATS = {"parquet", "delta", "iceberg", "hive avro"}


COMPACTION = ["path:seeds/compaction", "path:models/examples/compaction"]


@pytest.fixture(scope="module")
def build(dbt):
    result = dbt.invoke("build", schema=SCHEMA, vars=DEMO_VARS, expect_success=None)
    manifest = json.loads((dbt.target_path / "manifest.json").read_text())
    return result, manifest


@pytest.fixture(scope="module")
def compaction_again(build, dbt):
    """The compaction examples built again on the first build's tables: their incremental runs."""
    return dbt.invoke("build", "--exclude", "resource_type:seed", "--select", *COMPACTION, schema=SCHEMA,
                      vars=DEMO_VARS)  # fmt: skip


def project_nodes(manifest) -> dict[str, dict]:
    """joinery's own enabled nodes that `dbt build` runs, by unique id."""
    nodes = {**manifest["nodes"], **manifest.get("unit_tests", {})}
    return {
        unique_id: node
        for unique_id, node in nodes.items()
        if node["package_name"] == "joinery" and node["resource_type"] in BUILT
    }


def test_every_enabled_seed_model_and_test_was_built_and_passed(build):
    result, manifest = build
    nodes = project_nodes(manifest)
    kinds = Counter(node["resource_type"] for node in nodes.values())
    print(f"\nexamples build: {dict(sorted(kinds.items()))}")
    # Examples of every capability: a manifest of (almost) nothing would pass the checks below.
    assert kinds["model"] >= 50 and kinds["seed"] >= 30 and kinds["test"] >= 50, kinds
    not_run = sorted(set(nodes) - set(result.nodes))
    assert not not_run, f"enabled nodes that `dbt build` did not run: {not_run}"
    failed = {
        unique_id: (result.nodes[unique_id]["status"], result.nodes[unique_id]["message"])
        for unique_id, node in nodes.items()
        if result.nodes[unique_id]["status"] != SUCCEEDED[node["resource_type"]]
    }
    assert not failed, f"nodes that did not succeed:\n{json.dumps(failed, indent=1, default=str)}"
    assert result.success, result.messages


def test_every_disabled_example_is_an_opt_in_one(build):
    _, manifest = build
    disabled = [
        node["original_file_path"]
        for versions in manifest["disabled"].values()
        for node in versions
        if node["package_name"] == "joinery"
    ]
    assert disabled, "no opt-in example is disabled: the vars of this build turned them all on"
    stray = sorted(path for path in disabled if not path.startswith(tuple(OPT_IN)))
    assert not stray, f"disabled outside the opt-in folders, so built by no test: {stray}"


def table_format(spark, relation: str) -> str:
    """The format of a table as Spark reports it: its provider, `hive <serde format>` for Hive SerDe tables."""
    rows = spark.query(f"describe table extended {relation}")
    details = {(name or "").strip(): (value or "").strip() for name, value, *_ in rows}
    provider = details.get("Provider", "").lower()
    if provider != "hive":
        return provider
    serde = details.get("Serde Library", "").lower()
    return "hive avro" if "avro" in serde else f"hive {serde}"


def test_each_readme_format_holds_a_built_example_table(build, spark):
    result, manifest = build
    formats: dict[str, list[str]] = {}
    for unique_id, node in project_nodes(manifest).items():
        materialized = node["config"].get("materialized")
        if node["resource_type"] not in ("model", "seed") or materialized in ("view", "ephemeral"):
            continue
        assert result.nodes[unique_id]["status"] == "success", unique_id
        formats.setdefault(table_format(spark, node["relation_name"]), []).append(node["name"])
    print(f"\nexample tables by format: { {name: len(tables) for name, tables in sorted(formats.items())} }")
    missing = README_FORMATS - set(formats)
    assert not missing, f"no built example table is {missing}; built: {formats}"


def test_the_compaction_examples_pass_their_tests_after_an_incremental_run(compaction_again, spark):
    # `make demo` builds them once; their incremental runs (first run, then incremental) must hold
    # the expected rows too: every example's equal_rows test against its expected seed.
    tested = {node for node, _ in compaction_again.statements if node.startswith("test.")}
    examples = list((REPO_ROOT / "models" / "examples" / "compaction").glob("*.sql"))
    assert len(tested) >= len(examples), f"{len(tested)} dbt tests ran for {len(examples)} examples"
    built = {row[1] for row in spark.query(f"show tables in {SCHEMA}")}
    assert {"compaction_removed_attribute_drop", "compaction_removed_attribute_keep", "compaction_null_ts"} <= built
