"""multi_join (seed document 000, Hydrator joins): the examples, the join semantics against a plain-Python
reference (NULL keys included), the physical plan (one shuffle per input), the metrics post-hook,
the schema preview and the compile-time errors.

Work is batched into few dbt invocations: one build of the seeds and example models, and one
`dbt compile` of a throwaway project (joinery installed as a package) whose models are the probe
joins and every error case at once.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import random
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from harness.dbt import REPO_ROOT, DbtProject
from harness.sql import leftovers, sql_literal

SCHEMA = "test_multi_join"
SEEDS = REPO_ROOT / "seeds" / "multi_join"
EXAMPLES = [
    "hydrator_three_way_join",
    "hydrator_customer_purchases",
    "hydrator_customer_purchase_transactions",
    "hydrator_customer_purchase_ids",
    "hydrator_customers_outer",
    "hydrator_full_outer",
    "hydrator_cross_join",
    "hydrator_composite_key",
    "hydrator_sales_vs_targets",
]


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open() as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def normalized(value) -> str | None:
    """Spark values and CSV text on one footing: NULL and '' are None, the rest compared as text."""
    if value is None or value == "":
        return None
    return str(value)


@pytest.fixture(scope="module")
def threads():
    # Most of a dbt node's time is waiting on the Thrift poll: more threads, shorter build.
    saved = os.environ.get("JOINERY_THREADS")
    os.environ["JOINERY_THREADS"] = "4"
    yield
    if saved is None:
        os.environ.pop("JOINERY_THREADS", None)
    else:
        os.environ["JOINERY_THREADS"] = saved


@pytest.fixture(scope="module")
def built(dbt, threads):
    """Input seeds and example models built once. The expected seeds are compared here as CSV files
    (and by the equal_rows tests in `make demo`), so they are not loaded."""
    return dbt.invoke(
        "build",
        "--select",
        "path:seeds/multi_join",
        "path:models/examples/multi_join",
        "--exclude",
        "path:seeds/multi_join/expected",
        "hydrator_customer_purchase_counts",
        "--resource-type",
        "seed",
        "--resource-type",
        "model",
        schema=SCHEMA,
    )


@pytest.mark.parametrize("model", EXAMPLES)
def test_example_equals_expected_seed_in_order(built, spark, model):
    header, expected = read_csv(SEEDS / "expected" / f"expected_{model}.csv")
    # Column names and order: the document fixes them (use case 2: purchase_id first).
    assert spark.columns(f"{SCHEMA}.{model}") == header
    actual = Counter(tuple(normalized(v) for v in row) for row in spark.rows(f"{SCHEMA}.{model}"))
    assert actual == Counter(tuple(normalized(row[c]) for c in header) for row in expected)


def test_use_case_2_order_is_the_documents(built, spark):
    assert spark.columns(f"{SCHEMA}.hydrator_customer_purchase_transactions") == [
        "purchase_id",
        "cust_id",
        "cust_name",
        "location",
        "store",
        "transaction_date",
        "purchase_amount",
    ]


def test_record_metrics_counts_rows_in_out_and_matches(built, spark):
    metrics = spark.query(
        f"select model, input, metric, value from {SCHEMA}.joinery_metrics where invocation_id = "
        f"(select max_by(invocation_id, recorded_at) from {SCHEMA}.joinery_metrics)"
    )
    recorded = {(model, input_name, metric): value for model, input_name, metric, value in metrics}

    def keys(seed: str) -> list[str | None]:
        return [normalized(row["cust_id"]) for row in read_csv(SEEDS / f"{seed}.csv")[1]]

    def expected_rows(model: str) -> int:
        return len(read_csv(SEEDS / "expected" / f"expected_{model}.csv")[1])

    # Outer join with customers required: an optional row matches when its key is a customer's.
    inputs = {
        "customers": "hydrator_customers",
        "purchases": "hydrator_purchases",
        "transactions": "hydrator_transactions",
    }
    customer_keys = {k for k in keys("hydrator_customers") if k is not None}
    want = {("hydrator_customers_outer", None, "rows_out"): expected_rows("hydrator_customers_outer")}
    for name, seed in inputs.items():
        want[("hydrator_customers_outer", name, "rows_in")] = len(keys(seed))
        if name != "customers":
            matched = sum(k in customer_keys for k in keys(seed))
            want[("hydrator_customers_outer", name, "matched_rows")] = matched
            want[("hydrator_customers_outer", name, "unmatched_rows")] = len(keys(seed)) - matched

    # Full join, no input required: a row matches when another input has its (non-NULL) key.
    inputs = {"customers": "hydrator_customers", "loyalty": "hydrator_loyalty", "web_visits": "hydrator_web_visits"}
    want[("hydrator_full_outer", None, "rows_out")] = expected_rows("hydrator_full_outer")
    for name, seed in inputs.items():
        others = {k for other, s in inputs.items() if other != name for k in keys(s) if k is not None}
        matched = sum(k in others for k in keys(seed))
        want[("hydrator_full_outer", name, "rows_in")] = len(keys(seed))
        want[("hydrator_full_outer", name, "matched_rows")] = matched
        want[("hydrator_full_outer", name, "unmatched_rows")] = len(keys(seed)) - matched

    # Sales required, NULL-equal keys: a target matches when a sale has its (cust_id, store), NULL = NULL.
    def composite_keys(seed: str) -> list[tuple]:
        return [(normalized(r["cust_id"]), normalized(r["store"])) for r in read_csv(SEEDS / f"{seed}.csv")[1]]

    sale_keys = composite_keys("hydrator_store_sales")
    target_keys = composite_keys("hydrator_sales_targets")
    matched = sum(k in set(sale_keys) for k in target_keys)
    want[("hydrator_sales_vs_targets", None, "rows_out")] = expected_rows("hydrator_sales_vs_targets")
    want[("hydrator_sales_vs_targets", "sales", "rows_in")] = len(sale_keys)
    want[("hydrator_sales_vs_targets", "targets", "rows_in")] = len(target_keys)
    want[("hydrator_sales_vs_targets", "targets", "matched_rows")] = matched
    want[("hydrator_sales_vs_targets", "targets", "unmatched_rows")] = len(target_keys) - matched

    assert recorded == want


# --- a throwaway project with joinery as a package: probe joins and error cases, one compile ---

INPUT_NAMES = ["a", "b", "c"]


def generated_inputs(seed: int = 7) -> dict[str, list[tuple]]:
    """Three inputs on a composite key (k1, k2) with duplicates and NULLs in either key part."""
    rng = random.Random(seed)
    k1_values, k2_values = [1, 2, 3, None], ["x", "y", None]
    return {
        name: [(rng.choice(k1_values), rng.choice(k2_values), f"{name}{i}") for i in range(10)] for name in INPUT_NAMES
    }


def reference_join(inputs: dict[str, list[tuple]], required: list[str], null_keys: str = "distinct") -> Counter:
    """The Hydrator join in plain Python, each output row the join key then every input's own row (k1, k2, v),
    all NULL where that input has none: for each key, every combination of the inputs' rows, an input
    without rows contributing one NULL row, kept when every required input has a row. With
    null_keys='distinct' a row with a NULL key part matches nothing and is kept alone when no other
    input is required; with 'equal' NULL key parts are one more value."""
    names = list(inputs)
    absent = (None, None, None)
    by_key: dict[tuple, dict[str, list]] = {}
    result: Counter = Counter()
    for name, rows in inputs.items():
        for row in rows:
            if null_keys == "distinct" and None in row[:2]:
                if set(required) <= {name}:
                    result[tuple(row[:2]) + sum((row if n == name else absent for n in names), ())] += 1
            else:
                by_key.setdefault(row[:2], {n: [] for n in names})[name].append(row)
    for key, groups in by_key.items():
        if all(groups[name] for name in required):
            for rows in itertools.product(*[groups[name] or [absent] for name in names]):
                result[key + sum(rows, ())] += 1
    return result


JOIN_TYPES = {
    # name: (join_type, required, required set for the reference)
    "inner": ("inner", None, ["a", "b", "c"]),
    "left": ("left", None, ["a"]),
    "right": ("right", None, ["c"]),
    "full": ("full", None, []),
    "full_grouped": ("full", None, []),
    "outer_b": ("outer", ["b"], ["b"]),
    "outer_a_c": ("outer", ["c", "a"], ["a", "c"]),
}
# Every join type with SQL's NULL keys (probe_<type>) and with NULL-equal keys (probe_<type>_equal).
PROBES = {
    f"probe_{kind}{suffix}": (*spec, null_keys)
    for kind, spec in JOIN_TYPES.items()
    for suffix, null_keys in [("", "distinct"), ("_equal", "equal")]
}
# The join key, then each input's own key and value: NULL where that input has no row.
PROBE_SELECT = [
    "join_key.k1",
    "join_key.k2",
    *[f"{name}.{column}" for name in INPUT_NAMES for column in ["k1", "k2", "v"]],
]

INPUTS_JINJA = "{'a': source('mj', 'mj_a'), 'b': source('mj', 'mj_b'), 'c': source('mj', 'mj_c')}"
KEYS_JINJA = "{'a': ['k1', 'k2'], 'b': ['k1', 'k2'], 'c': ['k1', 'k2']}"
TWO = "{'customers': source('hy', 'hydrator_customers'), 'purchases': source('hy', 'hydrator_purchases')}"
TWO_KEYS = "{'customers': ['cust_id'], 'purchases': ['cust_id']}"

ERRORS = {
    # name: (multi_join arguments, fragments the error message must contain)
    "error_clash": (
        f"{TWO}, {TWO_KEYS}, select=['customers.cust_id', 'purchases.cust_id', 'customers.cust_name']",
        [
            "clashing column names",
            "`cust_id` from customers.cust_id and purchases.cust_id",
            "rename",
            "drop",
            "select",
            "qualify",
        ],
    ),
    "error_clash_many": (
        "{'x': source('mj', 'mj_a'), 'y': source('mj', 'mj_b'), 'z': source('mj', 'mj_c')}, "
        "{'x': ['k1'], 'y': ['k1'], 'z': ['k1']}",
        ["`k2` from x.k2 and y.k2 and z.k2", "`v` from x.v and y.v and z.v"],
    ),
    "error_unknown_input_in_keys": (
        f"{TWO}, {{'customers': ['cust_id'], 'purchase': ['cust_id']}}",
        ["argument `keys`", '"purchase"', "no such input", '["customers", "purchases"]'],
    ),
    "error_unknown_key_column": (
        f"{TWO}, {{'customers': ['cust_id'], 'purchases': ['customer_id']}}",
        ["argument `keys`", "customer_id", "no such column", '"purchase_id", "cust_id", "store"'],
    ),
    "error_unknown_select_column": (
        f"{TWO}, {TWO_KEYS}, select=['customers.cust_id', 'purchases.price']",
        ["argument `select`", "purchases.price", "no such column in input `purchases`", '"store"'],
    ),
    "error_unknown_select_input": (
        f"{TWO}, {TWO_KEYS}, select=['orders.cust_id']",
        ["argument `select`", "no such input `orders`", '["customers", "purchases"]'],
    ),
    "error_unknown_drop_column": (
        f"{TWO}, {TWO_KEYS}, drop=['customers.zip']",
        ["argument `drop`", "customers.zip", '"cust_name", "location"'],
    ),
    "error_unknown_rename_column": (
        f"{TWO}, {TWO_KEYS}, rename={{'purchases.shop': 'shop_name'}}",
        ["argument `rename`", "purchases.shop", "no such column"],
    ),
    "error_bad_join_type": (
        f"{TWO}, {TWO_KEYS}, join_type='semi'",
        ["argument `join_type`", '"semi"', '["inner", "left", "right", "full", "outer", "cross"]'],
    ),
    "error_required_without_outer": (
        f"{TWO}, {TWO_KEYS}, join_type='left', required=['customers']",
        ["argument `required`", "applies only to join_type='outer'"],
    ),
    "error_unknown_required_input": (
        f"{TWO}, {TWO_KEYS}, join_type='outer', required=['shops']",
        ["argument `required`", '"shops"', "no such input"],
    ),
    "error_bad_input_name": (
        "{'customers; drop table x': source('hy', 'hydrator_customers'), "
        "'purchases': source('hy', 'hydrator_purchases')}, "
        "{'customers; drop table x': ['cust_id'], 'purchases': ['cust_id']}",
        ["argument `inputs`", "customers; drop table x", "expected an identifier"],
    ),
    "error_bad_rename_target": (
        f"{TWO}, {TWO_KEYS}, rename={{'purchases.store': 'store name'}}",
        ["argument `rename`", "store name", "expected an identifier"],
    ),
    "error_one_input": (
        "{'customers': source('hy', 'hydrator_customers')}, {'customers': ['cust_id']}",
        ["argument `inputs`", "2 or more"],
    ),
    "error_key_count": (
        f"{TWO}, {{'customers': ['cust_id'], 'purchases': ['cust_id', 'store']}}",
        ["argument `keys`", "same number of key columns"],
    ),
    "error_cross_with_keys": (
        f"{TWO}, {TWO_KEYS}, join_type='cross'",
        ["argument `keys`", "cross join takes no keys"],
    ),
    "error_hint_on_grouped_join": (
        f"{TWO}, {TWO_KEYS}, join_type='full', full_join_plan='grouped', hints={{'purchases': 'broadcast'}}",
        ["argument `hints`", "no join to hint"],
    ),
    "error_bad_full_join_plan": (
        f"{TWO}, {TWO_KEYS}, join_type='full', full_join_plan='hash'",
        ["argument `full_join_plan`", '"hash"', '["chain", "grouped"]'],
    ),
    "error_missing_relation": (
        "{'customers': source('hy', 'hydrator_customers'), 'stores': source('hy', 'hydrator_no_such_table')}, "
        "{'customers': ['cust_id'], 'stores': ['cust_id']}",
        ["hydrator_no_such_table does not exist", "Build it first"],
    ),
    "error_bad_null_keys": (
        f"{TWO}, {TWO_KEYS}, null_keys='nulls_equal'",
        ["argument `null_keys`", '"nulls_equal"', '["distinct", "equal"]'],
    ),
    "error_null_keys_on_cross": (
        f"{TWO}, join_type='cross', null_keys='equal'",
        ["argument `null_keys`", "cross join has no keys"],
    ),
    "error_input_named_join_key": (
        "{'join_key': source('hy', 'hydrator_customers'), 'purchases': source('hy', 'hydrator_purchases')}, "
        "{'join_key': ['cust_id'], 'purchases': ['cust_id']}",
        ["argument `inputs`", "`join_key` is reserved"],
    ),
    "error_unknown_join_key_column": (
        f"{TWO}, {TWO_KEYS}, select=['join_key.cust_name']",
        ["argument `select`", "join_key.cust_name", "no such join key column", '["cust_id"]'],
    ),
    "error_join_key_of_cross_join": (
        f"{TWO}, join_type='cross', select=['join_key.cust_id']",
        ["argument `select`", "a cross join has no join key"],
    ),
    # An input's own key column is not in the default output (the join key is): no silent no-op.
    "error_rename_own_key_not_in_output": (
        f"{TWO}, {TWO_KEYS}, rename={{'customers.cust_id': 'id'}}",
        ["argument `rename`", "customers.cust_id", "not an output column", "join_key.cust_id"],
    ),
    "error_drop_own_key_not_in_output": (
        f"{TWO}, {TWO_KEYS}, drop=['customers.cust_id']",
        ["argument `drop`", "customers.cust_id", "not an output column", "join_key.cust_id"],
    ),
    "error_bad_hint": (
        f"{TWO}, {TWO_KEYS}, hints={{'purchases': 'nested_loop'}}",
        ["argument `hints`", "nested_loop", '["broadcast", "shuffle_hash", "merge"]'],
    ),
}


# --- CDAP's joiner tests, translated (cdapio/cdap: JoinerTestRun, AutoJoinerTest) ---

CDAP_INPUTS = {
    # JoinerTestRun: films, their actors and categories, joined on (film_id, film_name).
    "film": (
        "film_id string, film_name string",
        [("1", "matrix"), ("2", "equilibrium"), ("3", "avatar"), ("4", "humtum")],
    ),
    "film_actor": (
        "film_id string, film_name string, actor_name string",
        [("1", "matrix", "alex"), ("1", "matrix", "bob"), ("2", "equilibrium", "cathie"), ("3", "avatar", "samuel")],
    ),
    "film_category": (
        "film_id string, film_name string, category_name string",
        [
            ("1", "matrix", "action"),
            ("1", "matrix", "thriller"),
            ("2", "equilibrium", "action"),
            ("5", "sultan", "comedy"),
        ],
    ),
    # AutoJoinerTest.testSimpleAutoJoin: users and purchases on (region, user_id).
    "users": ("region string, user_id int, name string", [("us", 0, "alice"), ("eu", 0, "alyce"), ("us", 1, "bob")]),
    "purchases": ("region string, purchase_id int, user_id int", [("us", 123, 0), ("us", 456, 2)]),
    # AutoJoinerTest.testNullEquality: items and attributes on (region, id), with NULL key parts.
    "items": ("id int, region string, name string", [(0, "us", "bacon"), (1, None, None), (None, "us", None)]),
    "attributes": ("region string, id int, attr string", [("us", 0, "food"), (None, 1, "car"), ("us", None, None)]),
    # A third input for the same keys: every NULL pattern, and (NULL, NULL) in this input only.
    "labels": (
        "region string, id int, label string",
        [("us", 0, "organic"), (None, 1, "fast"), ("us", None, "local"), (None, None, "unknown")],
    ),
}

FILMS = (
    "{'film': source('cdap', 'cdap_film'), 'filmActor': source('cdap', 'cdap_film_actor'), "
    "'filmCategory': source('cdap', 'cdap_film_category')}"
)
FILM_KEYS = (
    "{'film': ['film_id', 'film_name'], 'filmActor': ['film_id', 'film_name'], "
    "'filmCategory': ['film_id', 'film_name']}"
)
FILM_RENAMES = "rename={'filmActor.actor_name': 'renamed_actor', 'filmCategory.category_name': 'renamed_category'}"
AUTO = "{'purchases': source('cdap', 'cdap_purchases'), 'users': source('cdap', 'cdap_users')}"
AUTO_KEYS = "{'purchases': ['region', 'user_id'], 'users': ['region', 'user_id']}"
# CDAP's output schema: every column of purchases, then of users (purchases_region, ..., users_name).
AUTO_SELECT = [
    "purchases.region",
    "purchases.purchase_id",
    "purchases.user_id",
    "users.region",
    "users.user_id",
    "users.name",
]
ITEMS = "{'items': source('cdap', 'cdap_items'), 'attributes': source('cdap', 'cdap_attributes')}"
ITEM_KEYS = "{'items': ['region', 'id'], 'attributes': ['region', 'id']}"
ITEM_SELECT = ["items.id", "items.region", "items.name", "attributes.region", "attributes.id", "attributes.attr"]
ITEMS_3 = ITEMS[:-1] + ", 'labels': source('cdap', 'cdap_labels')}"
ITEM_KEYS_3 = ITEM_KEYS[:-1] + ", 'labels': ['region', 'id']}"
ITEM_SELECT_3 = [
    "join_key.region",
    "join_key.id",
    "items.region",
    "items.id",
    "items.name",
    "attributes.attr",
    "labels.label",
]

# CDAP's expected rows (sets there: no case has duplicate rows).
FILM_ROWS = {
    ("1", "matrix", "bob", "thriller"),
    ("1", "matrix", "bob", "action"),
    ("1", "matrix", "alex", "thriller"),
    ("1", "matrix", "alex", "action"),
    ("2", "equilibrium", "cathie", "action"),
    ("3", "avatar", "samuel", None),
}
ALICE = ("us", 123, 0, "us", 0, "alice")
AUTO_456 = ("us", 456, 2, None, None, None)
ALYCE, BOB = (None, None, None, "eu", 0, "alyce"), (None, None, None, "us", 1, "bob")
BACON = (0, "us", "bacon", "us", 0, "food")
NULL_IS_EQUAL = {BACON, (1, None, None, None, 1, "car"), (None, "us", None, "us", None, None)}
NULL_NOT_EQUAL = {BACON, (1, None, None, None, None, None), (None, "us", None, None, None, None)}

CDAP_CASES = {
    # name: (multi_join arguments, expected rows)
    # JoinerTestRun.testOuterJoinWithoutRequiredInputs: each input's own key, NULL where it has no row.
    "cdap_outer_join_without_required_inputs": (
        f"{FILMS}, {FILM_KEYS}, join_type='outer', required=[], {FILM_RENAMES}, "
        "select=['film.film_id', 'film.film_name', 'filmActor.actor_name', 'filmCategory.category_name']",
        FILM_ROWS | {("4", "humtum", None, None), (None, None, None, "comedy")},
    ),
    # The same join selecting the join key instead: sultan's key, from filmCategory.
    "cdap_outer_join_without_required_inputs_join_key": (
        f"{FILMS}, {FILM_KEYS}, join_type='outer', required=[], {FILM_RENAMES}, "
        "select=['join_key.film_id', 'join_key.film_name', 'filmActor.actor_name', 'filmCategory.category_name']",
        FILM_ROWS | {("4", "humtum", None, None), ("5", "sultan", None, "comedy")},
    ),
    # AutoJoinerTest.testAutoOuterJoin, testAutoLeftOuterJoin, testAutoRightOuterJoin, testAutoInnerJoin.
    "cdap_auto_outer_join": (
        f"{AUTO}, {AUTO_KEYS}, join_type='outer', required=[], select={AUTO_SELECT!r}, qualify=true",
        {ALICE, AUTO_456, ALYCE, BOB},
    ),
    "cdap_auto_left_outer_join": (
        f"{AUTO}, {AUTO_KEYS}, join_type='outer', required=['purchases'], select={AUTO_SELECT!r}, qualify=true",
        {ALICE, AUTO_456},
    ),
    "cdap_auto_right_outer_join": (
        f"{AUTO}, {AUTO_KEYS}, join_type='outer', required=['users'], select={AUTO_SELECT!r}, qualify=true",
        {ALICE, ALYCE, BOB},
    ),
    "cdap_auto_inner_join": (f"{AUTO}, {AUTO_KEYS}, select={AUTO_SELECT!r}, qualify=true", {ALICE}),
    # AutoJoinerTest.testNullIsEqual / testNullNotEqual: items required, composite keys with a NULL part.
    "cdap_null_is_equal": (
        f"{ITEMS}, {ITEM_KEYS}, join_type='outer', required=['items'], null_keys='equal', "
        f"select={ITEM_SELECT!r}, qualify=true",
        NULL_IS_EQUAL,
    ),
    "cdap_null_not_equal": (
        f"{ITEMS}, {ITEM_KEYS}, join_type='outer', required=['items'], select={ITEM_SELECT!r}, qualify=true",
        NULL_NOT_EQUAL,
    ),
    # Three inputs, no input required: (us, NULL) matches (us, NULL) only, (NULL, NULL) is a key of its own.
    "cdap_null_is_equal_three_inputs": (
        f"{ITEMS_3}, {ITEM_KEYS_3}, join_type='full', null_keys='equal', select={ITEM_SELECT_3!r}, qualify=true",
        {
            ("us", 0, "us", 0, "bacon", "food", "organic"),
            (None, 1, None, 1, None, "car", "fast"),
            ("us", None, "us", None, None, None, "local"),
            (None, None, None, None, None, None, "unknown"),
        },
    ),
    "cdap_null_not_equal_three_inputs": (
        f"{ITEMS_3}, {ITEM_KEYS_3}, join_type='full', select={ITEM_SELECT_3!r}, qualify=true",
        {
            ("us", 0, "us", 0, "bacon", "food", "organic"),
            (None, 1, None, 1, None, None, None),
            ("us", None, "us", None, None, None, None),
            (None, 1, None, None, None, "car", None),
            ("us", None, None, None, None, None, None),
            (None, 1, None, None, None, None, "fast"),
            ("us", None, None, None, None, None, "local"),
            (None, None, None, None, None, None, "unknown"),
        },
    ),
    # The same with items required: the NULL-equal rows are found with one shuffle per input.
    "cdap_null_is_equal_three_inputs_items_required": (
        f"{ITEMS_3}, {ITEM_KEYS_3}, join_type='left', null_keys='equal', select={ITEM_SELECT_3!r}, qualify=true",
        {
            ("us", 0, "us", 0, "bacon", "food", "organic"),
            (None, 1, None, 1, None, "car", "fast"),
            ("us", None, "us", None, None, None, "local"),
        },
    ),
}


def create_cdap_inputs(spark) -> None:
    for name, (schema, rows) in CDAP_INPUTS.items():
        columns = [column.split()[0] for column in schema.split(", ")]
        casts = ", ".join(f"cast({c} as {t})" for c, t in (column.split() for column in schema.split(", ")))
        values = ", ".join("(" + ", ".join(sql_literal(v) for v in row) + ")" for row in rows)
        spark.execute(f"drop table if exists {SCHEMA}.cdap_{name}")
        spark.execute(
            f"create table {SCHEMA}.cdap_{name} using parquet as "
            f"select {casts} from values {values} as t({', '.join(columns)})"
        )


def cdap_models() -> dict[str, str]:
    return {name: f"{{{{ joinery.multi_join({arguments}) }}}}" for name, (arguments, _) in CDAP_CASES.items()}


@pytest.fixture(scope="module")
def scratch(built, dbt, spark, tmp_path_factory):
    """Create the generated inputs, then run every probe (as a view) and error model in one dbt call: a
    `dbt run` records each model's compile error and goes on, where `dbt compile` stops at the first."""
    spark.execute(f"create database if not exists {SCHEMA}")
    create_cdap_inputs(spark)
    inputs = generated_inputs()
    for name, rows in inputs.items():
        values = ", ".join(
            "({}, {}, '{}')".format("null" if k1 is None else k1, "null" if k2 is None else f"'{k2}'", v)
            for k1, k2, v in rows
        )
        spark.execute(f"drop table if exists {SCHEMA}.mj_{name}")
        spark.execute(
            f"create table {SCHEMA}.mj_{name} using parquet as "
            f"select cast(k1 as int) as k1, cast(k2 as string) as k2, v from values {values} as t(k1, k2, v)"
        )

    # A project of its own named joinery, holding only the macros under test (not the whole repo as
    # a package): the probe and error models compile without depending on the rest of the repo.
    project = tmp_path_factory.mktemp("multi_join_project")
    (project / "dbt_project.yml").write_text(
        "name: joinery\nversion: '1.0'\nconfig-version: 2\nprofile: joinery\n"
        "model-paths: ['models']\nmacro-paths: ['macros']\n"
    )
    for folder in ["common", "multi_join", "metrics"]:
        shutil.copytree(REPO_ROOT / "macros" / folder, project / "macros" / folder)
    models = project / "models"
    models.mkdir()
    (models / "sources.yml").write_text(
        f"version: 2\nsources:\n  - name: mj\n    schema: {SCHEMA}\n"
        "    tables: [{name: mj_a}, {name: mj_b}, {name: mj_c}]\n"
        f"  - name: hy\n    schema: {SCHEMA}\n"
        "    tables: [{name: hydrator_customers}, {name: hydrator_purchases}, {name: hydrator_no_such_table}]\n"
        f"  - name: cdap\n    schema: {SCHEMA}\n    tables: [{', '.join(f'{{name: cdap_{t}}}' for t in CDAP_INPUTS)}]\n"
    )
    for name, (join_type, required, _, null_keys) in PROBES.items():
        (models / f"{name}.sql").write_text(
            f"{{{{ config(materialized='view') }}}}\n{{{{ joinery.multi_join({INPUTS_JINJA}, {KEYS_JINJA}, "
            f"join_type='{join_type}', required={required!r}, qualify=true, null_keys='{null_keys}', "
            f"full_join_plan='{'grouped' if '_grouped' in name else 'chain'}', select={PROBE_SELECT!r}) }}}}\n"
        )
    for name, sql in cdap_models().items():
        (models / f"{name}.sql").write_text(f"{{{{ config(materialized='view') }}}}\n{sql}\n")
    (models / "probe_hint.sql").write_text(
        f"{{{{ config(materialized='view') }}}}\n{{{{ joinery.multi_join({INPUTS_JINJA}, {KEYS_JINJA}, "
        f"join_type='left', hints={{'b': 'broadcast', 'c': 'merge'}}, qualify=true) }}}}\n"
    )
    (models / "probe_cross.sql").write_text(
        f"{{{{ config(materialized='view') }}}}\n{{{{ joinery.multi_join({INPUTS_JINJA}, join_type='cross', "
        f"select=['a.v', 'b.v', 'c.v'], qualify=true) }}}}\n"
    )
    # What record_metrics reads back from each probe's SQL (joinery._metric_joins), as a JSON comment.
    for name in [*PROBES, "probe_cross"]:
        call = (models / f"{name}.sql").read_text().split("\n", 1)[1].strip().removeprefix("{{ ").removesuffix(" }}")
        (models / f"metrics_{name}.sql").write_text(
            f"{{{{ config(materialized='view') }}}}\nselect 1 as one\n"
            f"-- joins: {{{{ tojson(joinery._metric_joins({call})) }}}}\n"
        )
    for name, (arguments, _) in ERRORS.items():
        (models / f"{name}.sql").write_text(
            f"{{{{ config(materialized='view') }}}}\n{{{{ joinery.multi_join({arguments}) }}}}\n"
        )

    scratch_dbt = DbtProject(
        project_dir=project, target="thrift", schema=SCHEMA, target_path=project / "target", env=dbt.env
    )
    result = scratch_dbt.invoke("run", "--select", "path:models", expect_success=False)
    compiled = project / "target" / "compiled" / "joinery" / "models"
    return {"result": result, "compiled": compiled, "inputs": inputs}


