"""Case 7: the README's demo command (`make demo` = `python -m harness.demo`) end to end, wall time.

Runs it in a subprocess with its own Spark folder under the benchmark's work folder (so it never
touches the repo's .spark/local), once: it is minutes long and has no bar. With `--rows tiny` (the
smoke test) it only imports harness.demo in the subprocess: the case's own path (subprocess, timing,
result line) stays exercised without a second minutes-long Spark build inside the smoke test.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.core import Context

NAME = "demo"
TITLE = "`make demo` end to end (python -m harness.demo), wall time, no bar"
DEFAULT_ROWS = 0
DEFAULT_REPEATS = 1  # one end-to-end run; not repeated
TINY_ROWS = 0
REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def run(ctx: Context) -> dict:
    spark_dir = ctx.work_dir / "demo_spark"
    env = {
        **os.environ,
        "JOINERY_SPARK_DIR": str(spark_dir),
        "DBT_LOG_PATH": str(ctx.work_dir / "demo_logs"),
        "JOINERY_DRIVER_MEMORY": "1g" if ctx.tiny else os.environ.get("JOINERY_DRIVER_MEMORY", "2g"),
    }
    if ctx.tiny:
        command = [sys.executable, "-c", "import harness.demo"]
    else:
        command = [sys.executable, "-m", "harness.demo"]
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=REPO_ROOT, env=env, stdout=sys.stderr, stderr=sys.stderr, check=False)
    seconds = time.perf_counter() - started
    return {
        "case": NAME,
        "sizes": {},
        "repeats": 1,
        "median_seconds": {"demo": round(seconds, 3)},
        "seconds": {"demo": [round(seconds, 3)]},
        "ratios": {},
        "bars": [],
        "pass": completed.returncode == 0,
        "plan": {},
        "command": " ".join(command[1:]),
        "exit_code": completed.returncode,
    }
