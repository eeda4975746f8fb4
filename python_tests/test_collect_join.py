"""The collect join (seed document 001) on real Spark tables: the document's example, random inputs
against a plain-Python reference, the plans (no shuffle of the probe side; none before the join
when both sides are bucketed), the run-date windows and the incremental model."""

from __future__ import annotations

import csv
import random
import re
from collections import defaultdict

import pytest

from harness.dbt import REPO_ROOT
from harness.sql import unique_mapping

SCHEMA = "test_collect_join"
SEEDS = REPO_ROOT / "seeds" / "collect_join"
DAY_MS = 86_400_000
DEC_24 = 16_428 * DAY_MS  # 2014-12-24 00:00 UTC, the day of every row of the document
INTEGER = re.compile(r"^[+-]?[0-9]{1,38}$")


def seed(name: str) -> list[tuple]:
    with (SEEDS / f"{name}.csv").open() as handle:
        return [(int(r["time"]), int(r["uid"]), list(r.values())[2]) for r in csv.DictReader(handle)]


def reference(build: list[tuple], probe: list[tuple]) -> dict[str, list[str]]:
    """The collect join in plain Python: (time, key, 'v1,v2') x (time, key, group) -> group: values."""
    values_of_key: dict[object, set[str]] = defaultdict(set)
    for _, key, values in build:
        if key is not None and values is not None:
            values_of_key[key] |= {v.strip() for v in values.split(",") if v.strip()}
    collected: dict[str, set[str]] = defaultdict(set)
    for _, key, group in probe:
        if group is not None and values_of_key.get(key):
            collected[group] |= values_of_key[key]
    return {
        group: sorted(values, key=(lambda v: (int(v), v)) if all(INTEGER.match(v) for v in values) else None)
        for group, values in collected.items()
    }


def plan_tree(plan: str) -> list[tuple[int, str]]:
    """The physical plan's operators as (depth, name) in printed order."""
    tree = plan.split("== Physical Plan ==")[1].split("\n\n")[0]
    nodes = []
    for line in tree.strip().splitlines():
        match = re.match(r"^([\s:|+-]*?)(?:[+:]- )?([A-Za-z].*)$", line)
        nodes.append((len(match.group(1)) + (3 if re.search(r"[+:]- ", line) else 0), match.group(2)))
    return nodes


def ancestors(nodes: list[tuple[int, str]], index: int) -> list[str]:
    found, depth = [], nodes[index][0]
    for level, name in reversed(nodes[:index]):
        if level < depth:
            found.append(name)
            depth = level
    return found


def operators_between_scan_and_join(plan: str, table: str) -> list[str]:
    nodes = plan_tree(plan)
    scan = next(
        i for i, (_, name) in enumerate(nodes) if name.startswith("Scan") and name.split(" (")[0].endswith(table)
    )
    above = ancestors(nodes, scan)
    join = next(i for i, name in enumerate(above) if "Join" in name)
    return above[: join + 1]


@pytest.fixture(scope="module")
def built(dbt):
    return dbt.invoke(
        "build",
        "--select",
        "path:seeds/collect_join",
        "path:models/examples/collect_join",
        "--exclude",
        "path:seeds/collect_join/expected",
        "test_name:equal_rows",
        "test_name:unique",
        "test_name:not_null",
        schema=SCHEMA,
    )


def test_document_example(built, spark):
    expected = {
        g: ",".join(v) for g, v in reference(seed("collect_join_attributes"), seed("collect_join_mappings")).items()
    }
    assert expected == {"abc": "1,3,4,5", "xyz": "1,2", "zzz": "1,2"}  # the document, zzz restored
    for model in ("collect_join_puid_attributes", "collect_join_puid_attributes_bucketed"):
        assert unique_mapping(spark.query(f"select puid, attribute_ids from {SCHEMA}.{model}")) == expected, model


def test_probe_side_is_not_shuffled(built, spark):
    sql = built.nodes["model.joinery.collect_join_puid_attributes"]["compiled_code"]
    path = operators_between_scan_and_join(spark.explain(sql), "collect_join_mappings")
    assert path[-1].startswith("BroadcastHashJoin"), path
    assert not any(name.startswith("Exchange") for name in path), path


def test_bucketed_sides_join_without_a_shuffle(built, spark):
    for table in ("collect_join_attributes_bucketed", "collect_join_mappings_bucketed"):
        details = dict((r[0], r[1]) for r in spark.query(f"describe table extended {SCHEMA}.{table}"))
        assert details["Num Buckets"] == "4" and details["Bucket Columns"] == "[`uid`]", details
    plan = spark.explain(built.nodes["model.joinery.collect_join_puid_attributes_bucketed"]["compiled_code"])
    for table in ("collect_join_attributes_bucketed", "collect_join_mappings_bucketed"):
        path = operators_between_scan_and_join(plan, table)
        assert path[-1].startswith("SortMergeJoin"), path
        assert not any(name.startswith("Exchange") for name in path), (table, path)


