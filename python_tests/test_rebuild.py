"""joinery_upsert's one build-mode decision and its cost rule, on every format: when an incremental
run costs more than a rebuild (here rebuild_threshold 0.001: any measured incremental run does), the
next run rebuilds from the model's own full-build SQL, never from the SELECT of changes; the
decision is made while the model compiles, so every run executes the SQL dbt compiled in the same
invocation, and a model no capability plans rebuilds even when nothing changed (its compile cannot
know that); with 'always_incremental' no run rebuilds. And what a run sends and commits on delta and
iceberg: the statements joinery_upsert's guarantees need, one commit per run.

The upsert example (models/examples/upsert/upsert_customers.sql) selects only the batches above its
table's newest batch_id on an incremental run. Batches 3 and 4 are rows this test adds to the seed's
table, so a rebuild has changes to apply and must still hold every earlier batch: a rebuild from the
incremental SELECT would hold only the new batch. Rows are compared as multisets with test_upsert's
plain-Python reference, plus the added rows.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from harness.dbt import REPO_ROOT
from python_tests.test_upsert import reference

MODEL = "upsert_customers"
COLUMNS = ["country", "customer_id", "name", "tier", "batch_id"]
FORMATS = ["parquet", "delta", "iceberg"]
# (batch_id, country, customer_id, name, tier, is_deleted): rows of the seed's table this test adds.
ADDED = {3: ("NL", 90, "Zed", "silver"), 4: ("NL", 91, "Yan", "gold")}


def table_of(file_format: str, schema: str) -> str:
    return f"iceberg.{schema}.{MODEL}" if file_format == "iceberg" else f"{schema}.{MODEL}"


def commits(spark, file_format: str, table: str) -> int:
    """The table's commits so far: delta versions, iceberg snapshots (none counted on parquet)."""
    if file_format == "delta":
        return len(spark.query(f"describe history {table}"))
    if file_format == "iceberg":
        return spark.query(f"select count(*) from {table}.snapshots")[0][0]
    return 0


def expected(through: int) -> Counter:
    rows = reference(min(through, 2))
    rows += [
        (country, key, name, tier, str(batch))
        for batch, (country, key, name, tier) in ADDED.items()
        if batch <= through
    ]
    return Counter((country, int(key), name, tier, int(batch)) for country, key, name, tier, batch in rows)


@pytest.fixture(scope="module", params=FORMATS)
def runs(request, dbt, spark):
    """Batch 1 as a full build, batch 2 incrementally (its time recorded); then with rebuild_threshold
    0.001 a run with nothing new and a run with batch 3 (both rebuilds), and with
    'always_incremental' a run with batch 4 (incremental)."""
    file_format = request.param
    schema = f"test_rebuild_{file_format}"
    table = table_of(file_format, schema)
    found = {"format": file_format, "table": table, "schema": schema}

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
            "invocation": result.invocation_id,
            # The statement that executed the SQL `dbt` compiled in the same invocation.
            "ran": result.statement_running_compiled_sql(MODEL),
        }

    def land(batch: int) -> None:
        country, key, name, tier = ADDED[batch]
        values = f"{batch}, '{country}', {key}, '{name}', '{tier}', false"
        spark.execute(f"insert into {schema}.upsert_customer_changes select {values}")

    seeds = ["build", "--select", "path:seeds/upsert", "--resource-type", "seed"]
    dbt.invoke(*seeds, schema=schema, vars={"upsert_file_format": file_format})
    run("full build", "run", "--select", MODEL, "--full-refresh", through=1, threshold=1)
    run("incremental", "run", "--select", MODEL, through=2, threshold=1)
    run("no change", "run", "--select", MODEL, through=2, threshold=0.001)
    land(3)
    run("rebuild", "run", "--select", MODEL, through=3, threshold=0.001)
    land(4)
    run("always incremental", "run", "--select", MODEL, through=4, threshold="always_incremental")
    # The record of each run, read back from the commits by joinery.run_history (one more invocation).
    history = dbt.invoke(
        "run-operation", "joinery.run_history", "--args", f"{{select: {MODEL}}}", schema=schema,
        vars={"upsert_file_format": file_format, "upsert_through_batch": 4,
              "joinery_rebuild_threshold": "always_incremental"},
    )  # fmt: skip
    found["history log"] = [message for _, message in history.logs if message.startswith("joinery.run_history")]
    names = "invocation_id, mode, path, reason, version, seconds, rows_written, rows_inserted, rows_updated"
    names += ", rows_deleted"
    found["records"] = {
        row[0]: dict(zip(names.split(", "), row, strict=True))
        for row in spark.query(f"select {names} from {schema}.joinery_run_history where model = '{MODEL}'")
    }
    return found


def test_each_run_holds_the_reference_rows(runs):
    assert runs["full build"]["rows"] == expected(1)
    for label, through in [("incremental", 2), ("no change", 2), ("rebuild", 3), ("always incremental", 4)]:
        assert runs[label]["rows"] == expected(through), label


WATERMARK = "> (select coalesce(max(applied.`batch_id`)"


@pytest.mark.parametrize("label", ["no change", "rebuild"])
def test_a_costly_incremental_run_makes_the_next_runs_rebuild_from_the_compiled_full_build_sql(runs, label):
    # The incremental run executed the watermark's text, so its absence from a rebuild means something:
    # the model compiled as a full build, selecting every batch (previous_max's default), and that
    # compiled SQL is what the rebuild executed. The run with no change rebuilds too: the rule is asked
    # while the model compiles, before anything knows whether it has changes.
    assert WATERMARK in runs["incremental"]["ran"], runs["incremental"]["ran"]
    rebuild = runs[label]
    assert WATERMARK not in rebuild["ran"], rebuild["ran"]
    if runs["format"] in ("delta", "iceberg"):
        assert rebuild["ran"].startswith("create or replace table"), rebuild["ran"]
        assert rebuild["commits"] == 1
        assert "rebuilt: its last incremental run took" in rebuild["message"], rebuild["message"]
    else:
        assert any("set location" in sql for sql in rebuild["statements"]), rebuild["statements"]


