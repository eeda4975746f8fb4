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


_MASK = (1 << 64) - 1
_P1, _P2, _P3, _P4, _P5 = (
    0x9E3779B185EBCA87,
    0xC2B2AE3D27D4EB4F,
    0x165667B19E3779F9,
    0x85EBCA77C2B2AE63,
    0x27D4EB2F165667C5,
)


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (64 - bits))) & _MASK


def _xxh64(data: bytes, seed: int) -> int:
    """XXH64 of fewer than 32 bytes (the reference's values are short), unsigned."""
    assert len(data) < 32, "the reference hashes short values only"
    digest = (seed + _P5 + len(data)) & _MASK
    offset = 0
    while offset + 8 <= len(data):
        lane = _rotl(int.from_bytes(data[offset : offset + 8], "little") * _P2 & _MASK, 31) * _P1 & _MASK
        digest = (_rotl(digest ^ lane, 27) * _P1 + _P4) & _MASK
        offset += 8
    if offset + 4 <= len(data):
        digest ^= int.from_bytes(data[offset : offset + 4], "little") * _P1 & _MASK
        digest = (_rotl(digest, 23) * _P2 + _P3) & _MASK
        offset += 4
    for byte in data[offset:]:
        digest = _rotl(digest ^ (byte * _P5 & _MASK), 11) * _P1 & _MASK
    for shift, prime in ((33, _P2), (29, _P3)):
        digest = (digest ^ (digest >> shift)) * prime & _MASK
    return digest ^ (digest >> 32)


def spark_xxhash64(values: list[Any], types: list[str]) -> int:
    """Spark's xxhash64(values...): seed 42, each non-NULL value hashed into the running hash
    (int as 4 bytes, bigint as 8, little-endian; string as UTF-8), signed."""
    digest = 42
    for value, spark_type in zip(values, types, strict=True):
        if value is None:
            continue
        if spark_type == "string":
            data = value.encode()
        else:
            size = {"int": 4, "bigint": 8}[spark_type]
            data = (value % (1 << 8 * size)).to_bytes(size, "little")
        digest = _xxh64(data, digest)
    return digest - (1 << 64) if digest >= 1 << 63 else digest


def version_rank(event: dict[str, Any], columns: dict[str, str]) -> tuple:
    """The documented order of a key's versions (docs/fk_join.md): greatest sequence_by, then latest
    arrival (loaded_at), then the delete, then the greater xxhash64 of the whole changelog row."""
    row_hash = spark_xxhash64([event[name] for name in columns], list(columns.values()))
    return (event["seq"], event["batch_id"], event["op"] == "d", row_hash)


def latest_state(events: list[dict[str, Any]], key: str) -> dict[Any, dict[str, Any]]:
    """The winning version per key by version_rank, deletes included (the KTable with tombstones)."""
    columns = ORDER_COLUMNS if key == "order_id" else CUSTOMER_COLUMNS
    state: dict[Any, dict[str, Any]] = {}
    for event in events:
        current = state.get(event[key])
        if current is None or version_rank(event, columns) > version_rank(current, columns):
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
