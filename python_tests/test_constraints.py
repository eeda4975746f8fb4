"""A model contract's constraints on joinery_upsert (docs/upsert.md, "Constraints"): on delta a full
build puts its not_null and check constraints on the table, and a row that breaks one makes the run
fail with the table unchanged, whether the run is incremental (Delta checks the MERGE) or a full
build (its own statement checks the rows before the commit); on parquet, which cannot enforce them,
the run is refused before anything is written.

The models are models/examples/upsert/constraints/; upsert_constraints takes its rows from the env
var JOINERY_CONSTRAINT_ROWS, so every run here shares one parse of the project.
"""

from __future__ import annotations

import pytest

SCHEMA = "test_constraints"
MODEL = "upsert_constraints"
VARS = {"upsert_constraints": True}


@pytest.fixture(scope="module")
def runs(dbt, spark):
    table = f"{SCHEMA}.{MODEL}"
    found = {}

    def run(label: str, rows: str, *args: str, expect_success: bool = True) -> None:
        result = dbt.invoke(
            "run", "--select", MODEL, *args, schema=SCHEMA, vars=VARS, expect_success=expect_success,
            env={"JOINERY_CONSTRAINT_ROWS": rows},
        )  # fmt: skip
        found[label] = {
            "messages": result.messages,
            "rows": sorted(spark.query(f"select id, amount from {table}")),
            "versions": len(spark.query(f"describe history {table}")),
            "properties": dict(spark.query(f"show tblproperties {table}")),
        }

    run("full build", "(1, 10), (2, 20)", "--full-refresh")
    run("full refresh", "(1, 10), (2, 20)", "--full-refresh")
    run("breaking check", "(3, -5)", expect_success=False)
    run("full build breaking check", "(1, 10), (5, -1)", "--full-refresh", expect_success=False)
    run("incremental", "(3, 30)")
    parquet = dbt.invoke(
        "run", "--select", f"{MODEL}_parquet", schema=SCHEMA, vars=VARS, expect_success=False,
        env={"JOINERY_CONSTRAINT_ROWS": "(1, 10)"},
    )  # fmt: skip
    found["parquet"] = {"messages": parquet.messages, "tables": spark.query(f"show tables in {SCHEMA}")}
    return found


def test_a_delta_full_build_puts_the_constraints_on_the_table(runs):
    for label in ["full build", "full refresh"]:
        found = runs[label]
        assert found["rows"] == [(1, 10), (2, 20)], (label, found)
        properties = found["properties"]
        assert properties.get("delta.constraints.amount_positive") == "amount > 0", properties
        # not_null as the check Delta enforces alike (Spark 4 cannot make a CTAS column NOT NULL).
        for column in ["id", "amount"]:
            check = properties.get(f"delta.constraints.joinery_not_null_{column}")
            assert check == f"`{column}` is not null", properties


def test_a_row_breaking_a_constraint_fails_the_run_and_leaves_the_table_unchanged(runs):
    before = runs["full refresh"]
    for label, words in [
        ("breaking check", "amount_positive"),
        ("full build breaking check", "check constraint amount_positive"),
    ]:
        found = runs[label]
        assert words in found["messages"], (label, found["messages"])
        assert found["rows"] == before["rows"], (label, found["rows"])
        assert found["versions"] == before["versions"], (label, found["versions"], before["versions"])
    assert "violated by a row of the full build" in runs["full build breaking check"]["messages"]
    # The constraints stay, and a run that keeps them merges as usual.
    assert runs["incremental"]["rows"] == [(1, 10), (2, 20), (3, 30)]
    assert runs["incremental"]["versions"] == before["versions"] + 1


def test_a_format_that_cannot_enforce_constraints_is_refused_before_anything_is_written(runs):
    messages = runs["parquet"]["messages"]
    assert "joinery_upsert (model upsert_constraints_parquet): argument `constraints` got" in messages, messages
    assert "not_null on id" in messages and "Spark enforces them on delta tables only" in messages, messages
    assert f"{MODEL}_parquet" not in [row[1] for row in runs["parquet"]["tables"]], runs["parquet"]["tables"]
