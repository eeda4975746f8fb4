"""Property: after every run of a sequence of batches, the incremental compaction (joinery_upsert, one
run per batch) equals a full rebuild and equals the plain-Python reference (a dict of latest
versions), its tombstones are the reference's deleted keys, the changes the run applied are the
reference's difference between the states before and after it, and the run took the path it must.

Each format (parquet, delta, iceberg) gets HISTORIES histories of its own, each drawn from its own
seed (`draw_history(random.Random(seed))`); Hypothesis picks the seeds (derandomized, so CI sees the
same histories every time), and a failure names the first failing history with its seed and what
was drawn. Each history owns a disjoint range of keys inside one dataset, so one sequence of dbt
runs per format checks them all. The ten runs (RUNS), each one dbt invocation of the incremental
model and of the full rebuild (`compaction_property_full`, a plain table):
- run 0: the first snapshot and batch 0, a full build (--full-refresh);
- runs 1, 2, 5, 8: a delta batch applied to the table ("apply the new delta rows");
- runs 3 and 6: a delta that brings a new column (`note` in delta 1, then `tag` in delta 2) with its
  batch: "new columns: compared with the table";
- run 4: a new full snapshot, landed with batch 4 and stamped with its loaded_at (so batch 4 is not
  superseded by it): a rebase ("a new snapshot: full compaction compared with the table");
- run 7: a pull of older versions, stamped after every batch: a new pull, so a rebase, which
  supersedes every delta row landed before it;
- run 9: no new data: the delta path, with nothing to change.
The path comes from the line `_compaction_incremental_sql` logs on every incremental run, the full
build from joinery_upsert's summary; every path is taken on every format. A pull stamped before the
newest delta batch the table holds is not taken for new (docs/compaction.md, "New snapshots";
test_compaction.py shows it and its remedy, --full-refresh), so it is not generated here: the full
rebuild would take it and the table not.

After every run, compared as multisets (a doubled row counts twice): the table, the full rebuild and
the reference, on every column the table has so far; the tombstone companion
(`<table>__joinery_tombstones`) and the reference's keys whose winning version is a delete, with
that version; and the run's change figures against the reference's states before (p) and after (c)
the run: inserted = keys live in c only, updated = keys live in both whose row differs, deleted =
keys live in p only, and tombstone-only = keys live in neither whose tombstone was added, changed or
cleared (compact sends those as delete markers of keys the table does not hold, which record or
clear the tombstone and change no row). A new column changes no stored row: it reads as NULL there,
as in the reference. What each format reports:
- parquet: `<i> inserted, <u> updated, <d> deleted` counted on the written version (a delete
  marker of a key the table lacks counts nowhere); a run whose changes are only such markers says
  `<t> tombstones changed, table left unchanged`, a run with none `no changed rows`;
- delta and iceberg: the MERGE's own figures (delta's result row, the summary of the snapshot an
  iceberg MERGE committed), `<i> inserted, <u> updated, <d> deleted`; the MERGE compares versions, so
  a version older than the stored one, or a marker of an absent key, counts nowhere. A run whose
  changes are none of these may send no MERGE (`no new input`, `no changed rows`) or one that
  changes nothing.
All three are asserted exactly. The exact figures also show that compact never sends a row equal
to the stored one as newer: it would count as updated. The model stores loaded_at, so a re-publish
of an unchanged row (same values, a later batch) moves the row's loaded_at: it is an update in the
reference and in every figure.

Generated: versions with NULL, equal and out-of-order timestamps, duplicate keys within a batch and
across the two delta tables, deletes (winning and losing), versions older than a delete of their key
arriving in a later batch than the delete (the tombstones keep such a key deleted), re-inserts after
a delete, re-publishes of an unchanged row, keys missing from a new snapshot, deletes of keys the
table does not hold, new columns. test_the_histories_hold_every_case counts, per format and per
path, the cases docs/compaction.md names (COVERAGE) against the reference and asserts at least
MIN_COVERAGE of each on the path they belong to; the figures go to the pytest cache
(`pytest --cache-show 'joinery/*'`).

On iceberg the incremental model and its tombstones land in the `iceberg` catalog (namespace
`iceberg.<models schema>`), the full rebuild (parquet) and the sources stay in spark_catalog.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from datetime import datetime, timedelta
from functools import cache

import pytest
from hypothesis import strategies as st

from harness.sql import sql_literal, tombstones_sql
from python_tests.compaction_reference import compact_reference
from python_tests.fk_join_reference import derandomized_examples

SCHEMA = "test_compaction_property"
FORMATS = ["parquet", "delta", "iceberg"]
HISTORIES = 200
KEYS_PER_HISTORY = 3
COLUMNS = ["key", "value", "ts", "loaded_at", "is_deleted"]
SNAPSHOT_COLUMNS = ["key", "value", "ts", "loaded_at"]
DELTA_COLUMNS = ["key", "value", "ts", "is_deleted", "loaded_at"]
TYPES = {
    "key": "int",
    "value": "string",
    "ts": "timestamp",
    "loaded_at": "timestamp",
    "is_deleted": "boolean",
    "note": "string",
    "tag": "int",
}
# The columns a delta brings later (run 3: `note` in delta 1; run 6: `tag` in delta 2), and the values
# their rows draw.
NEW_COLUMNS = {"note": (1, ["x", "y", None]), "tag": (2, [1, 2, None])}
BASE = datetime(2024, 1, 1)
FIRST_SNAPSHOT_LOADED = "2024-01-31 00:00:00"
INCREMENTAL = "compaction_property_incremental"
FULL = "compaction_property_full"
# (the path the run must take, the snapshot landed before it, whether a delta batch lands, the new
# column a delta brings with it)
RUNS = [
    ("full", "first", True, None),
    ("apply", None, True, None),
    ("apply", None, True, None),
    ("columns", None, True, "note"),
    ("rebase", "new", True, None),
    ("apply", None, True, None),
    ("columns", None, True, "tag"),
    ("rebase", "stale", False, None),
    ("apply", None, True, None),
    ("apply", None, False, None),
]
# Each snapshot's values and timestamps (hours after BASE): the stale pull holds older versions.
SNAPSHOTS = {"first": ("st", [None, 0, 1, 2, 3]), "new": ("nm", [None, 3, 4, 5, 6, 7]), "stale": ("pq", [None, 0, 1])}
PATH_LINES = {
    "apply": "apply the new delta rows",
    "columns": "new columns: compared with the table",
    "rebase": "a new snapshot: full compaction compared with the table",
}
# The cases docs/compaction.md names, and the paths whose runs must hold at least MIN_COVERAGE of
# each, on every format: the delta rows' cases on the runs that read new delta rows ("Which version wins",
# "Tombstones"), the new pull's on the rebases ("A new full snapshot rebases the table").
DELTA_CASES = [
    "versions older than a delete arriving in a later batch",
    "re-inserts after a delete",
    "equal updated_at ties within a batch",
    "equal updated_at ties across batches",
    "re-publishes of an unchanged row",
    "versions with a NULL updated_at",
    "delta rows older than the table's row",
    "losing deletes",
    "deletes of a key the table does not hold",
]
REBASE_CASES = [
    "keys missing from a new snapshot",
    "delta versions superseded by a new snapshot",
    "tombstones cleared by a new snapshot",
    "delta rows landed with a new snapshot",
]
COVERAGE = {"apply": DELTA_CASES, "columns": DELTA_CASES, "rebase": REBASE_CASES}
MIN_COVERAGE = 20


def loaded(run: int) -> str:
    """The loaded_at of run `run`'s batch and snapshot (the first snapshot is stamped before it)."""
    return (datetime(2024, 2, 1) + timedelta(days=run)).strftime("%Y-%m-%d %H:%M:%S")


