"""`make lint` as a test of the suite: ruff, sqlfluff on the SQL sources, and sqlfluff on the SQL the
macros generate (harness/compile_examples.py, on an embedded Spark of its own in a temporary folder).

It runs as one test so that `make test` lints beside the other modules on a pytest-xdist worker
rather than after all of them: its Spark and sqlfluff fill the cores while the other workers wait on
the shared Thrift server, subprocess starts and kill trials (benchmarks/optimizations.md, "The test
suite"). `make lint` alone runs the same steps.
"""

from __future__ import annotations

import os
import subprocess

from harness.dbt import REPO_ROOT

# A guard against a hung lint, not a time limit: the lint takes minutes under the suite's load.
TIMEOUT_SECONDS = 1800


def test_make_lint_passes():
    # The worker's own variables (pytest-xdist's) stay out: the lint is the command a developer runs.
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    completed = subprocess.run(
        ["make", "--no-print-directory", "lint"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    assert completed.returncode == 0, f"make lint failed:\n{completed.stdout[-12000:]}\n{completed.stderr[-6000:]}"
