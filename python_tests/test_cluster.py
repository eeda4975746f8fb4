"""joinery on a real Spark cluster: a standalone Master with two Workers on 127.0.0.1 (harness/cluster.py),
a Thrift server submitted to it, and the `cluster` dbt target pointed at it by the variables a user sets.

One incremental scenario per capability (compaction with deletes and a new column, the FK join over
several batches, the collect join incremental, a routed splitter with its ports, the multi-way join),
each on delta and on parquet: models derived from the examples (only file_format and the inputs
changed), every capability and format built together by one dbt invocation per batch, results
compared with the same plain-Python references as the local tests. The executors' task counts show
the work ran on them, not on the driver.

Fault: during incremental joinery_upsert runs (parquet and delta), one Worker and its executor are
SIGKILLed, and the trial counts only once those processes have exited. Each run finishes on the
remaining executor or fails with a clear error, the table holds the old or the new version, the
next run converges, and the Worker is restarted between trials. The trials include both outcomes,
each made deterministic: `idle` trials kill at seeded statements while the executor runs no task of
the run, Worker first (the run finishes on the other executor); `busy` trials kill while it has
been running a task of the run (made slow, see FAULT_VALUE), executor first, in an application that
allows one attempt per task (CLUSTER_CONF): the run fails and is re-run. Figures: docs/guarantees.md.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import signal
import time
from collections import Counter, defaultdict

import pytest

from harness.cluster import LOOPBACK, ClusterError, LocalCluster, Ports, dbt_environment, executor_tasks, get_json
from harness.dbt import REPO_ROOT, DbtProject
from harness.java import QUICK_JIT, SUITE_GC, THROWAWAY_METASTORE
from harness.sql import SparkSql, read_rows, sql_literal, unique_mapping
from python_tests import (
    test_collect_join,
    test_compaction,
    test_crash_safety,
    test_fk_join,
    test_multi_join,
    test_splitter,
)
from python_tests.compaction_reference import compact_reference, sorted_rows

FORMATS = ["parquet", "delta"]
SCHEMA = "cluster_test"
LANDING = "cluster_landing"
EXAMPLES = REPO_ROOT / "models" / "examples"
SEED = 20261126
# What the kill of each trial waits for on the killed Worker's executor, once its statement was sent.
ROLES = ["idle", "busy", "idle", "busy", "idle"]
TRIALS = len(ROLES)
LATER = "2024-02-01 00:00:00"
# FK changelog batches landed before each run: several batches per run, all six over two runs.
FK_BATCHES = [[1, 2, 3], [4, 5, 6]]
BATCHES = len(FK_BATCHES)

# model (per format) -> the example it is derived from; refs to other derived models get the suffix.
DERIVED = {
    "compaction_deletes_incremental": EXAMPLES / "compaction" / "compaction_deletes_incremental.sql",
    "fk_orders_state": EXAMPLES / "fk_join" / "fk_orders_state.sql",
    "fk_customers_state": EXAMPLES / "fk_join" / "fk_customers_state.sql",
    "fk_orders_customers": EXAMPLES / "fk_join" / "fk_orders_customers.sql",
    "collect_join_puid_attributes_incremental": EXAMPLES
    / "collect_join"
    / "collect_join_puid_attributes_incremental.sql",
    "splitter_contacts_routed": EXAMPLES / "splitter" / "splitter_contacts_routed.sql",
    "splitter_contacts_missing_email": EXAMPLES / "splitter" / "splitter_contacts_missing_email.sql",
    "splitter_contacts_has_email": EXAMPLES / "splitter" / "splitter_contacts_has_email.sql",
    "splitter_contacts_filled": EXAMPLES / "splitter" / "splitter_contacts_filled.sql",
}
# Example seeds read with ref(): here landing tables, read with source().
LANDED = ["collect_join_attributes", "collect_join_mappings", "splitter_contacts", "splitter_directory"]
MULTI_JOIN_PROBE = "probe_outer_a_c"
SOURCES = f"""
version: 2
sources:
  - name: compaction_landing
    schema: {LANDING}
    tables: [{{name: compaction_deletes_snapshot}}, {{name: compaction_deletes_delta}}]
  - name: fk_join
    schema: {LANDING}
    tables: [{{name: orders_changelog}}, {{name: customers_changelog}}]
  - name: mj
    schema: {LANDING}
    tables: [{{name: mj_a}}, {{name: mj_b}}, {{name: mj_c}}]
  - name: landing
    schema: {LANDING}
    tables: [{", ".join(f"{{name: {name}}}" for name in [*LANDED, "fault_changes"])}]