def timestamp(hours: int | None) -> str | None:
    return None if hours is None else (BASE + timedelta(hours=hours)).strftime("%Y-%m-%d %H:%M:%S")


def draw_history(rng: random.Random) -> dict:
    """One history: per run, the snapshot landed before it ({key: (value, ts)}) and its batch of
    delta versions. Some versions re-publish the key's last live version drawn, some take the key
    and ts of an earlier version of the same batch (a tie); a version in a delta that has a new
    column by then draws a value for it."""
    last_live: dict[int, dict] = {}
    snapshots, batches = {}, {}
    added: dict[int, list[str]] = {1: [], 2: []}
    for run, (_path, snapshot, has_batch, new_column) in enumerate(RUNS):
        if new_column:
            added[NEW_COLUMNS[new_column][0]].append(new_column)
        if snapshot:
            values, stamps = SNAPSHOTS[snapshot]
            keys = rng.sample(range(KEYS_PER_HISTORY), rng.randint(0, KEYS_PER_HISTORY))
            snapshots[run] = {key: (rng.choice(values), rng.choice(stamps)) for key in keys}
            last_live.update({key: {"value": value, "ts": ts} for key, (value, ts) in snapshots[run].items()})
        batch = []
        for _ in range(rng.randint(0, 4) if has_batch else 0):
            draw = rng.random()
            version = {
                "key": rng.randrange(KEYS_PER_HISTORY),
                "value": rng.choice(["a", "b", "c", None]),
                "ts": rng.choice([None, *range(max(0, run - 1), run + 4)]),
                "is_deleted": rng.random() < 0.3,
                "delta": rng.choice([1, 2]),
            }
            if draw < 0.2 and version["key"] in last_live:
                # The same values again, in a delta that holds the new column they have, if any.
                stored = last_live[version["key"]]
                holders = {NEW_COLUMNS[name][0] for name in NEW_COLUMNS if stored.get(name) is not None}
                version.update(stored, is_deleted=False, delta=holders.pop() if holders else version["delta"])
                version.update({name: None for name in added[version["delta"]] if name not in stored})
            elif draw < 0.35 and batch:
                version.update(key=batch[-1]["key"], ts=batch[-1]["ts"])
            for name in added[version["delta"]]:
                version.setdefault(name, rng.choice(NEW_COLUMNS[name][1]))
            batch.append(version)
            if not version["is_deleted"]:
                last_live[version["key"]] = {name: version.get(name) for name in ("value", "ts", *NEW_COLUMNS)}
        batches[run] = batch
    return {"snapshots": snapshots, "batches": batches}


