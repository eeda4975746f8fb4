"""Run dbt in-process (dbtRunner) against the joinery project, and read tables back from Spark.

Shared by the pytest harness (python_tests/conftest.py), the demo command and the benchmarks, so
every caller runs dbt the same way: profiles from `profiles/`, a chosen target and schema, and a
target path of its own so concurrent users of the repo do not overwrite each other's artifacts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import REPO_ROOT

PROFILES_DIR = REPO_ROOT / "profiles"
# dbt's own name for it, under the target path.
PARTIAL_PARSE_FILE = "partial_parse.msgpack"


def apply_dbt_spark_fixes() -> None:
    """The dbt-spark behaviours joinery corrects in every entry point that runs dbt (`make demo`,
    the tests, the benchmarks, `scripts/dbt`). Each is idempotent and explained in its function.
    Only Python can change these; what a macro can do lives in the package (empty seed cells as
    NULL: macros/common/seeds.sql). The README's "Guarantees" says which guarantees rest on these."""
    keep_ansi_mode_on()
    bound_thrift_waits()
    poll_thrift_quickly()
    tolerate_failed_session_close()
    quiet_failed_query_log()


def quiet_failed_query_log() -> None:
    """Keep pyspark from printing a failed statement a second time on the `local` target.

    pyspark 4 logs every failed SQL statement as a JSON line at ERROR ("SQLQueryContextLogger"),
    with the whole Java stack trace in it: often a hundred lines of text inside one. dbt already
    reports the failure, with Spark's message and error class, in its own output and logs.
    """
    from pyspark.logger import PySparkLogger

    PySparkLogger.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)


def keep_ansi_mode_on() -> None:
    """Run the session target with ANSI mode on, like every other joinery target (DESIGN.md).

    dbt-spark forces `spark.sql.ansi.enabled=false` into the session method's builder options and
    re-applies them before every statement, so no SQL `SET` can turn ANSI on for the `local` target.
    This replaces that one forced value; thrift and cluster targets set ANSI in profiles.yml
    (`set:hiveconf:...`). Applied by every joinery entry point that runs dbt: `make demo`, the tests,
    the benchmarks and `scripts/dbt` (the wrapper to use instead of a bare `dbt` on `local`).
    """
    from dbt.adapters.spark.connections import SparkCredentials

    if getattr(SparkCredentials, "_joinery_ansi_on", False):
        return
    forced_off = SparkCredentials.__post_init__

    def __post_init__(self) -> None:
        forced_off(self)
        self.server_side_parameters["spark.sql.ansi.enabled"] = "true"

    SparkCredentials.__post_init__ = __post_init__
    SparkCredentials._joinery_ansi_on = True


def bound_thrift_waits() -> None:
    """Fail instead of hanging when a Thrift server accepts the connection but never answers.

    dbt-spark opens plain Thrift connections without a socket timeout (its `connect_timeout` is only
    the pause between retries), so a stuck server blocks dbt forever. Every Thrift call dbt makes is
    short (statements run asynchronously and are polled), so a bound on each socket wait is safe:
    JOINERY_THRIFT_SOCKET_TIMEOUT seconds, default 300.
    """
    from thrift.transport.TSocket import TSocket

    if getattr(TSocket, "_joinery_bounded", False):
        return
    unbounded_init = TSocket.__init__

    def __init__(self, *args, **kwargs):
        unbounded_init(self, *args, **kwargs)
        self._timeout = float(os.environ.get("JOINERY_THRIFT_SOCKET_TIMEOUT", "300"))

    TSocket.__init__ = __init__
    TSocket._joinery_bounded = True


def poll_thrift_quickly() -> None:
    """Check a running Thrift statement after 5, 10, 20, 40, 80 ms, then every 0.1 s, instead of every
    `poll_interval` seconds.

    dbt-spark runs each statement asynchronously and sleeps `poll_interval` (whole seconds, 1 at
    least to be useful) between status checks, so a short DDL statement costs a full second, and a
    joinery_upsert model runs dozens of statements; most finish within a few tens of milliseconds.
    JOINERY_THRIFT_POLL_SECONDS overrides the 0.1 s cap.
    """
    from dbt.adapters.spark.connections import PyhiveConnectionWrapper

    if getattr(PyhiveConnectionWrapper, "_joinery_fast_poll", False):
        return
    cap = float(os.environ.get("JOINERY_THRIFT_POLL_SECONDS", "0.1"))
    execute_with_polling = PyhiveConnectionWrapper._execute_with_polling

    def _execute_with_polling(self, sql, bindings):
        self._joinery_polls = 0
        return execute_with_polling(self, sql, bindings)

    def next_wait(self) -> float:
        # Read once per sleep of the polling loop: each read is the next, doubled wait.
        polls = getattr(self, "_joinery_polls", 8)
        self._joinery_polls = polls + 1
        return min(0.005 * 2**polls, cap)

    PyhiveConnectionWrapper._execute_with_polling = _execute_with_polling
    # dbt-spark's __init__ assigns poll_interval from the profile: that assignment is ignored.
    PyhiveConnectionWrapper.poll_interval = property(next_wait, lambda self, value: None)
    PyhiveConnectionWrapper._joinery_fast_poll = True


