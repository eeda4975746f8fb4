"""The incremental examples on the other table formats: each capability's joinery_upsert models built
with its format var flipped, batch after batch as their own modules run them, and compared with the
same plain-Python references. Two variants, each one set of vars (VARIANTS):
- `flipped`: compaction and upsert (parquet by default, dbt_project.yml) on delta; collect_join
  (delta by default) on parquet;
- `iceberg`: compaction and upsert on iceberg. Their tables land in the `iceberg` catalog,
  namespace SCHEMA (catalog_schema_name, docs/iceberg.md); the sources they read stay in SCHEMA.

The FK join examples are not here: test_fk_join_property.py runs the same four models on parquet,
delta and iceberg, batch after batch, against the same reference, and test_fk_join.py the seeds'
scenario on delta.

Only the joinery_upsert models of each capability and the seeds they read are built. One schema of
sources and one sequence of landings feed both variants; after each landing, each variant has its
dbt run:
1. first build (full refresh): the compaction landing tables, upsert batch 1, the collect_join
   seeds;
2. one run after new batches of every capability (new deltas, a delete, a new full snapshot, a new
   partition and a new column for compaction; upsert batch 2; new collect_join rows);
3. a run with nothing new, then the compaction batch landed a second time: nothing may change.
"""

from __future__ import annotations

import pytest

from harness.sql import unique_mapping
from python_tests.compaction_reference import sorted_rows
from python_tests.test_collect_join import DAY_MS, DEC_24
from python_tests.test_collect_join import reference as collect_join_reference
from python_tests.test_collect_join import seed as collect_join_seed
from python_tests.test_compaction import (
    LATER,
    LATEST,
    column_types,
    csv_rows,
    expected_columns,
    expected_rows,
    normalize,
    seed_types,
)
from python_tests.test_upsert import reference as upsert_reference

SCHEMA = "test_examples_other_formats"
VARIANTS = {
    # Each capability on the format its examples do not use by default.
    "flipped": {
        "compaction_file_format": "delta",
        "upsert_file_format": "delta",
        "collect_join_file_format": "parquet",
    },
    "iceberg": {
        "compaction_file_format": "iceberg",
        "upsert_file_format": "iceberg",
    },
}
# Where each variant's models land: file_format='iceberg' without a schema of its own goes to the
# target schema's namespace in the first Iceberg catalog.
MODELS_SCHEMA = {"flipped": SCHEMA, "iceberg": f"iceberg.{SCHEMA}"}
# The compaction examples test_compaction.py checks against its reference, but for the Avro one
# (Hive Avro is the point of that example, whatever the var).
COMPACTION_MODELS = [
    "compaction_simple_incremental",
    "compaction_deletes_incremental",
    "compaction_rebase_incremental",
    "compaction_partitioned_incremental",
    "compaction_new_attribute_default_incremental",
]
COMPACTION_SEEDS = [
    "simple_snapshot",
    "simple_delta",
    "deletes_snapshot",
    "deletes_delta",
    "rebase_snapshot",
    "rebase_delta",
    "partitioned_snapshot",
    "partitioned_delta",
    "new_attribute_snapshot",
    "new_attribute_delta",
]
COLLECT_JOIN_MODEL = "collect_join_puid_attributes_incremental"
UPSERT_MODELS = ["upsert_customers", "upsert_customers_by_country"]
UPSERT_COLUMNS = ["country", "customer_id", "name", "tier", "batch_id"]
SEEDS = ["collect_join_attributes", "collect_join_mappings", "upsert_customer_changes"]
# collect_join runs in the flipped variant only.
MODELS = {
    "flipped": [*COMPACTION_MODELS, COLLECT_JOIN_MODEL, *UPSERT_MODELS],
    "iceberg": [*COMPACTION_MODELS, *UPSERT_MODELS],
}
CAPABILITY_VAR = {
    **{model: "compaction_file_format" for model in COMPACTION_MODELS},
    COLLECT_JOIN_MODEL: "collect_join_file_format",
    **{model: "upsert_file_format" for model in UPSERT_MODELS},
}


def table_rows(spark, table: str) -> tuple[list[str], list[dict]]:
    spark.execute(f"refresh table {table}")
    columns = spark.columns(table)
    rows = spark.query(f"select * from {table}")
    return columns, [{c: normalize(v) for c, v in zip(columns, row, strict=True)} for row in rows]