def test_every_run_executes_the_sql_dbt_compiled_in_the_same_invocation(runs):
    # statement_running_compiled_sql found each run's statement (the fixture): the full build's
    # `create or replace` (a parquet insert), the incremental runs' staged changes.
    for label in ["full build", "incremental", "no change", "rebuild", "always incremental"]:
        ran = runs[label]["ran"]
        assert (WATERMARK in ran) == (label in ("incremental", "always incremental")), (label, ran)


def test_always_incremental_never_rebuilds(runs):
    statements = runs["always incremental"]["statements"]
    assert not any(sql.startswith("create or replace table") for sql in statements), statements
    if runs["format"] in ("delta", "iceberg"):
        assert runs["always incremental"]["commits"] == 1


def test_an_incremental_run_sends_what_its_guarantees_need_and_commits_once(runs):
    # A model no capability plans reads its table's state (delta: history; iceberg: snapshots) twice
    # with the cost rule on: while it compiles, for the rule, and as its run starts, for the checks and
    # the note. It stages its changes once, reads their figures and both schemas in one statement, and
    # sends its MERGE between the note's SET and RESET; iceberg then reads the MERGE's figures from its
    # snapshot. No property statement. With 'always_incremental' the compile reads nothing.
    incremental = runs["incremental"]
    statements = incremental["statements"]
    first_words = [sql.split()[0] for sql in statements]
    last_words = [sql.split()[0] for sql in runs["always incremental"]["statements"]]
    if runs["format"] == "delta":
        assert first_words == ["describe", "describe", "cache", "select", "set", "merge", "reset", "drop"], statements
        assert last_words == first_words[1:], runs["always incremental"]["statements"]
    elif runs["format"] == "iceberg":
        run_words = ["select", "cache", "select", "set", "merge", "reset", "select", "drop"]
        assert first_words == ["select", *run_words], statements
        assert last_words == run_words, runs["always incremental"]["statements"]
    if runs["format"] in ("delta", "iceberg"):
        assert not [sql for sql in statements if "set tblproperties" in sql], statements
        assert incremental["commits"] == 1
        assert incremental["message"].startswith("MERGE"), incremental["message"]


def test_a_full_build_sends_the_preflight_and_one_create_or_replace(runs):
    statements = runs["full build"]["statements"]
    if runs["format"] == "delta":
        assert [sql.split()[0] for sql in statements] == ["select", "create"], statements
    elif runs["format"] == "iceberg":
        assert [sql.split()[0] for sql in statements] == ["select", "set", "create", "reset"], statements


def test_each_commit_records_its_run_and_run_history_reads_it_back(runs):
    # joinery.run_history reads each commit's note and the commit's own row counts and version: the
    # full build's rows, batch 2's changes (upsert.md: 1 inserted, 2 updated, 2 deleted), the two
    # rebuilds by the cost rule (the run with no change, then batch 3) and batch 4's one new key.
    records = runs["records"]
    record = {label: records.get(runs[label]["invocation"]) for label in
              ["full build", "incremental", "no change", "rebuild", "always incremental"]}  # fmt: skip
    full, incremental, unchanged, rebuild, last = record.values()
    assert (unchanged["mode"], unchanged["path"]) == ("full", "cost_rule"), unchanged
    assert unchanged["rows_written"] == sum(expected(2).values()), unchanged
    assert (full["mode"], full["path"], full["reason"]) == ("full", "full_refresh", "full refresh"), full
    assert full["rows_written"] == sum(expected(1).values()), full
    assert (incremental["mode"], incremental["path"]) == ("incremental", "incremental"), incremental
    changed = [incremental[f"rows_{name}"] for name in ("inserted", "updated", "deleted")]
    assert changed == [1, 2, 2], incremental
    assert (rebuild["mode"], rebuild["path"]) == ("full", "cost_rule"), rebuild
    assert rebuild["reason"].startswith("rebuilt: its last incremental run took"), rebuild
    assert rebuild["rows_written"] == sum(expected(3).values()), rebuild
    assert [last[f"rows_{name}"] for name in ("inserted", "updated", "deleted")] == [1, 0, 0], last
    for label, found in record.items():
        assert found["version"] and found["seconds"] is not None and found["seconds"] > 0, (label, found)
    if runs["format"] == "delta":
        versions = [int(found["version"]) for found in record.values()]
        assert versions == sorted(versions) and len(set(versions)) == 5, versions
    assert any("5 records" in line for line in runs["history log"]), runs["history log"]


def test_the_operations_query_compares_incremental_runs_with_full_builds(runs, spark):
    # docs/operations.md's "is incremental paying off" query, as written, on the records read above.
    text = (REPO_ROOT / "docs" / "operations.md").read_text()
    query = re.search(r"<!-- operations: run-history-query -->\n```sql\n(.*?)```", text, re.S).group(1)
    rows = spark.query(query.replace("analytics.joinery_run_history", f"{runs['schema']}.joinery_run_history"))
    assert {row[0] for row in rows} == {MODEL}, rows
    # Two incremental runs and two rebuilds by the cost rule, in whatever weeks they fell.
    assert (sum(row[2] for row in rows), sum(row[6] for row in rows)) == (2, 2), rows
    assert all(row[3] > 0 and row[4] > 0 and row[5] > 0 for row in rows if row[2]), rows