@cache
def seeds() -> dict[str, list[int]]:
    """HISTORIES seeds per format, all different, from Hypothesis (derandomized)."""
    drawn = derandomized_examples(st.integers(min_value=0, max_value=2**32 - 1), HISTORIES * len(FORMATS))
    assert len(set(drawn)) == len(drawn), "Hypothesis drew a seed twice"
    return {name: drawn[i * HISTORIES : (i + 1) * HISTORIES] for i, name in enumerate(FORMATS)}


@cache
def histories(file_format: str) -> tuple[dict, ...]:
    return tuple(draw_history(random.Random(seed)) for seed in seeds()[file_format])


def delta_columns(run: int) -> dict[int, list[str]]:
    """Each delta table's columns at run `run`, new ones included."""
    columns = {1: list(DELTA_COLUMNS), 2: list(DELTA_COLUMNS)}
    for _path, _snapshot, _has_batch, new_column in RUNS[: run + 1]:
        if new_column:
            columns[NEW_COLUMNS[new_column][0]].append(new_column)
    return columns


def table_columns(run: int) -> list[str]:
    """The compacted table's columns after run `run`: a delta's new column is added by that run."""
    return COLUMNS + [column for column in NEW_COLUMNS if column in delta_columns(run)[NEW_COLUMNS[column][0]]]


def landed(drawn: tuple[dict, ...]) -> list[dict]:
    """Per run, the table rows landed before it: the snapshot that replaces the previous one (None
    when it keeps it) and the rows appended to each delta table, with the columns it has then."""
    runs = []
    for run, (_path, snapshot, _has_batch, _new_column) in enumerate(RUNS):
        stamp = FIRST_SNAPSHOT_LOADED if run == 0 else loaded(run)
        columns = delta_columns(run)
        rows = {"snapshot": [] if snapshot else None, 1: [], 2: []}
        for number, history in enumerate(drawn):
            offset = number * KEYS_PER_HISTORY
            for key, (value, ts) in history["snapshots"].get(run, {}).items():
                rows["snapshot"].append({"key": offset + key, "value": value, "ts": timestamp(ts), "loaded_at": stamp})
            for version in history["batches"][run]:
                row = {"key": offset + version["key"], "value": version["value"], "ts": timestamp(version["ts"])}
                row.update(is_deleted=version["is_deleted"], loaded_at=loaded(run))
                row.update({name: version[name] for name in columns[version["delta"]] if name in NEW_COLUMNS})
                rows[version["delta"]].append(row)
        runs.append(rows)
    return runs


def reference_states(runs: list[dict]) -> list[dict]:
    """After each run, the reference's winning version of every key ({key: row}, deletes included)
    over the snapshot and delta rows landed so far; a column a row's input lacks is None."""
    states, snapshot, deltas = [], [], {1: [], 2: []}
    for rows in runs:
        snapshot = snapshot if rows["snapshot"] is None else rows["snapshot"]
        for delta in (1, 2):
            deltas[delta] += rows[delta]
        winners = compact_reference(
            snapshot,
            [deltas[1], deltas[2]],
            ["key"],
            [*COLUMNS, *NEW_COLUMNS],
            updated_at="ts",
            loaded_at="loaded_at",
            deleted="is_deleted",
            keep_deleted=True,
        )
        states.append({row["key"]: row for row in winners})
    return states


def live(state: dict, columns: list[str]) -> Counter:
    return Counter(tuple(row[c] for c in columns) for row in state.values() if not row["is_deleted"])


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


