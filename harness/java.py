"""Check that a Java 17+ runtime is available before anything starts Spark.

Spark 4 needs Java 17 or newer. Without this check, a missing or old Java shows up as a
long py4j or spark-submit stack trace; with it, the user gets one line saying what to do.
Standard library only: the setup script runs it before the virtualenv exists.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

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


def main() -> int:
    try:
        print(f"java: {require_java()}")
    except JavaMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