# A session close answers within milliseconds; its outcome is ignored when it fails (below).
CLOSE_SECONDS = 30


def tolerate_failed_session_close() -> None:
    """Do not fail a model whose statements all succeeded because closing its Thrift session failed.

    pyspark's jars lack hive-llap-common, so the Thrift server's session close can fail in Hive's
    FunctionRegistry static initializer (NoClassDefFoundError: .../LlapSigner$Signable, the gap
    SPARK-51041 closed for Spark's own tests). The session's work is done by then and the transport
    is closed; dbt-spark would still report the model as failed. With
    `hive.server2.enable.doAs=false` (harness/thrift_server.py) no session proxy turns that Error
    into an error response: the server's handler thread dies and the client reads a closed socket
    (TTransportException, "TSocket read 0 bytes"); same cure. A handler that neither answers nor
    closes the socket would hold dbt for the whole socket bound (bound_thrift_waits), so the close
    waits CLOSE_SECONDS at most.
    """
    from dbt.adapters.spark.connections import PyhiveConnectionWrapper
    from pyhive.exc import OperationalError
    from thrift.transport.TSocket import TSocket
    from thrift.transport.TTransport import TTransportException

    if getattr(PyhiveConnectionWrapper, "_joinery_lenient_close", False):
        return
    close = PyhiveConnectionWrapper.close

    def lenient_close(self) -> None:
        # pyhive's transport: SASL (`_trans`) or buffered (`_TBufferedTransport__trans`) over a TSocket.
        transport = getattr(self.handle, "_transport", None)
        socket = getattr(transport, "_trans", None) or getattr(transport, "_TBufferedTransport__trans", None)
        if isinstance(socket, TSocket):
            socket.setTimeout(CLOSE_SECONDS * 1000)
        try:
            close(self)
        except (OperationalError, TTransportException) as error:
            if isinstance(error, OperationalError) and "TCloseSessionResp" not in str(error):
                raise
            from dbt.adapters.events.logging import AdapterLogger

            AdapterLogger("Spark").debug(f"joinery: ignored a failed Thrift session close: {str(error)[:300]}")

    PyhiveConnectionWrapper.close = lenient_close
    PyhiveConnectionWrapper._joinery_lenient_close = True


def reuse_template_parses() -> None:
    """Keep, for the life of this process, the Jinja parse of every macro and file text dbt parsed,
    so that a later full parse here reuses them instead of parsing all 693 macros again.

    A new schema or new vars make dbt parse the whole project again (partial_parse_copy), many times
    in a `make test` (benchmarks/optimizations.md, "The test suite"). It is dbt-common's own switch
    (`enable_test_caching`), the one dbt-core's pytest fixtures turn on. Its caches are keyed by the
    source text, so an edited file is parsed afresh, and they hold what dbt reads from a parse (block
    boundaries, macro names and calls), not templates: rendering compiles each one again.
    """
    from dbt_common.tests import enable_test_caching

    enable_test_caching()


@contextmanager
def environment(**values: str | None) -> Iterator[None]:
    """Set (or with None, unset) environment variables for the duration of a dbt call."""
    saved = {key: os.environ.get(key) for key in values}
    try:
        for key, value in values.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# dbt's comment before every statement it sends (the `query-comment` config).
QUERY_COMMENT = re.compile(r"^\s*/\*.*?\*/", re.DOTALL)


