"""The layout of joinery's macros, read from the files (no Spark): every macro stays short (a screen),
the macro folders (and joinery_upsert's parts) call each other in one direction only, and every
`joinery.<name>(...)` call names a macro that exists."""

from __future__ import annotations

import re
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from harness.dbt import REPO_ROOT

MACROS = REPO_ROOT / "macros"
MAX_LINES = 60
BLOCK = re.compile(
    r"\{%-?\s*(macro|materialization|test)\s+(\w+)(.*?)\{%-?\s*end(?:macro|materialization|test)\s*-?%\}", re.S
)
CALL = re.compile(r"\bjoinery\.(\w+)\s*\(")


def blocks(path: Path) -> list[tuple[str, int]]:
    """(name, lines) of each macro, materialization and generic test in a file, both tags included."""
    text = path.read_text()
    return [(match.group(2), match.group(0).count("\n") + 1) for match in BLOCK.finditer(text)]


# joinery_upsert's parts, in the order they may call each other: each calls only those before it
# (the materialization, at the folder's root, calls them all).
UPSERT_PARTS = ["contract", "pipeline", "merge_commit", "directory_commit", "(root)"]


def folder_of(path: Path) -> str:
    """The folder under macros/ a file is in; inside joinery_upsert, the part: `joinery_upsert/<part>`."""
    parts = path.relative_to(MACROS).parts
    if parts[0] == "joinery_upsert":
        return "joinery_upsert/" + (parts[1] if len(parts) > 2 else "(root)")
    return parts[0]


def defined_in() -> dict[str, str]:
    """Macro name -> the folder (folder_of) that defines it."""
    found = {}
    for path in sorted(MACROS.rglob("*.sql")):
        for match in BLOCK.finditer(path.read_text()):
            if match.group(1) == "macro":
                found[match.group(2)] = folder_of(path)
    return found


def folder_calls(definitions: dict[str, str]) -> dict[str, set[str]]:
    """Folder -> the other folders whose macros it calls."""
    graph: dict[str, set[str]] = {}
    for path in sorted(MACROS.rglob("*.sql")):
        folder = folder_of(path)
        callees = {definitions[name] for name in CALL.findall(path.read_text()) if name in definitions}
        graph.setdefault(folder, set()).update(callees - {folder})
    return graph


def test_no_macro_exceeds_60_lines():
    paths = sorted(MACROS.rglob("*.sql"))
    assert len(paths) > 20
    too_long = [
        f"{path.relative_to(REPO_ROOT)}: {name} has {lines} lines"
        for path in paths
        for name, lines in blocks(path)
        if lines > MAX_LINES
    ]
    assert not too_long, "split these macros:\n" + "\n".join(too_long)


def test_macro_folders_call_each_other_without_a_cycle():
    graph = folder_calls(defined_in())
    parts = [f"joinery_upsert/{part}" for part in UPSERT_PARTS]
    assert graph["joinery_upsert/(root)"] >= set(parts[:-1]), graph
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as error:
        raise AssertionError(f"macro folders call each other in a cycle: {error.args[1]}") from error
    assert order.index("common") < order.index("joinery_upsert/contract"), order
    # Each part of joinery_upsert calls only the parts before it, and the two commits not each other.
    for index, part in enumerate(parts):
        allowed = set(parts[:index]) - ({"joinery_upsert/merge_commit"} if part.endswith("directory_commit") else set())
        called = {callee for callee in graph.get(part, set()) if callee.startswith("joinery_upsert/")}
        assert called <= allowed, f"{part} calls {sorted(called - allowed)}"
    # The capabilities reach joinery_upsert only through its contract with models.
    for folder, callees in graph.items():
        if not folder.startswith("joinery_upsert"):
            assert {c for c in callees if c.startswith("joinery_upsert")} <= {"joinery_upsert/contract"}, folder


def test_every_joinery_call_names_a_macro_that_exists():
    definitions = defined_in()
    sources = [*MACROS.rglob("*.sql"), *(REPO_ROOT / "models").rglob("*.sql"), *(REPO_ROOT / "tests").rglob("*.sql")]
    unknown = sorted(
        f"{path.relative_to(REPO_ROOT)}: joinery.{name}"
        for path in sources
        for name in set(CALL.findall(path.read_text()))
        if name not in definitions
    )
    assert not unknown, "calls to macros that no file defines:\n" + "\n".join(unknown)


def test_a_cycle_and_a_long_macro_are_caught(tmp_path):
    # The checks above read real files: make sure they can fail.
    long_macro = tmp_path / "long.sql"
    long_macro.write_text("{% macro long() %}\n" + "    {{ 1 }}\n" * MAX_LINES + "{% endmacro %}\n")
    assert blocks(long_macro) == [("long", MAX_LINES + 2)]
    cycle = {"a": {"b"}, "b": {"a"}}
    try:
        list(TopologicalSorter(cycle).static_order())
    except CycleError:
        return
    raise AssertionError("a cycle went unnoticed")
