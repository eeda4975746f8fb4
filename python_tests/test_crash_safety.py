"""joinery_upsert survives being killed: SIGKILL of dbt and its Spark JVM at seeded random moments of
incremental runs never loses or doubles a row, a reader between the kill and the next run sees one
whole version (the old one, the new one, or one a killed run had committed to its journal), never an
older one than before, and the next run converges. A run that fails on bad data changes nothing.

Each trial is one `dbt run` on the embedded `local` target (its own Spark dir in a temp folder) over
five joinery_upsert tables (parquet, parquet partitioned, Hive Avro, delta partitioned, iceberg
partitioned in the `iceberg` catalog) and two `compact` models (parquet, delta) whose batches bring
versions older than earlier deletes, so their tombstones are written before each commit, killed at
a random moment
between its first model starting and the measured end of a normal run: one moment in each of
TRIALS equal slices of that window, the slices in random order, so that the kills spread over the
whole run however few they are. The next trial's run is also the re-run of the previous one; an
`on-run-start` hook logs what each table holds before any model runs (the state a reader sees
between kill and re-run). Expected rows come from a plain-Python reference over the generated
batches.
"""

from __future__ import annotations

import csv
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from harness.dbt import PROFILES_DIR, REPO_ROOT
from harness.java import short_lived_java_options

SEED = 20240613
# Six kills, one in each sixth of the window: no two more than a third of the window apart. Ten
# uniform draws (before; the suite's longest module) left a widest gap of 0.27 of it on average, for
# 10/6 of the time. JOINERY_CRASH_TRIALS=30 sweeps finer.
TRIALS = int(os.environ.get("JOINERY_CRASH_TRIALS", "6"))
KEYS = 24
THREADS = "6"
MODELS = {
    "crash_plain": "file_format='parquet'",
    "crash_partitioned": "file_format='parquet', partition_by=['part']",
    "crash_avro": "file_format='hive', options={'fileFormat': 'avro'}",
    # One MERGE per run (with the partition predicate: part is a key column); Delta's log commits it.
    "crash_delta": "file_format='delta', partition_by=['part']",
    # The same MERGE on iceberg (merge-on-read); the Hadoop catalog's metadata file is the commit.
    "crash_iceberg": "file_format='iceberg', partition_by=['part']",
}
# compact models over the batches as deltas (views re-created by every run): each run writes the
# tombstones' companion table before the table's commit, so kills also fall between the two.
COMPACT_MODELS = {
    "crash_compact": "file_format='parquet'",
    "crash_compact_delta": "file_format='delta'",
}
COMPACT_SQL = """
{{{{ config(materialized='joinery_upsert', unique_key=['part', 'id'], {config}) }}}}

with

compacted as (
    {{{{ joinery.compact(
        snapshot=ref('crash_compact_snapshot'),
        deltas=[ref('crash_compact_batches')],
        updated_at='ts',
        deleted='deleted',
        loaded_at='loaded_at'
    ) }}}}
)

select * from compacted
"""
# Batch 1 is the snapshot; each later batch arrives a day after the one before.
COMPACT_SOURCES = {
    "crash_compact_snapshot": "batch = 1",
    "crash_compact_batches": "batch > 1 and batch <= {{ env_var('JOINERY_CRASH_THROUGH') }}",
}
SOURCE_SQL = """
{{{{ config(materialized='view') }}}}

select part, id, value, batch, ts, deleted, timestamp_seconds(batch * 86400) as loaded_at
from {{{{ ref('crash_compact_changes') }}}}
where {where}
"""
# Where each model's table is: file_format='iceberg' lands in the Iceberg catalog (docs/iceberg.md).
TABLES = {
    model: ("iceberg." if "'iceberg'" in config else "") + f"crash.{model}"
    for model, config in {**MODELS, **COMPACT_MODELS}.items()
}
MODEL_SQL = """
{{{{ config(materialized='joinery_upsert', unique_key=['part', 'id'], deleted_column='deleted', {config}) }}}}

with

changes as (

    select * from {{{{ ref('crash_changes') }}}}
    where batch <= {{{{ env_var('JOINERY_CRASH_THROUGH') }}}} and batch > {{{{ joinery.previous_max('batch', '0') }}}}

),

ranked as (

    select *, row_number() over (partition by part, id order by batch desc) as batch_rank
    from changes

)

select
    part,
    id,
    {value} as value,
    batch,
    deleted
from ranked
where batch_rank = 1
"""
# Reads every table in one statement before any model runs (what a reader sees after a kill) and
# logs it as one JSON line, which the test reads from dbt's output: a read, where writing it into a
# table cost a Spark write and its metastore commits per trial.
# What changes from run to run (batches, run number, bad data) comes in env vars, not --vars: new
# vars make dbt parse the whole project again (about 3 s a trial), a changed env var only the files
# that read it.
OBSERVED = "JOINERY_OBSERVED "
OBSERVE_HOOK = (
    """
    {%- if execute and env_var('JOINERY_CRASH_RUN_NO') | int > 0 %}
    {%- set read_tables %}
    select to_json(collect_list(named_struct('model', model, 'part', part, 'id', id, 'value', value, 'batch', batch)))
    from (
    {%- for model, table in """
    + json.dumps(list(TABLES.items()))
    + """ %}
        select '{{ model }}' as model, part, id, value, batch from {{ table }}
        {%- if not loop.last %} union all{% endif %}
    {%- endfor %}
    )
    {%- endset %}
    {%- do log('"""
    + OBSERVED
    + """' ~ run_query(read_tables).columns[0].values()[0], info=true) %}
    {%- endif %}
    select 1
    """
)


