"""The suite's row comparisons count duplicates: a table with one row doubled must differ from its
reference under every helper the tests compare rows with, and under the generic test `equal_rows`
that the examples' data tests use, so a doubled row can never pass."""

from __future__ import annotations

from collections import Counter

import pytest

from harness.sql import read_rows, unique_mapping
from python_tests.compaction_reference import sorted_rows
from python_tests.test_compaction import table_rows

SCHEMA = "test_comparisons"
TABLE = "doubled"
# The reference's rows as a table, for the generic test equal_rows, which compares two relations.
REFERENCE_TABLE = "reference"
REFERENCE = [(1, "a"), (2, "b")]


@pytest.fixture(scope="module")
def doubled(spark):
    spark.execute(f"create schema if not exists {SCHEMA}")
    for table, rows in ((TABLE, [*REFERENCE, REFERENCE[0]]), (REFERENCE_TABLE, REFERENCE)):
        spark.execute(f"drop table if exists {SCHEMA}.{table}")
        spark.execute(f"create table {SCHEMA}.{table} (id int, value string) using parquet")
        spark.execute(f"insert into {SCHEMA}.{table} values " + ", ".join(f"({i}, '{v}')" for i, v in rows))
    return f"{SCHEMA}.{TABLE}"


def test_the_planted_table_holds_the_reference_plus_one_doubled_row(spark, doubled):
    assert spark.rows(doubled) == [(1, "a"), (1, "a"), (2, "b")]


def test_read_rows_counts_the_doubled_row(spark, doubled):
    assert read_rows(spark, doubled, ["id", "value"]) != Counter(REFERENCE)
    assert read_rows(spark, doubled, ["id", "value"]) == Counter(REFERENCE + [(1, "a")])


def test_sorted_rows_keeps_the_doubled_row(spark, doubled):
    columns, rows = table_rows(spark, TABLE, SCHEMA)
    reference = [dict(zip(columns, row, strict=True)) for row in REFERENCE]
    assert sorted_rows(rows, columns) != sorted_rows(reference, columns)


def test_unique_mapping_refuses_a_key_read_twice(spark, doubled):
    with pytest.raises(AssertionError, match="appears twice"):
        unique_mapping(spark.query(f"select id, value from {doubled}"))


def equal_rows_failures(dbt, spark, model: str, expected: str) -> list[tuple]:
    """The rows joinery's generic test `equal_rows` returns for `model` against `expected`, sorted
    (dbt fails the test on any): its SQL as dbt compiles it, run on Spark."""
    relations = "".join(
        f"{{% set {name} = api.Relation.create(schema='{SCHEMA}', identifier='{table}') %}}"
        for name, table in (("model_relation", model), ("expected_relation", expected))
    )
    call = "{{ joinery.test_equal_rows(model=model_relation, expected=expected_relation) }}"
    result = dbt.invoke("compile", "--inline", relations + call, schema=SCHEMA)
    [sql] = [node["compiled_code"] for node in result.nodes.values()]
    return sorted(spark.query(sql))


def test_equal_rows_fails_on_the_doubled_row(dbt, spark, doubled):
    # Each way round: the doubled row is one row too many in the model, or one missing from it.
    assert equal_rows_failures(dbt, spark, TABLE, REFERENCE_TABLE) == [("unexpected in model", 1, "a")]
    assert equal_rows_failures(dbt, spark, REFERENCE_TABLE, TABLE) == [("missing from model", 1, "a")]
    # The same rows, duplicates included, pass.
    assert equal_rows_failures(dbt, spark, TABLE, TABLE) == []
