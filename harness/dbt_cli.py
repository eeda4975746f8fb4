"""`scripts/dbt ...`: the dbt command line with joinery's dbt-spark fixes applied (harness/dbt.py)."""

from __future__ import annotations

import sys

from harness.dbt import apply_dbt_spark_fixes
from harness.java import use_spark_java_options
from harness.table_formats import use_jars_dir


def main() -> None:
    apply_dbt_spark_fixes()
    use_spark_java_options()
    use_jars_dir()
    from dbt.cli.main import cli

    cli()


if __name__ == "__main__":
    sys.exit(main())
