"""joinery as dbt users get it: a package whose examples stay out of the installing project, whose
public macros work from outside, are dispatched and documented, and whose docs build on Spark.

- integration_tests/ (the dbt-utils convention) installs joinery with `local: ../` and calls every
  public macro from outside; it is built on the pytest Thrift server and read back.
- The root project's manifest says which macros are public; each must be dispatched and documented.
- `dbt docs generate` on the thrift target lists the example models with their columns.
"""

from __future__ import annotations

import ast
import csv
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from harness.dbt import REPO_ROOT, DbtProject
from harness.sql import unique_mapping

INTEGRATION = REPO_ROOT / "integration_tests"
SCHEMA = "test_packaging"

# Public macros of the design contract (docs/DESIGN.md) that integration_tests/ must call. Those not
# written yet are reported by test_every_public_macro_is_called_from_integration_tests.
CONTRACT = [
    "compact",
    "dedup_latest",
    "union_padded",
    "multi_join",
    "record_metrics",
    "collect_join",
    "route",
    "port",
    "route_union",
    "changelog_state",
    "fk_join",
    "change_feed",
    "is_incremental",
]


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


def joinery_macros(manifest: dict) -> dict[str, dict]:
    return {
        macro["name"]: macro
        for macro in manifest["macros"].values()
        if macro["package_name"] == "joinery" and macro["original_file_path"].startswith("macros/")
    }


def is_internal(macro: dict) -> bool:
    """Not part of the package's API: named with a leading `_`, as dbt-utils names its helpers, so a
    reader of a call site sees it without the yml."""
    return macro["name"].startswith("_")


# Macros dbt itself calls by their bare name (a project overrides them by defining one): dbt does not
# dispatch them, and nobody calls them as joinery.<name>.
DBT_NAMED_OVERRIDES = {"generate_schema_name", "generate_alias_name", "generate_database_name"}


def is_public(macro: dict) -> bool:
    """Public: what a user calls as joinery.<name>. Dispatch implementations (default__/spark__),
    materializations, generic tests and dbt's own overridable macros are reached through dbt, not by
    name. Every other macro without the `_` prefix is public."""
    name = macro["name"]
    if name.startswith(("materialization_", "test_")) or "__" in name or is_internal(macro):
        return False
    return name not in DBT_NAMED_OVERRIDES


def signature_arguments(macro: dict) -> list[str]:
    """Argument names of a macro, read from its `{% macro name(...) %}` line (Python syntax)."""
    header = re.search(r"{%-?\s*macro\s+\w+\s*\((.*?)\)\s*-?%}", macro["macro_sql"], re.S)
    assert header, f"cannot read the signature of {macro['name']}"
    function = ast.parse(f"def signature({header.group(1)}): pass").body[0]
    return [argument.arg for argument in function.args.args]


@pytest.fixture(scope="module")
def integration(thrift_server, tmp_path_factory) -> DbtProject:
    project = DbtProject(
        project_dir=INTEGRATION,
        target="thrift",
        schema=SCHEMA,
        target_path=tmp_path_factory.mktemp("integration_target"),
        env={"JOINERY_THRIFT_PORT": str(thrift_server.port), "JOINERY_THRIFT_HOST": "127.0.0.1"},
    )
    project.deps()
    return project


@pytest.fixture(scope="module")
def integration_build(integration):
    return integration.invoke("build")


def test_integration_project_builds_and_passes(integration_build):
    failed = {name: node for name, node in integration_build.nodes.items() if node["status"] not in ("success", "pass")}
    assert not failed, f"integration_tests nodes did not pass: {failed}"
    models = {name.split(".")[-1] for name in integration_build.nodes if name.startswith("model.")}
    assert {"it_multi_join", "it_compact", "it_fk_join_left", "it_port_big", "it_collect_join", "it_upsert"} <= models


