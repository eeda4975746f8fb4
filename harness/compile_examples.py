"""`make lint`'s compile step: the SQL joinery's macros generate for the example models, for sqlfluff.

joinery's macros read their inputs' columns from Spark, so `dbt compile` needs every seed and model
upstream of an example to exist. On the embedded `local` target (no server) and in a throwaway Spark
folder, `dbt build --empty` creates the seeds (the examples' sources are seeds too) and every model
another model reads, with their columns and no rows (no tests run); then `dbt compile` writes each
model's SQL (the first-run form of incremental models, whose own tables are not built). The models'
SQL is copied to <target path>/sql/ for `make lint`: under `checked/`, and under `pending/` for the
models listed in PENDING, checked with the rules their SQL does not meet yet relaxed
(lint/compiled_pending.sqlfluff).

`python -m harness.compile_examples [TARGET_PATH]` (default target/lint_compile).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from harness.dbt import REPO_ROOT, DbtProject
from harness.java import THROWAWAY_METASTORE, JavaMissing, require_java, short_lived_java_options

DEFAULT_TARGET_PATH = REPO_ROOT / "target" / "lint_compile"
# Models (paths under models/examples/) whose SQL comes from macros being rewritten elsewhere
# (compaction, fk_join, multi_join, upsert, the materialization): their output's self-aliases,
# join condition order and unqualified references are left to that rewrite.
PENDING = (
    "compaction/",
    "fk_join/",
    "multi_join/",
    "upsert/",
    "collect_join/collect_join_puid_attributes_incremental.sql",
)


def compile_examples(target_path: Path) -> Path:
    """Build the examples empty in a temporary Spark folder, compile them, and copy each model's SQL
    into <target_path>/sql/checked or /pending; returns that folder."""
    shutil.rmtree(target_path / "compiled", ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="joinery-lint-") as spark_dir:
        os.environ["JOINERY_SPARK_DIR"] = spark_dir
        os.environ.setdefault("DBT_LOG_PATH", str(target_path / "logs"))
        # The metastore is deleted with the folder: no commit needs to reach the disk.
        os.environ.setdefault("JOINERY_JAVA_OPTIONS", f"{short_lived_java_options()} {THROWAWAY_METASTORE}")
        project = DbtProject(target="local", target_path=target_path, env={"JOINERY_DRIVER_MEMORY": "1g"})
        inputs = ["resource_type:seed", *models_read_by_models(project)]
        tests = ["resource_type:test", "resource_type:unit_test"]
        project.invoke("build", "--empty", "--select", *inputs, "--exclude", *tests)
        result = project.invoke("compile", "--select", "resource_type:model")
    return copy_model_sql(result.nodes, target_path / "sql")


def models_read_by_models(project: DbtProject) -> list[str]:
    """Names of the example models that another model reads: the only models compiling needs built."""
    project.invoke("parse")
    manifest = json.loads((project.target_path / "manifest.json").read_text())
    return sorted(
        manifest["nodes"][parent]["name"]
        for parent, children in manifest["child_map"].items()
        if parent.startswith("model.joinery.") and any(child.startswith("model.") for child in children)
    )


def copy_model_sql(nodes: dict[str, dict], lint_dir: Path) -> Path:
    """Each compiled example model's SQL as <lint_dir>/<checked|pending>/<capability>/<model>.sql."""
    shutil.rmtree(lint_dir, ignore_errors=True)
    models = [node for node_id, node in nodes.items() if node_id.startswith("model.joinery.")]
    if not models:
        raise RuntimeError("dbt compile returned no example model")
    for node in models:
        relative = node["original_file_path"].removeprefix("models/examples/")
        folder = "pending" if relative.startswith(PENDING) else "checked"
        path = lint_dir / folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(node["compiled_code"].strip() + "\n")
    return lint_dir


def main(argv: list[str]) -> int:
    try:
        require_java()
    except JavaMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    target_path = Path(argv[0]).resolve() if argv else DEFAULT_TARGET_PATH
    lint_dir = compile_examples(target_path)
    print(f"compiled SQL of the example models: {lint_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
