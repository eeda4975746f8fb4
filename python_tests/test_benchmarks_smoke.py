"""The benchmark harness cannot rot: every case runs at its tiny size and prints a valid result line.

Every case of benchmarks.cases.CASES runs (a new case is tested without an edit here), in GROUPS
groups balanced by TINY_WEIGHTS: one test per group runs `python -m benchmarks <case> [<case> ...]
--rows tiny --repeats 1 --formats delta` in a subprocess (its own local Spark with a small driver,
its own warehouse in a temp folder, separate from the pytest Thrift server; the group's cases one
after another on it, as `--all` runs them) and checks each case's JSON line with the keys RESULTS.md
and the README rely on, and that `--report` renders RESULTS.md from that line. Each case runs every
variant once on about a thousand rows (but for what repeats the same models with another var,
profile or batch: the narrow width only, tpch_fk_feed's `orders` variant, plain_dbt's poll 1); the
demo case runs `python -m harness.demo` on one capability (splitter: its seeds
with empty cells, models and tests) on the embedded target. Timings at tiny sizes mean nothing and
are not asserted; outputs that must agree are (each case's one agreement check), and the demo's dbt
nodes must all pass. The suite's pytest-xdist scheduler hands each group to a worker on its own
(python_tests/conftest.py, ONE_TEST_PER_UNIT), so the groups run side by side; a group pays one
Spark start and one parse of the bench project for its cases (benchmarks/optimizations.md, "The
test suite").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.cases import CASES
from harness.dbt import REPO_ROOT
from harness.java import THROWAWAY_METASTORE, short_lived_java_options

EXPECTED_KEYS = {"case", "sizes", "repeats", "median_seconds", "seconds", "ratios", "bars", "checks", "pass", "plan"}
BAR_KEYS = {"name", "ratio", "limit", "pass"}
PLAN_KEYS = {"shuffle_exchanges", "files_written", "partitions_written", "executions"}
# Cases that measure an effect without a bar (issue 39: maintain's effect on the next run).
NO_BAR_CASES = {"maintain"}
# Its Spark is a Thrift server of its own, whose SQL status store the harness cannot read: it
# reports the statements dbt sent instead (`statements`).
NO_PLAN_CASES = {"plain_dbt"}
# The processes the cases run in: one per pytest-xdist worker of `make test`.
GROUPS = 4
# A case's seconds at its tiny size in a loaded `make test`, to balance the groups only (a case not
# listed counts 60; the measurements are in benchmarks/optimizations.md).
TINY_WEIGHTS = {
    "tpch_fk_feed": 250, "maintain": 400, "plain_dbt": 200, "fk_join_feed": 280, "tpch_compaction": 210,
    "router": 200, "compaction_incremental": 160, "fk_join": 140, "demo": 130, "collect_join": 120,
    "compaction_full": 80, "multi_join": 10,
}  # fmt: skip


def case_groups() -> list[list[str]]:
    """CASES in GROUPS groups of about equal weight: the heaviest case first into the lightest group."""
    groups: list[list[str]] = [[] for _ in range(GROUPS)]
    loads = [0] * GROUPS
    for case in sorted(CASES, key=lambda name: -TINY_WEIGHTS.get(name, 60)):
        lightest = loads.index(min(loads))
        groups[lightest].append(case)
        loads[lightest] += TINY_WEIGHTS.get(case, 60)
    return [group for group in groups if group]


def run_cases(cases: list[str], work_dir: Path) -> tuple[subprocess.CompletedProcess, dict[str, dict]]:
    """`python -m benchmarks <case> ...` at their tiny size: the process and each case's result line."""
    env = {
        **os.environ,
        "JOINERY_BENCH_DIR": str(work_dir),
        "JOINERY_BENCH_DRIVER_MEMORY": "1g",
        # The quick JIT: each case is a JVM of a few minutes, too short for the optimizing compiler to
        # pay for itself (benchmarks/optimizations.md, "The test suite").
        "JOINERY_JAVA_OPTIONS": f"{short_lived_java_options()} {THROWAWAY_METASTORE}",
    }
    completed = subprocess.run(
        # One format for the dbt-run cases: delta's has every variant but parquet's copy floor (the
        # same bench models, another file_format var), and each format doubles the case's time;
        # parquet's and iceberg's variants run in `make bench`.
        [sys.executable, "-m", "benchmarks", *cases, "--rows", "tiny", "--repeats", "1", "--formats", "delta"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        # A guard against a hung run, not a time limit: generous for a slow CI machine under the
        # suite's load, and a hang still ends well inside CI's time limit.
        timeout=float(os.environ.get("JOINERY_BENCH_SMOKE_TIMEOUT", "2700")),
        check=False,
    )
    lines = [line for line in completed.stdout.splitlines() if line.strip()]
    # stdout carries only the JSON lines (`--report` reads them back): anything else is a failure.
    stray = [line for line in lines if not line.startswith("{")]
    assert not stray, f"not JSON lines on stdout: {stray[:5]}\n{completed.stderr[-4000:]}"
    results = [json.loads(line) for line in lines]
    assert [result["case"] for result in results] == cases, f"result lines {lines}\n{completed.stderr[-4000:]}"
    return completed, dict(zip(cases, results, strict=True))


@pytest.mark.parametrize("cases", case_groups(), ids="+".join)
def test_cases_run_at_their_tiny_size_and_report(cases, tmp_path, monkeypatch):
    completed, results = run_cases(cases, tmp_path / "bench")
    for case, result in results.items():
        assert "error" not in result, f"{case} failed: {result['error']}\n{completed.stderr[-4000:]}"
    assert completed.returncode == 0, completed.stderr[-4000:]
    for case, result in results.items():
        if case == "demo":
            assert_demo_built_and_tested_one_capability(result)
        else:
            assert_times_ratios_bars_and_plan_facts(case, result)
        report_dir = tmp_path / f"report_{case}"
        report_dir.mkdir()
        assert_report_rebuilds_results_from_the_saved_line_and_its_machine(result, report_dir, monkeypatch)


def assert_times_ratios_bars_and_plan_facts(case: str, result: dict) -> None:
    assert EXPECTED_KEYS <= set(result), sorted(result)
    assert result["bars"] or case in NO_BAR_CASES, "every measured case has at least one bar"
    for bar in result["bars"]:
        assert BAR_KEYS <= set(bar)
        assert result["ratios"][bar["ratio_name"]] == bar["ratio"]
        numerator, denominator = bar["ratio_name"].split("/")
        medians = result["median_seconds"]
        assert medians[numerator] > 0 and medians[denominator] > 0
        # The ratio is rounded to 3 decimals, its pass decided before rounding: a ratio that rounds
        # to the limit itself may go either way.
        if bar["ratio"] != bar["limit"]:
            assert bar["pass"] == (bar["ratio"] < bar["limit"]), bar
    if case in NO_PLAN_CASES:
        assert result["statements"] and all(count > 0 for count in result["statements"].values()), result
    else:
        assert result["plan"], f"{case}: no plan facts"
    for facts in result["plan"].values():
        assert PLAN_KEYS <= set(facts)
        assert facts["executions"] > 0
    # Variants that must produce the same table did (joinery vs baseline, incremental vs full), and
    # that is a check of the case, so a wrong result is never "met".
    agreements = [check for check in result["checks"] if check.get("kind") == "agreement"]
    assert len(agreements) == 1, f"{case}: agreement checks {agreements}"
    assert agreements[0]["pass"] is True, f"{case}: {agreements[0]}"
    assert result["pass"] == all(item["pass"] for item in [*result["bars"], *result["checks"]])


def assert_demo_built_and_tested_one_capability(demo: dict) -> None:
    assert demo["exit_code"] == 0 and demo["median_seconds"]["demo"] > 0, demo
    # Seeds and models succeed, dbt tests pass (among them equal_rows against expected seeds with
    # NULLs, loaded by joinery's seed loader), and nothing else.
    assert set(demo["nodes"]) == {"success", "pass"}, demo["nodes"]
    assert demo["nodes"]["success"] >= 10 and demo["nodes"]["pass"] >= 10, demo["nodes"]


def assert_report_rebuilds_results_from_the_saved_line_and_its_machine(result: dict, tmp_path, monkeypatch) -> None:
    # `--all` prints its machine facts after the cases; `--report` must render those, not this machine's.
    import benchmarks.__main__ as cli

    machine = {"cores": "64", "memory": "512 GiB", "spark master": "yarn", "git commit": "abc1234", "repetitions": 5}
    saved = tmp_path / "run.jsonl"
    saved.write_text("\n".join(json.dumps(line) for line in [result, {"machine": machine}]) + "\n")
    monkeypatch.setattr(cli, "RESULTS_PATH", tmp_path / "RESULTS.md")
    assert cli.main(["--report", str(saved)]) == 0
    text = (tmp_path / "RESULTS.md").read_text()
    for row in ("| cores | 64 |", "| spark master | yarn |", "| git commit | abc1234 |", "| repetitions | 5 |"):
        assert row in text, text[:2000]
    assert f"| {result['case']} |" in text
    # RESULTS.md's own raw lines carry the machine too, so the file alone rebuilds itself unchanged
    # (the way to regenerate it after editing optimizations.md).
    monkeypatch.setattr(cli, "RESULTS_PATH", tmp_path / "RESULTS_again.md")
    assert cli.main(["--report", str(tmp_path / "RESULTS.md")]) == 0
    assert (tmp_path / "RESULTS_again.md").read_text() == text