def compiled_sql(scratch, name: str) -> str:
    return (scratch["compiled"] / f"{name}.sql").read_text()


@pytest.mark.parametrize("probe", list(PROBES))
def test_join_types_and_null_keys_match_python_reference(scratch, spark, probe):
    _, _, required, null_keys = PROBES[probe]
    assert scratch["result"].status(probe) == "success", scratch["result"].messages
    rows = spark.query(compiled_sql(scratch, probe))
    assert Counter(tuple(row) for row in rows) == reference_join(scratch["inputs"], required, null_keys)


@pytest.mark.parametrize("case", list(CDAP_CASES))
def test_cdap_joiner_cases(scratch, spark, case):
    """CDAP's joiner tests give the same rows: each input's own key in outer joins (where CDAP outputs
    (NULL, NULL, NULL, comedy), so does joinery), and NULL-equal composite keys."""
    assert scratch["result"].status(case) == "success", scratch["result"].messages
    rows = [tuple(row) for row in spark.query(compiled_sql(scratch, case))]
    assert len(rows) == len(set(rows))
    assert set(rows) == CDAP_CASES[case][1]


@pytest.mark.parametrize("probe", [*PROBES, "probe_cross"])
def test_record_metrics_reads_the_join_back_from_its_sql(scratch, probe):
    """record_metrics' post-hook reads the joins from the model's compiled SQL: for every join type,
    chained or grouped, each input's relation and keys, the required inputs and null_keys."""
    assert scratch["result"].status(f"metrics_{probe}") == "success", scratch["result"].messages
    line = next(line for line in compiled_sql(scratch, f"metrics_{probe}").splitlines() if line.startswith("-- joins:"))
    (join,) = json.loads(line.removeprefix("-- joins:"))
    cross = probe == "probe_cross"
    _, _, required, null_keys = PROBES.get(probe, (None, None, [], "distinct"))
    assert (join["join_type"] == "cross") == cross
    assert sorted(join["required"]) == sorted(required)
    assert join["null_keys"] == null_keys
    assert {i["name"]: (i["relation"], i["keys"]) for i in join["inputs"]} == {
        name: (f"{SCHEMA}.mj_{name}", [] if cross else ["k1", "k2"]) for name in INPUT_NAMES
    }


