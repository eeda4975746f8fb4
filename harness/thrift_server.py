"""Start and stop a local Spark Thrift server from the pip-installed pyspark.

Used two ways:
- interactively, for the `thrift` dbt target: `python -m harness.thrift_server start|stop|status`
  (the Makefile's `thrift-start` / `thrift-stop`), state under `.spark/thrift/`;
- by the pytest session fixture, on a free loopback port with a temporary home.

The server binds to 127.0.0.1 only, keeps its warehouse and Derby metastore in its own home folder
(a second process sharing a Derby metastore fails with XSDB6), runs with ANSI mode on like every
joinery target, and is only reported started once it answers a query.
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

from harness import REPO_ROOT
from harness.java import JavaMissing, driver_java_options, require_java, spark_home
from harness.table_formats import JarsMissing, require_jars, table_format_conf

DEFAULT_HOME = REPO_ROOT / ".spark" / "thrift"
DEFAULT_PORT = 10000
LOOPBACK = "127.0.0.1"
THRIFT_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"

# The embedded metastore keeps one RawStore per server thread, and opening one costs a new HiveConf
# (Hadoop's default XML parsed again, the class path searched). With Hive's defaults it is re-opened
# for nearly every statement (docs/DESIGN.md, Spark facts): statements run as the session's own
# user (doAs), and a change of user closes the shared metastore client; the statement pool (100
# threads, 10 s keep-alive) starts a new thread per statement until it holds 100. Running every
# statement as the server's user on a small pool of long-lived threads opens each RawStore once.
METASTORE_REUSE = {
    "hive.server2.enable.doAs": "false",
    "hive.server2.async.exec.threads": "16",
    "hive.server2.async.exec.keepalive.time": "3600",
}


class ThriftServerError(RuntimeError):
    """The server could not be started, or did not become ready."""


def port_is_free(port: int, host: str = LOOPBACK) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def spark_conf(home: Path, java_options: str = "") -> dict[str, str]:
    """Settings shared by every joinery Spark: see profiles/profiles.yml for the `local` twin."""
    return {
        "spark.sql.warehouse.dir": str(home / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true",
        "spark.driver.extraJavaOptions": driver_java_options(home, java_options),
        # One SQL mode on every target (DESIGN.md): ANSI on, try_cast where NULL-on-bad-data is meant.
        "spark.sql.ansi.enabled": "true",
        # Small local data: the default 200 shuffle partitions cost more than they bring on 2 cores.
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        # Each Thrift session caches a non-partitioned table's file listing by name; a joinery_upsert
        # commit (ALTER TABLE ... SET LOCATION) in one session would stay invisible to the others.
        "spark.sql.filesourceTableRelationCacheSize": "0",
        "spark.driver.bindAddress": LOOPBACK,
        "spark.driver.host": LOOPBACK,
        **table_format_conf(home),
    }


class ThriftServer:
    """One Spark Thrift server process on 127.0.0.1:port with its own home folder."""

    DEFAULT_DRIVER_MEMORY = "3g"

    def __init__(
        self,
        home: Path,
        port: int,
        driver_memory: str = DEFAULT_DRIVER_MEMORY,
        extra_conf: dict[str, str] | None = None,
        java_options: str = "",
        master: str = "local[*]",
    ):
        self.home = Path(home).resolve()
        # `local[*]`, or a cluster's master URL (harness/cluster.py submits to a standalone master).
        self.master = master
        self.port = port
        self.driver_memory = driver_memory
        self.extra_conf = extra_conf or {}
        self.java_options = java_options
        self.process: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        """The server's JVM (spark-submit execs it in its own process)."""
        return self.process.pid if self.process is not None else read_pid(self.pid_path)

    @property
    def log_path(self) -> Path:
        return self.home / "thrift.log"

    @property
    def pid_path(self) -> Path:
        return self.home / "thrift.pid"

    def command(self) -> list[str]:
        cmd = [
            str(spark_home() / "bin" / "spark-submit"),
            "--master",
            self.master,
            "--name",
            "joinery-thrift",
            "--driver-memory",
            self.driver_memory,
            "--class",
            THRIFT_CLASS,
        ]
        for key, value in {**spark_conf(self.home, self.java_options), **self.extra_conf}.items():
            cmd += ["--conf", f"{key}={value}"]
        cmd += [
            "--hiveconf",
            f"hive.server2.thrift.bind.host={LOOPBACK}",
            "--hiveconf",
            f"hive.server2.thrift.port={self.port}",
            "--hiveconf",
            "hive.server2.transport.mode=binary",
        ]
        for key, value in METASTORE_REUSE.items():
            cmd += ["--hiveconf", f"{key}={value}"]
        cmd.append("spark-internal")
        return cmd

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no server log)"
        with self.log_path.open(errors="replace") as handle:
            return "".join(deque(handle, maxlen=lines))

    def start(self, timeout: float = 180.0) -> None:
        try:
            require_java()
            require_jars()
        except (JavaMissing, JarsMissing) as exc:
            raise ThriftServerError(str(exc)) from None
        if not port_is_free(self.port):
            raise ThriftServerError(
                f"port {LOOPBACK}:{self.port} is already in use; stop what holds it "
                f"(`make thrift-stop` if it is ours) or choose another with JOINERY_THRIFT_PORT"
            )
        self.home.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": LOOPBACK}
        env.pop("PYSPARK_SUBMIT_ARGS", None)
        log = self.log_path.open("w")
        # Own process group, so stop() takes down spark-submit and the JVM it starts.
        self.process = subprocess.Popen(
            self.command(), cwd=self.home, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        log.close()
        self.pid_path.write_text(f"{self.process.pid} {self.port}\n")
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise ThriftServerError(
                    f"the Spark Thrift server exited with code {self.process.returncode} before it was ready; "
                    f"last lines of {self.log_path}:\n{self.log_tail()}"
                )
            if self.answers_query():
                return
            time.sleep(1.0)
        raise ThriftServerError(
            f"the Spark Thrift server did not accept connections on {LOOPBACK}:{self.port} "
            f"within {timeout:.0f}s; last lines of {self.log_path}:\n{self.log_tail()}"
        )

    def answers_query(self) -> bool:
        try:
            with socket.create_connection((LOOPBACK, self.port), timeout=2):
                pass
        except OSError:
            return False
        try:
            from pyhive import hive

            conn = hive.connect(host=LOOPBACK, port=self.port, username="joinery", auth="NONE")
            try:
                cursor = conn.cursor()
                cursor.execute("select 1")
                cursor.fetchall()
            finally:
                conn.close()
        except Exception:  # noqa: BLE001 - any failure means "not ready yet"
            return False
        return True

    def stop(self, grace: float = 30.0) -> None:
        pid = self.pid
        if pid is not None:
            terminate_group(pid, grace)
        if self.process is not None:
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.pid_path.unlink(missing_ok=True)


def read_pid(pid_path: Path) -> int | None:
    try:
        return int(pid_path.read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap(pid: int) -> None:
    """Collect the exit status if `pid` is our child: an unreaped (zombie) process still counts as
    alive for kill(0), which would make every stop wait out its whole grace period."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def terminate_group(pid: int, grace: float) -> None:
    """SIGTERM the process group, then SIGKILL it if it has not gone after `grace` seconds."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        reap(pid)
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Local Spark Thrift server for the `thrift` dbt target (127.0.0.1 only)."
    )
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--port", type=int, default=int(os.environ.get("JOINERY_THRIFT_PORT", DEFAULT_PORT)))
    parser.add_argument("--home", type=Path, default=Path(os.environ.get("JOINERY_THRIFT_HOME", DEFAULT_HOME)))
    parser.add_argument("--timeout", type=float, default=180.0)
    args = parser.parse_args(argv)
    server = ThriftServer(args.home, args.port)
    pid = read_pid(server.pid_path)

    if args.action == "status":
        if pid is not None and process_alive(pid):
            print(f"running: pid {pid}, {server.pid_path.read_text().split()[1:]} on {LOOPBACK}, home {server.home}")
            return 0
        print("not running")
        return 1
    if args.action == "stop":
        if pid is None or not process_alive(pid):
            server.pid_path.unlink(missing_ok=True)
            print("not running")
            return 0
        server.stop()
        print(f"stopped (pid {pid})")
        return 0
    if pid is not None and process_alive(pid):
        print(f"error: already running (pid {pid}); `make thrift-stop` first", file=sys.stderr)
        return 1
    try:
        server.start(timeout=args.timeout)
    except ThriftServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"Spark Thrift server ready on {LOOPBACK}:{args.port} (pid {server.process.pid})")
    print(f"  warehouse: {server.home / 'warehouse'}   log: {server.log_path}")
    print(f"  use it:    scripts/dbt build --target thrift   (JOINERY_THRIFT_PORT={args.port})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
