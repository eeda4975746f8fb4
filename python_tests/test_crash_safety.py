"""joinery_upsert survives being killed: SIGKILL of dbt and its Spark JVM during incremental runs and
full builds never loses or doubles a row, a reader between the kill and the next run sees one whole
version (the old one, the new one, or one a killed run had committed to its journal), never an older
one than before, and the next run converges. A run that fails on bad data changes nothing.

Each trial is one `dbt run` on the embedded `local` target (its own Spark dir in a temp folder) over
five joinery_upsert tables (parquet, parquet partitioned, Hive Avro, delta partitioned, iceberg
partitioned in the `iceberg` catalog) and two `compact` models (parquet, delta) whose batches bring
versions older than earlier deletes, so their tombstones are written before each commit. Trials are
killed at random moments (one in each of TRIALS equal slices of the window a finished run of the
same kind took, the slices in random order, so that the kills spread over the whole run however few
they are), and at moments the test watches for (a version written and checked but not committed; a
Delta data file written before its commit), so that each phase is provably hit.

Where each kill landed is recorded per table from what the kill left, before the next run touches
it: the version directories on disk and the journal and version in the table's properties (parquet,
Avro), the data files and log entries (delta, iceberg). The test asserts that, on parquet and on
delta, kills landed before the write, after the write but before the commit, and after the commit,
and that incremental runs and full builds were both killed. The next trial's run is also the re-run
of the previous one; an `on-run-start` hook logs what each table holds and its properties before any
model runs (the state a reader sees between kill and re-run). Expected rows come from a plain-Python
reference over the generated batches.
"""

from __future__ import annotations

import csv
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.dbt import PROFILES_DIR, REPO_ROOT
from harness.dbt_log import LogWatch
from harness.java import short_lived_java_options
from harness.sql import tombstones_sql

