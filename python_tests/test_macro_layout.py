"""The layout of joinery's macros, read from the files (no Spark): every macro stays short (a screen),
the macro folders (and joinery_upsert's parts) call each other in one direction only, every
`joinery.<name>(...)` call names a macro that exists, and docs/DESIGN.md's call graph is the current
one. The parsing is harness/call_graph.py's."""

from __future__ import annotations

from graphlib import CycleError, TopologicalSorter

from harness.call_graph import (
    CALL,
    DESIGN,
    MACROS,
    blocks,
    current_diagram,
    defined_in,
    design_with,
    folder_calls,
    written_diagram,
)
from harness.dbt import REPO_ROOT

MAX_LINES = 60

# joinery_upsert's parts, in the order they may call each other: each calls only those before it
# (the materialization, at the folder's root, calls them all).
UPSERT_PARTS = ["contract", "pipeline", "merge_commit", "directory_commit", "(root)"]


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


def test_design_call_graph_is_current():
    # docs/DESIGN.md draws the folders' calls; a change of who calls whom must redraw it.
    assert written_diagram(DESIGN.read_text()) == current_diagram(), (
        "docs/DESIGN.md's call graph is stale: run `python -m harness.call_graph --write`"
    )


def test_a_cycle_and_a_long_macro_are_caught(tmp_path):
    # The checks above read real files: make sure they can fail.
    long_macro = tmp_path / "long.sql"
    long_macro.write_text("{% macro long() %}\n" + "    {{ 1 }}\n" * MAX_LINES + "{% endmacro %}\n")
    assert blocks(long_macro) == [("long", MAX_LINES + 2)]
    stale = design_with("flowchart TB\n    a --> b", DESIGN.read_text())
    assert written_diagram(stale) != current_diagram()
    cycle = {"a": {"b"}, "b": {"a"}}
    try:
        list(TopologicalSorter(cycle).static_order())
    except CycleError:
        return
    raise AssertionError("a cycle went unnoticed")
