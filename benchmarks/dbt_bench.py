"""The benchmarks' dbt project (benchmarks/project), run in-process on the benchmark's SparkSession."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

from harness.dbt import DbtProject

PROJECT_DIR = Path(__file__).resolve().parent / "project"
SCHEMA = "bench"


class BenchDbt:
    """dbt on the `local` target, schema `bench`; artifacts and logs under the run's work folder."""

    def __init__(self, work_dir: Path):
        self.target_path = work_dir / "target"
        os.environ["DBT_LOG_PATH"] = str(work_dir / "logs")
        self.project = DbtProject(project_dir=PROJECT_DIR, target="local", schema=SCHEMA, target_path=self.target_path)
        self._installed = False

    def invoke(self, *args: str, expect_success: bool | None = True):
        if not self._installed:
            # joinery is a local package (a symlink to the repo); install it once per checkout.
            if not (PROJECT_DIR / "dbt_packages" / "joinery").exists():
                self.project.deps()
            self._installed = True
        # dbt logs (and `compile` prints SQL) to stdout, which carries only the benchmarks' JSON lines.
        with contextlib.redirect_stdout(sys.stderr):
            return self.project.invoke(*args, expect_success=expect_success)

    def run(self, *models: str, full_refresh: bool = False) -> float:
        """`dbt run --select <models>`; returns its wall time in seconds."""
        started = time.perf_counter()
        self.invoke("run", "--select", *models, *(["--full-refresh"] if full_refresh else []))
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
