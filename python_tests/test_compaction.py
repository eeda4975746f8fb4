"""Compaction scenarios on the Thrift harness: build the incremental examples, land new batches in
their source tables, run again, and compare every table with the plain-Python reference.

Three dbt invocations cover everything: the first build, a run after new batches (new deltas, a
delete, a new full snapshot, a touched partition, a new column), and a run after landing a batch a
second time (nothing may change, not even the files).
"""

from __future__ import annotations

import csv
import re
from collections import Counter

import pytest
import yaml

from harness.dbt import REPO_ROOT
from harness.sql import tombstones_sql, unique_mapping
from python_tests.compaction_reference import compact_reference, sorted_rows

SCHEMA = "test_compaction"
SEEDS = REPO_ROOT / "seeds" / "compaction"
LATER = "2024-02-01 00:00:00"
LATEST = "2024-02-02 00:00:00"
EARLIER = "2024-01-15 00:00:00"  # before every delta batch the examples' tables hold
NEWEST = "2024-03-01 00:00:00"

# model -> (snapshot seed, delta seeds, key, compact's other arguments)
MODELS = {
    "compaction_simple_incremental": ("simple_snapshot", ["simple_delta"], ["key"], {}),
    "compaction_simple_avro": ("simple_snapshot", ["simple_delta"], ["key"], {}),
    "compaction_deletes_incremental": (
        "deletes_snapshot",
        ["deletes_delta"],
        ["key"],
        {"updated_at": "ts", "deleted": "is_deleted"},
    ),
    "compaction_rebase_incremental": ("rebase_snapshot", ["rebase_delta"], ["key"], {}),
    "compaction_partitioned_incremental": ("partitioned_snapshot", ["partitioned_delta"], ["key", "year", "month"], {}),
    "compaction_new_attribute_default_incremental": ("new_attribute_snapshot", ["new_attribute_delta"], ["key"], {}),
}
DEFAULTS = {"compaction_new_attribute_default_incremental": {"value2": "default"}}


