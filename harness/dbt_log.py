"""dbt's log file as a process writes it: what a running dbt has sent so far, read by the tests that
kill dbt at moments they watch for (python_tests/test_crash_safety.py, test_fk_join_feed.py)."""

from __future__ import annotations

import os
import re
from pathlib import Path

# A log record starts with dbt's colour reset and the time: `\x1b[0m18:36:44.090451 [debug] ...`.
RECORD_START = re.compile(r"^\x1b\[0m\d\d:\d\d:\d\d", re.MULTILINE)
# The record of a statement dbt sends: `On <connection or node>: /* {"app": "dbt", ...} */ <SQL>`.
STATEMENT = re.compile(r"\]: On ([^\s:]+): /\* \{\"app\": \"dbt\".*?\*/\s*(.*)", re.DOTALL)


class LogWatch:
    """What dbt's log file (every statement, as dbt sends it) gained since the watch began."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0
        self.text = ""

    def says(self, *texts: str) -> bool:
        self.read()
        return all(text in self.text for text in texts)

    def read(self) -> str:
        if self.path.exists():
            with self.path.open("rb") as handle:
                # dbt rotates its log file at 10 MB: then the new file is read from its start.
                self.offset = 0 if handle.seek(0, os.SEEK_END) < self.offset else self.offset
                handle.seek(self.offset)
                chunk = handle.read()
            self.offset += len(chunk)
            self.text += chunk.decode(errors="replace")
        return self.text

    def statements(self) -> list[tuple[str, str]]:
        """(connection or node, SQL) of every statement logged so far, in order. A record still
        being written may be cut short: its SQL is what was written of it."""
        found = []
        for record in RECORD_START.split(self.read()):
            match = STATEMENT.search(record)
            if match:
                found.append((match.group(1), match.group(2).strip()))
        return found
