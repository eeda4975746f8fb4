"""docs/operations.md's Dagster recipe, run for real: its definitions.py and dagster.yaml as the page
has them, over the quickstart's project and session profile (python_tests/test_quickstart.py), the
`hourly` job triggered in-process on a persistent Dagster instance. A first run builds the tables;
the quickstart's second batch lands; two triggers start at once, and the recipe's one-slot pool
makes one wait for the other's dbt. The Delta history shows the first build, then the MERGE of
the new batch, and the rows read back are the quickstart's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections import Counter

from harness.dbt import REPO_ROOT
from python_tests.test_quickstart import csv_rows, dbt, land_second_batch, read_back, scratch_project, session_conf

DOC = REPO_ROOT / "docs" / "operations.md"
MARKED_BLOCK = re.compile(r"<!-- operations: (?P<key>[^>]+?) -->\n```[a-z]*\n(?P<body>.*?)```", re.S)
COMPACTION_FILES = {"seeds/crm_customers_snapshot.csv", "seeds/crm_customers_delta.csv", "models/customers.sql"}
FULL_BUILDS = {"CREATE OR REPLACE TABLE AS SELECT", "CREATE TABLE AS SELECT", "REPLACE TABLE AS SELECT"}

# One trigger of the recipe's job, as its schedule would start it: a process of its own.
TRIGGER = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from dagster import DagsterInstance
    import definitions
    job = definitions.defs.resolve_job_def("hourly")
    result = job.execute_in_process(instance=DagsterInstance.get(), raise_on_error=False)
    print("RUN " + json.dumps({"run_id": result.run_id, "success": result.success}))
""")


def start_trigger(code_dir, env) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", TRIGGER, str(code_dir)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(trigger: subprocess.Popen) -> str:
    output, _ = trigger.communicate(timeout=900)
    line = next((line for line in output.splitlines() if line.startswith("RUN ")), None)
    assert trigger.returncode == 0 and line and json.loads(line[4:])["success"], output[-5000:]
    return json.loads(line[4:])["run_id"]


def step_windows(dagster_home, run_ids: list[str]) -> dict[str, tuple[float, float, float]]:
    """Per run: when it started, and when its dbt step started and succeeded (Dagster's event log)."""
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    try:
        from dagster import DagsterEventType, DagsterInstance

        with DagsterInstance.get() as instance:
            windows = {}
            for run_id in run_ids:
                logs = instance.all_logs(run_id)

                def first(kind, logs=logs):
                    return next(entry.timestamp for entry in logs if entry.dagster_event_type == kind)

                windows[run_id] = (
                    first(DagsterEventType.RUN_START),
                    first(DagsterEventType.STEP_START),
                    first(DagsterEventType.STEP_SUCCESS),
                )
            return windows
    finally:
        del os.environ["DAGSTER_HOME"]


def test_dagster_runs_the_project_one_run_at_a_time_and_the_second_run_is_incremental(tmp_path):
    recipe = {match["key"]: match["body"] for match in MARKED_BLOCK.finditer(DOC.read_text())}
    # The quickstart's compaction and its seeds: the page's foreign-key join would only add time.
    blocks, project, env = scratch_project(tmp_path, COMPACTION_FILES)
    code_dir, dagster_home = tmp_path / "orchestration", tmp_path / "dagster_home"
    code_dir.mkdir()
    dagster_home.mkdir()
    (code_dir / "definitions.py").write_text(recipe["dagster-definitions"])
    (dagster_home / "dagster.yaml").write_text(recipe["dagster-instance"])
    env |= {"DBT_PROJECT_DIR": str(project), "DAGSTER_HOME": str(dagster_home)}
    # What a deployment does first: the package, and the manifest the assets are read from.
    dbt(project, env, "deps")
    dbt(project, env, "parse")

    first = finish(start_trigger(code_dir, env))
    land_second_batch(blocks, project)
    # Two triggers at once: without the pool both dbt processes would start a Spark on one Derby
    # metastore, and the second would fail (XSDB6).
    overlapping = [start_trigger(code_dir, env), start_trigger(code_dir, env)]
    second, third = (finish(trigger) for trigger in overlapping)

    windows = step_windows(dagster_home, [first, second, third])
    (a_run, a_start, a_end), (b_run, b_start, b_end) = sorted([windows[second], windows[third]], key=lambda w: w[1])
    assert b_run < a_end, "the triggers did not overlap: the second run started after the first had finished"
    assert a_end <= b_start, f"two dbt steps ran at once: {windows}"

    schema, conf = session_conf(blocks, env)
    expected = {key: csv_rows(body) for key, body in blocks.items() if key.startswith("expected-second ")}
    queries = {key: f"select {', '.join(rows[0])} from {schema}.{key.split()[1]}" for key, rows in expected.items()}
    queries["history"] = [f"describe history {schema}.customers", ["version", "operation"]]
    got = read_back(conf, queries, env)
    for key, rows in expected.items():
        assert Counter(map(tuple, got[key])) == Counter(tuple(row.values()) for row in rows), (key, got[key])
    # The first run's full build, the second's MERGE of the new batch. The third found nothing new:
    # no commit, or a rebuild when the MERGE took longer than the full build (the cost rule,
    # rebuild_threshold: docs/upsert.md), which a loaded machine can make it.
    operations = [operation for _, operation in sorted(got["history"], key=lambda row: int(row[0]))]
    assert operations[0] in FULL_BUILDS and operations[1] == "MERGE", operations
    assert len(operations) == 2 or (len(operations) == 3 and operations[2] in FULL_BUILDS), operations