def coverage(runs: list[dict], states: list[dict]) -> dict[str, Counter]:
    """Per path of COVERAGE, how often its runs hold each of its cases, counted against the
    reference's states before and after each run."""
    counts = {path: Counter(dict.fromkeys(cases, 0)) for path, cases in COVERAGE.items()}
    for run, (path, _snapshot, _has_batch, _new_column) in enumerate(RUNS):
        if path not in COVERAGE:
            continue
        found, before, after = counts[path], states[run - 1], states[run]
        batch = runs[run][1] + runs[run][2]
        if path == "rebase":
            count_rebase(found, runs[run]["snapshot"], batch, before, after)
        else:
            count_delta_rows(found, batch, before, after)
    return counts


def count_delta_rows(found: Counter, batch: list[dict], before: dict, after: dict) -> None:
    """The cases of DELTA_CASES in a run's new delta rows."""
    ties = Counter((row["key"], row["ts"]) for row in batch if row["ts"] is not None)
    found["equal updated_at ties within a batch"] += sum(1 for n in ties.values() if n > 1)
    found["re-inserts after a delete"] += sum(
        1 for key, row in after.items() if not row["is_deleted"] and before.get(key, row)["is_deleted"]
    )
    for row in batch:
        previous, winner = before.get(row["key"]), after[row["key"]]
        won = all(winner[c] == row.get(c) for c in winner)
        found["versions with a NULL updated_at"] += row["ts"] is None
        if row["is_deleted"]:
            found["losing deletes"] += not won
            found["deletes of a key the table does not hold"] += won and (
                previous is None or bool(previous["is_deleted"])
            )
        if previous is None:
            continue
        if previous["is_deleted"] and older(row["ts"], previous["ts"]):
            found["versions older than a delete arriving in a later batch"] += 1
        if row["ts"] is not None and row["ts"] == previous["ts"]:
            found["equal updated_at ties across batches"] += 1
        if not row["is_deleted"] and not previous["is_deleted"]:
            found["delta rows older than the table's row"] += older(row["ts"], previous["ts"])
            same = ("value", "ts", *NEW_COLUMNS)
            found["re-publishes of an unchanged row"] += all(row.get(c) == previous[c] for c in same)


def count_rebase(found: Counter, snapshot: list[dict], batch: list[dict], before: dict, after: dict) -> None:
    """The cases of REBASE_CASES in a run that lands a new pull."""
    pulled = Counter(row["key"] for row in snapshot)
    for key, old in before.items():
        new = after.get(key)
        if not old["is_deleted"] and not pulled[key] and (new is None or new["is_deleted"]):
            found["keys missing from a new snapshot"] += 1
        # A snapshot row has no is_deleted; a delta row has one.
        if old["is_deleted"] is not None and new != old:
            found["delta versions superseded by a new snapshot"] += 1
        if old["is_deleted"] and (new is None or not new["is_deleted"]):
            found["tombstones cleared by a new snapshot"] += 1
    found["delta rows landed with a new snapshot"] += sum(1 for row in batch if pulled[row["key"]])


@pytest.mark.parametrize("file_format", FORMATS)
def test_the_histories_hold_every_case(file_format, request):
    runs = landed(histories(file_format))
    counts = coverage(runs, reference_states(runs))
    figures = {path: dict(found) for path, found in counts.items()}
    # `pytest --cache-show 'joinery/*'` prints them after a run.
    request.config.cache.set(f"joinery/compaction_property_coverage_{file_format}", figures)
    too_few = {path: {case: n for case, n in found.items() if n < MIN_COVERAGE} for path, found in counts.items()}
    assert not any(too_few.values()), f"{file_format}: too little coverage {too_few}; all: {figures}"


def insert(spark, table: str, rows: list[dict], columns: list[str], overwrite: bool = False) -> None:
    if not rows:
        if overwrite:
            spark.execute(f"truncate table {SCHEMA}.{table}")
        return
    values = ", ".join("(" + ", ".join(sql_literal(row.get(c)) for c in columns) + ")" for row in rows)
    select = ", ".join(f"cast({c} as {TYPES[c]}) as {c}" for c in columns)
    verb = "insert overwrite" if overwrite else "insert into"
    spark.execute(f"{verb} {SCHEMA}.{table} select {select} from values {values} as v({', '.join(columns)})")


def read(spark, table: str, columns: list[str], refresh: tuple[str, ...] = ()) -> Counter:
    """`table`'s rows as a multiset, timestamps as text; a joinery_upsert commit may have changed its
    files since this session read it, or those of the `refresh` tables a subquery `table` reads."""
    for name in refresh or (table,):
        spark.execute(f"refresh table {name}")
    select = ", ".join(f"cast({c} as string)" if TYPES[c] == "timestamp" else c for c in columns)
    return Counter(spark.query(f"select {select} from {table}"))


