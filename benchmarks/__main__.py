"""`python -m benchmarks CASE [CASE ...] [--rows N|tiny] [--repeats 3]`, `--all`, `--list`.

Prints one JSON line per case on stdout (everything else goes to stderr). `--all` also writes
benchmarks/RESULTS.md (unless --no-write). benchmarks/README.md explains the cases and how to run
them on a cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

from benchmarks.cases import CASES
from benchmarks.formats import DEFAULT_FORMATS, KNOWN_FORMATS
from harness import REPO_ROOT

RESULTS_PATH = Path(__file__).resolve().parent / "RESULTS.md"
MIN_ALL_REPEATS = 3  # the benchmarks issue: a median of at least 3 alternating repetitions


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help="case names (see --list)")
    parser.add_argument("--all", action="store_true", help="run every case and write benchmarks/RESULTS.md")
    parser.add_argument("--list", action="store_true", help="list the cases with their default sizes")
    parser.add_argument(
        "--rows",
        default=None,
        help="rows of each case's main input (see --list), or `tiny` for the smoke-test sizes",
    )
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every case's default size")
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="alternating repetitions per variant (median); default: the case's own, 5 for the cases of a few"
        f" seconds a repetition, 3 for the dbt-run cases (see --list). --all needs at least {MIN_ALL_REPEATS} (the"
        " benchmarks issue's minimum; --rows tiny excepted, the smoke test's timings mean nothing); a run of"
        " named cases may use fewer, e.g. 1 to try a change",
    )
    parser.add_argument(
        "--formats",
        default=",".join(DEFAULT_FORMATS),
        help="table formats the dbt-run cases (fk_join, compaction_incremental) run side by side, comma-separated"
        f" (default {','.join(DEFAULT_FORMATS)}; known: {', '.join(KNOWN_FORMATS)})",
    )
    parser.add_argument("--no-write", action="store_true", help="with --all: do not write RESULTS.md")
    parser.add_argument("--note", action="append", default=[], help="a line for RESULTS.md's notes")
    parser.add_argument(
        "--report",
        metavar="JSONL",
        default=None,
        help="only write RESULTS.md from saved JSON lines (stdout of earlier runs), without running Spark",
    )
    parser.add_argument("--master", default=None, help="Spark master (default: spark-submit's, else local[*])")
    parser.add_argument(
        "--driver-memory",
        default=os.environ.get("JOINERY_BENCH_DRIVER_MEMORY"),
        help="driver memory (default 3g, 1g with --rows tiny)",
    )
    parser.add_argument(
        "--work-dir",
        default=os.environ.get("JOINERY_BENCH_DIR", str(REPO_ROOT / ".spark" / "bench")),
        help="warehouse, metastore, dbt artifacts and logs of the run (default .spark/bench)",
    )
    args = parser.parse_args(argv)
    args.formats = tuple(name.strip() for name in args.formats.split(",") if name.strip())
    if not args.formats or set(args.formats) - set(KNOWN_FORMATS):
        parser.error(f"--formats {','.join(args.formats)}: expected some of {', '.join(KNOWN_FORMATS)}")
    if args.all and args.repeats is not None and args.repeats < MIN_ALL_REPEATS and args.rows != "tiny":
        parser.error(
            f"--all needs --repeats {MIN_ALL_REPEATS} or more (the benchmarks issue's minimum); "
            f"got {args.repeats}. Fewer repetitions: name the cases instead of --all"
        )
    if args.list or args.all or args.report:
        return args
    if not args.cases:
        parser.error("name a case, or use --all or --list")
    unknown = [name for name in args.cases if name not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; cases: {', '.join(CASES)}")
    return args


def case_rows(case, args: argparse.Namespace) -> tuple[int, bool]:
    if args.rows == "tiny":
        return case.TINY_ROWS, True
    if args.rows is not None:
        return int(args.rows), False
    return int(case.DEFAULT_ROWS * args.scale), False


def case_repeats(case) -> int:
    """A case's default repetitions: more for the short cases, whose medians the noise of a loaded
    2-core machine moves by 10% at 3 repetitions; 3 where one repetition is several dbt runs."""
    return getattr(case, "DEFAULT_REPEATS", 3)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.list:
        for name, case in CASES.items():
            print(f"{name:24} default --rows {case.DEFAULT_ROWS:>9,} --repeats {case_repeats(case)}  {case.TITLE}")
        return 0

    if args.report:
        from benchmarks.machine import machine_facts
        from benchmarks.report import write_results

        records = [json.loads(line) for line in Path(args.report).read_text().splitlines() if line.startswith("{")]
        results = [record for record in records if "case" in record]
        # An `--all` run prints its machine facts as its last line; older saved runs lack it, and
        # then this machine's facts (without Spark's) stand in.
        saved = [record["machine"] for record in records if "machine" in record]
        machine = saved[-1] if saved else machine_facts(None, args.driver_memory or "3g")
        if saved and "repetitions" in machine:
            args.repeats = machine.pop("repetitions")
        write_results(RESULTS_PATH, results, machine, args)
        print(f"wrote {RESULTS_PATH}", file=sys.stderr)
        return 0

    names = list(CASES) if args.all else args.cases
    tiny = args.rows == "tiny"
    work_dir = Path(args.work_dir).resolve()
    os.environ.setdefault("DBT_PROFILES_DIR", str(REPO_ROOT / "profiles"))

    from benchmarks.core import Context, empty_schema, log
    from benchmarks.dbt_bench import BenchDbt
    from benchmarks.machine import git_commit, machine_facts
    from benchmarks.spark import start_session

    memory = args.driver_memory or ("1g" if tiny else "3g")
    log(f"starting Spark (driver memory {memory}, warehouse {work_dir / 'spark'})")
    spark = start_session(work_dir / "spark", memory, args.master)
    spark.sparkContext.setLogLevel("ERROR")
    dbt = BenchDbt(work_dir)

    results = []
    failed = False
    for name in names:
        case = CASES[name]
        rows, case_tiny = case_rows(case, args)
        repeats = args.repeats or case_repeats(case)
        ctx = Context(spark, dbt, rows=rows, tiny=case_tiny, repeats=repeats, work_dir=work_dir, formats=args.formats)
        started = time.perf_counter()
        log(f"{name}: rows={rows:,} repeats={repeats}")
        try:
            empty_schema(spark)
            result = case.run(ctx)
        except Exception as exc:  # noqa: BLE001 - one broken case must not hide the others' results
            traceback.print_exc(file=sys.stderr)
            result = {"case": name, "error": f"{type(exc).__name__}: {str(exc)[:2000]}", "pass": False}
            failed = True
        result["wall_seconds"] = round(time.perf_counter() - started, 1)
        result["commit"] = git_commit()
        results.append(result)
        print(json.dumps(result, sort_keys=False), flush=True)

    if args.all and not args.no_write:
        from benchmarks.report import write_results

        machine = machine_facts(spark, memory)
        # Saved with the results, so `--report` can rebuild RESULTS.md from stdout alone.
        print(json.dumps({"machine": {**machine, "repetitions": args.repeats or "per case"}}), flush=True)
        write_results(RESULTS_PATH, results, machine, args)
        log(f"wrote {RESULTS_PATH}")
    log("stopping Spark")
    spark.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
