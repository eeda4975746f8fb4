"""fk_join over two Delta tables' change data feeds (change_feed=true), with no state models.

Upstream SQL (INSERT, UPDATE, DELETE, MERGE, INSERT OVERWRITE, foreign keys moved to another
customer, to NULL and to a missing customer, deletes followed by re-inserts) changes the two source
tables between runs of the project in python_tests/fk_join_feed/. After every run the inner and left
results, read back from Spark as multisets, equal a plain-Python join of the tables as the test
changed them, and the changes model logs exactly the keys whose result changed. Each result's last
commit records the source versions it read. A source replaced by `create or replace`, and one
without a change feed, stop the run with a message that says what to do.

dbt killed (SIGKILL) during incremental runs leaves each result before or after the run, and the
next run converges. The kills fall at random moments timed from the first statement dbt sends (one
in each slice of the window a finished run took), plus a watched kill for each phase those missed;
each trial's phase is read per result from its Delta version (committed or not) and checked against
dbt's log (a commit only after its MERGE was sent), and both phases must occur for both results.
The trials' figures go to the pytest cache (`pytest --cache-show 'joinery/*'`).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from harness.dbt import REPO_ROOT, DbtProject
from harness.dbt_log import LogWatch
from harness.sql import read_rows, sql_literal
from python_tests.fk_join_reference import result_changes

PROJECT = Path(__file__).parent / "fk_join_feed"
MACRO_FOLDERS = ["adapters", "common", "joinery_upsert", "fk_join", "change_feed"]
SOURCES = "test_fk_join_feed_sources"
SCHEMA = "test_fk_join_feed"
RESULT_COLUMNS = ["order_id", "customer_id", "amount", "customer_name"]


class Tables:
    """The two source tables, changed through SQL, and the same rows kept in Python."""

    def __init__(self, spark, schema: str = SOURCES):
        self.spark = spark
        self.schema = schema
        self.orders: dict[int, tuple] = {}
        self.customers: dict[int, str] = {}
        # Customers deleted since the state's first build and not inserted again: its tombstones.
        self.removed_customers: set[int] = set()

    def create(self, feed: bool = True) -> None:
        self.spark.execute(f"create schema if not exists {self.schema}")
        properties = "tblproperties (delta.enableChangeDataFeed = true)" if feed else ""
        for name, columns in [
            ("orders", "order_id int, customer_id int, amount int"),
            ("customers", "customer_id int, customer_name string"),
        ]:
            self.spark.execute(f"create or replace table {self.schema}.{name} ({columns}) using delta {properties}")
        self.orders.clear()
        self.customers.clear()
        self.removed_customers.clear()

    def sql(self, statement: str) -> None:
        self.spark.execute(statement.format(s=self.schema))

    def insert_orders(self, rows: list[tuple]) -> None:
        self.sql("insert into {s}.orders values " + ", ".join(values(row) for row in rows))
        self.orders.update({row[0]: row[1:] for row in rows})

    def insert_customers(self, rows: list[tuple]) -> None:
        self.sql("insert into {s}.customers values " + ", ".join(values(row) for row in rows))
        self.customers.update(dict(rows))
        self.removed_customers -= {row[0] for row in rows}

    def delete_customer(self, customer_id: int) -> None:
        self.sql(f"delete from {{s}}.customers where customer_id = {customer_id}")
        del self.customers[customer_id]
        self.removed_customers.add(customer_id)

    def expected(self, join_type: str) -> Counter:
        rows = Counter()
        for order_id, (customer_id, amount) in self.orders.items():
            name = self.customers.get(customer_id) if customer_id is not None else None
            if join_type == "inner" and (customer_id is None or customer_id not in self.customers):
                continue
            rows[(order_id, customer_id, amount, name)] += 1
        return rows


def values(row: tuple) -> str:
    return "(" + ", ".join(sql_literal(value) for value in row) + ")"


def copy_project(dbt, tmp_path_factory, schema: str) -> DbtProject:
    """python_tests/fk_join_feed/ with joinery's macro folders beside it, on the pytest Thrift server."""
    root = tmp_path_factory.mktemp(schema) / "project"
    shutil.copytree(PROJECT, root)
    for folder in MACRO_FOLDERS:
        shutil.copytree(REPO_ROOT / "macros" / folder, root / "macros" / folder)
    return DbtProject(root, target="thrift", schema=schema, target_path=root / "target", env=dbt.env)