def normalize(value):
    """Spark values and CSV cells as comparable strings (None for NULL/empty)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or value in ("true", "false"):
        return str(value).lower()
    text = str(value)
    return re.sub(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\.0*$", r"\1", text)


def csv_rows(seed: str) -> list[dict]:
    with (SEEDS / f"{seed}.csv").open() as handle:
        return [{k: normalize(v) for k, v in row.items()} for row in csv.DictReader(handle)]


def csv_header(seed: str) -> list[str]:
    with (SEEDS / f"{seed}.csv").open() as handle:
        return next(csv.reader(handle))


def expected_columns(model: str, data: dict[str, list[dict]]) -> list[str]:
    """The columns a compaction of the model's inputs has: every column of the snapshot, then each
    column a delta adds (schema drift: older rows are padded, `removed='keep'` keeps the rest), in
    the order the inputs have them (partition columns are the inputs' last ones)."""
    snapshot, deltas, _key, _arguments = MODELS[model]
    columns: list[str] = []
    for rows in [data[snapshot], *(data[d] for d in deltas)]:
        for row in rows:
            columns += [column for column in row if column not in columns]
    return columns


def table_rows(spark, table: str, schema: str = SCHEMA) -> tuple[list[str], list[dict]]:
    columns = spark.columns(f"{schema}.{table}")
    rows = spark.query(f"select * from {schema}.{table}")
    return columns, [{c: normalize(v) for c, v in zip(columns, row, strict=True)} for row in rows]


def expected_rows(model: str, data: dict[str, list[dict]], columns: list[str]) -> list[dict]:
    snapshot, deltas, key, arguments = MODELS[model]
    return compact_reference(
        data[snapshot], [data[d] for d in deltas], key, columns, defaults=DEFAULTS.get(model), **arguments
    )


def assert_matches_reference(spark, data):
    for model in MODELS:
        columns, actual = table_rows(spark, model)
        # The reference is computed over the table's columns: a column missing from the table (or one
        # too many) must fail here.
        assert columns == expected_columns(model, data), model
        expected = expected_rows(model, data, columns)
        assert sorted_rows(actual, columns) == sorted_rows(expected, columns), model


def column_types(spark, table: str) -> dict[str, str]:
    """Column name -> type, in table order (partition columns last, listed once)."""
    types: dict[str, str] = {}
    for name, data_type, *_ in spark.query(f"describe {table}"):
        if not name or name.startswith("#"):
            break
        types.setdefault(name, data_type)
    return types


def locations(spark, table: str) -> dict[str, str]:
    """Storage location of the table and of each of its partitions."""
    found = {"table": _location(spark.query(f"describe formatted {SCHEMA}.{table}"))}
    if table == "compaction_partitioned_incremental":
        for (spec,) in spark.query(f"show partitions {SCHEMA}.{table}"):
            clause = ", ".join(f"{k}={v}" for k, v in (part.split("=") for part in spec.split("/")))
            found[spec] = _location(spark.query(f"describe formatted {SCHEMA}.{table} partition ({clause})"))
    return found


def _location(rows) -> str:
    return next(str(row[1]) for row in rows if str(row[0]).strip() == "Location")


def seed_types() -> dict[str, dict[str, str]]:
    """Seed name -> column types, from the seeds' yml (the same types `dbt seed` would use)."""
    with (SEEDS / "_compaction__seeds.yml").open() as handle:
        seeds = yaml.safe_load(handle)["seeds"]
    return {seed["name"]: seed["config"]["column_types"] for seed in seeds}


def create_landing_table(spark, name: str, types: dict[str, str], schema: str = SCHEMA) -> None:
    """The seed as a parquet table written directly over Thrift (much faster than `dbt seed`)."""
    rows = csv_rows(name)
    values = ", ".join(
        "(" + ", ".join("null" if row[c] is None else f"'{row[c]}'" for c in types) + ")" for row in rows
    )
    select = ", ".join(f"cast(col{i} as {t}) as {c}" for i, (c, t) in enumerate(types.items(), start=1))
    spark.execute(f"drop table if exists {schema}.{name}")
    spark.execute(f"create table {schema}.{name} using parquet as select {select} from values {values}")


@pytest.fixture(scope="module")
def built(dbt, spark):
    seeds = {s for snapshot, deltas, _key, _args in MODELS.values() for s in [snapshot, *deltas]}
    seeds |= {"multi_snapshot", "multi_delta_1", "multi_delta_2", "multi_delta_3"}
    types = seed_types()
    spark.execute(f"create schema if not exists {SCHEMA}")
    for seed in sorted(seeds):
        create_landing_table(spark, f"compaction_{seed}", types[f"compaction_{seed}"])
    dbt.invoke("run", "--full-refresh", "--select", *MODELS, "compaction_multi", schema=SCHEMA)
    return {s: csv_rows(f"compaction_{s}") for s in seeds}


def test_first_run_is_the_full_compaction(built, spark):
    assert_matches_reference(spark, built)
    # The seed document's own expected outputs, too.
    for model, expected in [
        ("compaction_simple_incremental", "expected/compaction_simple_expected"),
        ("compaction_rebase_incremental", "expected/compaction_rebase_expected"),
    ]:
        columns, actual = table_rows(spark, model)
        assert columns == csv_header(expected), model
        assert sorted_rows(actual, columns) == sorted_rows(csv_rows(expected), columns)
    # The watermark is data: each table holds the loaded_at of every row it keeps.
    for model in MODELS:
        [(newest,)] = spark.query(f"select cast(max(loaded_at) as string) from {SCHEMA}.{model}")
        assert newest is not None, model


def test_full_compaction_never_shuffles_the_snapshot(built, dbt, spark):
    compiled = dbt.target_path / "compiled" / "joinery" / "models" / "examples" / "compaction" / "compaction_multi.sql"
    tree = spark.explain(compiled.read_text()).split("== Physical Plan ==")[-1].strip().split("\n\n")[0]
    lines = tree.splitlines()
    snapshot_scans = [
        i for i, line in enumerate(lines) if "Scan parquet" in line and "compaction_multi_snapshot" in line
    ]
    assert len(snapshot_scans) == 2, tree  # the streaming pass, and the key-and-version pass for the contenders
    for index in snapshot_scans:
        # Walk up to the root: no shuffle (Exchange) may sit above a snapshot scan.
        depth = lines[index].index("Scan")
        for line in reversed(lines[:index]):
            node_depth = len(line) - len(line.lstrip(" :+-"))
            if node_depth < depth:
                depth = node_depth
                node = line.strip(" :+-")
                assert not (node.startswith("Exchange") or "SortMergeJoin" in node), (
                    f"{node} above the snapshot:\n{tree}"
                )
    assert tree.count("BroadcastHashJoin") == 3, tree
    assert "WindowGroupLimit" in tree, tree
    # The deltas are ranked once: only the winners' own branch needs the ranking (Spark inlines a
    # CTE at each use, so a second consumer of the winners would rank them again).
    windows = [line for line in lines if line.strip(" :+-").split(" ")[0] == "Window"]
    assert len(windows) == 1, tree


def test_avro_table_is_avro_and_reads_back(built, spark):
    description = " ".join(
        str(cell) for row in spark.query(f"describe formatted {SCHEMA}.compaction_simple_avro") for cell in row
    )
    assert "org.apache.hadoop.hive.serde2.avro.AvroSerDe" in description
    assert "AvroContainerInputFormat" in description
    columns, actual = table_rows(spark, "compaction_simple_avro")
    assert columns == csv_header("expected/compaction_simple_expected")
    assert sorted_rows(actual, columns) == sorted_rows(csv_rows("expected/compaction_simple_expected"), columns)


def test_new_batches_then_a_repeated_batch(built, dbt, spark):
    data = {k: [dict(r) for r in v] for k, v in built.items()}
    before = locations(spark, "compaction_partitioned_incremental")

    def land(seed: str, rows: list[dict]):
        table = f"{SCHEMA}.compaction_{seed}"
        types = column_types(spark, table)
        values = ", ".join(
            "(" + ", ".join("null" if r.get(c) is None else f"'{r[c]}'" for c in types) + ")" for r in rows
        )
        select = ", ".join(f"cast(col{i} as {t})" for i, t in enumerate(types.values(), start=1))
        spark.execute(f"insert into {table} select {select} from values {values}")
        data[seed] += [{c: r.get(c) for c in types} for r in rows]

    land(
        "simple_delta",
        [{"key": "1", "value": "a5", "loaded_at": LATER}, {"key": "4", "value": "d5", "loaded_at": LATER}],
    )
    land(
        "deletes_delta",
        [
            {"key": "1", "ts": "2024-01-01 09:00:00", "is_deleted": "true", "loaded_at": LATER},
            {"key": "5", "value": "e_old", "ts": "2024-01-01 01:00:00", "is_deleted": "false", "loaded_at": LATER},
            {"key": "6", "value": "f", "ts": "2024-01-01 01:00:00", "is_deleted": "false", "loaded_at": LATER},
        ],
    )
    # A new full pull: keys 1 and 4 are gone upstream; every older delta row is superseded.
    spark.execute(
        f"insert overwrite {SCHEMA}.compaction_rebase_snapshot select * from values "
        f"(2, 'b5', timestamp'{LATER}'), (6, 'f5', timestamp'{LATER}')"
    )
    data["rebase_snapshot"] = [
        {"key": "2", "value": "b5", "loaded_at": LATER},
        {"key": "6", "value": "f5", "loaded_at": LATER},
    ]
    land("rebase_delta", [{"key": "7", "value": "g", "loaded_at": LATEST}])
    land(
        "partitioned_delta",
        [
            {"key": "3", "value": "c5", "loaded_at": LATER, "year": "2024", "month": "1"},
            # A partition the table does not have yet.
            {"key": "9", "value": "i", "loaded_at": LATER, "year": "2025", "month": "3"},
        ],
    )
    # Schema drift in a later batch: a new column value3.
    spark.execute(f"alter table {SCHEMA}.compaction_new_attribute_delta add columns (value3 string)")
    for row in data["new_attribute_delta"]:
        row["value3"] = None
    land("new_attribute_delta", [{"key": "1", "value1": "a5", "value2": "x5", "loaded_at": LATER, "value3": "v3"}])

    # The incremental SELECT reads only the table's partitions that the new delta rows fall in (its
    # tombstones' companion, unpartitioned and small, is read whole).
    dbt.invoke("compile", "--select", "compaction_partitioned_incremental", schema=SCHEMA)
    compiled = dbt.target_path / "compiled" / "joinery" / "models" / "examples" / "compaction"
    plan = spark.explain((compiled / "compaction_partitioned_incremental.sql").read_text())
    scans = [
        block
        for block in plan.split("\n\n")
        if "Scan " in block and re.search(rf"{SCHEMA}\.compaction_partitioned_incremental\b", block.split("\n")[0])
    ]
    assert scans, plan
    for scan in scans:
        location = next(line for line in scan.split("\n") if line.startswith("Location:"))
        assert "year=2024/month=1]" in location and "entries" not in location, scan

    result = dbt.invoke("run", "--select", *MODELS, schema=SCHEMA)
    statements = result.statements
    assert_matches_reference(spark, data)
    # Each run executed the SQL compiled in the same invocation, its plan included.
    for model in MODELS:
        assert "as joinery_planned" in result.statement_running_compiled_sql(model), model
    # Each run reads where its table stands (its watermark, the snapshot's newest loaded_at, the new
    # rows' figures) in one statement, the probe; the watermark itself comes from the note of the
    # table's last commit, which commits with the rows, so no run stores one of its own.
    for model in MODELS:
        probes = [sql for node, sql in statements if node.endswith(model) and "as joinery_new_rows" in sql]
        assert len(probes) == 1, (model, probes)
    assert not [sql for _, sql in statements if "joinery.watermark" in sql]
    after = locations(spark, "compaction_partitioned_incremental")
    assert after["year=2024/month=1"] != before["year=2024/month=1"], "the touched partition was not rewritten"
    for untouched in ("year=2023/month=12", "year=2024/month=2"):
        assert after[untouched] == before[untouched], f"{untouched} was rewritten though no change touched it"

    # The same batch landed again, and no other new data: nothing may change, not even the files.
    settled = {model: locations(spark, model) for model in MODELS}
    contents = {model: table_rows(spark, model) for model in MODELS}
    land(
        "simple_delta",
        [{"key": "1", "value": "a5", "loaded_at": LATER}, {"key": "4", "value": "d5", "loaded_at": LATER}],
    )
    dbt.invoke("run", "--select", *MODELS, schema=SCHEMA)
    for model in MODELS:
        columns, rows = table_rows(spark, model)
        assert sorted_rows(rows, columns) == sorted_rows(contents[model][1], contents[model][0]), model
        assert locations(spark, model) == settled[model], f"{model} was rewritten by a run without new data"

    # The next run reads new rows above the table's newest loaded_at: a row stamped before it (a late
    # batch whose loaded_at does not grow) is not read, until a full refresh reads everything.
    table = f"{SCHEMA}.compaction_simple_incremental"
    land("simple_delta", [{"key": "8", "value": "h", "loaded_at": "2024-01-31 12:00:00"}])
    dbt.invoke("run", "--select", "compaction_simple_incremental", schema=SCHEMA)
    assert spark.query(f"select count(*) from {table} where key = 8") == [(0,)]
    dbt.invoke("run", "--full-refresh", "--select", "compaction_simple_incremental", schema=SCHEMA)
    assert spark.query(f"select count(*) from {table} where key = 8") == [(1,)]


def test_a_pull_is_new_when_it_passes_the_tables_newest_loaded_at(built, dbt, spark):
    # A full pull whose newest loaded_at passes the table's makes a run compare the full compaction
    # with the table (a rebase). One stamped before the table's newest loaded_at is taken for one
    # already applied (the watermark is the table's data; docs/compaction.md, "New snapshots"):
    # nothing is compared, and only a full refresh applies it. Keys 98 and 99 are in no delta.
    model = "compaction_rebase_incremental"
    table = f"{SCHEMA}.{model}"

    def keys() -> Counter[int]:
        return Counter(key for (key,) in spark.query(f"select key from {table}"))

    def compares_in_full() -> bool:
        statements = dbt.invoke("run", "--select", model, schema=SCHEMA).statements
        return any("snapshot_contenders" in sql for _, sql in statements)

    spark.execute(f"insert overwrite {SCHEMA}.compaction_rebase_snapshot select 99, 'stale', timestamp'{EARLIER}'")
    assert not compares_in_full()
    assert keys()[99] == 0
    dbt.invoke("run", "--full-refresh", "--select", model, schema=SCHEMA)
    assert keys()[99] == 1
    spark.execute(f"insert overwrite {SCHEMA}.compaction_rebase_snapshot select 98, 'new', timestamp'{NEWEST}'")
    assert compares_in_full()
    assert keys()[98] == 1 and keys()[99] == 0


def test_irreconcilable_types_name_the_column_and_each_type(dbt, spark):
    # key, amount and day widen (int/bigint, int/decimal, date/timestamp); note (string vs int) cannot.
    spark.execute(f"create schema if not exists {SCHEMA}")
    spark.execute(f"drop table if exists {SCHEMA}.widen_a")
    spark.execute(f"drop table if exists {SCHEMA}.widen_b")
    spark.execute(f"create table {SCHEMA}.widen_a (key int, amount int, day date, note string) using parquet")
    spark.execute(
        f"create table {SCHEMA}.widen_b (key bigint, amount decimal(10,2), day timestamp, note int) using parquet"
    )
    relations = ", ".join(
        f"api.Relation.create(schema='{SCHEMA}', identifier='{name}')" for name in ("widen_a", "widen_b")
    )
    result = dbt.invoke(
        "compile", "--inline", f"{{{{ joinery.union_padded([{relations}]) }}}}", schema=SCHEMA, expect_success=False
    )
    assert "joinery.union_padded: argument `relations`" in result.messages
    assert '"column": "note"' in result.messages
    assert "widen_a: string" in result.messages and "widen_b: int" in result.messages
    for widened in ("key", "amount", "day"):
        assert f'"column": "{widened}"' not in result.messages


TOMBSTONE_SCHEMA = "test_compaction_tombstones"
TOMBSTONE_COLUMNS = ["key", "value", "ts", "is_deleted", "loaded_at"]


@pytest.mark.parametrize("file_format", ["parquet", "delta"])
def test_a_late_version_older_than_a_delete_stays_deleted(dbt, spark, file_format):
    # The property models (models/examples/compaction/property) over sources of this test's own: a
    # snapshot, then batches of delta rows. compaction_property_retention purges tombstones loaded
    # more than a day before the watermark its run starts from.
    models_schema = f"{TOMBSTONE_SCHEMA}_{file_format}"
    run_vars = {
        "compaction_property_tests": True,
        "compaction_property_schema": TOMBSTONE_SCHEMA,
        "compaction_file_format": file_format,
    }
    models = ["compaction_property_incremental", "compaction_property_retention", "compaction_property_full"]
    spark.execute(f"create schema if not exists {TOMBSTONE_SCHEMA}")
    for table, columns in [
        ("compaction_property_snapshot", ["key", "value", "ts", "loaded_at"]),
        ("compaction_property_delta_1", TOMBSTONE_COLUMNS),
        ("compaction_property_delta_2", TOMBSTONE_COLUMNS),
    ]:
        types = {"key": "int", "value": "string", "ts": "int", "loaded_at": "timestamp", "is_deleted": "boolean"}
        spark.execute(f"drop table if exists {TOMBSTONE_SCHEMA}.{table}")
        spark.execute(
            f"create table {TOMBSTONE_SCHEMA}.{table} ({', '.join(f'{c} {types[c]}' for c in columns)}) using parquet"
        )

    def land(table: str, rows: list[tuple]) -> None:
        def literal(value) -> str:
            if value is None:
                return "null"
            if isinstance(value, str) and re.match(r"\d{4}-", value):
                return f"timestamp'{value}'"
            return str(value).lower() if isinstance(value, bool) else repr(value)

        values = ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in rows)
        spark.execute(f"insert into {TOMBSTONE_SCHEMA}.{table} select * from values {values}")

    def batch(loaded_at: str, rows: list[tuple]) -> None:
        # rows: (key, value, ts, is_deleted)
        land("compaction_property_delta_1", [(*row, loaded_at) for row in rows])

    def run(full_refresh: bool = False) -> None:
        flags = ["--full-refresh"] if full_refresh else []
        dbt.invoke("run", *flags, "--select", *models, schema=models_schema, vars=run_vars)

    def keys(model: str) -> dict[int, tuple]:
        table = f"{models_schema}.{model}"
        spark.execute(f"refresh table {table}")
        return unique_mapping((row[0], row[1:]) for row in spark.query(f"select key, value, ts from {table}"))

    def tombstones(model: str, expired_before: str | None = None) -> dict[int, int]:
        # The tombstones of keys the table does not hold, as joinery reads its log; with
        # `expired_before`, those loaded earlier are left out (past tombstone_retention).
        table = f"{models_schema}.{model}"
        spark.execute(f"refresh table {table}__joinery_tombstones")
        live = tombstones_sql(f"{table}__joinery_tombstones", ["key"], ["ts", "loaded_at"], live_table=table)
        expired = f" where loaded_at >= timestamp'{expired_before}'" if expired_before else ""
        return unique_mapping(spark.query(f"select key, ts from ({live}){expired}"))

    land("compaction_property_snapshot", [(k, "s", 1, "2024-01-31 00:00:00") for k in (1, 2, 3, 4)])
    run(full_refresh=True)
    assert tombstones("compaction_property_incremental") == {}
    # Batch 2 deletes keys 1, 2 and 4 (ts 5).
    batch("2024-02-01 00:00:00", [(k, None, 5, True) for k in (1, 2, 4)])
    run()
    assert tombstones("compaction_property_incremental") == {1: 5, 2: 5, 4: 5}
    # Batch 3 brings a version of key 1 older than its delete (ts 3): the key stays deleted, on the
    # incremental run as in the full rebuild; the table holds live rows only.
    batch("2024-02-03 00:00:00", [(1, "late", 3, False), (3, "c", 2, False)])
    run()
    expected = {3: ("c", 2)}
    assert keys("compaction_property_full") == expected
    assert keys("compaction_property_incremental") == expected
    assert keys("compaction_property_retention") == expected
    # Batch 4: a re-insert newer than the delete (key 1, ts 7) brings the key back (its tombstone,
    # older, holds off nothing); another late version (key 2, ts 3) still loses. Past the retention
    # (the tombstones were loaded 2 days before this run's watermark, more than a day),
    # compaction_property_retention has forgotten key 2's and key 4's deletes: the late version of
    # key 2 comes back there, as documented.
    batch("2024-02-04 00:00:00", [(1, "again", 7, False), (2, "late", 3, False)])
    run()
    expected = {1: ("again", 7), 3: ("c", 2)}
    assert keys("compaction_property_full") == expected
    assert keys("compaction_property_incremental") == expected
    assert tombstones("compaction_property_incremental") == {2: 5, 4: 5}
    assert keys("compaction_property_retention") == {**expected, 2: ("late", 3)}
    # Past the retention, its tombstones hold off nothing; the next full build drops them.
    assert tombstones("compaction_property_retention", expired_before="2024-02-02 00:00:00") == {}