def compaction_state(spark, schema: str, data: dict[str, list[dict]]) -> dict[str, tuple]:
    """Per compaction model: (table columns, rows, columns the reference has, reference rows)."""
    found = {}
    for model in COMPACTION_MODELS:
        columns, actual = table_rows(spark, f"{schema}.{model}")
        expected = expected_rows(model, data, columns)
        found[model] = (
            columns,
            sorted_rows(actual, columns),
            expected_columns(model, data),
            sorted_rows(expected, columns),
        )
    return found


def create_compaction_landing_table(spark, name: str, types: dict[str, str]) -> None:
    rows = csv_rows(name)
    values = ", ".join(
        "(" + ", ".join("null" if row[c] is None else f"'{row[c]}'" for c in types) + ")" for row in rows
    )
    select = ", ".join(f"cast(col{i} as {t}) as {c}" for i, (c, t) in enumerate(types.items(), start=1))
    spark.execute(f"drop table if exists {SCHEMA}.{name}")
    spark.execute(f"create table {SCHEMA}.{name} using parquet as select {select} from values {values}")


def land_compaction(spark, data: dict, seed: str, rows: list[dict]) -> None:
    table = f"{SCHEMA}.compaction_{seed}"
    types = column_types(spark, table)
    values = ", ".join("(" + ", ".join("null" if r.get(c) is None else f"'{r[c]}'" for c in types) + ")" for r in rows)
    select = ", ".join(f"cast(col{i} as {t})" for i, t in enumerate(types.values(), start=1))
    spark.execute(f"insert into {table} select {select} from values {values}")
    data[seed] += [{c: r.get(c) for c in types} for r in rows]


def land_compaction_batches(spark, data: dict) -> None:
    """test_compaction.py's batches: new deltas, a delete, a new full pull, a new partition, a new column."""
    land_compaction(
        spark,
        data,
        "simple_delta",
        [{"key": "1", "value": "a5", "loaded_at": LATER}, {"key": "4", "value": "d5", "loaded_at": LATER}],
    )
    land_compaction(
        spark,
        data,
        "deletes_delta",
        [
            {"key": "1", "ts": "2024-01-01 09:00:00", "is_deleted": "true", "loaded_at": LATER},
            {"key": "5", "value": "e_old", "ts": "2024-01-01 01:00:00", "is_deleted": "false", "loaded_at": LATER},
            {"key": "6", "value": "f", "ts": "2024-01-01 01:00:00", "is_deleted": "false", "loaded_at": LATER},
        ],
    )
    spark.execute(
        f"insert overwrite {SCHEMA}.compaction_rebase_snapshot select * from values "
        f"(2, 'b5', timestamp'{LATER}'), (6, 'f5', timestamp'{LATER}')"
    )
    data["rebase_snapshot"] = [
        {"key": "2", "value": "b5", "loaded_at": LATER},
        {"key": "6", "value": "f5", "loaded_at": LATER},
    ]
    land_compaction(spark, data, "rebase_delta", [{"key": "7", "value": "g", "loaded_at": LATEST}])
    land_compaction(
        spark,
        data,
        "partitioned_delta",
        [
            {"key": "3", "value": "c5", "loaded_at": LATER, "year": "2024", "month": "1"},
            {"key": "9", "value": "i", "loaded_at": LATER, "year": "2025", "month": "3"},
        ],
    )
    spark.execute(f"alter table {SCHEMA}.compaction_new_attribute_delta add columns (value3 string)")
    for row in data["new_attribute_delta"]:
        row["value3"] = None
    land_compaction(
        spark,
        data,
        "new_attribute_delta",
        [{"key": "1", "value1": "a5", "value2": "x5", "loaded_at": LATER, "value3": "v3"}],
    )


def upsert_state(spark, schema: str) -> dict:
    found = {}
    for model in UPSERT_MODELS:
        spark.execute(f"refresh table {schema}.{model}")
        found[model] = spark.rows(f"{schema}.{model}", UPSERT_COLUMNS)
    return found


def collect_join_state(spark) -> dict:
    spark.execute(f"refresh table {SCHEMA}.{COLLECT_JOIN_MODEL}")
    return unique_mapping((row[0], row) for row in spark.query(f"select * from {SCHEMA}.{COLLECT_JOIN_MODEL}"))


def variant_state(spark, variant: str, capabilities, compaction_data: dict) -> dict:
    """What the variant's tables of `capabilities` (default: all it builds) hold, with their references."""
    schema = MODELS_SCHEMA[variant]
    readers = {
        "compaction": lambda: compaction_state(spark, schema, compaction_data),
        "upsert": lambda: upsert_state(spark, schema),
    }
    if variant == "flipped":
        readers["collect_join"] = lambda: collect_join_state(spark)
    return {name: readers[name]() for name in capabilities or readers}