@pytest.fixture(scope="module")
def project(dbt, tmp_path_factory):
    return copy_project(dbt, tmp_path_factory, SCHEMA)


def build(project, *args, expect_success=True):
    return project.invoke("build", *args, schema=SCHEMA, vars={"feed_schema": SOURCES}, expect_success=expect_success)


def result(spark, model: str) -> Counter:
    spark.execute(f"refresh table {SCHEMA}.{model}")
    return read_rows(spark, f"{SCHEMA}.{model}", RESULT_COLUMNS)


def logged_changes(spark, run: int) -> Counter:
    spark.execute(f"refresh table {SCHEMA}.feed_orders_customers_changes")
    return Counter(
        spark.query(
            f"select {', '.join(RESULT_COLUMNS)}, _joinery_tombstone from {SCHEMA}.feed_orders_customers_changes "
            f"where _joinery_run = {run}"
        )
    )


def current_version(spark, table: str) -> int:
    return int(spark.query(f"describe history {table} limit 1")[0][0])


def newest_note(spark, model: str) -> str:
    rows = spark.query_dicts(f"describe history {SCHEMA}.{model} limit 1")
    return rows[0]["userMetadata"] or str(rows[0]["operationParameters"])


def assert_results(spark, tables: Tables, run: int, before: Counter | None) -> Counter:
    """Both joins equal the reference, the changes log what changed, and each result's newest commit
    names the source versions it read."""
    inner = result(spark, "feed_orders_customers")
    assert inner == tables.expected("inner")
    assert result(spark, "feed_orders_customers_left") == tables.expected("left")
    if before is not None:
        assert logged_changes(spark, run) == result_changes(before, inner)
    spark.execute(f"refresh table {SCHEMA}.feed_customers_state")
    state = Counter(
        spark.query(f"select customer_id, customer_name, _joinery_tombstone from {SCHEMA}.feed_customers_state")
    )
    live = Counter((key, name, False) for key, name in tables.customers.items())
    assert +Counter({row: n for row, n in state.items() if not row[2]}) == live
    assert Counter(row[0] for row in state.elements() if row[2]) == Counter(tables.removed_customers)
    versions = {table: current_version(spark, f"{SOURCES}.{table}") for table in ["orders", "customers"]}
    for model, read in [
        ("feed_orders_customers", ["orders", "customers"]),
        ("feed_orders_customers_left", ["orders", "customers"]),
        ("feed_customers_state", ["customers"]),
    ]:
        note = newest_note(spark, model)
        recorded = sorted(int(value) for value in re.findall(r"feed_[0-9a-f]{12}=([0-9]+)", note))
        assert recorded == sorted(versions[table] for table in read), note
    return inner


def assert_runs_executed_their_compiled_sql(built) -> None:
    """Each change-feed model (fk_join and changelog_state, change_feed=true) executed the SQL its
    compile wrote in the same invocation (target/compiled/): the pinned versions, the run's plan."""
    for model in ["feed_orders_customers", "feed_orders_customers_left", "feed_customers_state"]:
        ran = built.statement_running_compiled_sql(model)
        assert "version as of" in ran or "table_changes(" in ran, (model, ran)


