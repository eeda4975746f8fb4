"""`scripts/dbt ...`: the dbt command line with joinery's one fix applied (ANSI mode on `local`)."""

from __future__ import annotations

import sys

from harness.dbt import keep_ansi_mode_on


def main() -> None:
    keep_ansi_mode_on()
    from dbt.cli.main import cli

    cli()


if __name__ == "__main__":
    sys.exit(main())
