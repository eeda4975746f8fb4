"""A Spark standalone cluster on 127.0.0.1 from the pip-installed pyspark: a Master, two Workers
(one core and about 1 GB each, separate JVMs) and a Spark Thrift server submitted to the Master,
so joinery's `cluster` target runs with real executors, not inside one JVM as `local[*]` does.

`python -m harness.cluster start|stop|status` (the Makefile's cluster-start / cluster-stop /
cluster-status), state under `.spark/cluster/`; the cluster tests start one on free ports in a
temporary folder. The Thrift server gets the same settings as every joinery Spark
(`thrift_server.spark_conf`, with `table_format_conf`'s Delta and Iceberg jars on the executors'
class path); the warehouse is one folder every JVM of this machine sees. `start` returns once a
query has run tasks on the executors, and fails with a clear message when a port is taken.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.java import QUICK_JIT, JavaMissing, require_java, spark_home
from harness.table_formats import JarsMissing, require_jars
from harness.thrift_server import (
    LOOPBACK,
    REPO_ROOT,
    ThriftServer,
    ThriftServerError,
    free_port,
    port_is_free,
    process_alive,
    reap,
    terminate_group,
)

DEFAULT_HOME = REPO_ROOT / ".spark" / "cluster"
LOG_CONFIG = REPO_ROOT / "conf" / "spark" / "log4j2.properties"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
WORKERS = 2
WORKER_MEMORY = "1g"
# The Master's and Workers' own heaps: they only schedule and launch executors.
DAEMON_MEMORY = "256m"
# Port defaults of `make cluster-start`, each overridable by its environment variable.
DEFAULT_PORTS = {
    "master": ("JOINERY_CLUSTER_MASTER_PORT", 7077),
    "master_ui": ("JOINERY_CLUSTER_MASTER_UI_PORT", 8080),
    "worker_1": ("JOINERY_CLUSTER_WORKER_1_PORT", 7078),
    "worker_2": ("JOINERY_CLUSTER_WORKER_2_PORT", 7079),
    "worker_1_ui": ("JOINERY_CLUSTER_WORKER_1_UI_PORT", 8081),
    "worker_2_ui": ("JOINERY_CLUSTER_WORKER_2_UI_PORT", 8082),
    # The port the `cluster` dbt target connects to (profiles/profiles.yml).
    "thrift": ("JOINERY_CLUSTER_PORT", 10001),
    # The Thrift server's application UI, whose REST API lists the executors and their tasks.
    "app_ui": ("JOINERY_CLUSTER_APP_UI_PORT", 4041),
}


class ClusterError(RuntimeError):
    """The cluster could not be started, or did not become ready."""


@dataclass
class Ports:
    master: int
    master_ui: int
    worker_1: int
    worker_2: int
    worker_1_ui: int
    worker_2_ui: int
    thrift: int
    app_ui: int

    @classmethod
    def from_environment(cls) -> Ports:
        return cls(**{name: int(os.environ.get(var, default)) for name, (var, default) in DEFAULT_PORTS.items()})

    @classmethod
    def free(cls) -> Ports:
        return cls(**{name: free_port() for name in DEFAULT_PORTS})


def get_json(url: str, timeout: float = 5.0):
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - loopback http only
        return json.loads(response.read())


class LocalCluster:
    """Master, Workers and Thrift server of one cluster home folder; each JVM in its own process group."""

    def __init__(self, home: Path, ports: Ports, java_options: str = "", extra_conf: dict[str, str] | None = None):
        self.home = Path(home).resolve()
        self.ports = ports
        self.java_options = java_options
        self.extra_conf = extra_conf or {}
        self.pids: dict[str, int] = {}
        self.thrift = ThriftServer(
            self.home / "thrift",
            ports.thrift,
            driver_memory="1g",
            java_options=java_options,
            master=self.master_url,
            extra_conf=self.application_conf(),
        )

    @property
    def master_url(self) -> str:
        return f"spark://{LOOPBACK}:{self.ports.master}"

    @property
    def state_path(self) -> Path:
        return self.home / "cluster.json"

    def application_conf(self) -> dict[str, str]:
        """What the Thrift server needs beyond harness/thrift_server.spark_conf on a cluster."""
        return {
            # The warehouse under the cluster's home, not the Thrift server's: one place for every JVM.
            "spark.sql.warehouse.dir": str(self.home / "warehouse"),
            "spark.executor.memory": WORKER_MEMORY,
            "spark.executor.cores": "1",
            "spark.cores.max": str(WORKERS),
            "spark.executor.extraJavaOptions": (
                f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()} -Djava.io.tmpdir={self.home / 'tmp'} "
                f"{self.java_options}"
            ).strip(),
            # The application's UI for its REST API (executors and their task counts), on loopback.
            "spark.ui.enabled": "true",
            "spark.ui.port": str(self.ports.app_ui),
            "spark.port.maxRetries": "0",
            "spark.ui.showConsoleProgress": "false",
            **self.extra_conf,
        }

    def daemon_env(self) -> dict[str, str]:
        env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": LOOPBACK}
        env["SPARK_DAEMON_MEMORY"] = DAEMON_MEMORY
        env["SPARK_DAEMON_JAVA_OPTS"] = (
            f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()} -Djava.io.tmpdir={self.home / 'tmp'} {QUICK_JIT}"
        )
        env["SPARK_LOG_DIR"] = str(self.home / "logs")
        env.pop("PYSPARK_SUBMIT_ARGS", None)
        return env

    def check_ports(self) -> None:
        taken = [(name, port) for name, port in asdict(self.ports).items() if not port_is_free(port)]
        if taken:
            where = ", ".join(f"{name} {LOOPBACK}:{port} (set {DEFAULT_PORTS[name][0]})" for name, port in taken)
            raise ClusterError(
                f"port already in use: {where}; stop what holds it (`make cluster-stop` if it is ours) "
                "or choose another port with that variable"
            )

    def launch(self, name: str, args: list[str]) -> int:
        log = (self.home / "logs" / f"{name}.log").open("w")
        process = subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), *args],
            cwd=self.home,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.daemon_env(),
            start_new_session=True,
        )
        log.close()
        self.pids[name] = process.pid
        self.save_state()
        return process.pid

    def start_master(self) -> None:
        self.launch(
            "master",
            [MASTER_CLASS, "--host", LOOPBACK, "--port", str(self.ports.master),
             "--webui-port", str(self.ports.master_ui)],
        )  # fmt: skip

    def start_worker(self, number: int) -> int:
        name = f"worker_{number}"
        port, ui_port = getattr(self.ports, name), getattr(self.ports, f"{name}_ui")
        for which, value in (("worker", port), ("worker UI", ui_port)):
            if not port_is_free(value):
                raise ClusterError(f"{name}'s {which} port {LOOPBACK}:{value} is already in use")
        work_dir = self.home / name
        work_dir.mkdir(parents=True, exist_ok=True)
        return self.launch(
            name,
            [WORKER_CLASS, "--host", LOOPBACK, "--port", str(port), "--webui-port", str(ui_port),
             "--cores", "1", "--memory", WORKER_MEMORY, "--work-dir", str(work_dir), self.master_url],
        )  # fmt: skip

    def start(self, timeout: float = 300.0) -> None:
        try:
            require_java()
            require_jars()
        except (JavaMissing, JarsMissing) as exc:
            raise ClusterError(str(exc)) from None
        self.check_ports()
        for folder in ("logs", "tmp", "warehouse"):
            (self.home / folder).mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout
        try:
            self.start_master()
            self.wait(lambda: self.master_state() is not None, deadline, "the Master to answer", "master")
            for number in range(1, WORKERS + 1):
                self.start_worker(number)
            self.wait_workers(WORKERS, deadline)
            try:
                self.thrift.start(timeout=max(deadline - time.monotonic(), 1.0))
            except ThriftServerError as exc:
                raise ClusterError(str(exc)) from None
            self.pids["thrift"] = self.thrift.process.pid
            self.save_state()
            self.wait_executors(WORKERS, deadline)
            self.run_probe_query(deadline)
        except BaseException:
            self.stop()
            raise

    def wait(self, ready, deadline: float, what: str, log_name: str) -> None:
        while time.monotonic() < deadline:
            pid = self.pids.get(log_name)
            if pid is not None and not process_alive(pid):
                raise ClusterError(
                    f"{log_name} exited before {what}; last lines of its log:\n{self.log_tail(log_name)}"
                )
            if ready():
                return
            time.sleep(0.5)
        raise ClusterError(f"timed out waiting for {what}; last lines of its log:\n{self.log_tail(log_name)}")

    def alive_workers(self) -> int:
        state = self.master_state() or {}
        return sum(worker["state"] == "ALIVE" for worker in state.get("workers", []))

    def wait_workers(self, count: int, deadline: float) -> None:
        self.wait(lambda: self.alive_workers() >= count, deadline, f"{count} live workers on the Master", "master")

    def wait_executors(self, count: int, deadline: float) -> None:
        self.wait(lambda: len(self.executors()) >= count, deadline, f"{count} executors", "thrift")

    def run_probe_query(self, deadline: float) -> None:
        """A query whose tasks run on the executors; ready once they report tasks done."""
        from harness.sql import SparkSql

        connection = SparkSql(self.ports.thrift)
        try:
            connection.query("select sum(id) from range(0, 1000, 1, 4)")
        finally:
            connection.close()
        self.wait(lambda: executor_tasks(self.executors()) > 0, deadline, "tasks on the executors", "thrift")

    def master_state(self) -> dict | None:
        try:
            return get_json(f"http://{LOOPBACK}:{self.ports.master_ui}/json/")
        except OSError:
            return None

    def application_id(self) -> str | None:
        try:
            applications = get_json(f"http://{LOOPBACK}:{self.ports.app_ui}/api/v1/applications")
        except OSError:
            return None
        return applications[0]["id"] if applications else None

    def executors(self) -> list[dict]:
        """The application's live executors (the driver left out), from its REST API."""
        app = self.application_id()
        if app is None:
            return []
        try:
            found = get_json(f"http://{LOOPBACK}:{self.ports.app_ui}/api/v1/applications/{app}/executors")
        except OSError:
            return []
        return [executor for executor in found if executor["id"] != "driver"]

    def all_executors(self) -> list[dict]:
        """Every executor the application had, the dead ones included."""
        app = self.application_id()
        if app is None:
            return []
        return [
            executor
            for executor in get_json(f"http://{LOOPBACK}:{self.ports.app_ui}/api/v1/applications/{app}/allexecutors")
            if executor["id"] != "driver"
        ]

    def executor_pids(self, worker: str) -> list[int]:
        """The executor JVMs a Worker launched: its child processes."""
        return children(self.pids[worker])

    def executor_ids(self, worker: str) -> list[str]:
        """The application's ids of the executors a Worker runs, from their command lines
        (`--executor-id <id>`): no request to the Worker's UI, whose port must stay free to start it
        again (a closed connection holds it for a while)."""
        ids = []
        for pid in self.executor_pids(worker):
            try:
                args = (Path("/proc") / str(pid) / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            ids += [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--executor-id"]
        return ids

    def kill_worker(
        self, number: int, signal_number: int = 9, timeout: float = 30.0, executors_first: bool = False
    ) -> list[int]:
        """Kill a Worker and its executors with `signal_number` (SIGKILL by default) and wait until
        each of those processes has exited; the pids killed. ClusterError when the Worker was not
        running, had no executor, or a process outlived `timeout`.

        The application learns of the loss from whichever goes first. The Worker: the Master reports
        its executors lost with it ("worker lost"), which Spark does not count as a failure of the
        tasks they ran. With `executors_first`, the executors: killed first, and the Worker once the
        application has marked them dead, so their running tasks fail (the executor's own exit)."""
        name = f"worker_{number}"
        worker, executors = self.pids[name], self.executor_pids(name)
        if not process_running(worker) or not executors:
            raise ClusterError(f"{name} (pid {worker}) is not running with an executor: {executors}")
        killed = []
        if executors_first:
            dead = sum(not executor["isActive"] for executor in self.all_executors())
            killed += self._kill_and_wait(name, executors, signal_number, timeout)
            self.wait(
                lambda: sum(not executor["isActive"] for executor in self.all_executors()) > dead,
                time.monotonic() + timeout, f"the application to mark {name}'s executors dead", "thrift",
            )  # fmt: skip
        # The Worker and the executors it runs now (it may have launched one since).
        return killed + self._kill_and_wait(name, [worker, *self.executor_pids(name)], signal_number, timeout)

    def _kill_and_wait(self, name: str, pids: list[int], signal_number: int, timeout: float) -> list[int]:
        for pid in pids:
            try:
                os.kill(pid, signal_number)
            except ProcessLookupError:
                continue
        deadline = time.monotonic() + timeout
        while (alive := [pid for pid in pids if process_running(pid)]) and time.monotonic() < deadline:
            reap(self.pids[name])
            time.sleep(0.05)
        if alive:
            raise ClusterError(f"{name}: processes {alive} still running {timeout:.0f}s after signal {signal_number}")
        return pids

    def restart_worker(self, number: int, timeout: float = 120.0) -> None:
        """Start a killed Worker again and wait until the application has an executor on it again."""
        name = f"worker_{number}"
        pid = self.pids.get(name)
        if pid is not None:
            terminate_group(pid, grace=10)
        deadline = time.monotonic() + timeout
        # The Master must have dropped the dead Worker: it refuses a second one at the same address.
        self.wait(lambda: self.alive_workers() < WORKERS, deadline, f"the Master to drop {name}", "master")
        self.wait(lambda: port_is_free(getattr(self.ports, name)), deadline, f"{name}'s port to be free", "master")
        ui = f"{name}_ui"
        if not port_is_free(getattr(self.ports, ui)):
            # Another process took the UI port while the Worker was down (it is in the ephemeral range, as
            # the suite's other processes' outgoing ports are): the UI moves; the Master knows the Worker
            # by its own port.
            setattr(self.ports, ui, free_port())
            self.save_state()
        self.start_worker(number)
        self.wait_workers(WORKERS, deadline)
        self.wait_executors(WORKERS, deadline)

    def log_tail(self, name: str, lines: int = 30) -> str:
        path = self.thrift.log_path if name == "thrift" else self.home / "logs" / f"{name}.log"
        if not path.exists():
            return "(no log)"
        return "".join(path.read_text(errors="replace").splitlines(keepends=True)[-lines:])

    def save_state(self) -> None:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        self.state_path.write_text(json.dumps({"pids": self.pids, "ports": asdict(self.ports)}, indent=1) + "\n")

    def stop(self) -> None:
        """Thrift server first (it ends its executors), then the Workers, then the Master."""
        if "thrift" in self.pids or self.thrift.process is not None:
            self.thrift.stop()
        for name in [*(f"worker_{n}" for n in range(WORKERS, 0, -1)), "master"]:
            pid = self.pids.get(name)
            if pid is not None:
                terminate_group(pid, grace=20)
        self.pids.clear()
        self.state_path.unlink(missing_ok=True)

    @classmethod
    def from_state(cls, home: Path) -> LocalCluster | None:
        state_path = Path(home).resolve() / "cluster.json"
        if not state_path.exists():
            return None
        state = json.loads(state_path.read_text())
        cluster = cls(home, Ports(**state["ports"]))
        cluster.pids = state["pids"]
        return cluster


def children(pid: int) -> list[int]:
    """Child process ids of `pid`, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def process_running(pid: int) -> bool:
    """Whether `pid` still runs: a process that has exited but is not reaped yet (a zombie, state Z
    in /proc) does not, though kill(pid, 0) still reaches it."""
    try:
        fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] not in ("Z", "X")


def executor_tasks(executors: list[dict]) -> int:
    return sum(executor["totalTasks"] for executor in executors)


def dbt_environment(cluster: LocalCluster) -> dict[str, str]:
    """The variables a user sets to point the `cluster` target of profiles/profiles.yml at it."""
    return {"JOINERY_CLUSTER_HOST": LOOPBACK, "JOINERY_CLUSTER_PORT": str(cluster.ports.thrift)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Local Spark standalone cluster for the `cluster` dbt target.")
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--home", type=Path, default=Path(os.environ.get("JOINERY_CLUSTER_HOME", DEFAULT_HOME)))
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    running = LocalCluster.from_state(args.home)
    alive = {name: pid for name, pid in (running.pids if running else {}).items() if process_alive(pid)}

    if args.action == "status":
        if not alive:
            print("not running")
            return 1
        for name, pid in alive.items():
            print(f"{name}: pid {pid}")
        print(f"master: {running.master_url}   Thrift: {LOOPBACK}:{running.ports.thrift}")
        print(f"executors: {len(running.executors())}, tasks run: {executor_tasks(running.executors())}")
        return 0
    if args.action == "stop":
        if running is None:
            print("not running")
            return 0
        running.stop()
        print(f"stopped ({', '.join(f'{name} pid {pid}' for name, pid in alive.items()) or 'nothing was alive'})")
        return 0
    if alive:
        print(f"error: already running ({alive}); `make cluster-stop` first", file=sys.stderr)
        return 1
    cluster = LocalCluster(args.home, Ports.from_environment())
    try:
        cluster.start(timeout=args.timeout)
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    tasks = executor_tasks(cluster.executors())
    print(
        f"Spark standalone cluster ready: master {cluster.master_url}, {WORKERS} workers, Thrift on "
        f"{LOOPBACK}:{cluster.ports.thrift}; a query ran {tasks} tasks on the executors"
    )
    print(f"  warehouse: {cluster.home / 'warehouse'}   logs: {cluster.home / 'logs'}")
    env = " ".join(f"{key}={value}" for key, value in dbt_environment(cluster).items())
    print(f"  use it:    {env} scripts/dbt build --target cluster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