def test_fk_join_over_change_feeds_follows_upstream_sql(project, spark):
    tables = Tables(spark)
    tables.create()
    tables.insert_customers([(1, "ann"), (2, "bob"), (3, "cy"), (4, "dee")])
    tables.insert_orders([(10, 1, 5), (11, 2, 6), (12, 3, 7), (13, None, 8), (14, 9, 9), (15, 4, 1)])
    assert_runs_executed_their_compiled_sql(build(project, "--full-refresh"))
    inner = assert_results(spark, tables, 1, None)

    # Updates of both sides, a delete, a MERGE, and foreign keys moved: to another customer, to NULL,
    # to a missing customer and back from one.
    tables.sql("update {s}.customers set customer_name = 'bobby' where customer_id = 2")
    tables.customers[2] = "bobby"
    tables.sql("update {s}.orders set customer_id = 3 where order_id = 10")
    tables.orders[10] = (3, 5)
    tables.sql("update {s}.orders set customer_id = null where order_id = 12")
    tables.orders[12] = (None, 7)
    tables.sql("update {s}.orders set customer_id = 77 where order_id = 15")
    tables.orders[15] = (77, 1)
    tables.sql("update {s}.orders set customer_id = 1 where order_id = 14")
    tables.orders[14] = (1, 9)
    tables.sql("delete from {s}.orders where order_id = 11")
    del tables.orders[11]
    tables.sql(
        "merge into {s}.customers as t using (select 4 as customer_id, 'dora' as customer_name union all "
        "select 5, 'eve') as s on t.customer_id = s.customer_id "
        "when matched then update set * when not matched then insert *"
    )
    tables.customers.update({4: "dora", 5: "eve"})
    tables.insert_orders([(16, 5, 2), (17, 2, 3)])
    assert_runs_executed_their_compiled_sql(build(project))
    inner = assert_results(spark, tables, 2, inner)

    # A customer deleted and inserted again, an order deleted and inserted again with another
    # amount, a customer deleted for good, and an overwrite of the customers (deletes and inserts in
    # one commit) that changes one name.
    tables.delete_customer(1)
    tables.insert_customers([(1, "ann2")])
    tables.sql("delete from {s}.orders where order_id = 16")
    tables.insert_orders([(16, 5, 20)])
    tables.delete_customer(3)
    tables.sql(
        "insert overwrite {s}.customers select customer_id, "
        "if(customer_id = 5, 'eve2', customer_name) from {s}.customers"
    )
    tables.customers[5] = "eve2"
    assert_runs_executed_their_compiled_sql(build(project))
    inner = assert_results(spark, tables, 3, inner)

    # Nothing changed upstream: no result commit, and the changes log nothing.
    versions = {model: current_version(spark, f"{SCHEMA}.{model}") for model in ["feed_orders_customers"]}
    build(project)
    assert current_version(spark, f"{SCHEMA}.feed_orders_customers") == versions["feed_orders_customers"]
    assert logged_changes(spark, 4) == Counter()
    assert_results(spark, tables, 4, None)

    # The result is the same as a rebuild from the tables.
    build(project, "--full-refresh", "--select", "feed_orders_customers feed_orders_customers_left")
    assert_results(spark, tables, 5, None)


def test_a_replaced_source_stops_the_run_and_full_refresh_recovers(project, spark):
    tables = Tables(spark)
    tables.create()
    tables.insert_customers([(1, "ann")])
    tables.insert_orders([(10, 1, 5)])
    build(project, "--full-refresh")
    tables.sql(
        "create or replace table {s}.customers (customer_id int, customer_name string) using delta "
        "tblproperties (delta.enableChangeDataFeed = true)"
    )
    tables.customers.clear()
    tables.insert_customers([(1, "zed")])
    failed = build(project, "--select", "feed_orders_customers", expect_success=False)
    assert "is not in its change feed" in failed.messages and "--full-refresh" in failed.messages, failed.messages
    # Nothing was written by the failed run.
    assert result(spark, "feed_orders_customers") == Counter({(10, 1, 5, "ann"): 1})
    build(project, "--full-refresh", "--select", "feed_orders_customers")
    assert result(spark, "feed_orders_customers") == tables.expected("inner")


def test_a_source_without_change_feed_is_an_error_naming_the_property(project, spark):
    tables = Tables(spark)
    tables.create(feed=False)
    tables.insert_customers([(1, "ann")])
    failed = build(project, "--full-refresh", "--select", "feed_orders_customers", expect_success=False)
    assert "delta.enableChangeDataFeed" in failed.messages and "has no change data feed" in failed.messages, (
        failed.messages
    )


def test_the_readme_example(project, spark):
    tables = Tables(spark)
    tables.create()
    tables.insert_customers([(1, "ann"), (2, "bob"), (3, "cy")])
    tables.insert_orders([(10, 1, 5), (11, 2, 6), (12, 3, 7), (13, None, 8)])
    models = "feed_orders_customers feed_orders_customers_left"
    build(project, "--full-refresh", "--select", models)
    tables.sql("update {s}.customers set customer_name = 'bobby' where customer_id = 2")
    tables.sql("update {s}.orders set customer_id = 3 where order_id = 10")
    tables.sql("delete from {s}.orders where order_id = 12")
    tables.sql("insert into {s}.orders values (14, 4, 9)")
    run = build(project, "--select", models)
    assert result(spark, "feed_orders_customers") == Counter({(10, 3, 5, "cy"): 1, (11, 2, 6, "bobby"): 1})
    assert result(spark, "feed_orders_customers_left") == Counter(
        {(10, 3, 5, "cy"): 1, (11, 2, 6, "bobby"): 1, (13, None, 8, None): 1, (14, 4, 9, None): 1}
    )
    messages = {node_id.split(".")[-1]: node["message"] for node_id, node in run.nodes.items()}
    assert messages["feed_orders_customers"] == "MERGE 0 inserted, 2 updated, 1 deleted", messages


