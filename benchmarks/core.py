"""What every benchmark case shares: the run context, alternating timed repetitions, bars, results.

A case is a module in benchmarks/cases/ with NAME, TITLE, DEFAULT_ROWS, TINY_ROWS and
`run(ctx) -> dict`. It creates its data with Spark, defines its variants (joinery, the baseline,
the floor), calls `ctx.measure(...)` and returns `ctx.result(...)`, one JSON object.
"""

from __future__ import annotations

import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.formats import DEFAULT_FORMATS
from benchmarks.spark import PlanFacts, PlanRecorder
from harness.table_formats import ICEBERG_CATALOG

SCHEMA = "bench"


def log(message: str) -> None:
    """Progress on stderr: stdout carries only the JSON lines."""
    print(f"[benchmarks {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def empty_schema(spark) -> None:
    """Drop schema `bench` with everything in it, files included, and create it again: each case starts
    from an empty schema. dbt-spark lists every table of a model's schema at the start of each
    invocation (`show table extended`), so other cases' tables, or a previous run's, would add to the
    fixed cost of the dbt-run cases (measured: 1.7-2.7 s for 91 tables, 0.3-0.4 s for 5) and make a
    case's result depend on what ran before it. `bench` lives in the work folder's own metastore; the
    folder is deleted through Hadoop's file system, which also holds the version directories of
    joinery_upsert tables (external tables, whose files `drop database ... cascade` leaves behind)."""
    jvm = spark.sparkContext._jvm
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    if spark.catalog.databaseExists(SCHEMA):
        rows = spark.sql(f"describe database {SCHEMA}").collect()
        location = next(row[1] for row in rows if row[0].lower() == "location")
        spark.sql(f"drop database {SCHEMA} cascade")
        path = jvm.org.apache.hadoop.fs.Path(location)
        path.getFileSystem(hadoop_conf).delete(path, True)
    spark.sql(f"create database {SCHEMA}")
    # The iceberg tables' namespace `bench`: a Hadoop catalog's namespace is a folder of its
    # warehouse, holding its tables' metadata and data; deleting it drops them all.
    warehouse = spark.conf.get(f"spark.sql.catalog.{ICEBERG_CATALOG}.warehouse", None)
    if warehouse:
        path = jvm.org.apache.hadoop.fs.Path(f"{warehouse}/{SCHEMA}")
        path.getFileSystem(hadoop_conf).delete(path, True)


@dataclass
class Variant:
    """One way of producing a case's output. `prepare` runs untimed before every repetition
    (dropping the previous output, landing a new batch); `run` is what is timed."""

    name: str
    run: Callable[[], Any]
    prepare: Callable[[], Any] | None = None


@dataclass
class Measurement:
    name: str
    seconds: list[float] = field(default_factory=list)
    facts: PlanFacts | None = None
    # Per timed dbt step: {model: {"statements": n, "commits": n}} (Context.dbt_step).
    counts: list[dict[str, dict[str, int]]] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def count_medians(self) -> dict[str, dict[str, float]]:
        """Per model, the median statements and commits of one run over the timed steps, and where they
        were counted the files its commit touched and the files its table has."""
        models = {model for step in self.counts for model in step}
        found = {}
        for model in sorted(models):
            steps = [step[model] for step in self.counts if model in step]
            found[model] = {
                kind: statistics.median(step[kind] for step in steps if kind in step)
                for kind in ("statements", "commits", "files_touched", "files")
                if any(kind in step for step in steps)
            }
        return found


# A statement that changes a parquet table's definition in the metastore: its commits (delta and
# iceberg tables count new table versions instead).
METASTORE_WRITE = re.compile(r"^\s*(alter\s+table|create\s+(or\s+replace\s+)?table|drop\s+table|insert\s)", re.I)


def round_orders(names: list[str], rounds: int, seed: int = 20261128) -> list[list[str]]:
    """The order of the variants in each round: a seeded shuffle per round, so that no variant
    always runs first or always right after the same other one (whose caches, garbage or files it
    would inherit), and a rerun uses the same orders."""
    generator = random.Random(f"{seed}:{','.join(names)}")
    orders = []
    for _ in range(rounds):
        order = list(names)
        generator.shuffle(order)
        orders.append(order)
    return orders


def agreement(name: str, outputs: dict[str, Any]) -> dict[str, Any]:
    """The check that the variants which must produce the same output did (fingerprints, counts per
    variant name): a case whose result is wrong is not met, however fast it ran."""
    values = list(outputs.values())
    return {
        "name": name,
        "kind": "agreement",
        "value": {variant: _jsonable(output) for variant, output in outputs.items()},
        "pass": all(value == values[0] for value in values[1:]),
    }


def agreement_groups(name: str, groups: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One agreement check over several groups of variants: each group's outputs must be equal (a case
    keeps one agreement check, whatever number of things it compares)."""
    checks = {group: agreement(group, outputs) for group, outputs in groups.items()}
    return {
        "name": name,
        "kind": "agreement",
        "value": {group: check["value"] for group, check in checks.items()},
        "pass": all(check["pass"] for check in checks.values()),
    }


def _jsonable(output: Any) -> Any:
    # Fingerprints are (rows, hash sum) tuples; JSON has lists.
    if isinstance(output, dict):
        return {key: _jsonable(value) for key, value in output.items()}
    return list(output) if isinstance(output, tuple) else output


@dataclass
class Bar:
    """A target: median(numerator) / median(denominator) <= limit."""

    name: str
    numerator: str
    denominator: str
    limit: float


class DbtStep:
    """One `dbt run` of some models (Context.dbt_step), callable as a timed step. Around it, `versions`
    and `counts` read each model's table: statements are dbt's own count (one `On <node>:` line per
    statement, its SQLQuery events); commits are new table versions on delta (history) and iceberg
    (snapshots), and on parquet the statements that change the table's metastore definition."""

    def __init__(self, ctx: Context, models: tuple[str, ...], table_format: str, width: str, full_refresh: bool):
        self.ctx, self.models, self.table_format, self.width, self.full_refresh = (
            ctx,
            models,
            table_format,
            width,
            full_refresh,
        )

    def __call__(self) -> None:
        self.ctx.dbt.run(*self.models, full_refresh=self.full_refresh, table_format=self.table_format, width=self.width)

    def versions(self) -> dict[str, int]:
        from benchmarks.dbt_bench import relation

        return {
            model: self.ctx.table_version(relation(model, self.table_format, self.width), self.table_format)
            for model in self.models
        }

    def counts(self, before: dict[str, int]) -> dict[str, dict[str, int]]:
        from benchmarks.dbt_bench import relation

        result = self.ctx.dbt.last_result
        after = self.versions()
        found = {}
        for model in self.models:
            statements = [sql for node, sql in result.statements if node.split(".")[-1] == model]
            commits = (
                sum(1 for sql in statements if METASTORE_WRITE.match(sql))
                if self.table_format not in ("delta", "iceberg")
                else after[model] - before[model]
            )
            found[model] = {"statements": len(statements), "commits": commits}
            if self.table_format in ("delta", "iceberg") and commits > 0:
                found[model].update(
                    self.ctx.files_touched(relation(model, self.table_format, self.width), self.table_format)
                )
        return found


class Context:
    """The run of one case: the shared Spark session, the bench dbt project, sizes and repetitions."""

    def __init__(
        self,
        spark,
        dbt,
        rows: int,
        tiny: bool,
        repeats: int,
        work_dir: Path,
        formats: tuple[str, ...] = DEFAULT_FORMATS,
    ):
        self.spark = spark
        self.formats = formats
        self.dbt = dbt
        self.rows = rows
        self.tiny = tiny
        self.repeats = repeats
        self.work_dir = work_dir
        self.recorder = PlanRecorder(spark)

    # --- SQL helpers -------------------------------------------------------------------------
    def sql(self, statement: str):
        return self.spark.sql(statement)

    def drop(self, *tables: str) -> None:
        for table in tables:
            self.spark.sql(f"drop table if exists {SCHEMA}.{table}")
            self.spark.sql(f"drop view if exists {SCHEMA}.{table}")

    def ctas(self, table: str, select: str, partitioned_by: list[str] | None = None) -> None:
        """Write a SELECT as a new parquet table: the common output step of joinery and baselines."""
        self.drop(table)
        partitioning = f" partitioned by ({', '.join(partitioned_by)})" if partitioned_by else ""
        self.spark.sql(f"create table {SCHEMA}.{table} using parquet{partitioning} as {select}")

    def consume(self, select: str) -> None:
        """Read every row and column of a SELECT without writing it (Spark's `noop` sink)."""
        self.spark.sql(select).write.format("noop").mode("overwrite").save()

    def count(self, table: str) -> int:
        return self.spark.sql(f"select count(*) from {SCHEMA}.{table}").collect()[0][0]

    def fingerprint(self, table: str, columns: list[str]) -> tuple[int, int]:
        """Row count and an order-independent hash sum over `columns`: equal outputs, equal fingerprints."""
        return self.fingerprint_of(f"{SCHEMA}.{table}", columns)

    def fingerprint_of(self, source: str, columns: list[str]) -> tuple[int, int]:
        """`fingerprint` of a table name or a parenthesized SELECT; `columns` may be expressions."""
        column_list = ", ".join(columns)
        row = self.spark.sql(
            f"select count(*), coalesce(sum(cast(xxhash64({column_list}) as decimal(38, 0))), 0) from {source}"
        ).collect()[0]
        return int(row[0]), int(row[1])

    def table_version(self, table: str, table_format: str) -> int:
        """A delta table's newest version, an iceberg table's number of snapshots less one; -1 when the
        table does not exist (0 for parquet: its commits are counted from statements)."""
        if table_format not in ("delta", "iceberg"):
            return 0
        try:
            if table_format == "delta":
                return int(self.spark.sql(f"describe history {table} limit 1").collect()[0]["version"])
            return int(self.spark.sql(f"select count(*) from {table}.snapshots").collect()[0][0]) - 1
        except Exception as error:  # noqa: BLE001 - a table not built yet
            if "TABLE_OR_VIEW_NOT_FOUND" in str(error) or "not a Delta table" in str(error):
                return -1
            raise

    def files_touched(self, table: str, table_format: str) -> dict[str, int]:
        """The data files the table's newest commit touched (delta: given a deletion vector or removed;
        iceberg: given position deletes, one delete file per data file) and the data files it has."""
        if table_format == "delta":
            metrics = self.spark.sql(f"describe history {table} limit 1").collect()[0]["operationMetrics"] or {}
            touched = sum(
                int(metrics.get(name, 0))
                for name in (
                    "numTargetDeletionVectorsAdded",
                    "numTargetDeletionVectorsUpdated",
                    "numTargetFilesRemoved",
                )
            )
            files = int(self.spark.sql(f"describe detail {table}").collect()[0]["numFiles"])
            return {"files_touched": touched, "files": files}
        summary = self.spark.sql(f"select summary from {table}.snapshots order by committed_at desc limit 1").collect()[
            0
        ][0]
        return {
            "files_touched": int(summary.get("added-position-delete-files", 0))
            + int(summary.get("removed-data-files", 0)),
            "files": int(summary.get("total-data-files", 0)),
        }

    def plan(self, select: str) -> str:
        return "\n".join(row[0] for row in self.spark.sql(f"explain formatted {select}").collect())

    def measured(self, options: tuple) -> tuple:
        """The options of a dimension a run measures (widths, variants, poll intervals): the first only
        at `--rows tiny` (the smoke test), where the others run the same models again with another
        var, batch or profile and timings mean nothing."""
        return options[:1] if self.tiny else options

    # --- timing ------------------------------------------------------------------------------
    def measure(self, variants: list[Variant], repeats: int | None = None) -> dict[str, Measurement]:
        """Run the variants alternately, `repeats` rounds; plan facts from the last round. Round r starts
        at variant r mod n (A B C, B C A, C A B, ...), so that no variant always runs first, or always
        right after the same other one (whose caches, garbage or files it would inherit).

        At full size one untimed warm-up round (A B C) comes first: the first run of a code path pays
        the JVM's compilation and Spark's codegen, which would otherwise land on whichever variant runs
        first (seen: 11 s, then 8 s, then 5 s for the same statement)."""
        rounds = repeats or self.repeats
        results = {variant.name: Measurement(variant.name) for variant in variants}
        if not self.tiny:
            for variant in variants:
                if variant.prepare:
                    variant.prepare()
                log(f"  {variant.name}: {self.timed(variant.run):.2f}s (warm-up, not counted)")
        by_name = {variant.name: variant for variant in variants}
        for round_index, order in enumerate(round_orders(list(by_name), rounds)):
            for variant in (by_name[name] for name in order):
                if variant.prepare:
                    variant.prepare()
                elapsed = self.timed(variant.run, results[variant.name], keep_facts=round_index == rounds - 1)
                log(f"  {variant.name}: {elapsed:.2f}s (round {round_index + 1}/{rounds})")
        return results

    def timed(self, step: Callable[[], Any], measurement: Measurement | None = None, keep_facts: bool = False) -> float:
        """Run `step` and return its seconds; with a measurement (none: a warm-up) append them, the
        step's statement and commit counts when it is a dbt_step, and its plan facts if `keep_facts`."""
        mark = self.recorder.mark()
        before = step.versions() if isinstance(step, DbtStep) else None
        started = time.perf_counter()
        step()
        seconds = time.perf_counter() - started
        if measurement is not None:
            measurement.seconds.append(seconds)
            if before is not None:
                measurement.counts.append(step.counts(before))
            if keep_facts:
                measurement.facts = self.recorder.facts_since(mark)
        return seconds

    def timed_alternating(
        self, steps: list[tuple[str, Any]], measurements: dict[str, Measurement], round_index: int, label: str
    ) -> None:
        """Time `steps` ([(variant, step)]) into `measurements`, in order on even rounds and reversed on
        odd ones, so that neither always runs first; plan facts on the last round."""
        ordered = list(reversed(steps)) if round_index % 2 else steps
        for variant, step in ordered:
            measurement = measurements.setdefault(variant, Measurement(variant))
            seconds = self.timed(step, measurement, keep_facts=round_index == self.repeats - 1)
            log(f"  {variant}: {seconds:.2f}s ({label}round {round_index + 1}/{self.repeats})")

    def dbt_step(self, *models: str, table_format: str, width: str = "narrow", full_refresh: bool = False) -> DbtStep:
        """`dbt run` of `models` as a timed step that also counts, per model, the statements dbt sent
        and the commits its table received."""
        return DbtStep(self, models, table_format, width, full_refresh)

    def result(
        self,
        case: str,
        sizes: dict[str, Any],
        measurements: dict[str, Measurement],
        bars: list[Bar],
        info_ratios: list[tuple[str, str]] = (),
        checks: list[dict[str, Any]] = (),
        repeats: int | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """The case's JSON line. `info_ratios`: more (numerator, denominator) ratios to report, without a
        bar. `checks`: each {"name", "pass", ...}; the case passes only if every bar and check does.
        `repeats`: the rounds, when a round gives a variant more than one sample (fk_join's batches);
        by default the samples of the first variant. `samples` counts each variant's timed samples."""
        medians = {name: round(m.median, 3) for name, m in measurements.items()}
        bar_results = []
        ratios = {}
        for numerator, denominator in info_ratios:
            ratio = measurements[numerator].median / measurements[denominator].median
            ratios[f"{numerator}/{denominator}"] = round(ratio, 3)
        for bar in bars:
            ratio = measurements[bar.numerator].median / measurements[bar.denominator].median
            ratios[f"{bar.numerator}/{bar.denominator}"] = round(ratio, 3)
            bar_results.append(
                {
                    "name": bar.name,
                    "ratio_name": f"{bar.numerator}/{bar.denominator}",
                    "ratio": round(ratio, 3),
                    "limit": bar.limit,
                    "pass": ratio <= bar.limit,
                }
            )
        return {
            "case": case,
            "sizes": sizes,
            "repeats": repeats or (len(next(iter(measurements.values())).seconds) if measurements else 0),
            "samples": {name: len(m.seconds) for name, m in measurements.items()},
            "median_seconds": medians,
            "seconds": {name: [round(s, 3) for s in m.seconds] for name, m in measurements.items()},
            "ratios": ratios,
            "bars": bar_results,
            "checks": list(checks),
            "pass": all(b["pass"] for b in bar_results) and all(c["pass"] for c in checks),
            "plan": {name: m.facts.as_json() for name, m in measurements.items() if m.facts},
            "counts": {name: m.count_medians() for name, m in measurements.items() if m.counts},
            **extra,
        }
