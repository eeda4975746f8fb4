"""A plain-Python compaction: what `joinery.compact` must return, written as a dict of latest versions.

Version order per key, greatest wins: updated_at (None lowest), loaded_at (None lowest), source
position (snapshot 0, delta i), then the other columns in order (None lowest). Delta rows loaded
before the snapshot's newest loaded_at are superseded by it. A winning version that is deleted
removes its key.
"""

from __future__ import annotations

from typing import Any


def _low(value: Any) -> tuple:
    return (value is not None, value if value is not None else 0)


def compact_reference(
    snapshot: list[dict],
    deltas: list[list[dict]],
    key: list[str],
    columns: list[str],
    updated_at: str | None = None,
    loaded_at: str | None = "loaded_at",
    deleted: str | None = None,
    defaults: dict[str, Any] | None = None,
    keep_deleted: bool = False,
) -> list[dict]:
    """The compacted rows (dicts over `columns`) of a snapshot and ordered deltas; a column missing
    from a row's input is its default, else None. keep_deleted: also the keys whose winning version
    is a delete (their tombstones), as that version."""
    defaults = defaults or {}
    newest_snapshot = max((row[loaded_at] for row in snapshot if row.get(loaded_at) is not None), default=None)
    candidates = [(row, 0) for row in snapshot]
    for position, delta in enumerate(deltas, start=1):
        for row in delta:
            arrived = row.get(loaded_at) if loaded_at else None
            if newest_snapshot is not None and arrived is not None and arrived < newest_snapshot:
                continue
            candidates.append((row, position))

    def rank(candidate):
        row, position = candidate
        others = [c for c in columns if c not in key]
        return (
            _low(row.get(updated_at)) if updated_at else (False, 0),
            _low(row.get(loaded_at)) if loaded_at else (False, 0),
            position,
            tuple(_low(row.get(c)) for c in others),
        )

    latest: dict[tuple, tuple] = {}
    for candidate in candidates:
        identity = tuple(candidate[0].get(c) for c in key)
        if identity not in latest or rank(candidate) > rank(latest[identity]):
            latest[identity] = candidate
    result = []
    for row, _position in latest.values():
        if deleted and row.get(deleted) in (True, "true") and not keep_deleted:
            continue
        result.append({c: row.get(c, defaults.get(c)) for c in columns})
    return result


def sorted_rows(rows: list[dict], columns: list[str]) -> list[tuple]:
    """Rows as tuples over `columns`, in a stable order that tolerates None."""
    return sorted(
        (tuple(row.get(c) for c in columns) for row in rows),
        key=lambda values: tuple((v is not None, str(v)) for v in values),
    )