"""
# How dbt's log starts the line of each statement it sends for a fault model.
FAULT_STATEMENT = "On model.joinery.fault_"
FAULT_MODEL = test_crash_safety.MODEL_SQL.replace("JOINERY_CRASH_THROUGH", "JOINERY_FAULT_THROUGH").replace(
    "ref('crash_changes')", "source('landing', 'fault_changes')"
)
# The fault models' value: with JOINERY_FAULT_SLOW_MS set, each row's computation sleeps that long
# (the value is unchanged), so that a task of the run is running when a `busy` trial kills; unset,
# the plain column (a call of Java is not deterministic, which changes how Delta's MERGE reads it).
FAULT_VALUE = (
    "{% if env_var('JOINERY_FAULT_SLOW_MS', '0') != '0' %}"
    "value + 0 * length(java_method('java.lang.Thread', 'sleep',"
    " cast({{ env_var('JOINERY_FAULT_SLOW_MS') }} as bigint)))"
    "{% else %}value{% endif %}"
)
SLOW_MS = "300"
# The application status the REST API reports is up to 0.1 s old (spark.ui.liveUpdate.period).
STEADY = 0.15
# Spark reruns a task lost with its executor: always when the Worker went first (the Master reports
# "worker lost", not counted against the task), else up to spark.task.maxFailures attempts (4 by
# default), so no killed run would fail. One attempt here: a busy trial's task, lost with its
# executor killed first, fails the run, the outcome a run meets once its retries are spent. The
# scenario above fails no task, so it is unaffected.
CLUSTER_CONF = {"spark.task.maxFailures": "1"}


def derived_sql(path, file_format: str) -> str:
    # An example names its format literally or through its capability's var (dbt_project.yml),
    # which this project does not define.
    sql, replaced = re.subn(r"file_format=(?:'\w+'|var\('\w+'\))", f"file_format='{file_format}'", path.read_text())
    for name in DERIVED:
        sql = sql.replace(f"ref('{name}')", f"ref('{name}_{file_format}')")
    for name in LANDED:
        sql = sql.replace(f"ref('{name}')", f"source('landing', '{name}')")
    if "config(" not in sql:
        # A view: the router it reads is the table in the format under test.
        sql = f"{{{{ config(materialized='view') }}}}\n{sql}"
    assert replaced or "materialized='view'" in sql, f"{path.name}: no file_format to set"
    # The examples' `-- depends_on: ref(seed)` lines: the inputs are sources here.
    return "\n".join(line for line in sql.splitlines() if not line.startswith("-- depends_on"))


def multi_join_sql(file_format: str) -> str:
    join_type, required, _, null_keys = test_multi_join.PROBES[MULTI_JOIN_PROBE]
    return (
        f"{{{{ config(materialized='table', file_format='{file_format}') }}}}\n"
        f"{{{{ joinery.multi_join({test_multi_join.INPUTS_JINJA}, {test_multi_join.KEYS_JINJA}, "
        f"join_type='{join_type}', required={required!r}, null_keys='{null_keys}', qualify=true, "
        f"select={test_multi_join.PROBE_SELECT!r}) }}}}\n"
    )


def make_project(root) -> None:
    """A project named joinery holding joinery's macros and the derived models (per format)."""
    shutil.copytree(REPO_ROOT / "macros", root / "macros")
    models = root / "models"
    models.mkdir()
    (models / "sources.yml").write_text(SOURCES)
    for file_format in FORMATS:
        for name, path in DERIVED.items():
            (models / f"{name}_{file_format}.sql").write_text(derived_sql(path, file_format))
        (models / f"multi_join_{file_format}.sql").write_text(multi_join_sql(file_format))
        config = test_crash_safety.MODELS["crash_plain"].replace("parquet", file_format)
        (models / f"fault_{file_format}.sql").write_text(FAULT_MODEL.format(config=config, value=FAULT_VALUE))
    (root / "dbt_project.yml").write_text(
        "name: joinery\nversion: '1.0'\nconfig-version: 2\nprofile: joinery\n"
        "model-paths: ['models']\nmacro-paths: ['macros']\n"
    )


