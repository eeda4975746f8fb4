"""docs/quickstart.md, run as a new user would: a scratch dbt project outside the repository, built
from the page's own blocks (the `<!-- quickstart: ... -->` markers), joinery installed with the
page's `local:` packages.yml, the page's session profile, a plain `dbt` (none of harness/dbt.py's
corrections), two `dbt build`s with the page's second batch landed between them, and the rows read
back from Spark against the page's expected tables, as multisets.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import textwrap
from collections import Counter
from datetime import datetime
from pathlib import Path

import yaml

from harness.dbt import PROFILES_DIR, REPO_ROOT
from harness.java import short_lived_java_options
from harness.table_formats import require_jars
from python_tests.conftest import SMALL_DATA_CONF

DOC = REPO_ROOT / "docs" / "quickstart.md"
MARKED_BLOCK = re.compile(r"<!-- quickstart: (?P<key>[^>]+?) -->\n```[a-z]*\n(?P<body>.*?)```", re.S)
DBT = Path(sys.executable).parent / "dbt"


def doc_blocks() -> dict[str, str]:
    blocks = {match["key"]: match["body"] for match in MARKED_BLOCK.finditer(DOC.read_text())}
    assert blocks, f"no `<!-- quickstart: ... -->` blocks in {DOC}"
    return blocks


def settings_parts(settings: str) -> dict[str, str]:
    """The settings block split at its `# --- <file>: ... ---` lines, by file."""
    parts = re.split(r"^# --- ([^\s:]+)[^\n]*---\n", settings, flags=re.M)
    return {name: body for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def render_env(text: str, env: dict[str, str]) -> str:
    """A profile's `{{ env_var('NAME') }}` calls replaced by their values, as dbt renders them."""
    return re.sub(r"\{\{\s*env_var\('(\w+)'\)\s*\}\}", lambda match: env[match[1]], text)


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def write_project(blocks: dict[str, str], project: Path) -> None:
    settings = settings_parts(blocks["settings"])
    (project / "macros").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(blocks["dbt_project"] + "\n" + settings["dbt_project.yml"])
    (project / "macros" / "generate_schema_name.sql").write_text(settings["macros/generate_schema_name.sql"])
    # The page's sibling checkout, here the repository under test.
    packages = blocks["packages-local"].replace("../joinery", str(REPO_ROOT))
    assert packages != blocks["packages-local"], "the local packages.yml no longer names ../joinery"
    (project / "packages.yml").write_text(packages)
    for key, body in blocks.items():
        if key.startswith("file "):
            path = project / key.removeprefix("file ")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)


READ_BACK = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    request = json.loads(sys.argv[1])
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in request["conf"].items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    out = {}
    for name, query in request["queries"].items():
        # A query, or [a statement, the columns of its result to keep] (e.g. describe history).
        sql, columns = (query, None) if isinstance(query, str) else query
        frame = spark.sql(sql).select(*columns) if columns else spark.sql(sql)
        out[name] = [[None if v is None else str(v) for v in row] for row in frame.collect()]
    print("ROWS " + json.dumps(out))
    spark.stop()
""")


def read_back(conf: dict[str, str], queries: dict[str, str | list], env: dict[str, str]) -> dict[str, list]:
    """Rows of `queries` on a Spark with the page's session settings, in a process of its own: the
    metastore is Derby's embedded one, one process at a time, as dbt's session was."""
    run = subprocess.run(
        [sys.executable, "-c", READ_BACK, json.dumps({"conf": conf, "queries": queries})],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    line = next((line for line in run.stdout.splitlines() if line.startswith("ROWS ")), None)
    assert run.returncode == 0 and line, run.stdout[-3000:] + run.stderr[-3000:]
    return json.loads(line.removeprefix("ROWS "))


def dbt(project: Path, env: dict[str, str], *args: str) -> str:
    run = subprocess.run([str(DBT), *args], cwd=project, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"`dbt {' '.join(args)}` failed:\n{run.stdout[-5000:]}\n{run.stderr[-2000:]}"
    return run.stdout


def scratch_project(tmp_path: Path, files: set[str] | None = None) -> tuple[dict[str, str], Path, dict[str, str]]:
    """The page's project, profile and environment under `tmp_path`: (blocks, project, env); with
    `files`, only those of the page's seeds and models (and their rows to append and expected)."""
    blocks = doc_blocks()
    if files is not None:
        tables = {Path(path).stem for path in files}
        blocks = {
            key: body
            for key, body in blocks.items()
            if not key.startswith(("file ", "append ", "expected-")) or key.split()[-1] in files | tables
        }
    project = tmp_path / "my_project"
    write_project(blocks, project)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "profiles.yml").write_text(blocks["profile-session"])
    spark_dir = tmp_path / "spark"
    (spark_dir / "tmp").mkdir(parents=True)
    # A user's environment: the page's variables, none of joinery's (schema, target, Java options).
    env = {key: value for key, value in os.environ.items() if not key.startswith(("JOINERY_", "DBT_"))}
    env |= {"SPARK_DIR": str(spark_dir), "JOINERY_JARS_DIR": str(require_jars()), "DBT_PROFILES_DIR": str(profiles)}
    # The venv's dbt first on PATH, as an activated venv has it (an orchestrator runs `dbt`).
    env["PATH"] = f"{DBT.parent}{os.pathsep}{env.get('PATH', '')}"
    # Speed only, as for the suite's other short-lived Sparks: the class-data archive and the quick
    # JIT for every JVM, and no code generation for a few rows (Spark's tests run both modes).
    env["JAVA_TOOL_OPTIONS"] = short_lived_java_options()
    conf = " ".join(f"--conf {key}={value}" for key, value in SMALL_DATA_CONF.items())
    env["PYSPARK_SUBMIT_ARGS"] = f"{conf} pyspark-shell"
    return blocks, project, env