def test_null_equal_three_input_join_keeps_one_shuffle_per_input(scratch, spark):
    spark.execute("set spark.sql.autoBroadcastJoinThreshold=-1")
    try:
        plan = spark.explain(compiled_sql(scratch, "cdap_null_is_equal_three_inputs_items_required"))
    finally:
        spark.execute("reset spark.sql.autoBroadcastJoinThreshold")
    assert (exchanges(plan), operators(plan, "SortMergeJoin")) == (3, 2), plan


def test_cross_join_is_every_combination(scratch, spark):
    rows = spark.query(compiled_sql(scratch, "probe_cross"))
    inputs = scratch["inputs"]
    expected = Counter(itertools.product(*[[row[2] for row in inputs[name]] for name in INPUT_NAMES]))
    assert Counter(tuple(row) for row in rows) == expected


def test_qualified_names(scratch, spark):
    columns = spark.columns(f"({compiled_sql(scratch, 'probe_full_grouped')}) as joined")
    assert columns == ["join_key__k1", "join_key__k2"] + [f"{n}__{c}" for n in INPUT_NAMES for c in ["k1", "k2", "v"]]


def operators(plan: str, name: str) -> int:
    """How many `name` operators a plan from `explain formatted` has (one detail section each)."""
    return len(re.findall(rf"^\(\d+\) {name}\b", plan, flags=re.M))


