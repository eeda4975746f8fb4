"""`make demo`: build every seed, example model and test of joinery on the embedded Spark.

Runs `dbt build` on the `local` target (Spark inside this process, no server), with the build
summary hook on, then prints one closing line. Exit code is dbt's. Arguments are passed to
`dbt build` (e.g. `--select path:models/examples/splitter`); the benchmark smoke test runs it so.

The upsert examples build on iceberg here (var upsert_file_format; parquet by default), so the demo
has tables of every format: Iceberg tables in the `iceberg` catalog, Delta ones (fk_join,
collect_join), parquet and Hive Avro.
"""

from __future__ import annotations

import os
import sys
import time

from harness.dbt import REPO_ROOT, DbtProject
from harness.java import JavaMissing, require_java

# The vars of the demo's build: the build summary, and the upsert examples on iceberg. The suite's
# build of every example (python_tests/test_examples_build.py) uses the same.
DEMO_VARS = {"joinery_build_summary": True, "upsert_file_format": "iceberg"}


def main(argv: list[str] | None = None) -> int:
    try:
        require_java()
    except JavaMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    os.environ.setdefault("JOINERY_SPARK_DIR", str(REPO_ROOT / ".spark" / "local"))
    project = DbtProject(target="local")
    started = time.monotonic()
    selection = sys.argv[1:] if argv is None else argv
    result = project.invoke("build", *selection, vars=DEMO_VARS, expect_success=None)
    elapsed = time.monotonic() - started
    counts: dict[str, int] = {}
    for node in result.nodes.values():
        counts[node["status"]] = counts.get(node["status"], 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    print(f"\njoinery demo: dbt build on the embedded Spark finished in {elapsed:.0f}s: {summary or 'nothing ran'}")
    print(f"tables: {os.environ['JOINERY_SPARK_DIR']}/warehouse/joinery.db/")
    print(f"iceberg tables: {os.environ['JOINERY_SPARK_DIR']}/iceberg/ (catalog `iceberg`)")
    if not result.success:
        print(result.messages, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
