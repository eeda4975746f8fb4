"""Tooling around the joinery dbt project: Java check, local Spark Thrift server, dbt runner."""

from pathlib import Path

# The repository's root: every module of harness/, benchmarks/ and python_tests/ finds files from it.
REPO_ROOT = Path(__file__).resolve().parent.parent
