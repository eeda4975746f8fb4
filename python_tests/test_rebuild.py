"""joinery_upsert's one build-mode decision and its cost rule, on every format: when an incremental
run costs more than a rebuild (here rebuild_threshold 0.001: any measured incremental run does), the
next run rebuilds from the model's own full-build SQL, never from the SELECT of changes; with
'always_incremental' it does not. And what a run sends and commits on delta and iceberg: the
statements joinery_upsert's guarantees need, one commit per run, none when nothing changed.

The upsert example (models/examples/upsert/upsert_customers.sql) selects only the batches above its
table's newest batch_id on an incremental run. A run with nothing new and the rule on must rebuild
the table whole: the incremental SELECT would be empty, so a rebuild from it would empty the table.
Rows are compared as multisets with test_upsert's plain-Python reference.
"""

from __future__ import annotations

from collections import Counter

import pytest

from python_tests.test_upsert import reference

MODEL = "upsert_customers"
COLUMNS = ["country", "customer_id", "name", "tier", "batch_id"]
FORMATS = ["parquet", "delta", "iceberg"]


def table_of(file_format: str, schema: str) -> str:
    return f"iceberg.{schema}.{MODEL}" if file_format == "iceberg" else f"{schema}.{MODEL}"


def commits(spark, file_format: str, table: str) -> int:
    """The table's commits so far: delta versions, iceberg snapshots (none counted on parquet)."""
    if file_format == "delta":
        return len(spark.query(f"describe history {table}"))
    if file_format == "iceberg":
        return spark.query(f"select count(*) from {table}.snapshots")[0][0]
    return 0


@pytest.fixture(scope="module", params=FORMATS)
def runs(request, dbt, spark):
    """Batch 1 as a full build, batch 2 incrementally (its time recorded), then with rebuild_threshold 0.001
    a run with nothing new (a rebuild), and with 'always_incremental' another (incremental, no commit)."""
    file_format = request.param
    schema = f"test_rebuild_{file_format}"
    table = table_of(file_format, schema)
    found = {"format": file_format, "table": table}

    def run(label: str, *args: str, through: int, threshold):
        before = commits(spark, file_format, table) if label != "full build" else 0
        result = dbt.invoke(
            *args,
            schema=schema,
            vars={"upsert_file_format": file_format, "upsert_through_batch": through,
                  "joinery_rebuild_threshold": threshold},
        )  # fmt: skip
        statements = [sql for node, sql in result.statements if node == f"model.joinery.{MODEL}"]
        found[label] = {
            "rows": Counter(spark.query(f"select {', '.join(COLUMNS)} from {table}")),
            "statements": statements,
            "commits": commits(spark, file_format, table) - before,
            "message": result.nodes[f"model.joinery.{MODEL}"]["message"],
        }

    seeds = ["build", "--select", "path:seeds/upsert", "--resource-type", "seed"]
    dbt.invoke(*seeds, schema=schema, vars={"upsert_file_format": file_format})
    run("full build", "run", "--select", MODEL, "--full-refresh", through=1, threshold=1)
    run("incremental", "run", "--select", MODEL, through=2, threshold=1)
    run("rebuild", "run", "--select", MODEL, through=2, threshold=0.001)
    run("always incremental", "run", "--select", MODEL, through=2, threshold="always_incremental")
    return found


def test_each_run_holds_the_reference_rows(runs):
    assert runs["full build"]["rows"] == Counter(reference(1))
    for label in ("incremental", "rebuild", "always incremental"):
        assert runs[label]["rows"] == Counter(reference(2)), label


def test_a_costly_incremental_run_makes_the_next_run_rebuild_from_the_full_build_sql(runs, capsys):
    # Nothing new: the incremental SELECT is empty. The rebuild rendered the model again, so it
    # selected every batch (previous_max's default), and the table still holds every row.
    # The incremental run shows the watermark's text, so its absence from the rebuild means something.
    watermark = "> (select coalesce(max(applied.`batch_id`)"
    assert any(watermark in sql for sql in runs["incremental"]["statements"]), runs["incremental"]["statements"]
    rebuild = runs["rebuild"]
    assert not any(watermark in sql for sql in rebuild["statements"]), rebuild["statements"]
    if runs["format"] in ("delta", "iceberg"):
        assert any(sql.startswith("create or replace table") for sql in rebuild["statements"]), rebuild["statements"]
        assert rebuild["commits"] == 1
        assert "rebuilt: its last incremental run took" in rebuild["message"], rebuild["message"]
    else:
        assert any("set location" in sql for sql in rebuild["statements"]), rebuild["statements"]
    assert runs["rebuild"]["rows"] == Counter(reference(2))


def test_always_incremental_never_rebuilds(runs):
    statements = runs["always incremental"]["statements"]
    assert not any(sql.startswith("create or replace table") for sql in statements), statements
    assert runs["always incremental"]["commits"] == 0


def test_an_incremental_run_sends_what_its_guarantees_need_and_commits_once(runs):
    # delta: history, the view of the SELECT, the preflight, the MERGE; iceberg: snapshots, the
    # preflight (with the changed rows' figures), SET, MERGE, RESET. No property statement.
    incremental = runs["incremental"]
    statements = incremental["statements"]
    if runs["format"] in ("delta", "iceberg"):
        assert not [sql for sql in statements if "set tblproperties" in sql], statements
    if runs["format"] == "delta":
        assert len(statements) == 4, statements
        assert [sql.split()[0] for sql in statements] == ["describe", "create", "select", "merge"], statements
    elif runs["format"] == "iceberg":
        assert len(statements) == 5, statements
        assert [sql.split()[0] for sql in statements] == ["select", "select", "set", "merge", "reset"], statements
    if runs["format"] in ("delta", "iceberg"):
        assert incremental["commits"] == 1
        assert incremental["message"].startswith("MERGE"), incremental["message"]


def test_a_full_build_sends_the_preflight_and_one_create_or_replace(runs):
    statements = runs["full build"]["statements"]
    if runs["format"] == "delta":
        assert [sql.split()[0] for sql in statements] == ["select", "create"], statements
    elif runs["format"] == "iceberg":
        assert [sql.split()[0] for sql in statements] == ["select", "set", "create", "reset"], statements
