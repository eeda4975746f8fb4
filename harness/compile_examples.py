"""`make lint`'s compile step: the SQL joinery's macros generate for the example models, for sqlfluff.

joinery's macros read their inputs' columns from Spark, so `dbt compile` needs every seed and model
upstream of an example to exist. On the embedded `local` target (no server) and in a throwaway Spark
folder, `dbt build --empty` creates the seeds (the examples' sources are seeds too) and every model
another model reads, with their columns and no rows (no tests run). Then, in <target path>/sql/:
- first_run/: every model compiled with --full-refresh, the SQL of a first build;
- incremental/: the incremental models (joinery_upsert, dbt's incremental) compiled again once their
  own tables exist (built empty), the SQL a scheduled run executes: the diff, the delta application,
  the changed keys. Each must differ from its first-run SQL, or this pass compiled the first run again;
- macros/: the public SQL macros no example model calls, compiled from a call on the example seeds.
Every public joinery macro that returns SQL must be in one of them (NOT_SQL names those that do not).

`python -m harness.compile_examples [TARGET_PATH]` (default target/lint_compile).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from harness.dbt import REPO_ROOT, DbtProject
from harness.java import THROWAWAY_METASTORE, JavaMissing, require_java, short_lived_java_options

DEFAULT_TARGET_PATH = REPO_ROOT / "target" / "lint_compile"
INCREMENTAL_MATERIALIZATIONS = ("joinery_upsert", "incremental")
TESTS = ("resource_type:test", "resource_type:unit_test")

# Documented public macros that return no SQL for a query: names, relations, flags and checks,
# hooks and operations (their statements are not a SELECT of a model), and the dbt or dbt-spark
# macros joinery overrides. Every other public macro must be compiled here.
NOT_SQL = {
    "generate_schema_name": "a schema name",
    "catalog_schema_name": "a schema name",
    "schema_catalog": "a catalog name",
    "validate_catalog_format": "a compile-time check",
    "spark__list_relations_without_caching": "dbt-spark's relation listing",
    "spark__file_format_clause": "dbt-spark's `using` clause",
    "spark__load_csv_rows": "dbt-spark's seed loader",
    "print_build_summary": "an on-run-end hook that logs",
    "record_metrics": "a post-hook: its statements run after the model, not in its SELECT",
    "maintain": "an operation",
    "maintain_all": "an operation",
    "maintain_metrics": "an operation",
    "describe_join": "logs a schema",
    "describe_ports": "logs the ports",
    "upsert_marker_column": "a column name",
    "upsert_check_marker_clash": "a compile-time check",
    "upsert_key_argument": "a list of key columns",
    "upsert_tombstones_relation": "a relation",
    "is_incremental": "a boolean",
    "test_unique_combination": "a generic test (tests/ are linted as sources)",
}

# Public SQL macros that no example model calls, compiled from these calls on the example seeds
# and models (integration_tests/ calls them from a project that installs joinery).
MACRO_CALLS = {
    "dedup_latest": "{{ joinery.dedup_latest(ref('compaction_duplicates_delta'), key='key', order_by='loaded_at') }}",
    "union_padded": "{{ joinery.union_padded([ref('compaction_new_attribute_snapshot'),"
    " ref('compaction_new_attribute_delta')], source_column='batch') }}",
    "change_feed": "select * from {{ joinery.change_feed(ref('fk_orders_state'), 0, 1) }} as feed",
    "upsert_merge_sql": "{{ joinery.upsert_merge_sql(ref('upsert_customers'), ref('upsert_customer_changes'),"
    " ['country', 'customer_id'], ['country', 'customer_id', 'name', 'tier', 'batch_id'],"
    " deleted_column='is_deleted', column_types={'name': 'string', 'tier': 'string', 'batch_id': 'int'}) }}",
}


def compile_examples(target_path: Path) -> Path:
    """Build the examples' inputs empty in a temporary Spark folder, compile every model's first
    run, build the incremental models empty and compile their incremental runs, compile the calls
    of MACRO_CALLS, and write the SQL under <target_path>/sql/; returns that folder."""
    shutil.rmtree(target_path / "compiled", ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="joinery-lint-") as spark_dir:
        os.environ["JOINERY_SPARK_DIR"] = spark_dir
        os.environ.setdefault("DBT_LOG_PATH", str(target_path / "logs"))
        # The metastore is deleted with the folder: no commit needs to reach the disk.
        os.environ.setdefault("JOINERY_JAVA_OPTIONS", f"{short_lived_java_options()} {THROWAWAY_METASTORE}")
        project = DbtProject(target="local", target_path=target_path, env={"JOINERY_DRIVER_MEMORY": "1g"})
        project.invoke("parse")
        manifest = json.loads((project.target_path / "manifest.json").read_text())
        inputs = ["resource_type:seed", *models_read_by_models(manifest)]
        project.invoke("build", "--empty", "--select", *inputs, "--exclude", *TESTS)
        first_run = example_sql(project.invoke("compile", "--full-refresh", "--select", "resource_type:model").nodes)
        incremental_names = incremental_models(manifest)
        unbuilt = sorted(set(incremental_names) - set(inputs))
        project.invoke("build", "--empty", "--select", *unbuilt, "--exclude", *TESTS)
        incremental = example_sql(project.invoke("compile", "--select", *incremental_names).nodes)
        macro_sql = {"calls": compile_inline(project, MACRO_CALLS)}
    check_incremental_form(first_run, incremental, incremental_names)
    check_macros_compiled(manifest, set(MACRO_CALLS))
    lint_dir = target_path / "sql"
    shutil.rmtree(lint_dir, ignore_errors=True)
    for folder, files in [("first_run", first_run), ("incremental", incremental), ("macros", macro_sql)]:
        for relative, sql in files.items():
            path = lint_dir / folder / (relative if relative.endswith(".sql") else f"{relative}.sql")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(sql.strip() + "\n")
    return lint_dir


def models_read_by_models(manifest: dict) -> list[str]:
    """Names of the example models that another model reads: the only models compiling needs built."""
    return sorted(
        manifest["nodes"][parent]["name"]
        for parent, children in manifest["child_map"].items()
        if parent.startswith("model.joinery.") and any(child.startswith("model.") for child in children)
    )


def incremental_models(manifest: dict) -> list[str]:
    """Names of the enabled example models whose runs after the first are incremental."""
    return sorted(
        node["name"]
        for node_id, node in manifest["nodes"].items()
        if node_id.startswith("model.joinery.") and node["config"]["materialized"] in INCREMENTAL_MATERIALIZATIONS
    )


def example_sql(nodes: dict[str, dict]) -> dict[str, str]:
    """{path under models/examples/: compiled SQL} of the example models dbt compiled."""
    compiled = {
        node["original_file_path"].removeprefix("models/examples/"): node["compiled_code"]
        for node_id, node in nodes.items()
        if node_id.startswith("model.joinery.")
    }
    if not compiled:
        raise RuntimeError("dbt compile returned no example model")
    return compiled


def compile_inline(project: DbtProject, calls: dict[str, str]) -> str:
    """The SQL `dbt compile --inline` renders for the macro calls, one statement each (one dbt
    invocation for them all)."""
    text = ";\n\n".join(f"-- joinery.{name}\n{call}" for name, call in calls.items())
    nodes = project.invoke("compile", "--inline", text).nodes
    [sql] = [node["compiled_code"] for node in nodes.values()]
    return sql


def check_incremental_form(first_run: dict[str, str], incremental: dict[str, str], names: list[str]) -> None:
    """Each incremental model was compiled again, and its SQL is not its first run's: else the
    incremental pass would lint the first run a second time."""
    compiled_names = {Path(relative).stem for relative in incremental}
    missing = sorted(set(names) - compiled_names)
    same = sorted(relative for relative, sql in incremental.items() if sql == first_run.get(relative))
    if missing or same:
        raise RuntimeError(
            "the incremental pass did not compile the incremental form of every incremental example: "
            f"not compiled {missing}, compiled as on a first run {same}"
        )


def check_macros_compiled(manifest: dict, compiled_inline: set[str]) -> None:
    """Every documented public joinery macro that returns SQL is called by an example model or
    compiled from MACRO_CALLS, so sqlfluff reads what it generates."""
    called = {
        dependency.removeprefix("macro.joinery.")
        for node_id, node in manifest["nodes"].items()
        if node_id.startswith("model.joinery.")
        for dependency in node["depends_on"]["macros"]
    }
    public = {
        macro["name"]
        for macro in manifest["macros"].values()
        if macro["package_name"] == "joinery"
        and macro["original_file_path"].startswith("macros/")
        and (macro.get("patch_path") or "").endswith(".yml")
        and not macro["name"].startswith(("_", "default__", "materialization_"))
    }
    unknown = sorted(set(NOT_SQL) - public)
    uncompiled = sorted(public - called - compiled_inline - set(NOT_SQL))
    if unknown or uncompiled:
        raise RuntimeError(
            f"public SQL macros that no example model calls and MACRO_CALLS does not compile: {uncompiled}; "
            f"NOT_SQL names macros that are not documented public macros: {unknown}"
        )


def main(argv: list[str]) -> int:
    try:
        require_java()
    except JavaMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    target_path = Path(argv[0]).resolve() if argv else DEFAULT_TARGET_PATH
    lint_dir = compile_examples(target_path)
    print(f"compiled SQL of the example models: {lint_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
