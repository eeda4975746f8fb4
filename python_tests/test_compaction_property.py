"""Property: after every run of a sequence of batches, the incremental compaction (joinery_upsert, one
run per batch) equals a full rebuild and equals the plain-Python reference (a dict of latest
versions), its tombstones are the reference's deleted keys, the changes the run applied are the
reference's difference between the states before and after it, and the run took the path it must.

120 histories are drawn at once from a random source seeded by Hypothesis (derandomized, so CI sees
the same data every time); each history owns a disjoint range of keys inside one dataset, so one
sequence of dbt runs checks them all. The ten runs (RUNS), each one dbt invocation of the
incremental model and of the full rebuild (`compaction_property_full`, a plain table):
- run 0: the first snapshot and batch 0, a full build (--full-refresh);
- runs 1-3, 5-6, 8: a delta batch applied to the table ("apply the new delta rows");
- run 4: a new full snapshot, landed with batch 4 and stamped with its loaded_at (so batch 4 is not
  superseded by it): a rebase ("a new snapshot: full compaction compared with the table");
- run 7: a pull of older versions, stamped after every batch: a new pull, so a rebase, which
  supersedes every delta row landed before it;
- run 9: no new data: the delta path, with nothing to change.
The path comes from the line `_compaction_incremental_sql` logs on every incremental run, the full
build from joinery_upsert's summary. A pull stamped before the newest delta batch the table holds is
not taken for new (docs/compaction.md, "New snapshots"; test_compaction.py shows it and its remedy,
--full-refresh), so it is not generated here: the full rebuild would take it and the table not.

After every run, compared as multisets (a doubled row counts twice): the table, the full rebuild and
the reference; the tombstone companion (`<table>__joinery_tombstones`) and the reference's keys whose
winning version is a delete, with that version; and the run's change figures against the reference's
states before (p) and after (c) the run: inserted = keys live in c only, updated = keys live in both
whose row differs, deleted = keys live in p only, and tombstone-only = keys live in neither whose
tombstone was added, changed or cleared (compact sends those as delete markers of keys the table does
not hold, which record or clear the tombstone and change no row). What each format reports:
- parquet: `<i> inserted, <u> updated, <d> deleted` counted on the written version (a delete
  marker of a key the table lacks counts nowhere); a run whose changes are only such markers says
  `<t> tombstones changed, table left unchanged`, a run with none `no changed rows`;
- delta: the MERGE's own figures, `<i> inserted, <u> updated, <d> deleted`, also on a run with no
  changes (its MERGE runs and commits nothing); a matched row equal to its change would not count as
  updated (skip_unchanged), a marker of an absent key counts nowhere;
- iceberg: its MERGE returns no figures, so the preflight's: `<n> changed rows (<m> deletes)`, counted
  on the changed rows before the MERGE: n = i + u + d + t, m = d + t (inserted and updated cannot be
  told apart there); a run with none sends no MERGE and says `no changed rows`.
All three are asserted exactly. The exact parquet and iceberg figures also show that compact never
sends a row equal to the stored one: it would count as updated there, where delta's skip_unchanged
would hide it. The model stores loaded_at, so a re-publish of an unchanged row (same value and ts,
a later batch) moves the row's loaded_at: it is an update in the reference and in every figure.

Generated: versions with NULL, equal and out-of-order timestamps, duplicate keys within a batch and
across the two delta tables, deletes (winning and losing), versions older than a delete of their key
arriving in a later batch than the delete (the tombstones keep such a key deleted), re-inserts after
a delete, re-publishes of an unchanged row, keys missing from a new snapshot, deletes of keys the
table does not hold. The generators' coverage over the whole set of histories is counted against the
reference on the delta runs and asserted, at least MIN_COVERAGE of each (COVERAGE names them); the
figures are printed.

The model runs on parquet, delta and iceberg (the var compaction_file_format), 120 histories on each:
the time is the sequence of dbt runs, one per format, not the number of histories. On iceberg the
incremental model and its tombstones land in the `iceberg` catalog (namespace
`iceberg.<models schema>`), the full rebuild (parquet) and the sources stay in spark_catalog.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from harness.sql import sql_literal
from python_tests.compaction_reference import compact_reference

SCHEMA = "test_compaction_property"
HISTORIES = 120
KEYS_PER_HISTORY = 3
COLUMNS = ["key", "value", "ts", "loaded_at", "is_deleted"]
SNAPSHOT_COLUMNS = ["key", "value", "ts", "loaded_at"]
DELTA_COLUMNS = ["key", "value", "ts", "is_deleted", "loaded_at"]
TYPES = {"key": "int", "value": "string", "ts": "timestamp", "loaded_at": "timestamp", "is_deleted": "boolean"}
BASE = datetime(2024, 1, 1)
FIRST_SNAPSHOT_LOADED = "2024-01-31 00:00:00"
INCREMENTAL = "compaction_property_incremental"
FULL = "compaction_property_full"
# (the path the run must take, the snapshot landed before it, whether a delta batch lands)
RUNS = [
    ("full", "first", True),
    ("apply", None, True),
    ("apply", None, True),
    ("apply", None, True),
    ("rebase", "new", True),
    ("apply", None, True),
    ("apply", None, True),
    ("rebase", "stale", False),
    ("apply", None, True),
    ("apply", None, False),
]
# Each snapshot's values and timestamps (hours after BASE): the stale pull holds older versions.
SNAPSHOTS = {"first": ("st", [None, 0, 1, 2, 3]), "new": ("nm", [None, 3, 4, 5, 6, 7]), "stale": ("pq", [None, 0, 1])}
PATH_LINES = {
    "apply": "apply the new delta rows",
    "rebase": "a new snapshot: full compaction compared with the table",
}
COVERAGE = [
    "late versions after a delete",
    "deletes followed by a re-insert",
    "equal ts ties within a batch",
    "equal ts ties across batches",
    "re-publishes of an unchanged row",
]
MIN_COVERAGE = 20


def loaded(run: int) -> str:
    """The loaded_at of run `run`'s batch and snapshot (the first snapshot is stamped before it)."""
    return (datetime(2024, 2, 1) + timedelta(days=run)).strftime("%Y-%m-%d %H:%M:%S")


