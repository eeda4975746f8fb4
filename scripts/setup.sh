#!/usr/bin/env bash
# Set up the project on a fresh machine: check Python and Java, create .venv, install the pinned
# requirements. Idempotent and quick when nothing changed (requirements.txt is hashed).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "error: $PYTHON not found; joinery needs Python 3.10+ (set PYTHON=/path/to/python3)" >&2
  exit 1
fi
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "error: joinery needs Python 3.10+, $PYTHON is $("$PYTHON" --version 2>&1)" >&2
  exit 1
fi

# Java is checked before anything starts Spark (harness/java.py uses the standard library only).
"$PYTHON" -m harness.java

stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if ! { [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; }; then
  echo "setup: installing pinned requirements into .venv (first run takes a minute or two)"
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
  echo "$want" > "$stamp"
  echo "setup: done ($(.venv/bin/dbt --version | sed -n 's/.*installed: *//p' | head -1) dbt-core)"
fi

# The Delta and Iceberg jars of conf/jars/pom.xml, resolved with Maven once per change of the list.
.venv/bin/python -m harness.table_formats

# The JVM class-data archive that halves every Spark start (harness/java.py); built once per Java
# and pyspark version, skipped (Spark only starts slower) where this JVM cannot build one.
.venv/bin/python -m harness.java --class-archive