def test_random_inputs_match_the_python_reference(built, dbt, spark):
    rng = random.Random(1)
    pieces = ["1", "2", "10", "007", "7", " 3 ", "", "  ", "-4", "+5", "x1", "b", "99999999999999999999"]
    # White space other than spaces: a tab, a CR (CRLF files), U+0085, U+00A0, U+2028.
    pieces += ["\t5", "9\r", "10\u0085", "\u00a0", "5\u2028"]
    build = [
        (0, rng.randrange(40), ",".join(rng.choice(pieces) for _ in range(rng.randrange(1, 5)))) for _ in range(150)
    ]
    build += [(0, None, "5"), (0, 3, None)]
    probe = [(0, rng.randrange(80), rng.choice([f"g{n}" for n in range(25)] + [None])) for _ in range(300)]
    # A group of integers one of which ends in U+2028: sorted as numbers, not a failed cast.
    build += [(0, 1000, "5\u2028,10,9")]
    probe += [(0, 1000, "g_line_separator")]

    def literal(value):
        return "null" if value is None else str(value) if isinstance(value, int) else "'" + value + "'"

    for table, rows, column in (("cj_random_build", build, "ids"), ("cj_random_probe", probe, "grp")):
        values = ", ".join(f"({literal(k)}, {literal(v)})" for _, k, v in rows)
        spark.execute(f"drop table if exists {SCHEMA}.{table}")
        spark.execute(
            f"create table {SCHEMA}.{table} using parquet as "
            f"select cast(k as int) as k, cast(v as string) as {column} from values {values} as t(k, v)"
        )
    inline = f"""
        {{% set b = api.Relation.create(schema='{SCHEMA}', identifier='cj_random_build') %}}
        {{% set p = api.Relation.create(schema='{SCHEMA}', identifier='cj_random_probe') %}}
        with joined as ({{{{ joinery.collect_join(b, p, 'k', 'ids', 'grp', separator=';') }}}}),
        arrays as ({{{{ joinery.collect_join(b, p, ['k'], 'ids', 'grp', as_array=true, strategy='auto') }}}}),
        row_by_row as ({{{{ joinery.collect_join(b, p, 'k', 'ids', 'grp', separator=';', build_rows_per_key='one') }}}})
        select coalesce(joined.grp, row_by_row.grp) as grp, joined.ids, arrays.ids as id_array, row_by_row.ids
        from joined full join arrays on joined.grp = arrays.grp
        full join row_by_row on coalesce(joined.grp, arrays.grp) = row_by_row.grp
    """
    result = dbt.invoke("compile", "--inline", inline, schema=SCHEMA)
    rows = spark.query(next(iter(result.nodes.values()))["compiled_code"])
    expected = reference(build, probe)
    assert expected["g_line_separator"] == ["5", "9", "10"]
    # One row per group in each result: a group doubled in one of them doubles its joined row.
    assert unique_mapping((grp, ids) for grp, ids, _, _ in rows) == {g: ";".join(v) for g, v in expected.items()}
    # PyHive returns an array as a JSON list.
    assert unique_mapping((grp, list(eval(arr))) for grp, _, arr, _ in rows) == expected  # noqa: S307
    # The plan for one build row per key gives the same rows when keys have several (about 4 here).
    assert unique_mapping((grp, ids) for grp, _, _, ids in rows) == {g: ";".join(v) for g, v in expected.items()}


INCREMENTAL = f"{SCHEMA}.collect_join_puid_attributes_incremental"


def test_run_date_windows_and_incremental_updates(built, dbt, spark):
    before = unique_mapping((r[0], r) for r in spark.query(f"select * from {INCREMENTAL}"))
    dec_26 = DEC_24 + 2 * DAY_MS + 3_600_000
    new_attributes = [(dec_26, 67890, " 10 , 2,, "), (dec_26, 33333, "7")]
    new_mappings = [(dec_26, 33333, "new"), (dec_26, 22222, "qqq")]
    for table, rows in (("collect_join_attributes", new_attributes), ("collect_join_mappings", new_mappings)):
        spark.execute(f"insert into {SCHEMA}.{table} values " + ", ".join(f"({t}, {k}, '{v}')" for t, k, v in rows))
    attributes = seed("collect_join_attributes") + new_attributes
    mappings = seed("collect_join_mappings") + new_mappings

    dbt.invoke(
        "run",
        "--select",
        "collect_join_puid_attributes",
        "collect_join_puid_attributes_incremental",
        schema=SCHEMA,
        vars={"collect_join_run_date": "2014-12-26", "collect_join_attribute_days": 1, "collect_join_mapping_days": 3},
    )

    # Windows: attributes of 2014-12-26 only, mappings of 2014-12-24 to 2014-12-26.
    windowed = reference([r for r in attributes if r[0] >= DEC_24 + 2 * DAY_MS], mappings)
    assert windowed == {"xyz": ["2", "10"], "zzz": ["2", "10"], "new": ["7"]}
    assert unique_mapping(spark.query(f"select puid, attribute_ids from {SCHEMA}.collect_join_puid_attributes")) == {
        g: ",".join(v) for g, v in windowed.items()
    }

    # Incremental: all history, equal to a recompute; the untouched PUID keeps the row of the first run.
    after = unique_mapping((r[0], r) for r in spark.query(f"select * from {INCREMENTAL}"))
    assert {g: r[1] for g, r in after.items()} == {g: ",".join(v) for g, v in reference(attributes, mappings).items()}
    assert after["abc"] == before["abc"]
    assert after["xyz"][2:] == (dec_26, dec_26) != before["xyz"][2:]
