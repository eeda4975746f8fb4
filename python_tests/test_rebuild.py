"""joinery_upsert's one build-mode decision and its cost rule, on every format: when an incremental
run costs more than a rebuild (here rebuild_threshold 0.001: any measured incremental run does), the
next run *with changes* rebuilds from the model's own full-build SQL, never from the SELECT of
changes; a run with no change never rebuilds, and with 'always_incremental' no run does. And what a
run sends and commits on delta and iceberg: the statements joinery_upsert's guarantees need, one
commit per run, none when nothing changed.

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
    0.001 a run with nothing new (no rebuild), a run with batch 3 (a rebuild), and with
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


def test_a_costly_incremental_run_makes_the_next_run_with_changes_rebuild_from_the_full_build_sql(runs):
    # The incremental run shows the watermark's text, so its absence from the rebuild means something:
    # the rebuild rendered the model again, and selected every batch (previous_max's default).
    watermark = "> (select coalesce(max(applied.`batch_id`)"
    assert any(watermark in sql for sql in runs["incremental"]["statements"]), runs["incremental"]["statements"]
    rebuild = runs["rebuild"]
    final = [sql for sql in rebuild["statements"] if sql.startswith(("create or replace table", "insert"))]
    assert final and not any(watermark in sql for sql in final), rebuild["statements"]
    if runs["format"] in ("delta", "iceberg"):
        assert any(sql.startswith("create or replace table") for sql in rebuild["statements"]), rebuild["statements"]
        assert rebuild["commits"] == 1
        assert "rebuilt: its last incremental run took" in rebuild["message"], rebuild["message"]
    else:
        assert any("set location" in sql for sql in rebuild["statements"]), rebuild["statements"]


def test_a_run_with_no_change_never_rebuilds_and_commits_nothing(runs):
    statements = runs["no change"]["statements"]
    assert not any(sql.startswith("create or replace table") for sql in statements), statements
    assert not any("set location" in sql for sql in statements), statements
    assert runs["no change"]["commits"] == 0
    assert "no changed rows" in runs["no change"]["message"], runs["no change"]["message"]


def test_always_incremental_never_rebuilds(runs):
    statements = runs["always incremental"]["statements"]
    assert not any(sql.startswith("create or replace table") for sql in statements), statements
    if runs["format"] in ("delta", "iceberg"):
        assert runs["always incremental"]["commits"] == 1


def test_an_incremental_run_sends_what_its_guarantees_need_and_commits_once(runs):
    # A model no capability plans reads its table's state (delta: history; iceberg: snapshots), stages
    # its changes once, reads their figures and both schemas in one statement, and sends its MERGE
    # between the note's SET and RESET; iceberg then reads the MERGE's figures from its snapshot. No
    # property statement.
    incremental = runs["incremental"]
    statements = incremental["statements"]
    first_words = [sql.split()[0] for sql in statements]
    if runs["format"] == "delta":
        assert first_words == ["describe", "cache", "select", "set", "merge", "reset", "drop"], statements
    elif runs["format"] == "iceberg":
        assert first_words == ["select", "cache", "select", "set", "merge", "reset", "select", "drop"], statements
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
    # full build's rows, batch 2's changes (upsert.md: 1 inserted, 2 updated, 2 deleted), the rebuild
    # by the cost rule and batch 4's one new key. The run with no change committed nothing: no record.
    records = runs["records"]
    record = {label: records.get(runs[label]["invocation"]) for label in
              ["full build", "incremental", "no change", "rebuild", "always incremental"]}  # fmt: skip
    assert record["no change"] is None, records
    full, incremental, rebuild, last = (record[label] for label in
                                        ["full build", "incremental", "rebuild", "always incremental"])  # fmt: skip
    assert (full["mode"], full["path"], full["reason"]) == ("full", "full_refresh", "full refresh"), full
    assert full["rows_written"] == sum(expected(1).values()), full
    assert (incremental["mode"], incremental["path"]) == ("incremental", "incremental"), incremental
    changed = [incremental[f"rows_{name}"] for name in ("inserted", "updated", "deleted")]
    assert changed == [1, 2, 2], incremental
    assert (rebuild["mode"], rebuild["path"]) == ("full", "cost_rule"), rebuild
    assert rebuild["reason"].startswith("rebuilt: its last incremental run took"), rebuild
    assert rebuild["rows_written"] == sum(expected(3).values()), rebuild
    assert [last[f"rows_{name}"] for name in ("inserted", "updated", "deleted")] == [1, 0, 0], last
    for label, found in [("full build", full), ("incremental", incremental), ("rebuild", rebuild),
                         ("always incremental", last)]:  # fmt: skip
        assert found["version"] and found["seconds"] is not None and found["seconds"] > 0, (label, found)
    if runs["format"] == "delta":
        versions = [int(found["version"]) for found in (full, incremental, rebuild, last)]
        assert versions == sorted(versions) and len(set(versions)) == 4, versions
    assert any("4 records" in line for line in runs["history log"]), runs["history log"]


def test_the_operations_query_compares_incremental_runs_with_full_builds(runs, spark):
    # docs/operations.md's "is incremental paying off" query, as written, on the records read above.
    text = (REPO_ROOT / "docs" / "operations.md").read_text()
    query = re.search(r"<!-- operations: run-history-query -->\n```sql\n(.*?)```", text, re.S).group(1)
    rows = spark.query(query.replace("analytics.joinery_run_history", f"{runs['schema']}.joinery_run_history"))
    assert {row[0] for row in rows} == {MODEL}, rows
    # Two incremental runs and one rebuild by the cost rule, in whatever weeks they fell.
    assert (sum(row[2] for row in rows), sum(row[6] for row in rows)) == (2, 1), rows
    assert all(row[3] > 0 and row[4] > 0 and row[5] > 0 for row in rows if row[2]), rows