SEED = 20240613
# Random-moment trials, one in each slice of the window: every third of them a full build
# (--full-refresh), the others incremental runs. The watched trials (TARGETS) come on top.
# JOINERY_CRASH_TRIALS=30 sweeps finer.
TRIALS = int(os.environ.get("JOINERY_CRASH_TRIALS", "4"))
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
# How each table commits, which decides what shows where a kill landed: a journal in the table's
# properties over version directories (directory_commit/journal.sql), or the format's own log.
JOURNAL_MODELS = ["crash_plain", "crash_partitioned", "crash_avro", "crash_compact"]
LOG_MODELS = {"crash_delta": "delta", "crash_compact_delta": "delta", "crash_iceberg": "iceberg"}
FORMAT_OF = {**dict.fromkeys(JOURNAL_MODELS, "parquet"), **LOG_MODELS}
# Where a kill landed for one table, from what the kill left on disk and in the metastore:
# nothing of the run's new version is readable yet, so the table and its files are as before.
BEFORE_WRITE = "before the write"
# the run's new version has data files (a version directory; Delta or Iceberg data files) that the
# table does not read yet: the next run deletes them or, from a committing journal, commits them.
AFTER_WRITE = "after the write, before the commit"
# the table's commit record names the run's version (`joinery.version`; a new Delta log entry or
# Iceberg metadata file): readers see the new version.
AFTER_COMMIT = "after the commit"
PHASES = [BEFORE_WRITE, AFTER_WRITE, AFTER_COMMIT]
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
# The journal tables' `joinery.version` and `joinery.pending*` properties, logged by the same hook.
PROPERTIES = "JOINERY_PROPERTIES "
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
    {%- set properties = {} %}
    {%- for model in """
    + json.dumps(JOURNAL_MODELS)
    + """ %}
    {%- set found = {} %}
    {%- for row in run_query('show tblproperties crash.' ~ model).rows
        if row[0] == 'joinery.version' or row[0].startswith('joinery.pending') %}
    {%- do found.update({row[0]: row[1]}) %}
    {%- endfor %}
    {%- do properties.update({model: found}) %}
    {%- endfor %}
    {%- do log('"""
    + PROPERTIES
    + """' ~ tojson(properties), info=true) %}
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


def logged_properties(run_no: int, output: str) -> dict[str, dict[str, str]]:
    """The journal tables' properties the run's on-run-start hook logged: {model: {key: value}}."""
    line = next((line for line in output.splitlines() if PROPERTIES in line), None)
    assert line, f"run {run_no} logged no {PROPERTIES.strip()} line:\n{output[-3000:]}"
    return json.loads(line.split(PROPERTIES, 1)[1])


def journal_state(properties: dict[str, str]) -> str:
    """The state of a stored journal (`writing`, `committing`) or `none`: `joinery.pending`, then
    `joinery.pending.1`, ... up to the first empty part, as journal.sql stores it."""
    text, index = properties.get("joinery.pending", ""), 1
    while text and properties.get(f"joinery.pending.{index}"):
        text += properties[f"joinery.pending.{index}"]
        index += 1
    return json.loads(text)["state"] if text else "none"


def readable_files(folder: Path) -> set[str]:
    """Data files under `folder` as a reader lists them: Hadoop skips names starting with `_` or `.`
    (a write's `_temporary` and staging folders, Delta's log, checksums)."""
    found = set()
    for path in folder.rglob("*") if folder.exists() else []:
        relative = path.relative_to(folder)
        if path.is_file() and not any(part.startswith(("_", ".")) for part in relative.parts):
            found.add(str(relative))
    return found


def storage_state(spark_dir: Path) -> dict[str, dict]:
    """What each table's storage holds: journal tables, their version directories (whether each has
    data files); log tables, their data files and their commits (Delta's `_delta_log/<n>.json`,
    Iceberg's `metadata/v<n>.metadata.json`)."""
    warehouse = spark_dir / "warehouse" / "crash.db"
    state = {}
    for model in JOURNAL_MODELS:
        root = warehouse / f"{model}__joinery"
        versions = sorted(root.glob("v_*")) if root.exists() else []
        state[model] = {"versions": {path.name: bool(readable_files(path)) for path in versions}}
    for model, file_format in LOG_MODELS.items():
        if file_format == "delta":
            folder, log, pattern = warehouse / model, warehouse / model / "_delta_log", r"^\d{20}\.json$"
            data = readable_files(folder)
        else:
            folder = spark_dir / "iceberg" / "crash" / model
            log, pattern, data = folder / "metadata", r"^v\d+\.metadata\.json$", readable_files(folder / "data")
        commits = {path.name for path in log.iterdir() if re.match(pattern, path.name)} if log.exists() else set()
        state[model] = {"data": data, "commits": commits}
    return state


def kill_phase(model: str, before: dict, after: dict, properties: dict | None) -> str | None:
    """Where a kill landed on `model`'s table (PHASES), from its storage before the run and right
    after the kill, and (journal tables) its properties after the kill; None while those are not
    known yet (the next run's hook logs them)."""
    if model in LOG_MODELS:
        if after[model]["commits"] - before[model]["commits"]:
            return AFTER_COMMIT
        return AFTER_WRITE if after[model]["data"] - before[model]["data"] else BEFORE_WRITE
    versions = after[model]["versions"].items()
    new = {name: has_data for name, has_data in versions if name not in before[model]["versions"]}
    if not any(new.values()):
        return BEFORE_WRITE
    if properties is None:
        return None
    return AFTER_COMMIT if f"v_{properties[model].get('joinery.version')}" in new else AFTER_WRITE


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
    if "=" in table:
        # name=SQL: a query's rows (the tombstones a companion holds, as joinery reads them).
        name, sql = table.split("=", 1)
        out[name] = [list(r) for r in spark.sql(sql).collect()]
        continue
    out[table.split(".")[-1]] = [list(r) for r in spark.sql(f"select part, id, value, batch from {table}").collect()]
print("JOINERY_CHECK " + json.dumps(out))
"""


def held_tombstones(model: str) -> str:
    """The tombstones of a compact model's companion that hold off something: a key's newest record,
    of a key the table lacks (a log record of a live key is older than its row; docs/compaction.md)."""
    return tombstones_sql(f"crash.{model}__joinery_tombstones", ["part", "id"], ["ts", "loaded_at"], f"crash.{model}")


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

    def run(
        self, *args: str, variables: dict, kill_after: float | None = None, kill_when: Callable[[], bool] | None = None
    ) -> tuple[int, str, float]:
        """Run dbt; with kill_after, SIGKILL its process group that many seconds after the first model
        starts; with kill_when, as soon as it returns true (polled every few milliseconds).

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
        while kill_when is not None and process.poll() is None:
            if kill_when():
                os.killpg(process.pid, signal.SIGKILL)
                break
            time.sleep(0.005)
        code = process.wait(timeout=600)
        # What a kill left is read as soon as the whole group (the Spark JVM too) has exited.
        deadline = time.monotonic() + 30
        while code == -signal.SIGKILL and group_alive(process.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        reader.join(timeout=10)
        ended = time.monotonic()
        return code, "".join(lines), ended - started[0] if started else 0.0


def group_alive(group: int) -> bool:
    """Whether a process of the process group still runs (a zombie does not)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] not in ("Z", "X"):
            return True
    return False


def new_data_file(spark_dir: Path, before: dict, models: list[str]) -> Callable[[], bool]:
    """True once one of the Delta `models` has a data file its log does not commit yet."""
    warehouse = spark_dir / "warehouse" / "crash.db"
    return lambda: any(readable_files(warehouse / model) - before[model]["data"] for model in models)


# Kills at watched moments: (format, phase it provably lands in, build kind, what to watch for). The
# watch is of what the run does, the phase recorded is what the kill left (kill_phase).
TARGETS = [
    # crash_plain's version is written and checked (its stage table dropped), its journal not yet
    # applied: several metastore statements still to go.
    ("parquet", AFTER_WRITE, "incremental", "stage"),
    # A full build's `create or replace` on delta: data files written, its log entry not yet.
    ("delta", AFTER_WRITE, "full", "delta_files"),
    # Both tables' first statements: nothing written yet.
    ("parquet", BEFORE_WRITE, "incremental", "start"),
    ("delta", BEFORE_WRITE, "incremental", "start"),
    # dbt logged both commits.
    ("parquet", AFTER_COMMIT, "incremental", "committed"),
    ("delta", AFTER_COMMIT, "incremental", "committed"),
]
# The watched trials always run; the others only when the random moments missed their phase.
ALWAYS = 2
FILLS = 3


def watch(how: str, log: LogWatch, spark_dir: Path, before: dict) -> Callable[[], bool]:
    if how == "stage":
        return lambda: log.says("drop table crash.crash_plain__joinery_stage")
    if how == "delta_files":
        return new_data_file(spark_dir, before, ["crash_delta", "crash_compact_delta"])
    if how == "start":
        return lambda: log.says(
            "START sql joinery_upsert model crash.crash_plain ", "START sql joinery_upsert model crash.crash_delta "
        )
    return lambda: log.says(
        "joinery_upsert crash.crash_plain: ", "OK created sql joinery_upsert model crash.crash_delta"
    )


class Trials:
    """The runs of one history: run r applies batches up to r + 1. Each run's on-run-start hook shows
    what the run before it left (rows, journal properties), and so where that run's kill landed."""

    def __init__(self, dbt: Dbt, home: Path):
        self.dbt, self.spark_dir = dbt, home / "spark"
        self.log_path = home / "logs" / "dbt.log"
        self.runs: list[dict] = []
        self.observed: list[tuple] = []

    def run(self, kind: str, *, random_delay: float | None = None, target: tuple | None = None, bad_data=False):
        run_no = len(self.runs)
        args = ["build"] if run_no == 0 else ["run"]
        if run_no > 0 and not bad_data:
            args += ["--select", *MODELS, *COMPACT_MODELS, *COMPACT_SOURCES]
        if kind == "full" and run_no > 0:
            args.append("--full-refresh")
        before = storage_state(self.spark_dir)
        kill_when = watch(target[3], LogWatch(self.log_path), self.spark_dir, before) if target else None
        variables = {"through": run_no + 1, "run_no": run_no, "bad_data": bad_data}
        code, output, seconds = self.dbt.run(
            *args, "--threads", THREADS, variables=variables, kill_after=random_delay, kill_when=kill_when
        )
        after = storage_state(self.spark_dir)
        if run_no > 0:
            self.observed += observed_rows(run_no, output)
            self.runs[-1]["properties"] = logged_properties(run_no, output)
        moment = (
            f"random {random_delay:.1f}s" if random_delay is not None else (f"watched: {target[3]}" if target else None)
        )
        record = {"run": run_no, "kind": kind, "moment": moment, "target": target, "exit": code, "output": output}
        record.update({"seconds": seconds, "before": before, "after": after, "properties": None})
        self.runs.append(record)
        return record

    def phases(self, record: dict) -> dict[str, str | None]:
        return {
            model: kill_phase(model, record["before"], record["after"], record["properties"]) for model in FORMAT_OF
        }

    def killed(self) -> list[dict]:
        return [record for record in self.runs if record["moment"] is not None]

    def hit(self) -> set[tuple[str, str]]:
        """(format, phase) of every killed run so far whose phase is known."""
        found = set()
        for record in self.killed():
            if record["exit"] == -signal.SIGKILL:
                found |= {(FORMAT_OF[model], phase) for model, phase in self.phases(record).items() if phase}
        return found


@pytest.fixture(scope="module")
def crash_history(tmp_path_factory, request):
    rng = random.Random(SEED)
    # One batch per run, the most a history can take (every fill trial run).
    most_runs = 2 + TRIALS + len(TARGETS) + FILLS + 1
    changes = batches(rng, most_runs + 1)
    compact_changes = compact_batches(random.Random(SEED + 1), most_runs + 1)
    home = tmp_path_factory.mktemp("crash")
    project = home / "project"
    make_project(project, changes, compact_changes)
    trials = Trials(Dbt(project, home), home)

    # The kill windows: a full build (the first, models side by side as in the trials) and an
    # incremental run, measured; a later run of either kind that finishes measures it again.
    windows = {}
    for kind in ("full", "incremental"):
        record = trials.run(kind)
        assert record["exit"] == 0, record["output"]
        windows[kind] = record["seconds"]
    kinds = ["full" if trial % 3 == 2 else "incremental" for trial in range(TRIALS)]
    slices = {kind: rng.sample(range(kinds.count(kind)), kinds.count(kind)) for kind in sorted(set(kinds))}
    for kind in kinds:
        count = kinds.count(kind)
        record = trials.run(kind, random_delay=windows[kind] * (slices[kind].pop() + rng.random()) / count)
        if record["exit"] == 0:
            windows[kind] = record["seconds"]
    for target in TARGETS[:ALWAYS]:
        trials.run(target[2], target=target)
    # A watched trial for each phase the kills so far missed (known up to the last run's journals).
    for _ in range(FILLS):
        missing = [target for target in TARGETS if target[:2] not in trials.hit()]
        if not missing:
            break
        trials.run(missing[0][2], target=missing[0])
    final = trials.run("incremental", bad_data=True)
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            CHECK_SCRIPT,
            *TABLES.values(),
            "crash.crash_bad_data",
            *(
                f"{model}__joinery_tombstones=select part, id, ts from ({held_tombstones(model)})"
                for model in COMPACT_MODELS
            ),
        ],
        env=trials.dbt.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = next((x for x in check.stdout.splitlines() if x.startswith("JOINERY_CHECK ")), None)
    assert line, check.stdout + check.stderr
    tables = json.loads(line.split(" ", 1)[1])
    figures = kill_figures(trials)
    print("crash kill phases: " + json.dumps(figures))
    # The figures of docs/guarantees.md: `pytest --cache-show 'joinery/*'` prints them after a run.
    request.config.cache.set("joinery/crash_kill_phases", figures)
    return {
        "changes": changes,
        "compact_changes": compact_changes,
        "trials": trials,
        "kills": [
            {"run": r["run"], "kind": r["kind"], "moment": r["moment"], "exit": r["exit"]} for r in trials.killed()
        ],
        "final": (final["exit"], final["output"], final["seconds"]),
        "final_through": final["run"] + 1,
        "last_run": final["run"],
        "observed": trials.observed,
        "tables": tables,
    }


def kill_figures(trials: Trials) -> dict:
    """Kills per format and phase, by build kind, and each trial's phases (with the journal's state)."""
    counts: dict = {}
    per_trial = []
    for record in trials.killed():
        phases = trials.phases(record)
        killed = record["exit"] == -signal.SIGKILL
        for model, phase in phases.items():
            key = f"{FORMAT_OF[model]}: {phase if killed else 'run finished'}"
            counts.setdefault(key, {"incremental": 0, "full": 0})[record["kind"]] += 1
        journals = {model: journal_state(record["properties"][model]) for model in JOURNAL_MODELS}
        summary = {key: record[key] for key in ("run", "kind", "moment", "exit")}
        per_trial.append({**summary, "phases": phases, "journals": journals})
    return {"counts": dict(sorted(counts.items())), "trials": per_trial}


def test_kills_happened_at_random_moments(crash_history):
    kills = [kill for kill in crash_history["kills"] if kill["moment"].startswith("random")]
    assert len(kills) == TRIALS, kills
    # Most random-moment trials, and at least one, must really have been killed (SIGKILL exit), not
    # have finished before the kill.
    assert sum(kill["exit"] == -signal.SIGKILL for kill in kills) >= max(1, len(kills) // 2), kills
    # A trial that was not killed finished its run: it exited by itself, successfully.
    assert all(kill["exit"] in (0, -signal.SIGKILL) for kill in kills), kills
    # Every watched trial was killed: what it watched for happened before the run ended.
    assert all(kill["exit"] == -signal.SIGKILL for kill in crash_history["kills"] if kill not in kills), crash_history[
        "kills"
    ]


@pytest.mark.parametrize("file_format", ["parquet", "delta"])
def test_kills_landed_in_every_phase(crash_history, file_format):
    # Before the write, after the write but before the commit, after the commit: each on a table of
    # this format, from what the kill left (kill_phase).
    trials = crash_history["trials"]
    hit = {phase for fmt, phase in trials.hit() if fmt == file_format}
    assert hit == set(PHASES), (hit, kill_figures(trials)["counts"])


def test_incremental_runs_and_full_builds_were_killed(crash_history):
    killed = {kill["kind"] for kill in crash_history["kills"] if kill["exit"] == -signal.SIGKILL}
    assert killed == {"incremental", "full"}, crash_history["kills"]


def test_every_watched_kill_landed_where_it_watched(crash_history):
    # A watched kill's phase is what the kill left, not what was watched for: they agree.
    trials = crash_history["trials"]
    for record in trials.killed():
        if record["target"] is not None:
            file_format, phase = record["target"][:2]
            found = {p for model, p in trials.phases(record).items() if FORMAT_OF[model] == file_format}
            assert phase in found, (record["run"], record["target"], found)


@pytest.mark.parametrize("model", MODELS)
def test_reader_sees_old_or_new_version_after_every_kill(crash_history, model):
    changes, observed = crash_history["changes"], crash_history["observed"]
    levels = {part: 1 for part in range(3)}
    for run_no in range(1, crash_history["last_run"] + 1):
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
    expected = sorted(row for rows in reference(changes, crash_history["final_through"]).values() for row in rows)
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
        for run_no in range(1, crash_history["last_run"] + 1):
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
    expected = sorted(
        row for part in compact_reference(changes, crash_history["final_through"]).values() for row in part
    )
    deleted = sorted(
        (part, id_, row["ts"])
        for (part, id_), row in compact_winners(changes, crash_history["final_through"]).items()
        if row["deleted"]
    )
    for model in COMPACT_MODELS:
        assert sorted(tuple(row) for row in tables[model]) == expected, model
        # The tombstones are exactly the keys whose winning version is a delete, with its ts.
        assert sorted(tuple(row) for row in tables[f"{model}__joinery_tombstones"]) == deleted, model