# The kill trials: KILL_TRIALS at random moments, one in each slice of the window a finished run took
# from its first statement, then a watched kill for each phase (PHASES) the random ones missed.
KILL_TRIALS = 4
KILLED_MODELS = ("feed_orders_customers", "feed_orders_customers_left")
# Where a kill left a result table, from its Delta version after the kill: its run's MERGE committed
# (a new version), or not.
NOT_COMMITTED, COMMITTED = "not committed", "committed"
PHASES = (NOT_COMMITTED, COMMITTED)
# What dbt's log showed of a model's statements when it was killed: none yet, some but not its MERGE,
# its MERGE (the one statement that commits a change-feed result on delta).
SENT_NOTHING, SENT_STATEMENTS, SENT_MERGE = "nothing", "statements", "its MERGE"


class KilledRuns:
    """`dbt run` of the two results in a process of its own, with its own log file, killed (SIGKILL of
    its process group) at a moment the test picks: that many seconds after dbt sent its first
    statement, or as soon as the log shows something."""

    def __init__(self, project: DbtProject, dbt, home: Path):
        self.log_path = home / "logs" / "dbt.log"
        self.command = [sys.executable, "-m", "harness.dbt_cli", "run", "--select", *KILLED_MODELS]
        self.command += project.command_line((), project.target_path, {"feed_schema": SOURCES})
        self.env = {**os.environ, **dbt.env, "JOINERY_SCHEMA": SCHEMA, "DBT_LOG_PATH": str(home / "logs")}

    def run(self, kill_after: float | None = None, kill_when=None) -> dict:
        """Run dbt; returns its exit code, the seconds from its first statement to its end, and per
        model what the log showed sent when it ended (or was killed)."""
        log = LogWatch(self.log_path)
        process = subprocess.Popen(
            self.command,
            env=self.env,
            cwd=REPO_ROOT,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        first = None
        while process.poll() is None:
            if first is None and log.statements():
                first = time.monotonic()
            if (kill_after is not None and first is not None and time.monotonic() - first >= kill_after) or (
                kill_when is not None and kill_when(log)
            ):
                os.killpg(process.pid, signal.SIGKILL)
                break
            time.sleep(0.005)
        code = process.wait(timeout=600)
        ended = time.monotonic()
        sent = sent_by_model(log.statements())
        assert first is not None or log.statements(), f"dbt exited {code} without sending a statement"
        return {"exit": code, "seconds": ended - (first or ended), "sent": sent}


def sent_by_model(statements: list[tuple[str, str]]) -> dict[str, str]:
    """Per killed model, what of its statements dbt had logged (SENT_*)."""
    sent = {}
    for model in KILLED_MODELS:
        own = [sql for node, sql in statements if node.split(".")[-1] == model]
        merged = any(sql.lower().startswith("merge") for sql in own)
        sent[model] = SENT_MERGE if merged else SENT_STATEMENTS if own else SENT_NOTHING
    return sent


# Watched moments: dbt's first statement (the relation listing, long before either MERGE), and both
# results reported done by dbt (their MERGEs returned).
WATCHED = {
    NOT_COMMITTED: lambda log: bool(log.statements()),
    COMMITTED: lambda log: log.says(
        *(f"OK created sql joinery_upsert model {SCHEMA}.{model} " for model in KILLED_MODELS)
    ),
}


def test_a_run_killed_at_random_moments_converges(project, spark, dbt, tmp_path, request):
    """SIGKILL of dbt at a random moment of each of four incremental runs, timed from the first
    statement dbt sends, and at watched moments for a phase those missed: what a reader sees right
    after is the result before the run or after it, the kills left both results committed and not
    committed, and the next run converges."""
    tables = Tables(spark)
    tables.create()
    tables.insert_customers([(1, "ann"), (2, "bob"), (3, "cy")])
    tables.insert_orders([(10 + i, 1 + i % 3, i) for i in range(12)])
    build(project, "--full-refresh", "--select", *KILLED_MODELS)
    runs = KilledRuns(project, dbt, tmp_path)
    changes = iter(range(12))

    def change() -> None:
        # A customer renamed and an order deleted: each run has rows to change in both results.
        number = next(changes)
        tables.sql(f"update {{s}}.customers set customer_name = 'name{number}' where customer_id = {1 + number % 3}")
        tables.customers[1 + number % 3] = f"name{number}"
        tables.sql(f"delete from {{s}}.orders where order_id = {10 + number}")
        del tables.orders[10 + number]

    # The window: a finished run of the same kind, from its first statement to its end.
    change()
    measured = runs.run()
    assert measured["exit"] == 0, "the run measured for the kill window failed"
    window = measured["seconds"]
    trials = []

    def trial(moment: str, **kill) -> dict:
        change()
        before = {model: result(spark, model) for model in KILLED_MODELS}
        versions = {model: current_version(spark, f"{SCHEMA}.{model}") for model in KILLED_MODELS}
        record = {"moment": moment, **runs.run(**kill)}
        # A statement the server had started finishes there: let it, then read.
        time.sleep(5)
        expected = {model: tables.expected("left" if model.endswith("_left") else "inner") for model in KILLED_MODELS}
        record["phases"] = {}
        for model in KILLED_MODELS:
            seen = result(spark, model)
            assert seen in (before[model], expected[model]), (moment, model)
            committed = current_version(spark, f"{SCHEMA}.{model}") > versions[model]
            record["phases"][model] = COMMITTED if committed else NOT_COMMITTED
            # Only a MERGE commits: a commit the log did not show its MERGE for is not this run's.
            assert not committed or record["sent"][model] == SENT_MERGE, (moment, model, record)
        build(project, "--select", *KILLED_MODELS)
        for model in KILLED_MODELS:
            assert result(spark, model) == expected[model], (moment, model)
        trials.append(record)
        return record

    rng = random.Random(20261128)
    slices = rng.sample(range(KILL_TRIALS), KILL_TRIALS)
    for number in range(KILL_TRIALS):
        delay = window * (slices[number] + rng.random()) / KILL_TRIALS
        record = trial(f"random {delay:.1f}s", kill_after=delay)
        if record["exit"] == 0:
            window = record["seconds"]
    for phase in PHASES:
        if any(phase not in landed(trials, model) for model in KILLED_MODELS):
            trial(f"watched: {phase}", kill_when=WATCHED[phase])

    figures = {"window": round(measured["seconds"], 1), "trials": trials}
    # `pytest --cache-show 'joinery/*'` prints them after a run.
    request.config.cache.set("joinery/fk_join_feed_kill_phases", figures)
    random_trials = trials[:KILL_TRIALS]
    killed = [record for record in random_trials if record["exit"] == -signal.SIGKILL]
    # Most random moments, and at least one, fell inside a run rather than after it.
    assert len(killed) >= max(1, KILL_TRIALS // 2), figures
    assert all(record["exit"] in (0, -signal.SIGKILL) for record in random_trials), figures
    assert all(record["exit"] == -signal.SIGKILL for record in trials[KILL_TRIALS:]), figures
    for model in KILLED_MODELS:
        assert landed(trials, model) == set(PHASES), (model, figures)


def landed(trials: list[dict], model: str) -> set[str]:
    """The phases kills left `model` in (trials that finished before their kill do not count)."""
    return {record["phases"][model] for record in trials if record["exit"] == -signal.SIGKILL}


def test_a_vacuum_past_the_recorded_version_stops_the_run(project, spark):
    tables = Tables(spark)
    tables.create()
    tables.insert_customers([(1, "ann")])
    tables.insert_orders([(10, 1, 5)])
    build(project, "--full-refresh", "--select", "feed_orders_customers")
    tables.sql("update {s}.customers set customer_name = 'bo' where customer_id = 1")
    spark.execute("set spark.databricks.delta.retentionDurationCheck.enabled = false")
    try:
        tables.sql("vacuum {s}.customers retain 0 hours")
    finally:
        spark.execute("reset spark.databricks.delta.retentionDurationCheck.enabled")
    failed = build(project, "--select", "feed_orders_customers", expect_success=False)
    assert "VACUUM at version" in failed.messages and "--full-refresh" in failed.messages, failed.messages
    assert result(spark, "feed_orders_customers") == Counter({(10, 1, 5, "ann"): 1})
