"""The one SparkSession a benchmark run uses, and the plan facts read back from Spark after each step.

The session is created here, before dbt runs, with the configuration of the `local` target in
profiles/profiles.yml (ANSI on, warehouse and Derby metastore under one folder). dbt-spark's session
method calls `SparkSession.builder.getOrCreate()`, so dbt then reuses this session: joinery (through
dbt) and the hand-written baselines (through `spark.sql`) run on the same Spark in the same process.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from harness import REPO_ROOT
from harness.java import driver_java_options
from harness.table_formats import table_format_conf

# Shuffle exchanges as Spark names them in a physical plan: `Exchange hashpartitioning(...)`,
# `Exchange SinglePartition`, `Exchange rangepartitioning(...)`; broadcasts are `BroadcastExchange`.
SHUFFLE_EXCHANGE = re.compile(r"^\W*Exchange\b", re.MULTILINE)
REUSED_EXCHANGE = re.compile(r"^\W*ReusedExchange\b", re.MULTILINE)
BROADCAST_EXCHANGE = re.compile(r"^\W*BroadcastExchange\b", re.MULTILINE)


def local_target_parameter(name: str, default: str) -> str:
    """A literal server_side_parameter of the `local` target: dbt-spark re-applies those before every
    statement, so the benchmark's own statements must use the same value to compare like with like."""
    import yaml

    profiles = yaml.safe_load((REPO_ROOT / "profiles" / "profiles.yml").read_text())
    parameters = profiles["joinery"]["outputs"]["local"].get("server_side_parameters", {})
    return str(parameters.get(name, default))


def local_target_conf(spark_dir: Path, driver_memory: str) -> dict[str, str]:
    """The `local` target's server_side_parameters (profiles/profiles.yml), ANSI mode on as joinery runs it."""
    return {
        "spark.sql.warehouse.dir": f"{spark_dir}/warehouse",
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={spark_dir}/metastore_db;create=true",
        "spark.driver.extraJavaOptions": driver_java_options(spark_dir),
        "spark.driver.memory": driver_memory,
        "spark.sql.shuffle.partitions": local_target_parameter("spark.sql.shuffle.partitions", "4"),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.sql.ansi.enabled": "true",
        **table_format_conf(spark_dir),
    }


def start_session(spark_dir: Path, driver_memory: str, master: str | None = None):
    """Start (or, under spark-submit, join) the SparkSession; `master` None keeps spark-submit's or `local[*]`."""
    from pyspark.sql import SparkSession

    spark_dir.mkdir(parents=True, exist_ok=True)
    os.environ["JOINERY_SPARK_DIR"] = str(spark_dir)
    os.environ["JOINERY_DRIVER_MEMORY"] = driver_memory
    builder = SparkSession.builder.appName("joinery-benchmarks").enableHiveSupport()
    if master:
        builder = builder.master(master)
    for key, value in local_target_conf(spark_dir, driver_memory).items():
        builder = builder.config(key, value)
    with jvm_stdout_to_stderr():
        return builder.getOrCreate()


@contextlib.contextmanager
def jvm_stdout_to_stderr():
    """File descriptor 1 points at stderr while the JVM starts, so that the JVM, a child process that
    keeps the descriptors it was started with, writes its own stdout (Delta's VACUUM prints there)
    to stderr: this process's stdout carries only the JSON lines."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


@dataclass
class PlanFacts:
    """What Spark executed for one timed step: its SQL executions' final (adaptive) physical plans."""

    executions: int = 0
    shuffle_exchanges: int = 0
    reused_exchanges: int = 0
    broadcast_exchanges: int = 0
    files_written: int = 0
    partitions_written: int = 0
    rows_written: int = 0
    plans: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, int]:
        return {
            "executions": self.executions,
            "shuffle_exchanges": self.shuffle_exchanges,
            "reused_exchanges": self.reused_exchanges,
            "broadcast_exchanges": self.broadcast_exchanges,
            "files_written": self.files_written,
            "partitions_written": self.partitions_written,
            "rows_written": self.rows_written,
        }


class PlanRecorder:
    """Reads Spark's SQL status store (kept without the UI) for the executions of a step.

    Each execution's plan description is its final physical plan: with adaptive execution the status
    listener replaces it with the re-optimized plan, so exchanges AQE removed are not counted.
    """

    def __init__(self, spark):
        self.spark = spark
        self._store = spark._jsparkSession.sharedState().statusStore()

    def _drain(self) -> None:
        # Execution-end events reach the status store asynchronously.
        self.spark._jsc.sc().listenerBus().waitUntilEmpty()

    def mark(self) -> int:
        """The newest execution id so far. Ids, not list positions: the store evicts old executions
        (spark.sql.ui.retainedExecutions), which shifts positions in a long `--all` run."""
        self._drain()
        executions = self._store.executionsList()
        return max((int(executions.apply(i).executionId()) for i in range(executions.size())), default=-1)

    def facts_since(self, mark: int) -> PlanFacts:
        self._drain()
        executions = self._store.executionsList()
        facts = PlanFacts()
        for index in range(executions.size()):
            execution = executions.apply(index)
            if int(execution.executionId()) <= mark:
                continue
            plan = execution.physicalPlanDescription() or ""
            facts.executions += 1
            facts.plans.append(plan.split("\n\n")[0])
            physical = _physical_tree(plan)
            facts.shuffle_exchanges += len(SHUFFLE_EXCHANGE.findall(physical))
            facts.reused_exchanges += len(REUSED_EXCHANGE.findall(physical))
            facts.broadcast_exchanges += len(BROADCAST_EXCHANGE.findall(physical))
            metrics = self._write_metrics(execution.executionId())
            facts.files_written += metrics.get("number of written files", 0)
            facts.partitions_written += metrics.get("number of dynamic part", 0)
            facts.rows_written += metrics.get("number of output rows", 0)
        return facts

    def _write_metrics(self, execution_id: int) -> dict[str, int]:
        """The write node's metrics (files, dynamic partitions, rows) of one execution, if it wrote."""
        values = self._store.executionMetrics(execution_id)
        graph = self._store.planGraph(execution_id)
        nodes = graph.allNodes()
        found: dict[str, int] = {}
        for index in range(nodes.size()):
            node = nodes.apply(index)
            name = node.name()
            if "Insert" not in name and "WriteFiles" not in name and "Create" not in name:
                continue
            node_metrics = node.metrics()
            for metric_index in range(node_metrics.size()):
                metric = node_metrics.apply(metric_index)
                value = values.get(metric.accumulatorId())
                if value.isDefined():
                    number = re.sub(r"[^0-9]", "", str(value.get()).split("\n")[0].split(" (")[0])
                    if number:
                        found[metric.name()] = found.get(metric.name(), 0) + int(number)
        return found


def _physical_tree(plan: str) -> str:
    """The operator tree that ran: of an adaptive plan its final plan, never the initial one."""
    tree = plan.split("\n\n")[0]
    return tree.split("== Initial Plan ==")[0]