def timestamp(hours: int | None) -> str | None:
    return None if hours is None else (BASE + timedelta(hours=hours)).strftime("%Y-%m-%d %H:%M:%S")


def draw_history(rng) -> dict:
    """One history: per run, the snapshot landed before it ({key: (value, ts)}) and its batch of
    delta versions. Some versions re-publish the key's last live version drawn, some take the key
    and ts of an earlier version of the same batch (a tie)."""
    last_live: dict[int, tuple] = {}
    snapshots, batches = {}, {}
    for run, (_path, snapshot, has_batch) in enumerate(RUNS):
        if snapshot:
            values, stamps = SNAPSHOTS[snapshot]
            keys = rng.sample(range(KEYS_PER_HISTORY), rng.randint(0, KEYS_PER_HISTORY))
            snapshots[run] = {key: (rng.choice(values), rng.choice(stamps)) for key in keys}
            last_live.update(snapshots[run])
        batch = []
        for _ in range(rng.randint(0, 4) if has_batch else 0):
            draw = rng.random()
            key = rng.randrange(KEYS_PER_HISTORY)
            value, ts = rng.choice(["a", "b", "c", None]), rng.choice([None, *range(max(0, run - 1), run + 4)])
            deleted = rng.random() < 0.3
            if draw < 0.2 and key in last_live:
                (value, ts), deleted = last_live[key], False
            elif draw < 0.35 and batch:
                key, ts = batch[-1]["key"], batch[-1]["ts"]
            batch.append({"key": key, "value": value, "ts": ts, "is_deleted": deleted, "delta": rng.choice([1, 2])})
            if not deleted:
                last_live[key] = (value, ts)
        batches[run] = batch
    return {"snapshots": snapshots, "batches": batches}