@dataclass
class DbtResult:
    """What one dbt invocation did: success, per-node statuses and messages, and any exception."""

    args: list[str]
    success: bool
    exception: BaseException | None
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    # (node unique_id, SQL) of every statement dbt sent to Spark, in order ('' outside a node), without
    # dbt's leading query comment (`/* {"app": "dbt", ...} */`) and surrounding whitespace.
    statements: list[tuple[str, str]] = field(default_factory=list)
    # (node unique_id, message) of every `log()` call of a macro or model (info and debug), in order:
    # what joinery tells about the path a run took.
    logs: list[tuple[str, str]] = field(default_factory=list)
    # dbt's invocation_id of this invocation (what joinery_upsert's run records carry).
    invocation_id: str | None = None

    @property
    def messages(self) -> str:
        """Everything dbt said went wrong, as one string (for asserting on error text)."""
        parts = [str(self.exception)] if self.exception else []
        parts += [f"{name}: {node['message']}" for name, node in self.nodes.items() if node.get("message")]
        return "\n".join(parts)

    def statement_running_compiled_sql(self, name: str) -> str:
        """The last statement of model `name` that executed its compiled SQL, as this invocation
        compiled it (`target/compiled/`, the manifest): joinery_upsert wraps it (a staged view, a
        MERGE's source, a `create or replace`; before those, a `limit 0` preflight may type it), never
        changes it. Compared with whitespace collapsed (dbt's log keeps the SQL as sent, but a line
        break may become a space). Raises AssertionError naming the statements when none holds it."""
        [node_id] = [node_id for node_id in self.nodes if node_id.split(".")[-1] == name]
        compiled = " ".join((self.nodes[node_id]["compiled_code"] or "").split())
        assert compiled, f"{name}: no compiled SQL in `dbt {' '.join(self.args)}`"
        sent = [sql for node, sql in self.statements if node == node_id]
        found = [sql for sql in sent if compiled in " ".join(sql.split())]
        assert found, f"{name}: no statement ran its compiled SQL\ncompiled: {compiled[:1500]}\nsent: {sent}"
        return found[-1]

    def status(self, name: str) -> str:
        matches = [node["status"] for node_id, node in self.nodes.items() if node_id.split(".")[-1] == name]
        if not matches:
            raise KeyError(f"{name} was not part of `dbt {' '.join(self.args)}`; ran: {sorted(self.nodes)}")
        return matches[0]