def _interrupt_on_sigterm(signum, frame):  # noqa: ARG001
    raise KeyboardInterrupt(f"received signal {signum}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    previous = signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
    local = LocalCluster(
        tmp_path_factory.mktemp("cluster"), Ports.free(), f"{QUICK_JIT} {SUITE_GC} {THROWAWAY_METASTORE}", CLUSTER_CONF
    )
    try:
        local.start()
        yield local
    finally:
        local.stop()
        signal.signal(signal.SIGTERM, previous)


@pytest.fixture(scope="module")
def spark(cluster):
    connection = SparkSql(cluster.ports.thrift)
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def dbt(cluster, tmp_path_factory):
    project = tmp_path_factory.mktemp("cluster_project")
    make_project(project)
    # The `cluster` target of profiles/profiles.yml, by the variables a user sets.
    env = {**dbt_environment(cluster), "JOINERY_CLUSTER_SCHEMA": SCHEMA, "JOINERY_CLUSTER_CONNECT_RETRIES": "0"}
    env["DBT_LOG_PATH"] = str(project / "logs")
    return DbtProject(project_dir=project, target="cluster", schema=SCHEMA, target_path=project / "target", env=env)


def test_a_taken_port_is_a_clear_error(cluster, tmp_path):
    # A second cluster on the running one's ports: refused before any process starts.
    with pytest.raises(ClusterError, match=rf"thrift 127\.0\.0\.1:{cluster.ports.thrift} \(set JOINERY_CLUSTER_PORT\)"):
        LocalCluster(tmp_path, cluster.ports).start()
    assert not (tmp_path / "logs").exists()


# ---- landing the batches -------------------------------------------------------------------------


def land_compaction(spark, batch: int, data: dict) -> None:
    types = test_compaction.seed_types()
    if batch == 1:
        for seed in ("deletes_snapshot", "deletes_delta"):
            name = f"compaction_{seed}"
            test_compaction.create_landing_table(spark, name, types[name], schema=LANDING)
            data[seed] = test_compaction.csv_rows(name)
    elif batch == 2:
        # A delete of a live key, a new key, and a new column in a later batch (schema drift).
        spark.execute(f"alter table {LANDING}.compaction_deletes_delta add columns (value3 string)")
        rows = [
            {"key": "1", "value": None, "ts": "2024-01-01 09:00:00", "is_deleted": "true", "loaded_at": LATER},
            {"key": "6", "value": "f", "ts": "2024-01-01 01:00:00", "is_deleted": "false", "loaded_at": LATER},
        ]
        rows = [{**row, "value3": "v3"} for row in rows]
        columns = [*types["compaction_deletes_delta"], "value3"]
        values = ", ".join(
            "(" + ", ".join("null" if r[c] is None else f"'{r[c]}'" for c in columns) + ")" for r in rows
        )
        casts = [*types["compaction_deletes_delta"].values(), "string"]
        select = ", ".join(f"cast(col{i} as {t})" for i, t in enumerate(casts, start=1))
        spark.execute(f"insert into {LANDING}.compaction_deletes_delta select {select} from values {values}")
        for row in data["deletes_delta"]:
            row["value3"] = None
        data["deletes_delta"] += rows


def land_fk(spark, batch: int, data: dict) -> None:
    orders_table, customers_table = f"{LANDING}.orders_changelog", f"{LANDING}.customers_changelog"
    if batch == 1:
        data["orders"] = test_fk_join.read_csv(
            test_fk_join.SEEDS / "fk_orders_changelog.csv", test_fk_join.ORDER_COLUMNS
        )
        data["customers"] = test_fk_join.read_csv(
            test_fk_join.SEEDS / "fk_customers_changelog.csv", test_fk_join.CUSTOMER_COLUMNS
        )
        data["seen_orders"], data["seen_customers"] = [], []
        test_fk_join.create_source(spark, orders_table, test_fk_join.ORDER_COLUMNS)
        test_fk_join.create_source(spark, customers_table, test_fk_join.CUSTOMER_COLUMNS)
    for fk_batch in FK_BATCHES[batch - 1]:
        orders = [row for row in data["orders"] if row["batch_id"] == fk_batch]
        customers = [row for row in data["customers"] if row["batch_id"] == fk_batch]
        test_fk_join.land(spark, orders_table, test_fk_join.ORDER_COLUMNS, orders)
        test_fk_join.land(spark, customers_table, test_fk_join.CUSTOMER_COLUMNS, customers)
        data["seen_orders"] += orders
        data["seen_customers"] += customers


def land_collect_join(spark, batch: int, data: dict) -> None:
    dec_26 = test_collect_join.DEC_24 + 2 * test_collect_join.DAY_MS + 3_600_000
    new = {
        1: {name: test_collect_join.seed(name) for name in ("collect_join_attributes", "collect_join_mappings")},
        # test_collect_join's incremental batch: a touched UID, a new PUID, an untouched PUID.
        2: {
            "collect_join_attributes": [(dec_26, 67890, " 10 , 2,, "), (dec_26, 33333, "7")],
            "collect_join_mappings": [(dec_26, 33333, "new"), (dec_26, 22222, "qqq")],
        },
    }.get(batch, {})
    for name, rows in new.items():
        column = "attribute_ids" if name == "collect_join_attributes" else "puid"
        if batch == 1:
            spark.execute(f"drop table if exists {LANDING}.{name}")
            spark.execute(f"create table {LANDING}.{name} (time bigint, uid int, {column} string) using parquet")
        spark.execute(f"insert into {LANDING}.{name} values " + ", ".join(f"({t}, {k}, '{v}')" for t, k, v in rows))
        data.setdefault(name, []).extend(rows)


def land_splitter(spark, batch: int, data: dict) -> None:
    if batch == 1:
        data["contacts"] = test_splitter.seed("splitter_contacts")
        data["directory"] = test_splitter.seed("splitter_directory")
        for name, rows in (("splitter_contacts", data["contacts"]), ("splitter_directory", data["directory"])):
            spark.execute(f"drop table if exists {LANDING}.{name}")
            columns = list(rows[0])
            types = {c: "int" if c in ("contact_id", "lifetime_value") else "string" for c in columns}
            spark.execute(
                f"create table {LANDING}.{name} ({', '.join(f'{c} {t}' for c, t in types.items())}) using parquet"
            )
            insert_dicts(spark, f"{LANDING}.{name}", types, rows)
    elif batch == 2:
        rows = [
            {"contact_id": "20", "name": "Barbara Liskov", "email": None, "lifetime_value": "700"},
            {"contact_id": "21", "name": "Ken Thompson", "email": "ken@example.com", "lifetime_value": None},
        ]
        types = {"contact_id": "int", "name": "string", "email": "string", "lifetime_value": "int"}
        insert_dicts(spark, f"{LANDING}.splitter_contacts", types, rows)
        data["contacts"] += rows
        directory = [{"contact_id": "20", "email": "liskov@mit.edu"}]
        insert_dicts(spark, f"{LANDING}.splitter_directory", {"contact_id": "int", "email": "string"}, directory)
        data["directory"] += directory


def insert_dicts(spark, table: str, types: dict[str, str], rows: list[dict]) -> None:
    values = ", ".join("(" + ", ".join(sql_literal(r[c]) for c in types) + ")" for r in rows)
    select = ", ".join(f"cast(col{i} as {t})" for i, t in enumerate(types.values(), start=1))
    spark.execute(f"insert into {table} select {select} from values {values}")


def land_multi_join(spark, batch: int, data: dict) -> None:
    inputs = test_multi_join.generated_inputs(seed=batch + 6)
    for name, rows in inputs.items():
        if batch == 1:
            spark.execute(f"drop table if exists {LANDING}.mj_{name}")
            spark.execute(f"create table {LANDING}.mj_{name} (k1 int, k2 string, v string) using parquet")
        values = ", ".join(
            "({}, {}, '{}')".format("null" if k1 is None else k1, "null" if k2 is None else f"'{k2}'", f"{v}_{batch}")
            for k1, k2, v in rows
        )
        spark.execute(f"insert into {LANDING}.mj_{name} values {values}")
        data.setdefault(name, []).extend((k1, k2, f"{v}_{batch}") for k1, k2, v in rows)


LANDERS = [land_compaction, land_fk, land_collect_join, land_splitter, land_multi_join]


# ---- reading back and the references --------------------------------------------------------------


def compaction_outcome(spark, file_format: str, data: dict) -> tuple:
    columns, actual = test_compaction.table_rows(spark, f"compaction_deletes_incremental_{file_format}", SCHEMA)
    inputs = [data["deletes_snapshot"], data["deletes_delta"]]
    union = [c for rows in inputs for row in rows for c in row]
    wanted = list(dict.fromkeys(union))
    expected = compact_reference(*inputs[:1], [inputs[1]], ["key"], columns, updated_at="ts", deleted="is_deleted")
    return (columns, sorted_rows(actual, columns)), (wanted, sorted_rows(expected, columns))


def fk_outcome(spark, file_format: str, data: dict) -> tuple:
    actual = test_fk_join.read_rows(spark, f"{SCHEMA}.fk_orders_customers_{file_format}", test_fk_join.RESULT_COLUMNS)
    return actual, test_fk_join.fk_join_reference(data["seen_orders"], data["seen_customers"], "inner")


def collect_join_outcome(spark, file_format: str, data: dict) -> tuple:
    table = f"{SCHEMA}.collect_join_puid_attributes_incremental_{file_format}"
    spark.execute(f"refresh table {table}")
    actual = unique_mapping(spark.query(f"select puid, attribute_ids from {table}"))
    reference = test_collect_join.reference(data["collect_join_attributes"], data["collect_join_mappings"])
    return actual, {group: ",".join(values) for group, values in reference.items()}


def splitter_outcome(spark, file_format: str, data: dict) -> tuple:
    filled = spark.rows(f"{SCHEMA}.splitter_contacts_filled_{file_format}", order_by="contact_id")
    missing = [r[0] for r in spark.rows(f"{SCHEMA}.splitter_contacts_missing_email_{file_format}", ["contact_id"])]
    has = [r[0] for r in spark.rows(f"{SCHEMA}.splitter_contacts_has_email_{file_format}", ["contact_id"])]
    # The router's partitions (SHOW PARTITIONS does not take a Delta table).
    ports = spark.query(f"select distinct joinery_port from {SCHEMA}.splitter_contacts_routed_{file_format}")
    expected_missing = test_splitter.missing_email_ids(data["contacts"])
    every = sorted(int(r["contact_id"]) for r in data["contacts"])
    actual = (filled, sorted(missing), sorted(has), sorted(p[0] for p in ports))
    expected = (
        test_splitter.filled_contacts(data["contacts"], data["directory"]),
        expected_missing,
        sorted(set(every) - set(expected_missing)),
        ["has_email", "missing_email"],
    )
    return actual, expected


def multi_join_outcome(spark, file_format: str, data: dict) -> tuple:
    rows = spark.query(f"select * from {SCHEMA}.multi_join_{file_format}")
    _, _, required, null_keys = test_multi_join.PROBES[MULTI_JOIN_PROBE]
    inputs = {name: data[name] for name in test_multi_join.INPUT_NAMES}
    return Counter(tuple(row) for row in rows), test_multi_join.reference_join(inputs, required, null_keys)


OUTCOMES = {
    "compaction": compaction_outcome,
    "fk_join": fk_outcome,
    "collect_join": collect_join_outcome,
    "splitter": splitter_outcome,
    "multi_join": multi_join_outcome,
}


@pytest.fixture(scope="module")
def scenario(cluster, dbt, spark):
    """Two batches; after each, one dbt run of every derived model on both formats, then each
    capability's tables read back next to its reference."""
    spark.execute(f"create schema if not exists {LANDING}")
    spark.execute(f"create schema if not exists {SCHEMA}")
    rng = random.Random(SEED)
    changes = test_crash_safety.batches(rng, BATCHES + TRIALS)
    spark.execute(f"drop table if exists {LANDING}.fault_changes")
    spark.execute(
        f"create table {LANDING}.fault_changes (batch int, part int, id int, value int, deleted boolean) using parquet"
    )
    values = ", ".join(
        f"({r['batch']}, {r['part']}, {r['id']}, {r['value']}, {str(r['deleted']).lower()})" for r in changes
    )
    spark.execute(f"insert into {LANDING}.fault_changes values {values}")

    data: dict = defaultdict(dict)
    runs = []
    for batch in range(1, BATCHES + 1):
        for capability, lander in zip(OUTCOMES, LANDERS, strict=True):
            lander(spark, batch, data[capability])
        args = ("run", "--full-refresh") if batch == 1 else ("run",)
        result = dbt.invoke(*args, env={"JOINERY_FAULT_THROUGH": str(batch)}, expect_success=None)
        outcomes = {
            (capability, file_format): outcome_or_error(read, spark, file_format, data[capability])
            for capability, read in OUTCOMES.items()
            for file_format in FORMATS
        }
        runs.append({"batch": batch, "result": result, "outcomes": outcomes})
    return {"runs": runs, "changes": changes, "rng": rng}


def outcome_or_error(read, spark, file_format, data):
    try:
        return read(spark, file_format, data)
    except Exception as error:  # noqa: BLE001 - a table that cannot be read fails its own test below
        return ("error", repr(error)[:2000])


@pytest.mark.parametrize("file_format", FORMATS)
@pytest.mark.parametrize("capability", list(OUTCOMES))
def test_each_batch_matches_the_local_reference(scenario, capability, file_format):
    for run in scenario["runs"]:
        failed = {
            name: node["message"]
            for name, node in run["result"].nodes.items()
            if node["status"] != "success" and name.endswith(f"_{file_format}")
        }
        assert not failed, f"batch {run['batch']}: models failed on the cluster: {failed}"
        actual, expected = run["outcomes"][(capability, file_format)]
        assert actual == expected, f"{capability} on {file_format} after batch {run['batch']}"


def test_the_work_ran_on_the_executors(scenario, cluster):
    executors = cluster.all_executors()
    assert len(executors) >= 2, executors
    # Both Workers' executors ran tasks of the scenario; the driver ran none (it only plans).
    by_host = defaultdict(int)
    for executor in executors:
        by_host[executor["id"]] += executor["totalTasks"]
    assert sum(count > 0 for count in by_host.values()) >= 2, by_host
    app = cluster.application_id()
    found = get_json(f"http://{LOOPBACK}:{cluster.ports.app_ui}/api/v1/applications/{app}/allexecutors")
    driver = next(executor for executor in found if executor["id"] == "driver")
    assert driver["totalTasks"] == 0, driver
    assert executor_tasks(executors) > 100, executors


# ---- fault: a Worker and its executor killed mid-run --------------------------------------------------


def fault_rows(spark, file_format: str) -> Counter[tuple]:
    return read_rows(spark, f"{SCHEMA}.fault_{file_format}", ["part", "id", "value", "batch"])


def reference_rows(changes, through: int) -> Counter[tuple]:
    return Counter(row for rows in test_crash_safety.reference(changes, through).values() for row in rows)


def wait_for_statement(log_path, process, number: int, timeout: float = 600.0) -> None:
    """Wait until the dbt run has sent its `number`-th statement of the fault models (dbt logs each
    as it sends it, so the kill lands while that statement runs), or has ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if log_path.exists() and log_path.read_text(errors="replace").count(FAULT_STATEMENT) >= number:
            return
        time.sleep(0.05)


def worker_executor(cluster, number: int) -> dict | None:
    """The application's live executor on Worker `number`, with its activeTasks and totalTasks."""
    ids = cluster.executor_ids(f"worker_{number}")
    return next((executor for executor in cluster.executors() if executor["id"] in ids), None)


def wait_for_executor(cluster, process, role: str, timeout: float = 600.0) -> None:
    """Wait until Worker 1's executor has been running tasks of the run (`busy`: a slow one, not a
    short one that may end before the kill) or none (`idle`) for STEADY seconds, or the run ended."""
    deadline, since = time.monotonic() + timeout, None
    while time.monotonic() < deadline and process.poll() is None:
        executor = worker_executor(cluster, 1)
        wanted = executor is not None and (executor["activeTasks"] > 0) == (role == "busy")
        since = (since or time.monotonic()) if wanted else None
        if since is not None and time.monotonic() - since >= STEADY:
            return
        time.sleep(0.02)


def statement_sent(log: str) -> tuple[int, str]:
    """How many statements of the fault models dbt's log shows sent, and the first words of the last:
    dbt logs each as `On model...: /* query comment */ <statement>` (and ROLLBACK and Close so too)."""
    pattern = rf"{FAULT_STATEMENT}\w+: /\*.*?\*/(.*?)(?:\x1b|$)"
    sent = re.findall(pattern, log, flags=re.S)
    return log.count(FAULT_STATEMENT), " ".join(sent[-1].split()[:3]).lower() if sent else ""


@pytest.fixture(scope="module")
def fault_trials(scenario, cluster, dbt, spark, tmp_path_factory, request):
    rng, changes = scenario["rng"], scenario["changes"]
    fault_models = [f"fault_{file_format}" for file_format in FORMATS]
    # Idle kills spread over the statements an incremental run of the fault models sends: one in
    # each of their equal slices of them, the slices in random order. A busy kill waits for the
    # run's first slow task from its start.
    statements = [sql for node, sql in scenario["runs"][-1]["result"].statements if FAULT_STATEMENT[3:] in node]
    through = BATCHES
    trials = []
    slices = {"idle": rng.sample(range(ROLES.count("idle")), ROLES.count("idle"))}
    for trial, role in enumerate(ROLES):
        through += 1
        work_dir = tmp_path_factory.mktemp(f"fault_{trial}")
        slow = SLOW_MS if role == "busy" else "0"
        env = {"JOINERY_FAULT_THROUGH": str(through), "JOINERY_FAULT_SLOW_MS": slow}
        process = dbt.start("run", "--select", *fault_models, work_dir=work_dir, env=env)
        number = 1
        if role == "idle":
            number += int(len(statements) * (slices[role].pop() + rng.random()) / ROLES.count(role))
        log_path = work_dir / "logs" / "dbt.log"
        wait_for_statement(log_path, process, number)
        wait_for_executor(cluster, process, role)
        other = worker_executor(cluster, 2)
        killed = cluster.kill_worker(1, executors_first=role == "busy") if process.poll() is None else []
        # The statement the kill landed in: the last one dbt had sent.
        number, last = statement_sent(log_path.read_text(errors="replace"))
        code = process.wait(timeout=900)
        # The tasks the remaining executor ran from the kill to the run's end.
        tasks_after = worker_executor(cluster, 2)["totalTasks"] - other["totalTasks"]
        output = (work_dir / "output.log").read_text(errors="replace")
        after_kill = {file_format: fault_rows(spark, file_format) for file_format in FORMATS}
        cluster.restart_worker(1)
        rerun = None
        if code != 0:
            rerun = dbt.invoke(
                "run", "--select", *fault_models, env={"JOINERY_FAULT_THROUGH": str(through)}, expect_success=None
            )
        trials.append(
            {
                "trial": trial + 1,
                "role": role,
                "through": through,
                "statement": number,
                "statement_kind": last,
                "killed": killed,
                "exit": code,
                "tasks_after_kill": tasks_after,
                "output": output,
                "after_kill": after_kill,
                "rerun": rerun,
                "converged": {file_format: fault_rows(spark, file_format) for file_format in FORMATS},
            }
        )
    figures = trial_figures(trials, statements, changes)
    print("cluster fault trials: " + json.dumps(figures))
    # The figures of docs/guarantees.md: `pytest --cache-show 'joinery/*'` prints them after a run.
    request.config.cache.set("joinery/cluster_fault_trials", figures)
    return {"trials": trials, "changes": changes}


def trial_figures(trials, statements, changes):
    """Per trial: the statement the kill landed in, the run's exit and which version each table held."""
    figures = []
    for t in trials:
        old, new = reference_rows(changes, t["through"] - 1), reference_rows(changes, t["through"])
        held = {f: "new" if rows == new else "old" if rows == old else "neither" for f, rows in t["after_kill"].items()}
        figures.append(
            {
                "trial": t["trial"],
                "role": t["role"],
                "statement": f"{t['statement']} of {len(statements)}",
                "kind": t["statement_kind"],
                "processes_killed": len(t["killed"]),
                "exit": t["exit"],
                "tasks_after_kill": t["tasks_after_kill"],
                "after_kill": held,
                "rerun": None if t["rerun"] is None else t["rerun"].success,
                "converged": all(rows == new for rows in t["converged"].values()),
            }
        )
    return figures


def test_a_worker_was_killed_in_every_trial(fault_trials):
    for trial in fault_trials["trials"]:
        # The Worker and at least one executor JVM it had launched, each seen exited (kill_worker).
        assert len(trial["killed"]) >= 2, trial["trial"]


def test_the_trials_include_both_outcomes(fault_trials):
    trials = fault_trials["trials"]
    # A run that finished after the kill, its later tasks run by the remaining executor.
    assert any(t["exit"] == 0 and t["tasks_after_kill"] > 0 for t in trials), [
        (t["trial"], t["exit"], t["tasks_after_kill"]) for t in trials
    ]
    # A run that the kill failed, re-run successfully.
    assert any(t["exit"] != 0 and t["rerun"] is not None and t["rerun"].success for t in trials), [
        (t["trial"], t["exit"]) for t in trials
    ]


@pytest.mark.parametrize("file_format", FORMATS)
def test_a_killed_worker_leaves_the_old_or_the_new_version(fault_trials, file_format):
    changes = fault_trials["changes"]
    for trial in fault_trials["trials"]:
        old, new = reference_rows(changes, trial["through"] - 1), reference_rows(changes, trial["through"])
        assert trial["after_kill"][file_format] in (old, new), f"trial {trial['trial']}: neither version"
        if trial["exit"] == 0:
            assert trial["after_kill"][file_format] == new, f"trial {trial['trial']} finished with wrong rows"
        assert trial["converged"][file_format] == new, f"trial {trial['trial']}: the next run did not converge"


def test_a_failed_run_says_why(fault_trials):
    failed = [trial for trial in fault_trials["trials"] if trial["exit"] != 0]
    assert failed, "no trial's run failed"
    for trial in failed:
        # dbt names the failed model and Spark's reason, not a hang or a bare traceback.
        assert re.search(r"(Database Error|Runtime Error) in model fault_", trial["output"]), trial["output"][-3000:]
        assert trial["rerun"].success, trial["rerun"].messages
