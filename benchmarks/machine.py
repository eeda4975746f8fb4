"""The machine and software a benchmark run measured, for RESULTS.md."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

from harness import REPO_ROOT


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        return None
    return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit() -> str:
    """The checkout's commit, and whether the code measured differed from it (uncommitted changes)."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=7"],
            capture_output=True,
            text=True,
            check=False,
            cwd=REPO_ROOT,
        )
    except OSError:
        return "unknown"
    described = out.stdout.strip()
    if not described:
        return "unknown"
    return described.replace("-dirty", " (uncommitted changes)")


def _java_version() -> str:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
        return (out.stderr or out.stdout).splitlines()[0]
    except (OSError, IndexError):
        return "unknown"


def machine_facts(spark, driver_memory: str) -> dict[str, str]:
    """Facts of this machine; with `spark` None (assembling saved results) Spark's own facts are omitted."""
    if spark is None:
        return {
            "date (UTC)": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M"),
            "cores": str(os.cpu_count()),
            "cpu": _cpu_model(),
            "memory": f"{_memory_gib()} GiB",
            "os": f"{platform.system()} {platform.release()}",
            "python": platform.python_version(),
            "java": _java_version(),
            "pyspark": version("pyspark"),
            "dbt-core": version("dbt-core"),
            "dbt-spark": version("dbt-spark"),
            "driver memory": driver_memory,
            "git commit": git_commit(),
        }
    java = spark.sparkContext._jvm.java.lang.System.getProperty("java.version")
    return {
        "date (UTC)": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "cores": str(os.cpu_count()),
        "cpu": _cpu_model(),
        "memory": f"{_memory_gib()} GiB",
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "java": java,
        "pyspark": version("pyspark"),
        "dbt-core": version("dbt-core"),
        "dbt-spark": version("dbt-spark"),
        "spark master": spark.sparkContext.master,
        "driver memory": driver_memory,
        "shuffle partitions": spark.conf.get("spark.sql.shuffle.partitions"),
        "git commit": git_commit(),
    }
