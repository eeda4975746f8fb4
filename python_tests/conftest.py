"""The pytest harness: one Spark Thrift server for the whole run, dbt run through dbtRunner
against it, and tables read back over Thrift.

Fixtures:
- `thrift_server`: a Spark Thrift server on a free 127.0.0.1 port with a temporary warehouse and
  metastore, ready once it answers a query, and always stopped (also when tests fail or the run
  is interrupted). Under pytest-xdist the controller starts it before the workers and stops it
  after them, and every worker uses it; without xdist the session starts its own.
- `dbt`: a `harness.dbt.DbtProject` on the `thrift` target of that server (schema `joinery`, or
  `joinery_<worker>` under xdist; pass `schema=` to `dbt.invoke` for an isolated one). Each module
  keeps its tables in schemas of its own, so modules on different workers never share a table.
- `spark`: a `harness.sql.SparkSql` connection to read rows back and land new source batches.
- `minimal_project`: a dbt project of one model on joinery's profiles, without the joinery package
  (a test that needs it installs it), for tests of the harness, the profiles and packaging.

`make test` runs the modules on four pytest-xdist workers (`-n 4 --dist loadfile`): each worker has
its own dbt target folder and Thrift sessions on the shared server, and takes whole modules,
slowest first; a module of ONE_TEST_PER_UNIT (the benchmark smoke test, one test per group of cases) is
handed out test by test.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.dbt import REPO_ROOT, DbtProject
from harness.java import SUITE_GC, THROWAWAY_METASTORE
from harness.sql import SparkSql
from harness.thrift_server import ThriftServer, free_port

# Slowest first, so that on the workers the long ones run side by side rather than one of them
# ending the run alone (pytest-xdist keeps this order with --no-loadscope-reorder): modules, and
# `module[test id]` for a test of a ONE_TEST_PER_UNIT module (its other tests rank with the module).
# The order follows the times in a full `make test` (benchmarks/optimizations.md, "The test suite").
SLOWEST_FIRST = [
    # Its groups of cases (test_benchmarks_smoke.py, GROUPS), each a process of its own Spark.
    "test_benchmarks_smoke",
    "test_fk_join_property",
    "test_examples_build",
    "test_compaction_property",
    # `make lint`: its own Spark and sqlfluff, beside the modules that wait on the shared server.
    "test_lint",
    # Their own Sparks, one process after another: long, and light on the shared server.
    "test_quickstart",
    "test_orchestrator",
    "test_upsert",
    "test_examples_other_formats",
    "test_crash_safety",
    "test_cluster",
    "test_compaction",
    "test_rebuild",
    "test_input_formats",
    "test_fk_join",
    "test_fk_join_feed",
    "test_fk_join_feed_property",
    "test_bad_inputs",
    "test_operations",
    "test_idempotence",
    "test_packaging",
    "test_iceberg",
    "test_upsert_delta",
    "test_multi_join",
]
# Modules of independent long tests, each its own process: `--dist loadfile` hands each of their
# tests to a worker on its own rather than the whole module to one (SplitFileScheduling).
ONE_TEST_PER_UNIT = {"test_benchmarks_smoke"}

# The tests' data is a few hundred rows: generating and compiling Java for each projection costs more
# than interpreting it (Delta's log state has deeply nested types, generated afresh for every scan).
# Spark's own tests run both modes and expect the same results; whole-stage codegen stays on.
SMALL_DATA_CONF = {"spark.sql.codegen.factoryMode": "NO_CODEGEN"}
# The server all pytest-xdist workers share runs their modules side by side.
SHARED_SERVER_MEMORY = "6g"
SHARED_SERVER_INPUT = "joinery_thrift_server"
_SHARED_SERVER = pytest.StashKey[ThriftServer]()
_PREVIOUS_SIGTERM = pytest.StashKey[object]()


def pytest_collection_modifyitems(items):
    rank = {name: position for position, name in enumerate(SLOWEST_FIRST)}

    def position(item) -> int:
        module = item.module.__name__.rsplit(".", 1)[-1]
        callspec = getattr(item, "callspec", None)
        own = rank.get(f"{module}[{callspec.id}]") if callspec else None
        return own if own is not None else rank.get(module, len(rank))

    items.sort(key=position)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SplitFileScheduling(LoadFileScheduling):
        """loadfile, but each test of a ONE_TEST_PER_UNIT module is a work unit of its own."""

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if Path(path).stem in ONE_TEST_PER_UNIT else path

    return SplitFileScheduling(config, log)


def _interrupt_on_sigterm(signum, frame):  # noqa: ARG001
    # A CI timeout or `kill` sends SIGTERM: turn it into KeyboardInterrupt so fixture finalizers
    # run and the Thrift server (its own process group) is stopped rather than left behind.
    raise KeyboardInterrupt(f"received signal {signum}")


def _test_server(home: Path, driver_memory: str) -> ThriftServer:
    return ThriftServer(
        home,
        free_port(),
        driver_memory=driver_memory,
        # The full JIT, not QUICK_JIT: this server lives for the whole run, long enough for the
        # optimizing compiler to pay for itself (benchmarks/optimizations.md, "The test suite").
        java_options=f"{SUITE_GC} {THROWAWAY_METASTORE}",
        # ANSI off by the server's default, as on a cluster that leaves it off: only the sessions'
        # own settings (the profile's, harness/sql.py's) turn it on, so tests see if one does not.
        extra_conf={"spark.sql.ansi.enabled": "false", **SMALL_DATA_CONF},
    )


def _start(server: ThriftServer) -> None:
    server.start(timeout=float(os.environ.get("JOINERY_THRIFT_TIMEOUT", "240")))


def _runs_workers(config) -> bool:
    """The pytest-xdist controller of a run with workers (not a worker, not a collect-only run)."""
    return (
        not hasattr(config, "workerinput")
        and bool(getattr(config.option, "numprocesses", 0))
        and not config.option.collectonly
    )


def pytest_configure(config):
    # Under pytest-xdist, one Thrift server for all workers: a server per worker compiles the same
    # Spark and Delta code again (benchmarks/optimizations.md, "The test suite"). The workers keep
    # apart by schema (`dbt` below).
    if not _runs_workers(config):
        return
    config.stash[_PREVIOUS_SIGTERM] = signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
    home = Path(tempfile.mkdtemp(prefix="joinery-thrift-"))
    server = _test_server(home, SHARED_SERVER_MEMORY)
    config.stash[_SHARED_SERVER] = server
    _start(server)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    server = node.config.stash.get(_SHARED_SERVER, None)
    if server is not None:
        node.workerinput[SHARED_SERVER_INPUT] = {"port": server.port, "pid": server.pid, "home": str(server.home)}


def pytest_unconfigure(config):
    server = config.stash.get(_SHARED_SERVER, None)
    if server is None:
        return
    try:
        server.stop()
        shutil.rmtree(server.home, ignore_errors=True)
    finally:
        signal.signal(signal.SIGTERM, config.stash[_PREVIOUS_SIGTERM])


@dataclass(frozen=True)
class SharedThriftServer:
    """A worker's view of the controller's server: where it listens and runs, not how to stop it."""

    port: int
    pid: int
    home: Path


@pytest.fixture(scope="session")
def thrift_server(request, tmp_path_factory):
    shared = getattr(request.config, "workerinput", {}).get(SHARED_SERVER_INPUT)
    if shared is not None:
        yield SharedThriftServer(shared["port"], shared["pid"], Path(shared["home"]))
        return
    previous = signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
    server = _test_server(tmp_path_factory.mktemp("thrift"), ThriftServer.DEFAULT_DRIVER_MEMORY)
    try:
        _start(server)
        yield server
    finally:
        server.stop()
        signal.signal(signal.SIGTERM, previous)


@pytest.fixture(scope="session")
def dbt(thrift_server, tmp_path_factory, worker_id) -> DbtProject:
    # dbt's log of each worker in its own file (logs/pytest-gw0/dbt.log, ...), not interleaved.
    log_path = os.environ.get("DBT_LOG_PATH") or str(REPO_ROOT / "logs" / f"pytest-{worker_id}")
    return DbtProject(
        target="thrift",
        # The workers share one server: each builds its default schema's tables apart.
        schema="joinery" if worker_id == "master" else f"joinery_{worker_id}",
        target_path=tmp_path_factory.mktemp("dbt_target"),
        env={
            "JOINERY_THRIFT_PORT": str(thrift_server.port),
            "JOINERY_THRIFT_HOST": "127.0.0.1",
            "DBT_LOG_PATH": log_path,
        },
    )


@pytest.fixture
def minimal_project(tmp_path) -> Path:
    """A project of one model on joinery's profiles (profile `joinery_integration_tests`): what a
    test of the harness or of a target needs, without the cost of parsing joinery, and without a
    `dbt deps` into integration_tests/ that would race with test_packaging's own."""
    project = tmp_path / "minimal_project"
    (project / "models").mkdir(parents=True)
    (project / "models" / "one.sql").write_text("select 1 as one\n")
    (project / "dbt_project.yml").write_text(
        "name: minimal_project\nconfig-version: 2\nversion: '1.0'\nprofile: joinery_integration_tests\n"
    )
    return project


@pytest.fixture(scope="session")
def spark(thrift_server):
    connection = SparkSql(thrift_server.port)
    yield connection
    connection.close()
