"""The benchmarks' dbt project (benchmarks/project), run in-process on the benchmark's SparkSession."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

from harness.dbt import DbtProject
from harness.table_formats import ICEBERG_CATALOG

PROJECT_DIR = Path(__file__).resolve().parent / "project"
SCHEMA = "bench"


def format_vars(table_format: str, width: str = "narrow") -> dict[str, str] | None:
    """The bench project's vars for a table format (its models default to parquet) and a width (the
    dbt-run cases' narrow tables, or their wide twins). DbtProject keeps one partial parse per vars, so
    alternating formats does not make dbt parse the project again."""
    found = {} if table_format == "parquet" else {"bench_format": table_format}
    if width != "narrow":
        found["bench_width"] = width
    return found or None


def table_name(model: str, table_format: str, width: str = "narrow") -> str:
    """The table of `model` built in `table_format` and `width` (the bench project's generate_alias_name)."""
    name = model if table_format == "parquet" else f"{model}_{table_format}"
    return name if width == "narrow" else f"{name}_{width}"


def relation(model: str, table_format: str, width: str = "narrow") -> str:
    """The full name of `model`'s table in `table_format`: an iceberg table is in the Iceberg catalog,
    in namespace `bench` (the bench project's generate_schema_name, joinery.catalog_schema_name)."""
    catalog = f"{ICEBERG_CATALOG}." if table_format == "iceberg" else ""
    return f"{catalog}{SCHEMA}.{table_name(model, table_format, width)}"


class BenchDbt:
    """dbt on the `local` target, schema `bench`; artifacts and logs under the run's work folder."""

    def __init__(self, work_dir: Path):
        self.target_path = work_dir / "target"
        os.environ["DBT_LOG_PATH"] = str(work_dir / "logs")
        self.project = DbtProject(project_dir=PROJECT_DIR, target="local", schema=SCHEMA, target_path=self.target_path)
        self._installed = False
        self.last_result = None

    def invoke(
        self, *args: str, expect_success: bool | None = True, table_format: str = "parquet", width: str = "narrow"
    ):
        if not self._installed:
            self._install_package()
            self._installed = True
        # dbt logs (and `compile` prints SQL) to stdout, which carries only the benchmarks' JSON lines.
        with contextlib.redirect_stdout(sys.stderr):
            self.last_result = self.project.invoke(
                *args, expect_success=expect_success, vars=format_vars(table_format, width)
            )
            return self.last_result

    def _install_package(self) -> None:
        """joinery is a local package (a symlink to the repo): install it once per checkout. Benchmark
        processes may start side by side (the smoke test runs each case in its own), and `dbt deps`
        replaces dbt_packages/ under another process's parse: one installs, the others wait for it."""
        digest = hashlib.md5(bytes(PROJECT_DIR)).hexdigest()
        lock_path = Path(tempfile.gettempdir()) / f"joinery-bench-deps-{digest}.lock"
        with lock_path.open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (PROJECT_DIR / "dbt_packages" / "joinery").exists():
                self.project.deps()

    def run(
        self, *models: str, full_refresh: bool = False, table_format: str = "parquet", width: str = "narrow"
    ) -> float:
        """`dbt run --select <models>` with the models' tables in `table_format` and `width`; returns
        its wall time in seconds (the result, with every statement dbt sent, is `last_result`)."""
        started = time.perf_counter()
        refresh = ["--full-refresh"] if full_refresh else []
        self.invoke("run", "--select", *models, *refresh, table_format=table_format, width=width)
        return time.perf_counter() - started

    def compiled_sql(self, model: str) -> str:
        """The SELECT joinery generates for a model (`dbt compile`), to time it as plain Spark SQL."""
        return self.compiled_sqls(model)[model]

    def compiled_sqls(self, *models: str) -> dict[str, str]:
        """Compiled SQL of several models from one `dbt compile` (each invocation costs seconds)."""
        self.invoke("compile", "--select", *models)
        found = {}
        for model in models:
            matches = list((self.target_path / "compiled" / "joinery_bench").rglob(f"{model}.sql"))
            if len(matches) != 1:
                raise FileNotFoundError(f"compiled SQL of {model}: found {matches}")
            found[model] = matches[0].read_text()
        return found