@pytest.fixture(scope="module")
def history(dbt, spark):
    spark.execute(f"create schema if not exists {SCHEMA}")
    types = seed_types()
    for seed in COMPACTION_SEEDS:
        create_compaction_landing_table(spark, f"compaction_{seed}", types[f"compaction_{seed}"])
    compaction_data = {seed: csv_rows(f"compaction_{seed}") for seed in COMPACTION_SEEDS}

    states: dict[str, dict[str, dict]] = {variant: {} for variant in VARIANTS}

    def run(*args: str, models: list[str] | None = None, **extra_vars) -> None:
        """One dbt run per variant, of `models` (default: all of the variant's models)."""
        for variant, file_formats in VARIANTS.items():
            selected = MODELS[variant] if models is None else models
            run_vars = {**file_formats, **extra_vars}
            dbt.invoke("run", *args, "--select", *selected, schema=SCHEMA, vars=run_vars)

    def record(phase: str, *capabilities: str) -> None:
        for variant in VARIANTS:
            states[variant][phase] = variant_state(spark, variant, capabilities, compaction_data)

    dbt.invoke("seed", "--select", *SEEDS, schema=SCHEMA, vars=VARIANTS["flipped"])
    run("--full-refresh", upsert_through_batch=1)
    record("first build")

    land_compaction_batches(spark, compaction_data)
    dec_26 = DEC_24 + 2 * DAY_MS + 3_600_000
    new_attributes = [(dec_26, 67890, " 10 , 2,, "), (dec_26, 33333, "7")]
    new_mappings = [(dec_26, 33333, "new"), (dec_26, 22222, "qqq")]
    for table, rows in (("collect_join_attributes", new_attributes), ("collect_join_mappings", new_mappings)):
        spark.execute(f"insert into {SCHEMA}.{table} values " + ", ".join(f"({t}, {k}, '{v}')" for t, k, v in rows))
    run()
    record("new batches")
    states["flipped"]["collect_join inputs"] = (
        collect_join_seed("collect_join_attributes") + new_attributes,
        collect_join_seed("collect_join_mappings") + new_mappings,
    )

    run()
    record("nothing new")
    land_compaction(
        spark,
        compaction_data,
        "simple_delta",
        [{"key": "1", "value": "a5", "loaded_at": LATER}, {"key": "4", "value": "d5", "loaded_at": LATER}],
    )
    run(models=COMPACTION_MODELS)
    record("compaction batch landed twice", "compaction")
    return states


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_model_is_stored_in_the_variants_format(history, spark, variant):
    for model in MODELS[variant]:
        rows = spark.query(f"describe table extended {MODELS_SCHEMA[variant]}.{model}")
        provider = next(str(value).strip() for key, value, *_ in rows if (key or "").strip() == "Provider")
        assert provider.lower() == VARIANTS[variant][CAPABILITY_VAR[model]], (model, provider)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("phase", ["first build", "new batches", "nothing new", "compaction batch landed twice"])
def test_compaction_matches_the_reference(history, variant, phase):
    for model, (columns, actual, reference_columns, expected) in history[variant][phase]["compaction"].items():
        assert columns == reference_columns, (phase, model)
        assert actual == expected, (phase, model)


@pytest.mark.parametrize("variant", VARIANTS)
def test_upsert_applies_each_batch_and_a_run_without_changes(history, variant):
    for phase, batch in (("first build", 1), ("new batches", 2), ("nothing new", 2)):
        for model, rows in history[variant][phase]["upsert"].items():
            assert rows == upsert_reference(batch), (phase, model)


def test_collect_join_incremental_equals_a_recompute(history):
    history = history["flipped"]
    first = history["first build"]["collect_join"]
    expected = collect_join_reference(
        collect_join_seed("collect_join_attributes"), collect_join_seed("collect_join_mappings")
    )
    assert {puid: row[1] for puid, row in first.items()} == {g: ",".join(v) for g, v in expected.items()}
    after = history["new batches"]["collect_join"]
    expected = collect_join_reference(*history["collect_join inputs"])
    assert {puid: row[1] for puid, row in after.items()} == {g: ",".join(v) for g, v in expected.items()}
    # The untouched PUID keeps the row of the first run; a run without new data changes nothing.
    assert after["abc"] == first["abc"]
    assert history["nothing new"]["collect_join"] == after