def landed(histories: list[dict]) -> list[dict]:
    """Per run, the table rows landed before it: the snapshot that replaces the previous one (None
    when it keeps it) and the rows appended to each delta table."""
    runs = []
    for run, (_path, snapshot, _has_batch) in enumerate(RUNS):
        stamp = FIRST_SNAPSHOT_LOADED if run == 0 else loaded(run)
        rows = {"snapshot": [] if snapshot else None, 1: [], 2: []}
        for number, drawn in enumerate(histories):
            offset = number * KEYS_PER_HISTORY
            for key, (value, ts) in drawn["snapshots"].get(run, {}).items():
                rows["snapshot"].append({"key": offset + key, "value": value, "ts": timestamp(ts), "loaded_at": stamp})
            for version in drawn["batches"][run]:
                rows[version["delta"]].append(
                    {
                        "key": offset + version["key"],
                        "value": version["value"],
                        "ts": timestamp(version["ts"]),
                        "is_deleted": version["is_deleted"],
                        "loaded_at": loaded(run),
                    }
                )
        runs.append(rows)
    return runs


def reference_states(runs: list[dict]) -> list[dict]:
    """After each run, the reference's winning version of every key ({key: row}, deletes included)
    over the snapshot and delta rows landed so far."""
    states, snapshot, deltas = [], [], {1: [], 2: []}
    for rows in runs:
        snapshot = snapshot if rows["snapshot"] is None else rows["snapshot"]
        for delta in (1, 2):
            deltas[delta] += rows[delta]
        winners = compact_reference(
            snapshot,
            [deltas[1], deltas[2]],
            ["key"],
            COLUMNS,
            updated_at="ts",
            loaded_at="loaded_at",
            deleted="is_deleted",
            keep_deleted=True,
        )
        states.append({row["key"]: row for row in winners})
    return states


def live(state: dict) -> Counter:
    return Counter(tuple(row[c] for c in COLUMNS) for row in state.values() if not row["is_deleted"])


def tombstones(state: dict) -> Counter:
    return Counter((row["key"], row["ts"], row["loaded_at"]) for row in state.values() if row["is_deleted"])


def changes(before: dict, after: dict) -> dict:
    """The reference's difference between two states: keys inserted, updated, deleted, and keys live
    in neither whose tombstone changed."""
    old = {key: row for key, row in before.items() if not row["is_deleted"]}
    new = {key: row for key, row in after.items() if not row["is_deleted"]}
    buried = {key: row for key, row in before.items() if row["is_deleted"]}
    now_buried = {key: row for key, row in after.items() if row["is_deleted"]}
    return {
        "inserted": len(new.keys() - old.keys()),
        "updated": sum(1 for key in new.keys() & old.keys() if new[key] != old[key]),
        "deleted": len(old.keys() - new.keys()),
        "tombstones": sum(
            1
            for key in (buried.keys() | now_buried.keys()) - old.keys() - new.keys()
            if buried.get(key) != now_buried.get(key)
        ),
    }


def older(a: str | None, b: str | None) -> bool:
    """Whether timestamp `a` orders before `b`, NULL lowest."""
    return (a is not None, a or "") < (b is not None, b or "")


def coverage(runs: list[dict], states: list[dict]) -> Counter:
    """How often the histories hold each case of COVERAGE, counted on the runs that apply a delta
    batch to the table against the reference's state before the run."""
    counts = Counter({name: 0 for name in COVERAGE})
    for run, (path, _snapshot, _has_batch) in enumerate(RUNS):
        if path != "apply":
            continue
        before, after = states[run - 1], states[run]
        batch = runs[run][1] + runs[run][2]
        for row in batch:
            previous = before.get(row["key"])
            if previous is None:
                continue
            if previous["is_deleted"] and older(row["ts"], previous["ts"]):
                counts["late versions after a delete"] += 1
            if row["ts"] is not None and row["ts"] == previous["ts"]:
                counts["equal ts ties across batches"] += 1
            if not row["is_deleted"] and not previous["is_deleted"]:
                counts["re-publishes of an unchanged row"] += (row["value"], row["ts"]) == (
                    previous["value"],
                    previous["ts"],
                )
        ties = Counter((row["key"], row["ts"]) for row in batch if row["ts"] is not None)
        counts["equal ts ties within a batch"] += sum(1 for n in ties.values() if n > 1)
        counts["deletes followed by a re-insert"] += sum(
            1 for key, row in after.items() if not row["is_deleted"] and before.get(key, row)["is_deleted"]
        )
    return counts


