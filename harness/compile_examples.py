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
- forced/: the SQL of incremental runs that tables with rows force (FORCED_RUNS), as each run compiled
  it: compaction's paths (a new pull compared with the table, new delta rows applied, a delta's new
  column compared with the table), with and without tombstones, and the FK join's runs on delta.
  Empty tables reach only one of them: the incremental pass finds the seeds' snapshot newer than
  the empty table, a new pull;
- sent/: the statements that write which those runs sent (WRITES: joinery_upsert's MERGEs on delta,
  its staged version, journal and commit on parquet, the tombstones' staging), captured from dbt as
  it sent them, whatever they are; linted with lint/sent.sqlfluff.
Every public joinery macro that returns SQL must be in one of them (NOT_SQL names those that do not).
The lint-only examples (models/examples/compaction/lint/) are on in every invocation (LINT_VARS).

`python -m harness.compile_examples [TARGET_PATH]` (default target/lint_compile).
"""

from __future__ import annotations

import functools
import json
import os
import re
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
    "run_history": "an operation",
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


# Every invocation turns the lint-only examples on, so one parse state serves the whole lint.
LINT_VARS = {"compaction_lint_models": True}
# Runs on rows, in order, after the compile passes built every incremental example's table empty
# and the seeds were loaded in full: (name, statements run before, the models run, the path
# each compaction must log). A run that takes another path fails the lint: it would lint other SQL.
FORCED_RUNS = [
    # The snapshot has rows and the table none: a new pull, compared with the table (a rebase).
    # Without loaded_at there is no pull to tell: the delta rows are applied.
    (
        "rebase",
        [],
        {
            "compaction_simple_incremental": "a new snapshot: full compaction compared with the table",
            "compaction_lint_without_loaded_at": "apply the new delta rows",
        },
    ),
    # A delta row loaded after the table's newest: applied to the table's rows for its key.
    (
        "apply",
        ["insert into {schema}.compaction_simple_delta values (6, 'f', timestamp'2024-01-08 00:00:00')"],
        dict.fromkeys(
            ["compaction_simple_incremental", "compaction_lint_without_loaded_at"], "apply the new delta rows"
        ),
    ),
    # The delta gains a column and a row: the full compaction compared with the table, with and
    # without tombstones.
    (
        "new_columns",
        [
            "alter table {schema}.compaction_simple_delta add columns (joinery_lint_note string)",
            "insert into {schema}.compaction_simple_delta values (5, 'e', timestamp'2024-01-09 00:00:00', 'lint')",
        ],
        dict.fromkeys(
            ["compaction_simple_incremental", "compaction_lint_without_loaded_at"],
            "new columns: compared with the table",
        ),
    ),
    # The changelogs' rows into the FK join's delta tables: every run is a MERGE.
    (
        "merge",
        [],
        dict.fromkeys(["fk_orders_state", "fk_customers_state", "fk_orders_customers", "fk_orders_customers_left"]),
    ),
]
# The statements of those runs that sent/ holds, by their first word: those that write (a table, a
# staged version, a commit, a journal). Not the reads joinery_upsert and compact send to decide
# (catalog reads, probes of counts and flags) or session settings.
WRITES = {"merge", "insert", "create", "cache", "alter", "drop", "delete", "update", "truncate"}
# sqlfluff's Spark dialect does not parse a partition's LOCATION in `alter table ... add partition`
# (a parse error, not a rule): such statements are left out.
UNPARSED = re.compile(r"^alter\s+table\s+\S+\s+add\s+partition\b.*\blocation\b", re.IGNORECASE | re.DOTALL)


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
        invoke = functools.partial(project.invoke, vars=LINT_VARS)
        invoke("parse")
        manifest = json.loads((project.target_path / "manifest.json").read_text())
        inputs = ["resource_type:seed", *models_read_by_models(manifest)]
        invoke("build", "--empty", "--select", *inputs, "--exclude", *TESTS)
        first_run = example_sql(invoke("compile", "--full-refresh", "--select", "resource_type:model").nodes)
        incremental_names = incremental_models(manifest)
        unbuilt = sorted(set(incremental_names) - set(inputs))
        invoke("build", "--empty", "--select", *unbuilt, "--exclude", *TESTS)
        incremental = example_sql(invoke("compile", "--select", *incremental_names).nodes)
        macro_sql = {"calls": compile_inline(invoke, MACRO_CALLS)}
        # dbt 1.12's `build --empty` loads seeds empty too: the forced runs need their inputs' rows.
        invoke("seed", "--select", *sorted({f"+{model}" for _, _, models in FORCED_RUNS for model in models}))
        forced, sent = forced_runs(invoke, project.schema)
    check_incremental_form(first_run, incremental, incremental_names)
    check_macros_compiled(manifest, set(MACRO_CALLS))
    lint_dir = target_path / "sql"
    shutil.rmtree(lint_dir, ignore_errors=True)
    folders = [("first_run", first_run), ("incremental", incremental), ("macros", macro_sql)]
    for folder, files in [*folders, ("forced", forced), ("sent", sent)]:
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


def compile_inline(invoke, calls: dict[str, str]) -> str:
    """The SQL `dbt compile --inline` renders for the macro calls, one statement each (one dbt
    invocation for them all)."""
    text = ";\n\n".join(f"-- joinery.{name}\n{call}" for name, call in calls.items())
    nodes = invoke("compile", "--inline", text).nodes
    [sql] = [node["compiled_code"] for node in nodes.values()]
    return sql


def forced_runs(invoke, schema: str) -> tuple[dict[str, str], dict[str, str]]:
    """FORCED_RUNS on the embedded Spark: ({<run>/<model>: the model's SQL as the run compiled it},
    {<run>/<model>/<nn>: each statement of WRITES the model's run sent})."""
    from pyspark.sql import SparkSession

    forced, sent = {}, {}
    for name, statements, paths in FORCED_RUNS:
        for statement in statements:
            # dbt's own session: the `local` target runs Spark in this process.
            SparkSession.builder.getOrCreate().sql(statement.format(schema=schema))
        result = invoke("run", "--select", *paths)
        for model, path in paths.items():
            [node_id] = [node_id for node_id in result.nodes if node_id.endswith(f".{model}")]
            logged = [
                message for node, message in result.logs if node == node_id and message.startswith("joinery.compact")
            ]
            own = [sql for node, sql in result.statements if node == node_id]
            if path is not None and [message.split(": ", 1)[-1] for message in logged] != [path]:
                raise RuntimeError(f"lint run {name}: {model} logged {logged}, not `{path}`: not the SQL to lint")
            if path is None and not any(sql.lower().startswith("merge") for sql in own):
                raise RuntimeError(f"lint run {name}: {model} sent no MERGE: {[sql[:60] for sql in own]}")
            forced[f"{name}/{model}"] = result.nodes[node_id]["compiled_code"]
            writes = [sql for sql in own if sql.split(None, 1)[0].lower() in WRITES and not UNPARSED.match(sql)]
            for number, sql in enumerate(writes):
                sent[f"{name}/{model}/{number:02d}"] = sql
    return forced, sent


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
