"""The harness proves itself: the server it starts, the targets' SQL mode, and real rows read back."""

from __future__ import annotations

import csv
import json
import socket
from collections import Counter
from pathlib import Path

import pytest

from harness.dbt import REPO_ROOT, DbtProject
from harness.java import JavaMissing, class_archive_path, require_java
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
    archive = class_archive_path()
    if not archive.exists():
        pytest.skip(f"no class-data archive at {archive} (scripts/setup.sh builds it where the JVM can)")
    maps = Path(f"/proc/{thrift_server.process.pid}/maps").read_text()
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

    assert spark.rows("joinery.hydrator_customer_purchase_counts", order_by="cust_id") == expected
    assert spark.rows("joinery.hydrator_customers", order_by="cust_id") == sorted(
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