def exchanges(plan: str) -> int:
    return operators(plan, "Exchange")


def test_each_input_is_shuffled_once(scratch, spark):
    """With broadcast joins off, an N-way join with a required input has exactly N shuffles (every join
    is on the driver's key, so its partitioning is kept). A full join has no such key: chained as one
    writes it by hand it also re-shuffles the intermediate result on coalesce(key); the grouped plan
    shuffles all inputs together once."""
    spark.execute("set spark.sql.autoBroadcastJoinThreshold=-1")
    try:
        for probe in ["probe_inner", "probe_left", "probe_right", "probe_outer_a_c"]:
            assert exchanges(spark.explain(compiled_sql(scratch, probe))) == 3, probe
            # NULL-equal keys (`<=>`): Spark still plans sort-merge equi-joins (on coalesce(key, default)
            # and isnull(key)) and keeps the driver's partitioning, so no input costs a second shuffle.
            plan = spark.explain(compiled_sql(scratch, f"{probe}_equal"))
            assert (exchanges(plan), operators(plan, "SortMergeJoin")) == (3, 2), plan
        # Full joins: chained as by hand, each input once plus the intermediate result once more;
        # the grouped plan shuffles all inputs together once.
        handwritten = (
            f"select * from {SCHEMA}.mj_a a full join {SCHEMA}.mj_b b on a.k1 = b.k1 and a.k2 = b.k2 "
            f"full join {SCHEMA}.mj_c c on coalesce(a.k1, b.k1) = c.k1 and coalesce(a.k2, b.k2) = c.k2"
        )
        assert exchanges(spark.explain(handwritten)) == 4
        assert exchanges(spark.explain(compiled_sql(scratch, "probe_full"))) == 4
        assert exchanges(spark.explain(compiled_sql(scratch, "probe_full_grouped"))) == 1
        plan = spark.explain(compiled_sql(scratch, "probe_full_equal"))
        assert (exchanges(plan), operators(plan, "SortMergeJoin")) == (4, 2), plan
        assert exchanges(spark.explain(compiled_sql(scratch, "probe_full_grouped_equal"))) == 1
    finally:
        spark.execute("reset spark.sql.autoBroadcastJoinThreshold")


