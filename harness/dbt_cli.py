"""`scripts/dbt ...`: the dbt command line with joinery's dbt-spark fixes applied (harness/dbt.py)."""

from __future__ import annotations

import sys

from harness.dbt import apply_dbt_spark_fixes


def main() -> None:
    apply_dbt_spark_fixes()
    from dbt.cli.main import cli

    cli()


if __name__ == "__main__":
    sys.exit(main())
