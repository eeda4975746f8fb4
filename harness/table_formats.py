"""Delta Lake and Iceberg on every Spark joinery starts: the jars and the settings.

The jars are listed, pinned, in conf/jars/pom.xml. `python -m harness.table_formats` (run by
scripts/setup.sh) resolves that list with Maven into .spark/jars/ once per change of the list.
Every joinery Spark (the `local` target, the Thrift servers, the benchmark session, the local
cluster) then gets `table_format_conf()`:
- the jars on the driver's and executors' class path (`extraClassPath`), not `spark.jars` or
  `--packages`: a Thrift server's sessions do not see classes loaded by those (delta #1332, #1341);
- Delta in `spark_catalog` (parquet, orc and Hive tables stay as they are: DeltaCatalog hands
  them to Spark's own catalog), deletion vectors on for new Delta tables;
- Iceberg in a catalog of its own, `iceberg`, a Hadoop catalog under the Spark folder (Derby cannot
  serve as an Iceberg Hive catalog: apache/iceberg #370, #7847).

profiles/profiles.yml holds the same settings for the `local` target as literals (a profile cannot
call Python); test_harness checks that the two agree.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from harness import REPO_ROOT

POM = REPO_ROOT / "conf" / "jars" / "pom.xml"
ICEBERG_CATALOG = "iceberg"
STAMP = ".pom.sha256"
# Classes found both in a resolved jar and in pyspark's jars, allowed because they are the same
# release: Iceberg's runtime jar bundles jts-core 1.20.0, which pyspark ships too.
SHARED_WITH_PYSPARK = {"iceberg-spark-runtime": ("org/locationtech/jts/",)}


class JarsMissing(RuntimeError):
    """The Delta and Iceberg jars are not resolved, or could not be."""


def jars_dir() -> Path:
    """Where the resolved jars live: JOINERY_JARS_DIR, else .spark/jars/ of this checkout."""
    return Path(os.environ.get("JOINERY_JARS_DIR") or REPO_ROOT / ".spark" / "jars").resolve()


def use_jars_dir() -> None:
    """Hand the jars folder, absolute, to the `local` target (profiles/profiles.yml reads
    JOINERY_JARS_DIR) and to every process started from here; a value set by the caller wins."""
    os.environ.setdefault("JOINERY_JARS_DIR", str(jars_dir()))


def class_path(directory: Path | None = None) -> str:
    """The class-path entry for the jars: the folder's wildcard, expanded by the JVM at start."""
    return f"{directory or jars_dir()}/*"


def table_format_conf(spark_dir: Path | str, directory: Path | None = None) -> dict[str, str]:
    """The Spark settings for Delta and Iceberg; `spark_dir` is the Spark's own folder (its Iceberg
    warehouse goes under it, beside the Hive warehouse)."""
    jars = class_path(directory)
    return {
        "spark.driver.extraClassPath": jars,
        "spark.executor.extraClassPath": jars,
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension,"
        "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.databricks.delta.properties.defaults.enableDeletionVectors": "true",
        # Delta rebuilds a table's state from its log in this many tasks (default 50): on small local
        # tables the tasks' fixed cost is most of every Delta statement.
        "spark.databricks.delta.snapshotPartitions": "2",
        f"spark.sql.catalog.{ICEBERG_CATALOG}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{ICEBERG_CATALOG}.type": "hadoop",
        f"spark.sql.catalog.{ICEBERG_CATALOG}.warehouse": f"{spark_dir}/iceberg",
        # Each Spark session (each Thrift connection) has its own catalog instance; with the catalog's
        # table cache on, a session keeps reading the version it loaded first, not what another
        # session (dbt's, a reader's) committed since.
        f"spark.sql.catalog.{ICEBERG_CATALOG}.cache-enabled": "false",
        # Delta keeps a table's schema in its log; Hive's check would only log an error when a
        # `create or replace` changes a column's type.
        "spark.hadoop.hive.metastore.disallow.incompatible.col.type.changes": "false",
    }


def pom_digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def jars_resolved(directory: Path | None = None) -> bool:
    directory = directory or jars_dir()
    stamp = directory / STAMP
    return stamp.exists() and stamp.read_text().strip() == pom_digest() and any(directory.glob("*.jar"))


def require_jars(directory: Path | None = None) -> Path:
    """The jars folder, or JarsMissing saying how to get it."""
    directory = directory or jars_dir()
    if not any(directory.glob("*.jar")):
        raise JarsMissing(
            f"no Delta/Iceberg jars in {directory}: run `make setup` (it resolves conf/jars/pom.xml with "
            "Maven), or point JOINERY_JARS_DIR at a folder holding those jars"
        )
    return directory


def resolve(directory: Path | None = None) -> Path:
    """Resolve conf/jars/pom.xml into `directory` unless it already holds this list's jars."""
    directory = directory or jars_dir()
    if jars_resolved(directory):
        return directory
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsMissing(
            "Maven (`mvn`) is not on PATH; joinery needs it once, to fetch the Delta and Iceberg jars listed "
            "in conf/jars/pom.xml (Debian/Ubuntu: `apt-get install maven`; macOS: `brew install maven`). "
            "Or point JOINERY_JARS_DIR at a folder that already holds those jars."
        )
    print(f"setup: resolving the Delta and Iceberg jars of {POM.relative_to(REPO_ROOT)} with Maven into {directory}")
    directory.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="jars-", dir=directory.parent) as staging:
        run = subprocess.run(
            [mvn, "-B", "-q", "-f", str(POM), "dependency:copy-dependencies",
             f"-DoutputDirectory={staging}", "-DincludeScope=runtime"],
            capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
        if run.returncode != 0:
            errors = [line for line in (run.stdout + run.stderr).splitlines() if "ERROR" in line][:6]
            raise JarsMissing(
                "Maven could not resolve conf/jars/pom.xml; check that it can reach its artifact repository "
                "(network, proxy, or a mirror in ~/.m2/settings.xml). Maven said:\n  " + "\n  ".join(errors)
            )
        Path(staging, STAMP).write_text(pom_digest() + "\n")
        if directory.exists():
            shutil.rmtree(directory)
        os.rename(staging, directory)
        os.mkdir(staging)  # for the TemporaryDirectory's own clean-up
    print(f"setup: {len(list(directory.glob('*.jar')))} jars in {directory}")
    return directory


def classes(jar: Path) -> set[str]:
    with zipfile.ZipFile(jar) as archive:
        return {name for name in archive.namelist() if name.endswith(".class") and not name.startswith("META-INF/")}


def duplicate_classes(directory: Path, pyspark_jars: Path) -> dict[str, list[str]]:
    """Classes of a resolved jar that a pyspark jar also holds, by resolved jar (allowed overlaps
    left out): two copies of a class on one class path load whichever comes first."""
    theirs: set[str] = set()
    for jar in pyspark_jars.glob("*.jar"):
        theirs |= classes(jar)
    found: dict[str, list[str]] = {}
    for jar in sorted(directory.glob("*.jar")):
        allowed = next((prefixes for name, prefixes in SHARED_WITH_PYSPARK.items() if jar.name.startswith(name)), ())
        clash = sorted(name for name in classes(jar) & theirs if not name.startswith(allowed))
        if clash:
            found[jar.name] = clash
    return found


def main() -> int:
    try:
        resolve()
    except JarsMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
