"""The suite's row comparisons count duplicates: a table with one row doubled must differ from its
reference under every helper the tests compare rows with, so a doubled row can never pass."""

from __future__ import annotations

from collections import Counter

import pytest

from harness.sql import read_rows, unique_mapping
from python_tests.compaction_reference import sorted_rows
from python_tests.test_compaction import table_rows

SCHEMA = "test_comparisons"
TABLE = "doubled"
REFERENCE = [(1, "a"), (2, "b")]


@pytest.fixture(scope="module")
def doubled(spark):
    spark.execute(f"create schema if not exists {SCHEMA}")
    spark.execute(f"drop table if exists {SCHEMA}.{TABLE}")
    spark.execute(f"create table {SCHEMA}.{TABLE} (id int, value string) using parquet")
    spark.execute(f"insert into {SCHEMA}.{TABLE} values (1, 'a'), (1, 'a'), (2, 'b')")
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