class DbtProject:
    """A dbt project driven through dbtRunner with a fixed target and, by default, one schema."""

    def __init__(
        self,
        project_dir: Path = REPO_ROOT,
        target: str = "thrift",
        schema: str = "joinery",
        target_path: Path | None = None,
        env: dict[str, str] | None = None,
    ):
        self.project_dir = Path(project_dir)
        self.target = target
        self.schema = schema
        self.target_path = Path(target_path) if target_path else self.project_dir / "target"
        self.env = env or {}

    def partial_parse_copy(self, schema: str, vars: dict[str, Any] | None) -> Path:
        """Where this project keeps dbt's partial-parse file for one parse state.

        dbt keeps a single `partial_parse.msgpack` and parses the whole project again (seconds,
        against a fraction of one for a partial parse) whenever the vars, the profile (the schema is
        in it) or the target differ from the last invocation's. Callers that alternate schemas or
        vars (the tests do) would pay that on nearly every invocation; one copy per state avoids it.
        dbt still checks each copy (vars, profile and file checksums) before using it, so a stale
        one only costs a parse.
        """
        state = json.dumps(
            [str(self.project_dir), self.target, schema, vars or {}, self.env], sort_keys=True, default=str
        )
        return self.target_path / "partial_parse_by_state" / f"{hashlib.sha1(state.encode()).hexdigest()}.msgpack"

    def restore_partial_parse(self, schema: str, vars: dict[str, Any] | None) -> Path:
        saved = self.partial_parse_copy(schema, vars)
        current = self.target_path / PARTIAL_PARSE_FILE
        if saved.exists():
            shutil.copyfile(saved, current)
        else:
            # The file left is another state's: dbt would spend time reading it only to reject it.
            current.unlink(missing_ok=True)
        return saved

    def keep_partial_parse(self, saved: Path) -> None:
        current = self.target_path / PARTIAL_PARSE_FILE
        if current.exists():
            saved.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(current, saved)

    def deps(self) -> None:
        """`dbt deps` for this project: installs its packages (joinery as a local package works offline).
        It takes no target or target path, so it does not go through `invoke`; its output goes to stderr."""
        from dbt.cli.main import dbtRunner

        with contextlib.redirect_stdout(sys.stderr):
            outcome = dbtRunner().invoke(
                ["deps", "--project-dir", str(self.project_dir), "--profiles-dir", str(PROFILES_DIR)]
            )
        if not outcome.success:
            raise RuntimeError(f"`dbt deps` failed in {self.project_dir}: {outcome.exception}")

    def command_line(self, args: tuple[str, ...], target_path: Path, vars: dict[str, Any] | None) -> list[str]:
        """dbt's arguments for `args` on this project, its profiles and target, and `vars`."""
        cli = [*args, "--project-dir", str(self.project_dir), "--profiles-dir", str(PROFILES_DIR)]
        cli += ["--target", self.target, "--target-path", str(target_path)]
        return cli + (["--vars", json.dumps(vars)] if vars else [])

    def invoke(
        self,
        *args: str,
        schema: str | None = None,
        vars: dict[str, Any] | None = None,
        expect_success: bool | None = True,
        env: dict[str, str] | None = None,
    ) -> DbtResult:
        """Run `dbt <args>`; by default raise with dbt's messages unless it succeeded.

        expect_success=False asserts that it failed; None accepts either outcome. `env`: environment
        variables for this call only. A value that changes from call to call belongs here rather
        than in `vars` when a model reads it with env_var(): dbt then parses again only the files
        that read it, where any new vars make it parse the whole project.
        """
        from dbt.cli.main import dbtRunner

        from harness.java import use_spark_java_options
        from harness.table_formats import use_jars_dir

        apply_dbt_spark_fixes()
        use_spark_java_options()
        use_jars_dir()
        reuse_template_parses()
        cli = self.command_line(args, self.target_path, vars)
        statements: list[tuple[str, str]] = []
        logs: list[tuple[str, str]] = []
        invocation: list[str] = []

        def record_event(event) -> None:
            # dbt hands every event to callbacks, whatever the log level.
            # The last event's: events before dbt's preflight may still carry the previous invocation's.
            if event.info.invocation_id:
                invocation[:] = [event.info.invocation_id]
            if event.info.name == "SQLQuery":
                sql = QUERY_COMMENT.sub("", event.data.sql, count=1).strip()
                statements.append((event.data.node_info.unique_id, sql))
            elif event.info.name in ("JinjaLogInfo", "JinjaLogDebug"):
                logs.append((event.data.node_info.unique_id, event.data.msg))

        saved_parse = self.restore_partial_parse(schema or self.schema, vars)
        with environment(JOINERY_SCHEMA=schema or self.schema, **self.env, **(env or {})):
            outcome = dbtRunner(callbacks=[record_event]).invoke(cli)
        self.keep_partial_parse(saved_parse)
        result = DbtResult(
            args=list(args),
            success=outcome.success,
            exception=outcome.exception,
            statements=statements,
            logs=logs,
            invocation_id=invocation[-1] if invocation else None,
        )
        for node_result in getattr(outcome.result, "results", None) or []:
            node = getattr(node_result, "node", None)
            if node is None:
                continue
            result.nodes[node.unique_id] = {
                "status": str(node_result.status),
                "message": node_result.message,
                "failures": getattr(node_result, "failures", None),
                "execution_time": getattr(node_result, "execution_time", None),
                "compiled_code": getattr(node, "compiled_code", None),
                "original_file_path": getattr(node, "original_file_path", None),
            }
        if expect_success is True and not result.success:
            raise AssertionError(f"`dbt {' '.join(args)}` failed:\n{result.messages}")
        if expect_success is False and result.success:
            raise AssertionError(f"`dbt {' '.join(args)}` succeeded but was expected to fail")
        return result

    def start(
        self,
        *args: str,
        work_dir: Path,
        schema: str | None = None,
        vars: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen:
        """Start `dbt <args>` in a process of its own, beside this one's invocations: dbt cannot run
        two invocations at once in one process. It writes its artifacts and log under `work_dir`
        (starting from this project's partial parse for the same state, so it does not parse the
        whole project) and its output to `work_dir/output.log`; wait for the process, then read it."""
        target_path = work_dir / "target"
        target_path.mkdir(parents=True, exist_ok=True)
        saved = self.partial_parse_copy(schema or self.schema, vars)
        if saved.exists():
            shutil.copyfile(saved, target_path / PARTIAL_PARSE_FILE)
        cli = [sys.executable, "-m", "harness.dbt_cli", *self.command_line(args, target_path, vars)]
        cli += ["--log-path", str(work_dir / "logs")]
        process_env = {**os.environ, "JOINERY_SCHEMA": schema or self.schema, **self.env, **(env or {})}
        with (work_dir / "output.log").open("w") as output:
            return subprocess.Popen(cli, cwd=REPO_ROOT, env=process_env, stdout=output, stderr=subprocess.STDOUT)
