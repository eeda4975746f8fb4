"""Java for joinery's Sparks: check that a Java 17+ runtime is there, and the JVM options every
Spark driver joinery starts gets (its log settings and a class-data archive that halves start time).

Spark 4 needs Java 17 or newer. Without the check, a missing or old Java shows up as a long py4j or
spark-submit stack trace; with it, the user gets one line saying what to do. Standard library only:
the setup script runs it before the virtualenv exists.

The class-data archive (JDK AppCDS, `-XX:SharedArchiveFile`) holds the Spark, Hive and Derby classes
a Spark driver loads, already parsed and verified: a Spark start with it takes about half the time
(benchmarks/optimizations.md, "The test suite"). `python -m harness.java --class-archive` (run by
scripts/setup.sh) builds it once per Java and pyspark version under .spark/cds/. A JVM that cannot
use it (another Java, another class path) runs normally without it.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import REPO_ROOT, table_formats

MIN_JAVA = 17

HOW_TO_GET_JAVA = (
    "Install a Java 17+ runtime (Debian/Ubuntu: `apt-get install openjdk-17-jre-headless`; "
    "macOS: `brew install openjdk@17`) and put `java` on PATH or set JAVA_HOME."
)


class JavaMissing(RuntimeError):
    """No usable Java runtime was found."""


def java_executable() -> str | None:
    """The java binary Spark will use: $JAVA_HOME/bin/java if set, else `java` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = os.path.join(java_home, "bin", "java")
        return candidate if os.access(candidate, os.X_OK) else None
    return shutil.which("java")


def java_major_version(java: str) -> int:
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    text = out.stderr + out.stdout
    match = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not match:
        raise JavaMissing(f"could not read the Java version from `{java} -version`: {text.strip()!r}")
    major = int(match.group(1))
    # Java 8 and older report "1.8.0_..."
    return int(match.group(2)) if major == 1 and match.group(2) else major


def require_java() -> str:
    """Return a description of the Java found, or raise JavaMissing with how to fix it."""
    java = java_executable()
    if java is None:
        where = (
            f"JAVA_HOME={os.environ['JAVA_HOME']} has no bin/java"
            if os.environ.get("JAVA_HOME")
            else "no `java` on PATH"
        )
        raise JavaMissing(f"Spark needs Java {MIN_JAVA}+, but {where}. {HOW_TO_GET_JAVA}")
    major = java_major_version(java)
    if major < MIN_JAVA:
        raise JavaMissing(f"Spark needs Java {MIN_JAVA}+, but {java} is Java {major}. {HOW_TO_GET_JAVA}")
    return f"Java {major} ({java})"


# For the test suite's short-lived Sparks (the crash trials, the cluster module, the lint's compile),
# which run many small, different statements for a few minutes: the quick (C1) JIT alone, with room
# in the code cache so that it does not keep sweeping: the optimizing (C2) compiler costs such a JVM
# more CPU than it saves (benchmarks/optimizations.md, "The test suite"). Not for real workloads,
# nor for the suite's Thrift servers and the benchmark smoke run, which live for the whole run.
QUICK_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=512m"
# For every Spark of the test suite: the throughput collector. On 2 busy cores, G1's write barriers
# and concurrent threads cost more CPU than its short pauses are worth to a test
# (benchmarks/optimizations.md, "The test suite"). Not for real workloads.
SUITE_GC = "-XX:+UseParallelGC"
# For Sparks whose metastore is thrown away after the run (the pytest fixture's Thrift server, the
# benchmark smoke run): Derby does not force its log to disk at each commit, as Hive's own tests do
# (HIVE-29401), which matters because a joinery_upsert run makes many small metastore commits.
# Derby then no longer promises that a commit survives the JVM's end, so never for the crash trials
# (they kill their Spark and must see what a real metastore keeps), the demo, the `local` target or
# `make thrift-start`.
THROWAWAY_METASTORE = "-Dderby.system.durability=test"
LOG_CONFIG = REPO_ROOT / "conf" / "spark" / "log4j2.properties"
ARCHIVE_DIR = REPO_ROOT / ".spark" / "cds"
# What the archive is built from: a Hive-enabled session doing what joinery's models do.
ARCHIVE_WORKLOAD = """
import json, sys
from pyspark.sql import SparkSession
home = sys.argv[1]
builder = SparkSession.builder
for key, value in json.loads(sys.argv[3]).items():
    builder = builder.config(key, value)
spark = (builder.master("local[2]").appName("joinery-class-archive")
    .config("spark.sql.warehouse.dir", home + "/warehouse")
    .config("spark.hadoop.javax.jdo.option.ConnectionURL", f"jdbc:derby:;databaseName={home}/metastore_db;create=true")
    .config("spark.driver.extraJavaOptions", sys.argv[2])
    .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
    .config("spark.sql.shuffle.partitions", "2").enableHiveSupport().getOrCreate())
for statement in [
    "create database if not exists archive",
    "create table archive.p (v string, ts bigint, k int) using parquet partitioned by (k)",
    "insert into archive.p values ('a', 1, 1), ('b', 2, 2), ('c', 3, 1)",
    "create table archive.a (k int, v string) stored as avro",
    "insert into archive.a select k, max_by(v, ts) from archive.p group by k",
    "cache table latest as select *, row_number() over (partition by k order by ts desc) as r from archive.p",
    "select l.k, l.v from latest as l left anti join archive.a as a on l.k = a.k union all select k, v from archive.a",
    "alter table archive.p add partition (k = 3)",
    "describe table extended archive.p",
    "show tblproperties archive.a",
    "create table archive.d (k int, v string) using delta",
    "merge into archive.d as t using archive.a as s on t.k <=> s.k when matched then update set v = s.v "
    "when not matched then insert (k, v) values (s.k, s.v)",
    "describe history archive.d",
    "create namespace if not exists iceberg.archive",
    "create table iceberg.archive.i (k int, v string) using iceberg",
    "insert into iceberg.archive.i select k, v from archive.a",
]:
    spark.sql(statement).collect()
spark.stop()
"""


