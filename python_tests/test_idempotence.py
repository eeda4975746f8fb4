"""Scheduled runs with no new data change nothing: the `joinery_upsert` models below keep exactly
the same rows (a row-level checksum: row count and the sum of a hash of every row). Nor does a
`dbt run --empty` (dbt's schema-only dry run: every ref() and source() reads as no rows), and a
table first built by `dbt build --empty` is filled by the next run as if it had never existed.

The models are one per capability and per commit path of joinery_upsert (a partitioned parquet
rewrite with a stored watermark, a Hive SerDe Avro table, delta MERGEs with and without a
watermark, the FK join's state tables), found in the manifest with their joinery_upsert parents.
Each capability's own module runs its other models again without new data (test_upsert,
test_upsert_delta, test_fk_join, test_examples_other_formats), so they are not built again here.
"""

from __future__ import annotations

import json

import pytest

SCHEMA = "test_idempotence"
REPRESENTATIVES = [
    "compaction_partitioned_incremental",
    "collect_join_puid_attributes_incremental",
    "fk_orders_customers",
    "upsert_customers_by_country",
    "upsert_customers_avro",
]
# The build of the module: the representatives with their parents.
BUILT = " ".join(f"+{model}" for model in REPRESENTATIVES)
# The first run loads everything; the next one finds no new data and must change nothing.
RERUNS = 1
EMPTY_SCHEMA = "test_idempotence_empty"
# Under --empty each ref() and source() renders as `(select * from t where false limit 0)`, which
# `describe` does not take; every macro below reads its inputs' columns. One model per capability
# (and the splitter's ports), with their parents, built empty; the two with a stored watermark
# (compact's, and new_rows_filter's) are then filled for real.
EMPTY_FIRST_FILLED = ["compaction_partitioned_incremental", "collect_join_puid_attributes_incremental"]
EMPTY_FIRST_OTHERS = [
    "fk_orders_customers",
    "hydrator_three_way_join",
    "splitter_events_click",
    "splitter_contacts_has_email",
]


def checksum(spark, table: str) -> tuple[int, int]:
    """(rows, sum of xxhash64 over each whole row). to_json also covers map columns, which Spark
    cannot hash; the sum is taken as a decimal so that ANSI mode cannot overflow it."""
    count, total = spark.query(
        f"select count(*), coalesce(sum(cast(xxhash64(to_json(struct(*))) as decimal(38, 0))), 0) from {table}"
    )[0]
    return int(count), int(total)


@pytest.fixture(scope="module")
def upsert_models(dbt) -> dict[str, str]:
    """The representatives and their joinery_upsert parents: name -> relation (a model of another
    catalog, such as the iceberg one, is not in SCHEMA)."""
    result = dbt.invoke("build", "--select", BUILT, "--exclude", "resource_type:test", "--threads", "4", schema=SCHEMA)
    built = {name.split(".")[-1] for name in result.nodes}
    manifest = json.loads((dbt.target_path / "manifest.json").read_text())
    models = {
        node["alias"]: node["relation_name"]
        for node in sorted(manifest["nodes"].values(), key=lambda node: node["alias"])
        if node["resource_type"] == "model"
        and node["name"] in built
        and node["config"].get("materialized") == "joinery_upsert"
    }
    formats = {node["config"].get("file_format") for node in manifest["nodes"].values() if node["alias"] in models}
    assert {"parquet", "hive", "delta"} <= formats, f"a commit path is not covered: {formats}"
    return models


def test_runs_without_new_data_leave_every_incremental_model_unchanged(dbt, spark, upsert_models):
    assert upsert_models, "no joinery_upsert model in the project"
    first = {model: checksum(spark, relation) for model, relation in upsert_models.items()}
    # An empty table would compare equal to itself whatever a run did to it.
    empty = sorted(model for model, (rows, _) in first.items() if rows == 0)
    assert not empty, f"incremental models built empty: nothing to compare: {empty}"
    for run in range(1, RERUNS + 1):
        result = dbt.invoke("run", "--select", *upsert_models, "--threads", "4", schema=SCHEMA)
        ran = {name.split(".")[-1] for name in result.nodes}
        assert set(upsert_models) <= ran, f"run {run} skipped {set(upsert_models) - ran}"
        now = {model: checksum(spark, relation) for model, relation in upsert_models.items()}
        changed = {model: (first[model], now[model]) for model in upsert_models if now[model] != first[model]}
        assert not changed, f"run {run} with no new data changed (rows, checksum) of: {changed}"


def test_an_empty_run_leaves_every_incremental_model_unchanged(dbt, spark, upsert_models):
    before = {model: checksum(spark, relation) for model, relation in upsert_models.items()}
    result = dbt.invoke("run", "--empty", "--select", *upsert_models, "--threads", "4", schema=SCHEMA)
    assert set(upsert_models) <= {name.split(".")[-1] for name in result.nodes}
    after = {model: checksum(spark, relation) for model, relation in upsert_models.items()}
    changed = {model: (before[model], after[model]) for model in upsert_models if after[model] != before[model]}
    assert not changed, f"dbt run --empty changed (rows, checksum) of: {changed}"


def test_a_table_first_built_empty_is_filled_by_the_next_run(dbt, spark, upsert_models):
    def selection(models: list[str]) -> list[str]:
        return ["--select", " ".join(f"+{model}" for model in models), "--exclude", "resource_type:test"]

    assert set(EMPTY_FIRST_FILLED) <= set(upsert_models), upsert_models
    models = EMPTY_FIRST_FILLED + EMPTY_FIRST_OTHERS
    # The real columns: those of a real build (the incremental models and their parents are built).
    others = [model for model in models if model not in upsert_models]
    dbt.invoke("build", *selection(others), "--threads", "4", schema=SCHEMA)
    for model in models:
        assert spark.query(f"select count(*) > 0 from {SCHEMA}.{model}") == [(True,)], model
    dbt.invoke("build", "--empty", *selection(models), "--threads", "4", schema=EMPTY_SCHEMA)
    for model in models:
        assert spark.query(f"select count(*) from {EMPTY_SCHEMA}.{model}") == [(0,)], model
        assert spark.columns(f"{EMPTY_SCHEMA}.{model}") == spark.columns(f"{SCHEMA}.{model}"), model

    # The empty build stored no watermark that would make the next run skip rows.
    dbt.invoke("build", *selection(EMPTY_FIRST_FILLED), "--threads", "4", schema=EMPTY_SCHEMA)
    filled = {model: checksum(spark, f"{EMPTY_SCHEMA}.{model}") for model in EMPTY_FIRST_FILLED}
    built = {model: checksum(spark, f"{SCHEMA}.{model}") for model in EMPTY_FIRST_FILLED}
    assert all(rows for rows, _ in built.values()), built
    assert filled == built