def observed_rows(run_no: int, output: str) -> list[tuple]:
    """(run_no, model, part, id, value, batch) of every row the run's on-run-start hook logged."""
    line = next((line for line in output.splitlines() if OBSERVED in line), None)
    assert line, f"run {run_no} logged no {OBSERVED.strip()} line:\n{output[-3000:]}"
    rows = json.loads(line.split(OBSERVED, 1)[1])
    return [(run_no, row["model"], row["part"], row["id"], row["value"], row["batch"]) for row in rows]


CHECK_SCRIPT = """
import json, os, sys
from pyspark.sql import SparkSession
from harness.java import driver_java_options
from harness.table_formats import table_format_conf
home = os.environ["JOINERY_SPARK_DIR"]
builder = (SparkSession.builder.master("local[1]").config("spark.sql.warehouse.dir", home + "/warehouse")
    .config("spark.hadoop.javax.jdo.option.ConnectionURL", f"jdbc:derby:;databaseName={home}/metastore_db;create=true")
    .config("spark.driver.extraJavaOptions", driver_java_options(home))
    .config("spark.ui.enabled", "false"))
for key, value in table_format_conf(home).items():
    builder = builder.config(key, value)
spark = builder.enableHiveSupport().getOrCreate()
out = {}
for table in sys.argv[1:]:
    name = table.split(".")[-1]
    columns = "part, id, ts" if name.endswith("__joinery_tombstones") else "part, id, value, batch"
    out[name] = [list(r) for r in spark.sql(f"select {columns} from {table}").collect()]
print("JOINERY_CHECK " + json.dumps(out))
"""