def differences(what: str, got: Counter, want: Counter, file_format: str) -> str:
    """Which histories differ (their keys' rows), and the first one's seed, data and rows:
    `draw_history(random.Random(<seed>))` draws it again."""
    wrong = sorted({row[0] // KEYS_PER_HISTORY for row in (got - want) + (want - got)})
    first = wrong[0]

    def of_first(rows: Counter) -> list:
        return sorted((row for row in rows.elements() if row[0] // KEYS_PER_HISTORY == first), key=str)

    return (
        f"{what} differ in {len(wrong)} histories {wrong[:20]}; history {first} (seed {seeds()[file_format][first]}, "
        f"keys from {first * KEYS_PER_HISTORY}): drawn {histories(file_format)[first]}, got {of_first(got)}, "
        f"expected {of_first(want)}"
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


def expected_summary(file_format: str, counts: dict) -> tuple[str, ...]:
    """The starts of the summary lines the run's changes admit (see the module docstring)."""
    i, u, d, t = counts["inserted"], counts["updated"], counts["deleted"], counts["tombstones"]
    unchanged = ("no new input, table left unchanged", "no changed rows, table left unchanged")
    if file_format != "parquet":
        merged = f"{i} inserted, {u} updated, {d} deleted (MERGE)"
        return (merged, *unchanged) if i + u + d == 0 else (merged,)
    if i + u + d == 0:
        return (f"{t} tombstones changed, table left unchanged",) if t else unchanged
    return (f"{i} inserted, {u} updated, {d} deleted;",)


def path_line(path: str, file_format: str, new_column: str | None) -> str:
    """The line compact logs for the run's path: on delta and iceberg the MERGE adds a new column
    itself, so a run that brings one still applies the delta rows."""
    if path == "columns" and file_format != "parquet":
        return f"{PATH_LINES['apply']} (new columns {new_column})"
    return PATH_LINES[path]


@pytest.mark.parametrize("file_format", FORMATS)
def test_incremental_equals_full_rebuild_equals_reference(dbt, spark, file_format):
    runs = landed(histories(file_format))
    states = reference_states(runs)

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

    taken = []
    for run, ((path, _snapshot, _has_batch, new_column), rows) in enumerate(zip(RUNS, runs, strict=True)):
        if new_column:
            delta = NEW_COLUMNS[new_column][0]
            spark.execute(
                f"alter table {SCHEMA}.compaction_property_delta_{delta} add columns ({new_column} {TYPES[new_column]})"
            )
        if rows["snapshot"] is not None:
            insert(spark, "compaction_property_snapshot", rows["snapshot"], SNAPSHOT_COLUMNS, overwrite=True)
        for delta, columns in delta_columns(run).items():
            insert(spark, f"compaction_property_delta_{delta}", rows[delta], columns)
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
            assert lines == [path_line(path, file_format, new_column)], f"{label}: took {lines}"
        taken.append(path)

        columns = table_columns(run)
        expected = live(states[run], columns)
        full = read(spark, f"{models_schema}.{FULL}", columns)
        assert full == expected, f"{label}: " + differences("full rebuild and reference", full, expected, file_format)
        incremental = read(spark, incremental_table, columns)
        assert incremental == expected, f"{label}: " + differences(
            "incremental and reference", incremental, expected, file_format
        )
        # The companion is a log: a key's tombstone is its newest record, and one of a live key holds
        # off nothing (the MERGE compares versions), so only the keys the table lacks are compared.
        companion = f"{incremental_table}__joinery_tombstones"
        held = tombstones_sql(companion, ["key"], ["ts", "loaded_at"], incremental_table)
        kept = read(spark, f"({held}) as held", ["key", "ts", "loaded_at"], refresh=(companion, incremental_table))
        assert kept == tombstones(states[run]), f"{label}: " + differences(
            "tombstones and the reference's deleted keys", kept, tombstones(states[run]), file_format
        )

        # The change figures against the reference's difference.
        if path == "full":
            want = f"full build of {sum(expected.values())} rows" if file_format == "parquet" else "full build"
        else:
            want = expected_summary(file_format, changes(states[run - 1], states[run]))
        assert line.startswith(want), f"{label}: joinery_upsert said {line!r}, the reference's changes give {want!r}"

    assert set(taken) == {"full", *PATH_LINES}, taken
    details = spark.query(f"describe table extended {incremental_table}")
    assert next(value for key, value, *_ in details if key == "Provider").lower() == file_format