def test_examples_of_the_package_are_not_built_in_the_user_project(integration_build, integration, spark):
    # The package's on-run-end hook (print_build_summary) runs everywhere and does nothing unless
    # asked (var joinery_build_summary); everything else of joinery must stay out.
    from_joinery = [
        name
        for name in integration_build.nodes
        if name.split(".")[1] == "joinery" and not name.startswith("operation.")
    ]
    assert not from_joinery, f"joinery's own nodes ran in the installing project: {from_joinery}"
    manifest = json.loads((integration.target_path / "manifest.json").read_text())
    enabled = [
        node_id
        for section in ("nodes", "sources")
        for node_id, node in manifest[section].items()
        if node["package_name"] == "joinery" and node["resource_type"] != "operation"
    ]
    assert not enabled, f"joinery nodes enabled in the installing project: {enabled}"
    tables = {row[1] for row in spark.query(f"show tables in {SCHEMA}")}
    assert tables, f"nothing was built in {SCHEMA}"
    # joinery_metrics: the table record_metrics writes for it_multi_join.
    strangers = sorted(t for t in tables if not t.startswith(("it_", "expected_it_")) and t != "joinery_metrics")
    assert not strangers, f"tables of joinery's examples in the user's schema: {strangers}"


def test_integration_tables_read_back(integration_build, spark):
    seeds = INTEGRATION / "seeds"
    customers = {int(row["customer_id"]): row for row in read_csv(seeds / "it_customers.csv")}
    joined = sorted(
        (int(order["customer_id"]), int(order["order_id"]), int(order["amount"]), customer["name"], customer["region"])
        for order in read_csv(seeds / "it_orders.csv")
        if (customer := customers.get(int(order["customer_id"])))
    )
    actual = spark.rows(
        f"{SCHEMA}.it_multi_join",
        columns=["customer_id", "order_id", "amount", "name", "region"],
        order_by="customer_id, order_id",
    )
    assert actual == joined

    metrics = unique_mapping(
        ((row[0], row[1]), row[2])
        for row in spark.query(
            f"select coalesce(input, ''), metric, value from {SCHEMA}.joinery_metrics where model = 'it_multi_join'"
        )
    )
    orders, customers = read_csv(seeds / "it_orders.csv"), read_csv(seeds / "it_customers.csv")
    assert metrics[("orders", "rows_in")] == len(orders)
    assert metrics[("customers", "rows_in")] == len(customers)
    assert metrics[("", "rows_out")] == len(joined)

    big = sorted(int(o["order_id"]) for o in read_csv(seeds / "it_orders.csv") if int(o["amount"]) >= 5)
    assert [row[0] for row in spark.rows(f"{SCHEMA}.it_port_big", columns=["order_id"], order_by="order_id")] == big


def test_is_incremental_in_the_installing_project_is_false_first_and_true_later(integration_build, integration, spark):
    def model_selects(result) -> list[str]:
        return [sql for node, sql in result.statements if node.endswith(".it_upsert") and "it_snapshot" in sql]

    first = model_selects(integration_build)
    assert first and not any("max(loaded.updated_at)" in sql for sql in first), first
    before = spark.rows(f"{SCHEMA}.it_upsert")
    later = model_selects(integration.invoke("run", "--select", "it_upsert"))
    assert later and all("max(loaded.updated_at)" in sql for sql in later), later
    assert spark.rows(f"{SCHEMA}.it_upsert") == before


def test_examples_are_built_when_the_user_opts_in(minimal_project, tmp_path):
    """The opt-in documented in docs/guarantees.md: the user's dbt_project.yml enables them."""
    project = minimal_project
    (project / "packages.yml").write_text(f"packages:\n  - local: {REPO_ROOT}\n")
    with (project / "dbt_project.yml").open("a") as dbt_project:
        dbt_project.write(
            "models: {joinery: {examples: {+enabled: true}}}\n"
            "seeds: {joinery: {+enabled: true}}\n"
            "sources: {joinery: {+enabled: true}}\n"
            "data_tests: {joinery: {+enabled: true}}\n"
        )
    user_project = DbtProject(project_dir=project, target="thrift", target_path=tmp_path / "target")
    user_project.deps()
    result = user_project.invoke("ls", "--resource-type", "model", "--resource-type", "seed", "--output", "name")
    assert result.success
    manifest = json.loads((tmp_path / "target" / "manifest.json").read_text())
    names = {node["name"] for node in manifest["nodes"].values() if node["package_name"] == "joinery"}
    assert {"hydrator_customer_purchase_counts", "hydrator_customers"} <= names
    shutil.rmtree(project / "dbt_packages", ignore_errors=True)


def test_every_public_macro_is_called_from_integration_tests():
    calls = " ".join(path.read_text() for path in (INTEGRATION / "models").rglob("*.sql"))
    calls += " ".join(path.read_text() for path in (INTEGRATION / "models").rglob("*.yml"))
    missing = [name for name in CONTRACT if not re.search(rf"joinery\.{name}\b", calls)]
    assert not missing, f"public macros not called from integration_tests/models: {missing}"