def spark_home() -> Path:
    """pyspark's installation: the pip wheel is a complete Spark distribution (jars and bin/);
    importable only inside the project's virtualenv."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def class_archive_path() -> Path:
    """Where the archive for this Java and this pyspark lives: its name hashes both, since a JVM
    can use an archive only with the same Java build and the same class path. The jars' sizes and
    times count too: the JVM refuses an archive once a jar of its class path is rewritten (a
    reinstalled pyspark), so such a change names a new archive, which setup builds."""
    java = java_executable() or "java"
    version = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)

    def described(folder: Path) -> list[str]:
        return sorted(f"{jar.name} {jar.stat().st_size} {jar.stat().st_mtime_ns}" for jar in folder.glob("*.jar"))

    jars = described(spark_home() / "jars")
    formats = described(table_formats.jars_dir())
    key = hashlib.sha256(
        "\n".join([java, version.stderr, str(spark_home()), *jars, str(table_formats.jars_dir()), *formats]).encode()
    ).hexdigest()
    return ARCHIVE_DIR / f"spark-{key[:16]}.jsa"


@functools.lru_cache(maxsize=1)
def spark_java_options() -> str:
    """JVM options for every Spark driver joinery starts: log settings, and the class-data archive
    when it exists. Log settings go by system property rather than SPARK_CONF_DIR: a non-empty
    directory on the class path makes the JVM refuse a class-data archive."""
    options = [f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}"]
    try:
        archive = class_archive_path()
    except (ImportError, OSError, subprocess.SubprocessError):
        archive = None
    if archive is not None and archive.exists():
        # -Xlog:cds=off: a JVM that cannot map the archive says nothing and starts without it.
        options += [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    return " ".join(options)


def short_lived_java_options() -> str:
    """JOINERY_JAVA_OPTIONS for the test suite's short-lived Sparks started in subprocesses (crash
    trials, the lint's compile of the examples): spark_java_options() with QUICK_JIT and SUITE_GC."""
    return f"{spark_java_options()} {QUICK_JIT} {SUITE_GC}"


def driver_java_options(derby_home: Path | str, extra: str = "") -> str:
    """`spark.driver.extraJavaOptions` of a Spark joinery starts: its Derby home and its temporary
    folder (the `tmp` folder under that home: see profiles/profiles.yml), then JOINERY_JAVA_OPTIONS
    when the caller set it (e.g. with QUICK_JIT), else spark_java_options()."""
    options = os.environ.get("JOINERY_JAVA_OPTIONS") or spark_java_options()
    return f"-Dderby.system.home={derby_home} -Djava.io.tmpdir={derby_home}/tmp {options} {extra}".strip()


def use_spark_java_options() -> None:
    """Hand the options to the `local` target (profiles/profiles.yml reads JOINERY_JAVA_OPTIONS)
    and to every process started from here; a value set by the caller wins."""
    os.environ.setdefault("JOINERY_JAVA_OPTIONS", spark_java_options())


def build_class_archive() -> Path | None:
    """Build the class-data archive for this Java and pyspark if it is missing; None if this JVM
    cannot (the project works without it, only slower to start)."""
    archive = class_archive_path()
    if archive.exists():
        return archive
    ARCHIVE_DIR.mkdir(parents=True, exist_ok=True)
    print("setup: building the JVM class-data archive for faster Spark starts (once, under a minute)")
    with tempfile.TemporaryDirectory(prefix="joinery-cds-") as home:
        partial = Path(home) / "classes.jsa"
        options = (
            f"-Dderby.system.home={home} -Djava.io.tmpdir={home}/tmp -Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}"
            f" -XX:ArchiveClassesAtExit={partial} -Xlog:cds=off -Xlog:cds+dynamic=off"
        )
        env = {key: value for key, value in os.environ.items() if key != "SPARK_CONF_DIR"}
        formats = json.dumps(table_formats.table_format_conf(home))
        run = subprocess.run(
            [sys.executable, "-c", ARCHIVE_WORKLOAD, home, options, formats],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if run.returncode != 0 or not partial.exists():
            print(f"setup: no class-data archive (Spark starts slower): {(run.stderr or run.stdout)[-500:]}")
            return None
        for stale in ARCHIVE_DIR.glob("spark-*.jsa"):
            stale.unlink()
        shutil.move(str(partial), archive)
    return archive


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--class-archive", action="store_true", help="build the class-data archive if missing")
    args = parser.parse_args()
    try:
        found = require_java()
    except JavaMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.class_archive:
        build_class_archive()
    else:
        print(f"java: {found}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
