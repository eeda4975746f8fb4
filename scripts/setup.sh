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

# install_venv VENV LOCK [EXTRA_LOCK]: create VENV and install the pinned LOCK (and EXTRA_LOCK, with
# LOCK as its constraints) unless the stamp says this exact set is installed already.
install_venv() {
  local venv=$1 lock=$2 extra=${3:-}
  local stamp=$venv/.requirements.sha256 want
  want=$(cat "$lock" ${extra:+"$extra"} | sha256sum | cut -d' ' -f1)
  if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return
  fi
  echo "setup: installing $lock${extra:+ and $extra} into $venv (first run takes a minute or two)"
  [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$lock"
  # The orchestrator group (Dagster) is for the tests and recipes only: its own file, so that the
  # package's lock stays what a dbt project needs.
  [ -z "$extra" ] || "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$extra" -c "$lock"
  echo "$want" > "$stamp"
  echo "setup: done ($("$venv/bin/dbt" --version | sed -n 's/.*installed: *//p' | head -1) dbt-core in $venv)"
}

if [ "${1:-}" = "--dbt111" ]; then
  # dbt-core 1.11, still admitted by require-dbt-version: a venv of its own for `make check`'s second
  # pass (README, "Which dbt"); built only when that pass asks for it.
  install_venv .venv-dbt111 requirements-dbt111.txt
  # No class-data archive of its own: building one deletes the other venv's (harness/java.py keeps
  # one per machine), and this pass starts one Spark only.
  exit 0
fi

install_venv .venv requirements.txt requirements-orchestrator.txt

# The Delta and Iceberg jars of conf/jars/pom.xml, resolved with Maven once per change of the list.
.venv/bin/python -m harness.table_formats

# The JVM class-data archive that halves every Spark start (harness/java.py); built once per Java
# and pyspark version, skipped (Spark only starts slower) where this JVM cannot build one.
.venv/bin/python -m harness.java --class-archive