def land_second_batch(blocks: dict[str, str], project: Path) -> None:
    for key, body in blocks.items():
        if key.startswith("append "):
            with (project / key.removeprefix("append ")).open("a") as seed:
                seed.write(body)


def session_conf(blocks: dict[str, str], env: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The session profile's schema and Spark settings, rendered."""
    profile = yaml.safe_load(render_env(blocks["profile-session"], env))["my_project"]["outputs"]["local"]
    return profile["schema"], {str(k): str(v) for k, v in profile["server_side_parameters"].items()}


def test_the_quickstart_builds_a_compaction_and_an_fk_join_twice_in_a_new_project(tmp_path):
    blocks, project, env = scratch_project(tmp_path)
    # The page's first run, as its commands say (`dbt deps`, `dbt build`).
    commands = [line.split()[1:] for line in blocks["run"].splitlines() if line.startswith("dbt ")]
    assert commands == [["deps"], ["build"]], commands
    for command in commands:
        dbt(project, env, *command)
    assert (project / "dbt_packages" / "joinery" / "dbt_project.yml").exists()
    # Read back later, by time travel to this moment: one Spark start for both runs' rows.
    after_first = datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")
    land_second_batch(blocks, project)
    dbt(project, env, "build")

    schema, conf = session_conf(blocks, env)
    expected = {key: csv_rows(body) for key, body in blocks.items() if key.startswith("expected-")}
    assert len(expected) == 4, sorted(expected)
    queries = {}
    for key, rows in expected.items():
        when, table = key.removeprefix("expected-").split()
        travel = f" timestamp as of '{after_first}'" if when == "first" else ""
        columns = ", ".join(rows[0])
        queries[key] = f"select {columns} from {schema}.{table}{travel}"
    got = read_back(conf, queries, env)
    for key, rows in expected.items():
        want = Counter(tuple(row.values()) for row in rows)
        assert Counter(map(tuple, got[key])) == want, (key, got[key])


def test_the_quickstart_thrift_and_cluster_profiles_keep_the_suites_settings():
    # The suite runs its Thrift targets with profiles/profiles.yml; the page's Thrift and cluster
    # outputs must keep the settings that matter there: ANSI through set:hiveconf, the settings
    # block's same line, a 1 s poll and no statement retries.
    blocks = doc_blocks()
    ours = yaml.safe_load((PROFILES_DIR / "profiles.yml").read_text())["joinery"]["outputs"]["thrift"]
    ansi = yaml.safe_load(settings_parts(blocks["settings"])["profiles.yml"])
    assert ansi == {"server_side_parameters": ours["server_side_parameters"]}
    for key in ("profile-thrift", "profile-cluster"):
        (output,) = yaml.safe_load(blocks[key])["my_project"]["outputs"].values()
        assert output["method"] == "thrift", key
        for setting in ("server_side_parameters", "poll_interval", "query_retries"):
            assert output[setting] == ours[setting], (key, setting)


def test_the_quickstart_git_package_installs_at_its_pinned_revision(tmp_path):
    # The page's git: form, with this repository as the URL and its HEAD commit as the revision.
    blocks = doc_blocks()
    (entry,) = yaml.safe_load(blocks["packages-git"])["packages"]
    assert set(entry) == {"git", "revision"}, entry
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    project = tmp_path / "my_project"
    project.mkdir()
    (project / "dbt_project.yml").write_text(blocks["dbt_project"])
    packages = {"packages": [{"git": f"file://{REPO_ROOT}", "revision": head.stdout.strip()}]}
    (project / "packages.yml").write_text(yaml.safe_dump(packages))
    env = {key: value for key, value in os.environ.items() if not key.startswith(("JOINERY_", "DBT_"))}
    dbt(project, env, "deps")
    installed = yaml.safe_load((project / "dbt_packages" / "joinery" / "dbt_project.yml").read_text())
    assert installed["name"] == "joinery"
    assert head.stdout.strip() in (project / "package-lock.yml").read_text()
