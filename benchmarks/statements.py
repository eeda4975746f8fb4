"""What a dbt-run case's steps sent and committed, per model run: the statements dbt sent (one
`On <node>:` line each) and the commits the model's table received (Context.dbt_step counts both),
as checks against the bars of joinery_upsert v2 and as RESULTS.md's table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.core import Measurement

# An incremental run on delta or iceberg sends at most this many statements more than dbt-spark's
# `incremental` merge of the same model, and commits at most once.
EXTRA_STATEMENTS = 2
COMMITS_PER_RUN = 1


def count_checks(
    measurements: dict[str, Measurement],
    formats: list[str],
    widths: tuple[str, ...],
    joinery_models: list[str],
    merge_models: list[str],
    variant_name: Callable[[str, str, str], str],
) -> list[dict[str, Any]]:
    """One check for the statements and one for the commits: for each format and width, each joinery
    model's median per incremental run against its dbt-spark merge twin (`merge_models`, paired by
    position)."""
    statements, commits = {}, {}
    for f in formats:
        for width in widths:
            ours = measurements.get(variant_name(f, width, "incremental"))
            theirs = measurements.get(variant_name(f, width, "dbt_merge"))
            if not ours or not theirs or not ours.counts or not theirs.counts:
                continue
            mine, other = ours.count_medians(), theirs.count_medians()
            for model, twin in zip(joinery_models, merge_models, strict=True):
                key = f"{variant_name(f, width, 'incremental')}.{model}"
                statements[key] = {
                    "joinery": mine[model]["statements"],
                    "dbt_merge": other[twin]["statements"],
                    "pass": mine[model]["statements"] <= other[twin]["statements"] + EXTRA_STATEMENTS,
                }
                commits[key] = {"joinery": mine[model]["commits"], "pass": mine[model]["commits"] <= COMMITS_PER_RUN}
    return [
        {
            "name": f"statements_per_incremental_run <= dbt_merge + {EXTRA_STATEMENTS}",
            "kind": "count",
            "value": statements,
            "pass": all(entry["pass"] for entry in statements.values()),
        },
        {
            "name": f"commits_per_incremental_run <= {COMMITS_PER_RUN}",
            "kind": "count",
            "value": commits,
            "pass": all(entry["pass"] for entry in commits.values()),
        },
    ]


def count_table(results: list[dict[str, Any]]) -> list[str]:
    """RESULTS.md's table of statements, commits and files touched per model run (medians over the timed
    runs; files on delta and iceberg, where a run committed)."""
    lines = [
        "| case | variant | model | statements | commits | files touched / files |",
        "|---|---|---|---|---|---|",
    ]
    for result in results:
        for variant, models in result.get("counts", {}).items():
            for model, counts in models.items():
                files = f"{counts['files_touched']:g} / {counts['files']:g}" if "files" in counts else ""
                lines.append(
                    f"| {result['case']} | {variant} | {model} | {counts['statements']:g} | {counts['commits']:g} "
                    f"| {files} |"
                )
    return lines if len(lines) > 2 else []