def test_examples_and_integration_tests_call_no_internal_macro():
    # The examples and the integration project use only what a user may: a `_` macro can change.
    # (joinery's generic tests in tests/generic/ are package code, as the macros are.)
    sources = [
        *(REPO_ROOT / "models").rglob("*.sql"),
        *(INTEGRATION / "models").rglob("*.sql"),
        *(INTEGRATION / "tests").rglob("*.sql"),
    ]
    calls = sorted(
        f"{path.relative_to(REPO_ROOT)}: joinery.{name}"
        for path in sources
        for name in set(re.findall(r"\bjoinery\.(_\w+)", path.read_text()))
    )
    assert not calls, "internal macros called outside macros/:\n" + "\n".join(calls)


def test_internal_macros_are_hidden_from_the_docs_site():
    # The dbt docs site lists what a user may call: every `_` macro's yml entry says docs: show: false.
    shown = sorted(
        f"{path.relative_to(REPO_ROOT)}: {entry['name']}"
        for path in (REPO_ROOT / "macros").rglob("*.yml")
        for entry in yaml.safe_load(path.read_text()).get("macros", [])
        if entry["name"].startswith("_") and (entry.get("docs") or {}).get("show", True) is not False
    )
    assert not shown, "internal macros shown on the docs site (add `docs: {show: false}`):\n" + "\n".join(shown)


def test_public_macros_are_dispatched_and_documented(dbt):
    dbt.invoke("parse")
    manifest = json.loads((dbt.target_path / "manifest.json").read_text())
    macros = joinery_macros(manifest)
    problems = []
    for name, macro in sorted(macros.items()):
        if not is_public(macro):
            continue
        where = macro["original_file_path"]
        if not re.search(rf"adapter\.dispatch\(\s*['\"]{name}['\"]\s*,\s*['\"]joinery['\"]\s*\)", macro["macro_sql"]):
            problems.append(
                f"{name} ({where}): public but not dispatched with adapter.dispatch('{name}', 'joinery') "
                "(if it is an internal helper, say so: `_` prefix, or `meta: {internal: true}` in its yml)"
            )
        if not macro["description"].strip():
            problems.append(f"{name} ({where}): no description in a macros/*.yml")
        documented = {arg["name"]: arg for arg in macro["arguments"]}
        for argument in signature_arguments(macro):
            if argument not in documented:
                problems.append(f"{name} ({where}): argument `{argument}` not documented")
            elif not (documented[argument].get("description") or "").strip():
                problems.append(f"{name} ({where}): argument `{argument}` has no description")
    assert not problems, "public macros must be dispatched and documented:\n" + "\n".join(problems)


def test_contract_macros_exist():
    """Every macro of the contract in docs/DESIGN.md is defined (is_incremental: by the upsert work)."""
    sources = " ".join(path.read_text() for path in (REPO_ROOT / "macros").rglob("*.sql"))
    missing = [name for name in CONTRACT if not re.search(rf"{{%-?\s*macro\s+{name}\s*\(", sources)]
    assert not missing, f"contract macros not defined in macros/: {missing}"


def test_docs_generate_lists_example_models_with_columns(dbt, spark):
    # In the dbt fixture's own schema, as this module's `dbt parse`: to dbt a new schema is a new
    # profile, for which it parses the whole project again.
    dbt.invoke("build", "--select", "path:seeds/multi_join", "path:models/examples/multi_join")
    # Selected like the build: compiling models whose inputs were not built here would fail.
    dbt.invoke("docs", "generate", "--select", "path:models/examples/multi_join")
    catalog = json.loads((dbt.target_path / "catalog.json").read_text())
    manifest = json.loads((dbt.target_path / "manifest.json").read_text())
    examples = {
        node_id: node
        for node_id, node in manifest["nodes"].items()
        if node["resource_type"] == "model" and node["original_file_path"].startswith("models/examples/multi_join/")
    }
    assert examples
    for node_id, node in examples.items():
        assert node_id in catalog["nodes"], f"{node['name']} missing from catalog.json"
        catalog_columns = {name.lower() for name in catalog["nodes"][node_id]["columns"]}
        table_columns = {name.lower() for name in spark.columns(f"{dbt.schema}.{node['alias']}")}
        assert catalog_columns == table_columns, node["name"]
        documented = {name.lower() for name in node["columns"]}
        assert documented <= catalog_columns, f"{node['name']}: documented columns not in the table"
