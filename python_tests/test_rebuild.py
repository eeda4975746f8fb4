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

from collections import Counter

import pytest

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
