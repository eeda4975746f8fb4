"""The FK join's plain-Python reference: the live state of each changelog and the join of the two,
shared by the scenario test (test_fk_join.py) and the property test (test_fk_join_property.py)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

ORDER_COLUMNS = {
    "order_id": "int",
    "customer_id": "int",
    "amount": "int",
    "op": "string",
    "seq": "bigint",
    "batch_id": "int",
}
CUSTOMER_COLUMNS = {"customer_id": "int", "customer_name": "string", "op": "string", "seq": "bigint", "batch_id": "int"}
RESULT_COLUMNS = ["order_id", "customer_id", "amount", "customer_name"]


def latest_state(events: list[dict[str, Any]], key: str) -> dict[Any, dict[str, Any]]:
    """The newest version per key by (seq, batch_id), deletes included (the KTable with tombstones)."""
    state: dict[Any, dict[str, Any]] = {}
    for event in events:
        current = state.get(event[key])
        rank = (event["seq"], event["batch_id"], event["op"] == "d")
        if current is None or rank > (current["seq"], current["batch_id"], current["op"] == "d"):
            state[event[key]] = event
    return state


def fk_join_reference(orders: list[dict], customers: list[dict], join_type: str) -> Counter[tuple]:
    """(order_id, customer_id, amount, customer_name) rows of the FK join of the two live states."""
    live_orders = [o for o in latest_state(orders, "order_id").values() if o["op"] != "d"]
    live_customers = {c["customer_id"]: c for c in latest_state(customers, "customer_id").values() if c["op"] != "d"}
    rows = Counter()
    for order in live_orders:
        customer = live_customers.get(order["customer_id"]) if order["customer_id"] is not None else None
        if customer is None and join_type == "inner":
            continue
        name = customer["customer_name"] if customer else None
        rows[(order["order_id"], order["customer_id"], order["amount"], name)] += 1
    return rows


def result_changes(before: Counter[tuple], after: Counter[tuple]) -> Counter[tuple]:
    """What Kafka Streams emits between two results: (key, value..., tombstone) once per changed key."""
    old = {row[0]: row for row in before}
    new = {row[0]: row for row in after}
    changes = Counter((*row, False) for key, row in new.items() if old.get(key) != row)
    changes.update((key, None, None, None, True) for key in old if key not in new)
    return changes


def derandomized_examples(strategy: st.SearchStrategy, count: int) -> list:
    """`count` examples of `strategy` from hypothesis, the same ones on every run (derandomized), for
    property tests that apply all their histories at once rather than one test run per example."""
    examples = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(strategy)
    def collect(example):
        examples.append(example)

    collect()
    return examples