def insert(spark, table: str, rows: list[dict], columns: list[str], overwrite: bool = False) -> None:
    if not rows:
        if overwrite:
            spark.execute(f"truncate table {SCHEMA}.{table}")
        return
    values = ", ".join("(" + ", ".join(sql_literal(row.get(c)) for c in columns) + ")" for row in rows)
    select = ", ".join(f"cast({c} as {TYPES[c]}) as {c}" for c in columns)
    verb = "insert overwrite" if overwrite else "insert into"
    spark.execute(f"{verb} {SCHEMA}.{table} select {select} from values {values} as v({', '.join(columns)})")


def read(spark, table: str, columns: list[str]) -> Counter:
    """`table`'s rows as a multiset, timestamps as text; a joinery_upsert commit may have changed its
    files since this session read it."""
    spark.execute(f"refresh table {table}")
    select = ", ".join(f"cast({c} as string)" if TYPES[c] == "timestamp" else c for c in columns)
    return Counter(spark.query(f"select {select} from {table}"))


def differences(what: str, got: Counter, want: Counter, histories: list[dict]) -> str:
    """Which histories differ (their keys' rows), and the first one's data and rows."""
    wrong = sorted({row[0] // KEYS_PER_HISTORY for row in (got - want) + (want - got)})
    first = wrong[0]

    def of_first(rows: Counter) -> list:
        return sorted((row for row in rows.elements() if row[0] // KEYS_PER_HISTORY == first), key=str)

    return (
        f"{what} differ in {len(wrong)} histories {wrong[:20]}; history {first} (keys from "
        f"{first * KEYS_PER_HISTORY}): drawn {histories[first]}, got {of_first(got)}, expected {of_first(want)}"
    )


def summary(result, suffix: str) -> str:
    """joinery_upsert's summary line for the model's table (not its tombstones' companion)."""
    lines = [
        match.group(2)
        for _node, message in result.logs
        if (match := re.match(r"joinery_upsert (\S+): (.*)$", message)) and match.group(1).endswith(suffix)
    ]
    assert len(lines) == 1, f"expected one joinery_upsert summary of {suffix}, got {lines}"
    return lines[0]


def expected_summary(file_format: str, counts: dict) -> str:
    """The start of the summary line the run's changes must give (see the module docstring)."""
    i, u, d, t = counts["inserted"], counts["updated"], counts["deleted"], counts["tombstones"]
    if file_format == "delta":
        return f"{i} inserted, {u} updated, {d} deleted (MERGE)"
    if i + u + d + t == 0 or (file_format == "parquet" and i + u + d == 0):
        return f"{t} tombstones changed, table left unchanged" if t else "no changed rows, table left unchanged"
    if file_format == "iceberg":
        return f"{i + u + d + t} changed rows ({d + t} deletes) (MERGE)"
    return f"{i} inserted, {u} updated, {d} deleted;"


# No shrinking: the example is one seed, and another seed is another dataset, not a smaller one
# (shrinking a failure ran more than five minutes of dbt runs).
@pytest.mark.parametrize("file_format", ["parquet", "delta", "iceberg"])
@settings(
    max_examples=1,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(st.integers(min_value=0, max_value=2**31))
def test_incremental_equals_full_rebuild_equals_reference(dbt, spark, file_format, seed):
    # Hypothesis picks the seed (derandomized: the same 120 histories on every run). Drawing the
    # histories from strategies directly does not work with one example: Hypothesis's first example
    # is the minimal one, 120 empty histories, which checks nothing.
    rng = random.Random(seed)
    histories = [draw_history(rng) for _ in range(HISTORIES)]
    runs = landed(histories)
    states = reference_states(runs)
    covered = coverage(runs, states)
    print(f"compaction property coverage over {HISTORIES} histories, {len(RUNS)} runs: {dict(covered)}")
    assert min(covered.values()) >= MIN_COVERAGE, f"too little coverage: {dict(covered)}"

    spark.execute(f"create schema if not exists {SCHEMA}")
    for table, columns in [
        ("compaction_property_snapshot", SNAPSHOT_COLUMNS),
        ("compaction_property_delta_1", DELTA_COLUMNS),
        ("compaction_property_delta_2", DELTA_COLUMNS),
    ]:
        spark.execute(f"drop table if exists {SCHEMA}.{table}")
        spark.execute(f"create table {SCHEMA}.{table} ({', '.join(f'{c} {TYPES[c]}' for c in columns)}) using parquet")
    # The sources stay in SCHEMA; each format's models get a schema of their own.
    models_schema = f"{SCHEMA}_{file_format}"
    # file_format='iceberg' puts the incremental model in the Iceberg catalog (docs/iceberg.md).
    catalog = "iceberg." if file_format == "iceberg" else ""
    incremental_table = f"{catalog}{models_schema}.{INCREMENTAL}"
    run_vars = {
        "compaction_property_tests": True,
        "compaction_property_schema": SCHEMA,
        "compaction_file_format": file_format,
    }

    for run, ((path, _snapshot, _has_batch), rows) in enumerate(zip(RUNS, runs, strict=True)):
        if rows["snapshot"] is not None:
            insert(spark, "compaction_property_snapshot", rows["snapshot"], SNAPSHOT_COLUMNS, overwrite=True)
        for delta in (1, 2):
            insert(spark, f"compaction_property_delta_{delta}", rows[delta], DELTA_COLUMNS)
        flags = ["--full-refresh"] if run == 0 else []
        result = dbt.invoke("run", *flags, "--select", INCREMENTAL, FULL, schema=models_schema, vars=run_vars)
        label = f"{file_format}, run {run} ({path})"

        # The path: the compaction's own line on an incremental run, joinery_upsert's on the full build.
        lines = [
            message.split(": ", 1)[1]
            for node, message in result.logs
            if node.endswith(f".{INCREMENTAL}") and message.startswith(f"joinery.compact {incremental_table}: ")
        ]
        line = summary(result, f".{INCREMENTAL}")
        if path == "full":
            assert lines == [], f"{label}: the full build took an incremental path: {lines}"
            assert line.startswith("full build") and "(full refresh)" in line, f"{label}: {line}"
        else:
            assert lines == [PATH_LINES[path]], f"{label}: took {lines}"

        expected = live(states[run])
        full = read(spark, f"{models_schema}.{FULL}", COLUMNS)
        assert full == expected, f"{label}: " + differences("full rebuild and reference", full, expected, histories)
        incremental = read(spark, incremental_table, COLUMNS)
        assert incremental == expected, f"{label}: " + differences(
            "incremental and reference", incremental, expected, histories
        )
        kept = read(spark, f"{incremental_table}__joinery_tombstones", ["key", "ts", "loaded_at"])
        assert kept == tombstones(states[run]), f"{label}: " + differences(
            "tombstones and the reference's deleted keys", kept, tombstones(states[run]), histories
        )

        # The change figures against the reference's difference.
        if path == "full":
            want = f"full build of {sum(expected.values())} rows" if file_format == "parquet" else "full build"
        else:
            counts = changes(states[run - 1], states[run])
            print(f"{label}: reference changes {counts}; joinery_upsert: {line}")
            want = expected_summary(file_format, counts)
        assert line.startswith(want), f"{label}: joinery_upsert said {line!r}, the reference's changes give {want!r}"

    details = spark.query(f"describe table extended {incremental_table}")
    assert next(value for key, value, *_ in details if key == "Provider").lower() == file_format