def test_hints_reach_the_plan(scratch, spark):
    spark.execute("set spark.sql.autoBroadcastJoinThreshold=-1")
    try:
        plan = spark.explain(compiled_sql(scratch, "probe_hint"))
    finally:
        spark.execute("reset spark.sql.autoBroadcastJoinThreshold")
    # b is broadcast despite broadcasts being off; c (merge) is still a sort-merge join.
    assert operators(plan, "BroadcastHashJoin") == 1
    assert operators(plan, "SortMergeJoin") == 1


@pytest.mark.parametrize("case", list(ERRORS))
def test_compile_errors_explain_themselves(scratch, spark, case):
    result = scratch["result"]
    _, fragments = ERRORS[case]
    assert result.status(case) == "error"
    message = next(node["message"] for node_id, node in result.nodes.items() if node_id.endswith(f".{case}"))
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in: {message}"
    # The view was never created, nor anything else of the model.
    assert leftovers(spark, SCHEMA, case) == []


def test_describe_join_prints_input_and_output_schemas(built, dbt, capsys):
    dbt.invoke(
        "run-operation",
        "joinery.describe_join",
        "--args",
        "{inputs: {customers: hydrator_customers, purchases: hydrator_purchases}, "
        "keys: {customers: [cust_id], purchases: [cust_id]}, join_type: left, rename: {purchases.store: shop}}",
        schema=SCHEMA,
    )
    out = capsys.readouterr().out
    assert (
        "left join of customers, purchases on customers(cust_id) = purchases(cust_id); required inputs: customers; "
        "NULL keys never match" in out
    )
    assert f"input purchases ({SCHEMA}.hydrator_purchases)" in out
    assert re.search(r"output \(5 columns\)\s+cust_id\s+int\s+join key \(join_key\.cust_id\), customers\.cust_id", out)
    assert re.search(r"shop\s+string\s+purchases\.store, NULL where purchases has no match", out)