def batches(rng: random.Random, count: int) -> list[dict]:
    """Changes per batch: random keys get a new value or (one in five) a delete; one row per key per batch."""
    rows = []
    for batch in range(1, count + 1):
        for key in rng.sample(range(KEYS), KEYS if batch == 1 else KEYS // 3):
            rows.append(
                {
                    "batch": batch,
                    "part": key % 3,
                    "id": key,
                    "value": rng.randrange(1000),
                    "deleted": batch > 1 and rng.random() < 0.2,
                }
            )
    return rows


def compact_batches(rng: random.Random, count: int) -> list[dict]:
    """Versions per batch for the compact models: batch 1 is the snapshot (every key); later batches
    bring random keys with a random ts, a third of them deletes, so that many versions arrive after
    a newer delete of their key."""
    rows = []
    for batch in range(1, count + 1):
        for key in rng.sample(range(KEYS), KEYS if batch == 1 else KEYS // 2):
            deleted = batch > 1 and rng.random() < 0.35
            rows.append(
                {
                    "batch": batch,
                    "part": key % 3,
                    "id": key,
                    "value": rng.randrange(1000),
                    "ts": rng.randrange(20),
                    "deleted": deleted,
                }
            )
    return rows


def compact_winners(changes: list[dict], through: int) -> dict[tuple, dict]:
    """The winning version per key over batches 1..through: greatest ts, then the later batch (the
    order compact ranks by: updated_at, then loaded_at)."""
    latest: dict[tuple, dict] = {}
    for row in changes:
        key = (row["part"], row["id"])
        if row["batch"] <= through and (
            key not in latest or (row["ts"], row["batch"]) > (latest[key]["ts"], latest[key]["batch"])
        ):
            latest[key] = row
    return latest


def compact_reference(changes: list[dict], through: int) -> dict[int, set[tuple]]:
    """Rows per partition of the compaction of batches 1..through: the winners that are not deletes."""
    result: dict[int, set[tuple]] = {0: set(), 1: set(), 2: set()}
    for row in compact_winners(changes, through).values():
        if not row["deleted"]:
            result[row["part"]].add((row["part"], row["id"], row["value"], row["batch"]))
    return result


def reference(changes: list[dict], through: int) -> dict[int, set[tuple]]:
    """Rows per partition after applying batches 1..through: the newest version per key, deletes removed."""
    latest = {}
    for row in sorted(changes, key=lambda r: r["batch"]):
        if row["batch"] <= through:
            latest[(row["part"], row["id"])] = row
    result: dict[int, set[tuple]] = {0: set(), 1: set(), 2: set()}
    for row in latest.values():
        if not row["deleted"]:
            result[row["part"]].add((row["part"], row["id"], row["value"], row["batch"]))
    return result


def by_partition(rows) -> dict[int, list[tuple]]:
    result: dict[int, list[tuple]] = {0: [], 1: [], 2: []}
    for row in rows:
        result[row[0]].append(tuple(row))
    return result


def make_project(root: Path, changes: list[dict], compact_changes: list[dict]) -> None:
    # adapters: generate_schema_name and the relation listing of the Iceberg catalog.
    for folder in ("adapters", "common", "joinery_upsert", "compaction"):
        shutil.copytree(REPO_ROOT / "macros" / folder, root / "macros" / folder)
    (root / "seeds").mkdir()
    for seed, rows, fields in [
        ("crash_changes", changes, ["batch", "part", "id", "value", "deleted"]),
        ("crash_compact_changes", compact_changes, ["batch", "part", "id", "value", "ts", "deleted"]),
    ]:
        with (root / "seeds" / f"{seed}.csv").open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields)
            writer.writeheader()
            writer.writerows({**row, "deleted": str(row["deleted"]).lower()} for row in rows)
    (root / "models").mkdir()
    for name, config in COMPACT_MODELS.items():
        (root / "models" / f"{name}.sql").write_text(COMPACT_SQL.format(config=config))
    for name, where in COMPACT_SOURCES.items():
        (root / "models" / f"{name}.sql").write_text(SOURCE_SQL.format(where=where))
    for name, config in {**MODELS, "crash_bad_data": "file_format='parquet'"}.items():
        # crash_bad_data hits an ANSI cast error halfway through its SELECT when bad_data is set.
        value = "value"
        if name == "crash_bad_data":
            value = (
                "cast(case when {{ env_var('JOINERY_CRASH_BAD_DATA', 'false') }} and id % 2 = 1 then 'oops'"
                " else string(value) end as int)"
            )
        (root / "models" / f"{name}.sql").write_text(MODEL_SQL.format(config=config, value=value))
    (root / "dbt_project.yml").write_text(
        textwrap.dedent(
            """
            name: joinery
            version: "0.1.0"
            config-version: 2
            profile: joinery
            macro-paths: ["macros"]
            on-run-start:
            """
        )
        + f"  - {json.dumps(textwrap.dedent(OBSERVE_HOOK).strip())}\n"
        + textwrap.dedent(
            """
            seeds:
              joinery:
                +file_format: parquet
                +column_types: {batch: int, part: int, id: int, value: int, ts: int, deleted: boolean}
            """
        )
    )


class Dbt:
    """`dbt` as a subprocess on the local session target, in its own process group (Spark JVM included)."""

    def __init__(self, project: Path, home: Path):
        self.project = project
        self.env = {
            **os.environ,
            "JOINERY_SPARK_DIR": str(home / "spark"),
            "JOINERY_SCHEMA": "crash",
            "JOINERY_DRIVER_MEMORY": "1g",
            "DBT_PROFILES_DIR": str(PROFILES_DIR),
            "DBT_TARGET_PATH": str(home / "target"),
            "DBT_LOG_PATH": str(home / "logs"),
            # Each trial is a short-lived JVM: the quick JIT finishes it about a fifth sooner.
            "JOINERY_JAVA_OPTIONS": short_lived_java_options(),
            "PYTHONPATH": str(REPO_ROOT),
        }

    def start(self, *args: str, variables: dict) -> subprocess.Popen:
        """`variables`: through, run_no and (optional) bad_data, handed over as env vars."""
        command = [
            sys.executable,
            "-m",
            "harness.dbt_cli",
            *args,
            "--project-dir",
            str(self.project),
            "--target",
            "local",
        ]
        env = {
            **self.env,
            "JOINERY_CRASH_THROUGH": str(variables["through"]),
            "JOINERY_CRASH_RUN_NO": str(variables["run_no"]),
            "JOINERY_CRASH_BAD_DATA": str(variables.get("bad_data", False)).lower(),
        }
        return subprocess.Popen(
            command,
            cwd=self.project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def run(self, *args: str, variables: dict, kill_after: float | None = None) -> tuple[int, str, float]:
        """Run dbt; with kill_after, SIGKILL its process group that many seconds after the first model starts.

        Returns the exit code, the output, and the seconds from the first model's start to the end.
        """
        process = self.start(*args, variables=variables)
        lines: list[str] = []
        first_model = threading.Event()
        started: list[float] = []

        def read() -> None:
            for line in process.stdout:
                lines.append(line)
                if " START sql " in line and not first_model.is_set():
                    started.append(time.monotonic())
                    first_model.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        while kill_after is not None and not first_model.wait(timeout=0.2) and process.poll() is None:
            pass
        if kill_after is not None and process.poll() is None:
            time.sleep(kill_after)
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
        code = process.wait(timeout=600)
        reader.join(timeout=10)
        ended = time.monotonic()
        return code, "".join(lines), ended - started[0] if started else 0.0


@pytest.fixture(scope="module")
def crash_history(tmp_path_factory):
    rng = random.Random(SEED)
    changes = batches(rng, TRIALS + 1)
    compact_changes = compact_batches(random.Random(SEED + 1), TRIALS + 1)
    home = tmp_path_factory.mktemp("crash")
    project = home / "project"
    make_project(project, changes, compact_changes)
    dbt = Dbt(project, home)

    # The first build (models side by side, as in the trials) measures the kill window.
    code, output, model_phase = dbt.run("build", "--threads", THREADS, variables={"through": 1, "run_no": 0})
    assert code == 0, output
    kills, observed = [], []
    slices = rng.sample(range(TRIALS), TRIALS)
    for trial in range(1, TRIALS + 1):
        delay = model_phase * (slices[trial - 1] + rng.random()) / TRIALS
        code, output, _ = dbt.run(
            "run",
            "--select",
            *MODELS,
            *COMPACT_MODELS,
            *COMPACT_SOURCES,
            "--threads",
            THREADS,
            variables={"through": trial + 1, "run_no": trial},
            kill_after=delay,
        )
        kills.append({"trial": trial, "delay": round(delay, 2), "exit": code})
        observed += observed_rows(trial, output)
    final = dbt.run(
        "run", "--threads", THREADS, variables={"through": TRIALS + 1, "run_no": TRIALS + 1, "bad_data": True}
    )
    observed += observed_rows(TRIALS + 1, final[1])
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            CHECK_SCRIPT,
            *TABLES.values(),
            "crash.crash_bad_data",
            *(f"crash.{model}__joinery_tombstones" for model in COMPACT_MODELS),
        ],
        env=dbt.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = next((x for x in check.stdout.splitlines() if x.startswith("JOINERY_CHECK ")), None)
    assert line, check.stdout + check.stderr
    tables = json.loads(line.split(" ", 1)[1])
    return {
        "changes": changes,
        "compact_changes": compact_changes,
        "kills": kills,
        "final": final,
        "observed": observed,
        "tables": tables,
    }


def test_kills_happened_at_random_moments(crash_history):
    kills = crash_history["kills"]
    # Most trials, and at least one, must really have been killed (SIGKILL exit), not have finished
    # before the kill.
    assert sum(kill["exit"] == -signal.SIGKILL for kill in kills) >= max(1, len(kills) // 2), kills
    # A trial that was not killed finished its run: it exited by itself, successfully.
    assert all(kill["exit"] in (0, -signal.SIGKILL) for kill in kills), kills


@pytest.mark.parametrize("model", MODELS)
def test_reader_sees_old_or_new_version_after_every_kill(crash_history, model):
    changes, observed = crash_history["changes"], crash_history["observed"]
    levels = {part: 1 for part in range(3)}
    for run_no in range(1, TRIALS + 2):
        # Run run_no - 1 applied batches up to run_no (and may have been killed). Each table (each
        # partition of the partitioned one, which commits partition by partition) holds one whole
        # version, no older than the one seen after the previous kill: the version it held, the one
        # that run was writing, or one in between. A run killed after storing its journal leaves the
        # old version visible; the next run rolls that journal forward first, and may then be killed.
        rows = by_partition(row[2:] for row in observed if row[0] == run_no and row[1] == model)
        groups = [[part] for part in range(3)] if model == "crash_partitioned" else [[0, 1, 2]]
        for parts in groups:
            low = min(levels[part] for part in parts)
            found = [
                level
                for level in range(low, run_no + 1)
                if all(sorted(rows[part]) == sorted(reference(changes, level)[part]) for part in parts)
            ]
            assert found, f"run {run_no}, partitions {parts} match no version in {low}..{run_no}: {rows}"
            for part in parts:
                levels[part] = found[-1]


@pytest.mark.parametrize("model", MODELS)
def test_rerun_converges_to_exactly_the_expected_rows(crash_history, model):
    changes, tables = crash_history["changes"], crash_history["tables"]
    expected = sorted(row for rows in reference(changes, TRIALS + 1).values() for row in rows)
    assert sorted(tuple(row) for row in tables[model]) == expected


def test_run_failing_on_bad_data_leaves_previous_table(crash_history):
    code, output, _ = crash_history["final"]
    assert code != 0 and "crash_bad_data" in output and "CAST_INVALID_INPUT" in output, output[-3000:]
    # dbt reports the failure; pyspark's own JSON log line with the Java stack trace is not repeated.
    assert "SQLQueryContextLogger" not in output, output[-3000:]
    expected = sorted(row for rows in reference(crash_history["changes"], 1).values() for row in rows)
    assert sorted(tuple(row) for row in crash_history["tables"]["crash_bad_data"]) == expected


def test_compaction_reader_sees_old_or_new_version_after_every_kill(crash_history):
    # As for the upsert tables; the compactions' batches bring versions older than earlier deletes,
    # which only the tombstones (written before each commit) keep from re-creating their keys.
    changes, observed = crash_history["compact_changes"], crash_history["observed"]
    assert any(
        row["batch"] > deleted["batch"] and row["ts"] < deleted["ts"]
        for deleted in changes
        if deleted["deleted"]
        for row in changes
        if (row["part"], row["id"]) == (deleted["part"], deleted["id"])
    ), "no version older than a delete arrives after it"
    for model in COMPACT_MODELS:
        low = 1
        for run_no in range(1, TRIALS + 2):
            rows = sorted(tuple(row[2:]) for row in observed if row[0] == run_no and row[1] == model)
            found = [
                level
                for level in range(low, run_no + 1)
                if rows == sorted(row for part in compact_reference(changes, level).values() for row in part)
            ]
            assert found, f"run {run_no}, {model} matches no version in {low}..{run_no}: {rows}"
            low = found[-1]


def test_compaction_rerun_converges_with_its_tombstones(crash_history):
    changes, tables = crash_history["compact_changes"], crash_history["tables"]
    expected = sorted(row for part in compact_reference(changes, TRIALS + 1).values() for row in part)
    deleted = sorted(
        (part, id_, row["ts"]) for (part, id_), row in compact_winners(changes, TRIALS + 1).items() if row["deleted"]
    )
    for model in COMPACT_MODELS:
        assert sorted(tuple(row) for row in tables[model]) == expected, model
        # The tombstones are exactly the keys whose winning version is a delete, with its ts.
        assert sorted(tuple(row) for row in tables[f"{model}__joinery_tombstones"]) == deleted, model
