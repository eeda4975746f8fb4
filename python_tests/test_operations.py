"""Operating joinery (docs/operations.md): `joinery.maintain_all` over every delta and iceberg
joinery_upsert table and tombstone companion, skipping the rest with the reason; upkeep that overlaps
a run; `full_refresh: false`; `joinery.maintain_metrics` (retention, one directory); `dbt retry`
after a failed joinery_upsert run. Real tables on the test Thrift server, rows read back as multisets.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from harness.sql import read_rows

SCHEMA = "test_operations"
COMPACTION = "compaction_deletes_incremental"
TOMBSTONES = f"{COMPACTION}__joinery_tombstones"
UPSERT, AVRO = "upsert_customers", "upsert_customers_avro"
# compaction on delta (it keeps tombstones), upsert_customers on iceberg, its Avro variant on Hive.
VARS = {"compaction_file_format": "delta", "upsert_file_format": "iceberg", "operations_tests": True}
BUILT = ["path:seeds/compaction/compaction_deletes_delta.csv", "path:seeds/compaction/compaction_deletes_snapshot.csv",
         "path:seeds/upsert", COMPACTION, UPSERT, AVRO]  # fmt: skip
ICEBERG_UPSERT = f"iceberg.{SCHEMA}.{UPSERT}"
REPORT_LINE = re.compile(r"joinery\.maintain_all (\S+) \(model (\w+), (table|tombstones), (\w+)\): (.*)")


def delta_operations(spark, table: str) -> list[str]:
    return [
        row["operation"] for row in sorted(spark.query_dicts(f"describe history {table}"), key=lambda r: r["version"])
    ]


def maintain_all(dbt, expect_success=True, **args):
    result = dbt.invoke(
        "run-operation", "joinery.maintain_all", "--args", json.dumps(args),
        schema=SCHEMA, vars=VARS, expect_success=expect_success,
    )  # fmt: skip
    report = {}
    for _, message in result.logs:
        if match := REPORT_LINE.fullmatch(message):
            report[match[1].replace("`", "")] = (match[2], match[3], match[4], match[5])
    return result, report


@pytest.fixture(scope="module")
def built(dbt, spark):
    # Two runs, so that each table has an older version for upkeep to remove: upsert batch 1, then 2.
    only = ["--resource-type", "seed", "--resource-type", "model"]
    dbt.invoke("build", "--select", *BUILT, *only, schema=SCHEMA, vars={**VARS, "upsert_through_batch": 1})
    dbt.invoke("build", "--select", *BUILT, *only, schema=SCHEMA, vars=VARS)
    return {
        table: read_rows(spark, table, spark.columns(table))
        for table in (f"{SCHEMA}.{COMPACTION}", f"{SCHEMA}.{TOMBSTONES}", ICEBERG_UPSERT)
    }


def test_maintain_all_maintains_every_delta_and_iceberg_table_and_skips_the_rest(built, dbt, spark):
    assert built[f"{SCHEMA}.{TOMBSTONES}"], "compaction_deletes' first build left no tombstone"
    iceberg_snapshots = f"select count(*) from {ICEBERG_UPSERT}.snapshots"
    assert spark.query(iceberg_snapshots)[0][0] > 1
    delta_before = {t: delta_operations(spark, f"{SCHEMA}.{t}") for t in (COMPACTION, TOMBSTONES)}

    # A dry run names what it would do and changes nothing.
    _, planned = maintain_all(dbt, select=["compaction_deletes_*", "upsert_customers*"], dry_run=True)
    assert planned[f"{SCHEMA}.{COMPACTION}"][3] == "would be maintained", planned
    assert {t: delta_operations(spark, f"{SCHEMA}.{t}") for t in delta_before} == delta_before

    result, report = maintain_all(
        dbt, select=["compaction_deletes_*", "upsert_customers*"], retain_hours=0, allow_short_retention=True
    )
    done = "compacted, files of versions older than 0 hours removed"
    assert report[f"{SCHEMA}.{COMPACTION}"] == (COMPACTION, "table", "delta", done), report
    assert report[f"{SCHEMA}.{TOMBSTONES}"] == (COMPACTION, "tombstones", "delta", done), report
    assert report[ICEBERG_UPSERT] == (UPSERT, "table", "iceberg", done), report
    assert report[f"{SCHEMA}.{AVRO}"][2:] == ("hive", "skipped: a hive table deletes its superseded versions itself")
    # Selected but not built in this schema, and a model without tombstones.
    assert report[f"iceberg.{SCHEMA}.upsert_customers_by_country"][2:] == ("absent", "skipped: not built")
    assert report[f"{ICEBERG_UPSERT}__joinery_tombstones"][2:] == ("absent", "skipped: no tombstones")
    # The selection: joinery_upsert models only (compaction_deletes is a `table`), every upsert variant.
    selected = {COMPACTION, UPSERT, "upsert_customers_by_country", AVRO, "upsert_customers_avro_by_country"}
    assert {model for model, *_ in report.values()} == selected, report
    for table in (COMPACTION, TOMBSTONES):
        added = delta_operations(spark, f"{SCHEMA}.{table}")[len(delta_before[table]) :]
        assert added[-2:] == ["VACUUM START", "VACUUM END"], (table, added)
    assert spark.query(iceberg_snapshots)[0][0] == 1
    calls = [sql for _, sql in result.statements if sql.lower().startswith("call ")]
    assert any("rewrite_data_files" in sql for sql in calls), calls
    for table, rows in built.items():
        assert read_rows(spark, table, spark.columns(table)) == rows, table


def test_maintain_all_names_a_bad_argument(dbt, capsys):
    result, _ = maintain_all(dbt, expect_success=False, select=["orders; drop table x"])
    said = result.messages + capsys.readouterr().out
    assert "joinery.maintain_all: argument `select` got" in said and "each item must be a model name" in said, said
    result, _ = maintain_all(dbt, expect_success=False, retain_hours="a week")
    said = result.messages + capsys.readouterr().out
    assert 'argument `retain_hours` got "a week"' in said, said


def test_upkeep_overlapping_a_run_loses_nothing(dbt, spark, tmp_path):
    table = f"{SCHEMA}.operations_overlap"
    select = ["--select", "operations_overlap"]
    spark.execute(f"drop table if exists {table}")
    for run in ("1", "2"):
        dbt.invoke("run", *select, schema=SCHEMA, vars=VARS, env={"JOINERY_OPS_RUN": run})
    work = tmp_path / "slow"
    slow = dbt.start(
        "run", *select, work_dir=work, schema=SCHEMA, vars=VARS,
        env={"JOINERY_OPS_RUN": "3", "JOINERY_OPS_SLEEP_MS": "45000"},
    )  # fmt: skip
    # Upkeep starts once the slow run has sent its sleeping SELECT, whatever statement holds it.
    log, deadline = work / "logs" / "dbt.log", time.monotonic() + 180
    while not (log.exists() and "java.lang.Thread" in log.read_text()):
        assert slow.poll() is None, (work / "output.log").read_text()
        assert time.monotonic() < deadline, "the slow run never reached its SELECT"
        time.sleep(0.5)
    upkeep, report = maintain_all(dbt, expect_success=None, select="operations_overlap")
    overlapped = slow.poll() is None
    returncode, output = slow.wait(timeout=300), (work / "output.log").read_text()
    assert overlapped, "the run ended before upkeep did: nothing overlapped"
    # Delta's optimistic concurrency: both commit, or the later one fails with a concurrent-change
    # error and changes nothing (docs/operations.md, "Upkeep"). Either way a rerun converges.
    conflict = re.compile(r"Concurrent\w*Exception|concurrent (update|transaction)", re.I)
    assert upkeep.success or conflict.search(upkeep.messages), upkeep.messages
    assert returncode == 0 or conflict.search(output), output[-3000:]
    if returncode != 0:
        dbt.invoke("run", *select, schema=SCHEMA, vars=VARS, env={"JOINERY_OPS_RUN": "3"})
    if not upkeep.success:
        maintain_all(dbt, select="operations_overlap")
    if upkeep.success:
        assert report[table][3].startswith("compacted"), report
    expected = Counter({(1, "run 1"): 1, (2, "run 2"): 1, (3, "run 3"): 1})
    assert read_rows(spark, table, ["id", "name"]) == expected
    operations = delta_operations(spark, table)
    assert "MERGE" in operations and "VACUUM END" in operations, operations

    # full_refresh=false: `--full-refresh` runs it incrementally, so no row is lost and no table replaced.
    dbt.invoke("run", *select, "--full-refresh", schema=SCHEMA, vars=VARS, env={"JOINERY_OPS_RUN": "4"})
    assert read_rows(spark, table, ["id", "name"]) == expected + Counter({(4, "run 4"): 1})
    assert delta_operations(spark, table)[len(operations) :] == ["MERGE"]


def test_dbt_retry_completes_a_failed_joinery_upsert_run(dbt, spark):
    select = ["--select", "operations_retry+"]
    spark.execute(f"drop table if exists {SCHEMA}.operations_retry")
    failed = dbt.invoke("run", *select, schema=SCHEMA, vars=VARS, env={"JOINERY_OPS_FAIL": "1"}, expect_success=False)
    assert failed.status("operations_retry") == "error" and failed.status("operations_retry_after") == "skipped"
    assert "failing on purpose" in failed.messages
    retried = dbt.invoke("retry", schema=SCHEMA, vars=VARS, env={"JOINERY_OPS_FAIL": "0"})
    assert {node.split(".")[-1]: n["status"] for node, n in retried.nodes.items() if node.startswith("model.")} == {
        "operations_retry": "success",
        "operations_retry_after": "success",
    }
    assert read_rows(spark, f"{SCHEMA}.operations_retry", ["id", "name"]) == Counter({(1, "one"): 1, (2, "two"): 1})
    assert read_rows(spark, f"{SCHEMA}.operations_retry_after", ["id", "name"]) == Counter(
        {(1, "ONE"): 1, (2, "TWO"): 1}
    )


def metric_directories(spark, table: str) -> Counter:
    """How many rows each directory of the metrics table holds."""
    files = spark.query(f"select input_file_name() from {table}")
    return Counter(path.rsplit("/", 1)[0] for (path,) in files)


def table_directory(spark, table: str) -> Path:
    (location,) = [value for name, value, *_ in spark.query(f"describe table extended {table}") if name == "Location"]
    return Path(unquote(urlparse(location).path))


def test_maintain_metrics_drops_old_rows_and_compacts_the_directories(dbt, spark):
    metrics = f"{SCHEMA}.joinery_metrics"
    select = ["--select", "path:seeds/multi_join", "hydrator_customers_outer"]
    spark.execute(f"drop table if exists {metrics}")
    for _ in range(2):
        dbt.invoke("build", *select, "--resource-type", "seed", "--resource-type", "model", schema=SCHEMA, vars=VARS)
    spark.execute(
        f"insert into {metrics} values ('old', current_timestamp() - interval 400 days, 'm', 'r', null, 'rows_out', 1)"
    )
    columns = spark.columns(metrics)
    before = read_rows(spark, metrics, columns)
    assert len(metric_directories(spark, metrics)) >= 3
    old_location = table_directory(spark, metrics)
    assert old_location.exists()

    args = json.dumps({"schema": SCHEMA, "retain_days": 365})
    result = dbt.invoke("run-operation", "joinery.maintain_metrics", "--args", args, schema=SCHEMA, vars=VARS)
    kept = Counter({row: n for row, n in before.items() if row[0] != "old"})
    assert read_rows(spark, metrics, columns) == kept
    assert len(metric_directories(spark, metrics)) == 1
    assert not old_location.exists(), f"the superseded directory {old_location} is still there"
    summary = [message for _, message in result.logs if message.startswith("joinery.maintain_metrics")]
    assert summary and f"{sum(kept.values())} rows kept, 1 recorded before" in summary[0], summary

    # The next run records into the new location; a second upkeep keeps every row.
    dbt.invoke("run", "--select", "hydrator_customers_outer", schema=SCHEMA, vars=VARS)
    after_run = read_rows(spark, metrics, columns)
    assert sum(after_run.values()) > sum(kept.values()) and (after_run - kept) and not (kept - after_run)
    dbt.invoke("run-operation", "joinery.maintain_metrics", "--args", args, schema=SCHEMA, vars=VARS)
    assert read_rows(spark, metrics, columns) == after_run
