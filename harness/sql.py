"""Read and write Spark tables directly over the Thrift protocol (PyHive), outside dbt.

Tests use it to read results back as Python rows and to land new batches of source data between
dbt runs; the benchmarks use it the same way.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

LOOPBACK = "127.0.0.1"


class SparkSql:
    """One PyHive connection to a Spark Thrift server, reopened if it drops."""

    def __init__(self, port: int, host: str = LOOPBACK, configuration: dict[str, str] | None = None):
        self.host = host
        self.port = port
        self.configuration = configuration or {"set:hiveconf:spark.sql.ansi.enabled": "true"}
        self._conn = None

    def _connection(self):
        if self._conn is None:
            from pyhive import hive

            self._conn = hive.connect(
                host=self.host, port=self.port, username="joinery", auth="NONE", configuration=self.configuration
            )
        return self._conn

    def execute(self, sql: str) -> None:
        cursor = self._connection().cursor()
        try:
            cursor.execute(sql)
        finally:
            cursor.close()

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        cursor = self._connection().cursor()
        try:
            cursor.execute(sql)
            return [tuple(row) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def query_dicts(self, sql: str) -> list[dict[str, Any]]:
        """Rows of any statement (e.g. `describe detail t`, `describe history t`) as dicts by column name."""
        cursor = self._connection().cursor()
        try:
            cursor.execute(sql)
            names = [d[0].split(".")[-1] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def columns(self, table: str) -> list[str]:
        cursor = self._connection().cursor()
        try:
            cursor.execute(f"select * from {table} limit 0")
            return [d[0].split(".")[-1] for d in cursor.description]
        finally:
            cursor.close()

    def rows(self, table: str, columns: list[str] | None = None, order_by: str | None = None) -> list[tuple]:
        """Rows of a table as tuples, sorted (by `order_by`, else by every selected column)."""
        select = ", ".join(columns) if columns else "*"
        result = self.query(f"select {select} from {table}" + (f" order by {order_by}" if order_by else ""))
        return result if order_by else sorted(result, key=lambda row: tuple((v is not None, str(v)) for v in row))

    def dicts(self, table: str, order_by: str | None = None) -> list[dict[str, Any]]:
        names = self.columns(table)
        return [dict(zip(names, row, strict=False)) for row in self.rows(table, order_by=order_by)]

    def explain(self, sql: str) -> str:
        return "\n".join(row[0] for row in self.query(f"explain formatted {sql}"))

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None


# Helpers of the tests that land their own source batches between dbt runs.


def sql_literal(value: Any) -> str:
    """A Python value as a Spark SQL literal (None as null, strings quoted and escaped)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def read_rows(spark: SparkSql, table: str, columns: list[str]) -> Counter[tuple]:
    """The rows of `table` as a multiset (a doubled row counts twice), read after refreshing the
    session's view of the table."""
    # joinery_upsert commits a new version by moving the table's location: a reader in another
    # session refreshes its cached file listing first.
    spark.execute(f"refresh table {table}")
    return Counter(spark.rows(table, columns))


def unique_mapping(pairs) -> dict:
    """(key, value) rows as a dict, failing on a key seen twice: a plain dict() would keep one of a
    doubled row and hide it."""
    mapping: dict = {}
    for key, value in pairs:
        assert key not in mapping, f"key {key!r} appears twice: {mapping[key]!r} and {value!r}"
        mapping[key] = value
    return mapping


def create_source(spark: SparkSql, table: str, columns: dict[str, str]) -> None:
    """(Re)create an empty parquet source table of the given {column: type}."""
    spark.execute(f"drop table if exists {table}")
    spark.execute(f"create table {table} ({', '.join(f'{n} {t}' for n, t in columns.items())}) using parquet")


def land(spark: SparkSql, table: str, columns: dict[str, str], rows: list[dict[str, Any]]) -> None:
    """Append a batch of change events to a source table, as a loader would."""
    if rows:
        values = ", ".join("(" + ", ".join(sql_literal(row[name]) for name in columns) + ")" for row in rows)
        spark.execute(f"insert into {table} values {values}")


def schema_directory(spark: SparkSql, schema: str) -> Path:
    """The local directory of a schema of spark_catalog, from `describe schema extended`."""
    for name, value in spark.query(f"describe schema extended {schema}"):
        if name.strip() == "Location":
            location = urlparse(value.strip())
            assert location.scheme in ("", "file"), f"{schema} is not on the local file system: {value}"
            return Path(unquote(location.path))
    raise AssertionError(f"`describe schema extended {schema}` names no Location")


def leftovers(spark: SparkSql, schema: str, model: str) -> list[str]:
    """What the model `model` left in `schema`, sorted: each table or view named `model` or
    `<model>__...`, and each entry of the schema's directory so named. The names cover the model's
    table and its folder; dbt's `<model>__dbt_tmp`; joinery_upsert's work tables (`__joinery_stage`,
    `__joinery_probe`, `__joinery_janitor`), its tombstones companion (`__joinery_tombstones`) and
    its version root (`<model>__joinery`, holding the `v_<run id>` directories it writes). The
    journal is a property of the table, so it is left only with a table. The run's cached changes
    are temporary views of dbt's own sessions, which no other session can list."""
    names = [row[1] for row in spark.query(f"show tables in {schema}")]
    ours = [f"table {name}" for name in names if name == model or name.startswith(f"{model}__")]
    directory = schema_directory(spark, schema)
    paths = [
        f"path {path}"
        for path in directory.glob(f"{model}*")
        if path.name == model or path.name.startswith(f"{model}__")
    ]
    return sorted(ours + paths)


def tombstones_sql(table: str, keys: list[str], versions: list[str], live_table: str | None = None) -> str:
    """The tombstones a joinery_upsert companion holds, as joinery reads them: the companion is a log,
    and a key's tombstone is its newest record unless that record clears it (all version columns
    NULL). With `live_table`, only the keys that table does not hold: a tombstone of a live key is
    older than its live version and holds off nothing (docs/compaction.md, "Tombstones")."""
    key_list = ", ".join(keys)
    known = " or ".join(f"{column} is not null" for column in versions)
    sql = (
        f"select {', '.join(keys + versions)} from (select *, row_number() over (partition by {key_list} "
        f"order by _joinery_recorded_at desc) as joinery_newest from {table}) where joinery_newest = 1 and ({known})"
    )
    if live_table is None:
        return sql
    match = " and ".join(f"t.{key} <=> l.{key}" for key in keys)
    return f"select t.* from ({sql}) as t left anti join {live_table} as l on {match}"
