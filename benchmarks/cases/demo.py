"""Case 7: the README's demo command (`make demo` = `python -m harness.demo`) end to end, wall time.

Runs it in a subprocess with its own Spark folder under the benchmark's work folder (so it never
touches the repo's .spark/local), once: it is minutes long and has no bar. With `--rows tiny` (the
smoke test) the same command builds one capability's seeds, models and tests only (TINY_SELECTION).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from benchmarks.core import Context
from harness import REPO_ROOT

NAME = "demo"
TITLE = "`make demo` end to end (python -m harness.demo), wall time, no bar"
DEFAULT_ROWS = 0
DEFAULT_REPEATS = 1  # one end-to-end run; not repeated
TINY_ROWS = 0
TINY_SELECTION = ["--select", "path:seeds/splitter", "path:models/examples/splitter"]
# harness.demo's closing line: "... finished in 12s: 5 pass, 7 success".
CLOSING = re.compile(r"joinery demo: .* finished in \d+s: (.*)$", re.MULTILINE)


def run(ctx: Context) -> dict:
    spark_dir = ctx.work_dir / "demo_spark"
    env = {
        **os.environ,
        "JOINERY_SPARK_DIR": str(spark_dir),
        "DBT_LOG_PATH": str(ctx.work_dir / "demo_logs"),
        "JOINERY_DRIVER_MEMORY": "1g" if ctx.tiny else os.environ.get("JOINERY_DRIVER_MEMORY", "2g"),
    }
    command = [sys.executable, "-m", "harness.demo", *(TINY_SELECTION if ctx.tiny else [])]
    started = time.perf_counter()
    # stdout carries only the benchmarks' JSON lines: the demo's output is read, then shown on stderr.
    completed = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    sys.stderr.write(completed.stdout + completed.stderr)
    closing = CLOSING.search(completed.stdout)
    nodes = {}
    if closing and closing.group(1) != "nothing ran":
        nodes = {status: int(count) for count, status in (part.split(" ", 1) for part in closing.group(1).split(", "))}
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
        "nodes": nodes,
    }
