"""The harness proves itself: the server it starts, the targets' SQL mode, and real rows read back."""

from __future__ import annotations

import csv
import json
import os
import shutil
import socket
from collections import Counter
from pathlib import Path

import pytest
import yaml

from harness import table_formats
from harness.dbt import REPO_ROOT, DbtProject
from harness.java import JavaMissing, class_archive_path, require_java, spark_home
from harness.thrift_server import LOOPBACK, ThriftServer, ThriftServerError

SEEDS = REPO_ROOT / "seeds" / "multi_join"


def listening_addresses(port: int) -> set[str]:
    """Local addresses in LISTEN state on `port`, from /proc/net/tcp and tcp6."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port_hex = local.split(":")
            if state == "0A" and int(port_hex, 16) == port:
                found.add(address)
    return found


def test_thrift_server_listens_on_loopback_only(thrift_server):
    addresses = listening_addresses(thrift_server.port)
    # 127.0.0.1 as /proc/net/tcp writes it (little-endian), or as an IPv4-mapped IPv6 address.
    loopback = {"0100007F", "0000000000000000FFFF00000100007F"}
    assert addresses, f"nothing listens on port {thrift_server.port}"
    assert addresses <= loopback, f"port {thrift_server.port} listens on {addresses}, not only on 127.0.0.1"


def test_thrift_server_maps_the_class_data_archive(thrift_server):
    # setup builds the archive; a JVM that refuses it (e.g. a non-empty SPARK_CONF_DIR on its class
    # path) starts silently without it, twice as slowly. spark-submit execs the JVM in its process.
    archive = class_archive_path().resolve()  # /proc/<pid>/maps names the file, not a link to it
    if not archive.exists():
        pytest.skip(f"no class-data archive at {archive} (scripts/setup.sh builds it where the JVM can)")
    maps = Path(f"/proc/{thrift_server.pid}/maps").read_text()
    assert str(archive) in maps, f"the Thrift server's JVM did not map {archive}"


def test_thrift_server_keeps_its_scratch_files_in_its_home(thrift_server, spark):
    # Spark and Hive write scratch files to java.io.tmpdir: a folder per client session that Hive
    # never deletes, and everything when the JVM is killed. They belong under the server's home.
    spark.query("select 1")
    scratch = thrift_server.home / "tmp"
    sessions = list(scratch.glob("*_resources"))
    assert sessions, f"no Hive session folder under {scratch}: {sorted(p.name for p in scratch.glob('*'))}"
    assert any(scratch.glob("spark-*")), f"no Spark temporary folder under {scratch}"


def test_dbt_runs_with_ansi_mode_on(dbt):
    result = dbt.invoke("test", "--select", "assert_ansi_mode_on")
    assert result.status("assert_ansi_mode_on") == "pass"


def test_seeds_and_example_model_read_back(dbt, spark):
    dbt.invoke("build", "--select", "+hydrator_customer_purchase_counts", "expected_hydrator_customer_purchase_counts")
    with (SEEDS / "hydrator_customers.csv").open() as handle:
        customers = list(csv.DictReader(handle))
    with (SEEDS / "hydrator_purchases.csv").open() as handle:
        purchases = Counter(int(row["cust_id"]) for row in csv.DictReader(handle))
    expected = sorted((int(c["cust_id"]), c["cust_name"], purchases[int(c["cust_id"])]) for c in customers)

    assert spark.rows(f"{dbt.schema}.hydrator_customer_purchase_counts", order_by="cust_id") == expected
    assert spark.rows(f"{dbt.schema}.hydrator_customers", order_by="cust_id") == sorted(
        (int(c["cust_id"]), c["cust_name"], c["location"]) for c in customers
    )


def test_dbt_keeps_the_parse_of_each_schema_and_vars_it_returns_to(dbt, minimal_project, tmp_path):
    # dbt alone keeps one partial-parse file and parses everything again when the schema (in the
    # profile) or the vars change; the harness keeps one per state. perf_info.json counts the
    # files dbt parsed in the last invocation: all of them on a full parse, none on a reuse.
    project = DbtProject(project_dir=minimal_project, target=dbt.target, target_path=tmp_path / "target", env=dbt.env)

    def files_parsed(**state) -> int:
        project.invoke("parse", **state)
        return json.loads((project.target_path / "perf_info.json").read_text())["parsed_path_count"]

    first = files_parsed(schema="parse_a")
    assert first > 0
    assert files_parsed(schema="parse_b") == first
    assert files_parsed(schema="parse_b", vars={"parse_probe": 1}) == first
    assert files_parsed(schema="parse_a") == 0
    assert files_parsed(schema="parse_b", vars={"parse_probe": 1}) == 0


def test_start_fails_clearly_when_port_is_taken(tmp_path):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind((LOOPBACK, 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        with pytest.raises(ThriftServerError, match=f"port 127.0.0.1:{port} is already in use"):
            ThriftServer(tmp_path, port).start(timeout=30)


def test_start_fails_clearly_without_java(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    with pytest.raises(JavaMissing, match="Spark needs Java 17"):
        require_java()
    with pytest.raises(ThriftServerError, match="Spark needs Java 17"):
        ThriftServer(tmp_path, 1).start(timeout=30)


def test_start_failure_shows_the_server_log(tmp_path):
    server = ThriftServer(tmp_path, 0, driver_memory="not-a-size")
    server.port = __import__("harness.thrift_server", fromlist=["free_port"]).free_port()
    with pytest.raises(ThriftServerError, match="exited with code .* last lines of"):
        server.start(timeout=60)


def test_table_format_jars_hold_no_class_pyspark_has(thrift_server):
    # Two copies of a class on one class path load whichever comes first (delta #7415: delta-kernel
    # brings its own Hadoop and parquet); conf/jars/pom.xml excludes what pyspark ships.
    jars = table_formats.require_jars()
    assert sorted(path.name for path in jars.glob("delta-spark_*.jar")), f"no Delta jar in {jars}"
    assert table_formats.duplicate_classes(jars, spark_home() / "jars") == {}


def test_local_profile_has_the_table_format_settings_of_every_other_spark():
    # profiles.yml is the `local` target's copy of harness/table_formats.py (a profile cannot call
    # Python): the two must not drift apart.
    profiles = yaml.safe_load((REPO_ROOT / "profiles" / "profiles.yml").read_text())
    local = profiles["joinery"]["outputs"]["local"]["server_side_parameters"]
    rendered = {
        key: str(value)
        .replace("{{ env_var('JOINERY_JARS_DIR', '.spark/jars') }}", "JARS")
        .replace("{{ env_var('JOINERY_SPARK_DIR', '.spark/local') }}", "SPARK_DIR")
        for key, value in local.items()
    }
    expected = table_formats.table_format_conf("SPARK_DIR", Path("JARS"))
    assert {key: rendered.get(key) for key in expected} == expected


def test_thrift_server_writes_delta_with_deletion_vectors_and_iceberg_in_its_catalog(spark):
    spark.execute("create schema if not exists harness_formats")
    spark.execute("create or replace table harness_formats.d (k int, v string) using delta")
    spark.execute("insert into harness_formats.d values (1, 'a'), (2, 'b')")
    spark.execute(
        "merge into harness_formats.d as t using (select 2 as k, 'b2' as v union all select 3, 'c') as s "
        "on t.k = s.k when matched then update set v = s.v when not matched then insert (k, v) values (s.k, s.v)"
    )
    assert spark.rows("harness_formats.d", order_by="k") == [(1, "a"), (2, "b2"), (3, "c")]
    assert spark.query_dicts("describe detail harness_formats.d")[0]["format"] == "delta"
    assert spark.query("show tblproperties harness_formats.d ('delta.enableDeletionVectors')") == [
        ("delta.enableDeletionVectors", "true")
    ]
    catalog = table_formats.ICEBERG_CATALOG
    spark.execute(f"create namespace if not exists {catalog}.harness_formats")
    spark.execute(f"create or replace table {catalog}.harness_formats.i (k int, v string) using iceberg")
    spark.execute(f"insert into {catalog}.harness_formats.i values (1, 'a')")
    assert spark.rows(f"{catalog}.harness_formats.i") == [(1, "a")]


def test_setup_says_what_to_do_without_maven(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(table_formats.JarsMissing, match=r"Maven \(`mvn`\) is not on PATH"):
        table_formats.resolve(tmp_path / "jars")


def test_setup_says_what_failed_when_maven_cannot_reach_its_repository(tmp_path, monkeypatch):
    # A real Maven whose only repository is a closed loopback port, with an empty local repository.
    mvn = shutil.which("mvn")
    if mvn is None:
        pytest.skip("no Maven on this machine")
    (tmp_path / "settings.xml").write_text(
        "<settings><mirrors><mirror><id>closed</id><mirrorOf>*</mirrorOf>"
        "<url>http://127.0.0.1:9/</url></mirror></mirrors></settings>"
    )
    wrapper = tmp_path / "bin" / "mvn"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {mvn} -s {tmp_path}/settings.xml -Dmaven.repo.local={tmp_path}/repo "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(table_formats.JarsMissing, match="could not resolve conf/jars/pom.xml(.|\n)*ERROR"):
        table_formats.resolve(tmp_path / "jars")
    assert not (tmp_path / "jars").exists()
