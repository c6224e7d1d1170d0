"""The one place that decides what a test's outcomes on Kafka and on Gregor mean.

A row is a test id and its cells, {target name: result or None}, a result being
{"outcome": "passed" | "failed" | "error" | "skipped" | None, ...}. Our own
suite's tests (compat_tests/) must pass on Apache Kafka: one that does not is
BROKEN ON KAFKA and fails the run. The foreign suites' tests (ids
`realsuite:<suite>/<test>`) are not ours to fix: one that does not pass on
Kafka is reported only. Either way a test that passes on Kafka and not on
Gregor is GREGOR DIFFERS, a failure of the run, unless
compat_tests/KNOWN_DIFFERENCES lists it.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

from . import KNOWN_DIFFERENCES

# Ids of the foreign suites' tests: realsuite:<suite>/<test>; a suite that did not
# run at all has the single row realsuite:<suite>/(suite).
PREFIX = "realsuite:"
SUITE_ROW = "/(suite)"

# How an outcome is shown in a matrix cell.
CELL = {"passed": "pass", "failed": "FAIL", "error": "ERROR", "skipped": "skip", None: "-"}


def load_known(path: Path = KNOWN_DIFFERENCES) -> list[tuple[str, str]]:
    """(pattern, reason) pairs: `<test id or fnmatch pattern>  <reason>`, # comments."""
    entries: list[tuple[str, str]] = []
    if not path.exists():
        return entries
    for raw_line in path.read_text().splitlines():
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        entries.append((parts[0], parts[1].strip() if len(parts) > 1 else "(no reason given)"))
    return entries


def short_id(test_id: str) -> str:
    """A compat test's id without its directory (foreign suites' ids are unchanged)."""
    return test_id.removeprefix("compat_tests/")


def known_reason(test_id: str, known: list[tuple[str, str]]) -> str | None:
    """Why KNOWN_DIFFERENCES lists the test (by its id or short id), or None."""
    sid = short_id(test_id)
    for pattern, reason in known:
        if fnmatch.fnmatchcase(sid, pattern) or fnmatch.fnmatchcase(test_id, pattern):
            return reason
    return None


def verdict(test_id: str, cells: dict[str, dict | None], known: str | None) -> tuple[str, bool]:
    """(verdict text, counts as a failure of the run); `known` is the reason
    KNOWN_DIFFERENCES gives for the test, if any."""
    ours = not test_id.startswith(PREFIX)
    kafka = (cells.get("kafka") or {}).get("outcome")
    gregor = (cells.get("gregor") or {}).get("outcome")
    if not ours and test_id.endswith(SUITE_ROW):
        # The suite could not be obtained or gave no report: its results are
        # missing, which fails the run whichever broker it was.
        return "SUITE DID NOT RUN", True
    if ours and any(cell is None or cell.get("outcome") is None for cell in cells.values()):
        return "DID NOT RUN", True
    if "kafka" in cells and kafka != "passed":
        if not ours:
            if kafka == "skipped" and gregor in ("skipped", None):
                return "skipped on Kafka", False
            if gregor == "passed":
                return "fails on Kafka, passes on Gregor", False
            return "fails on Kafka too", False
        if known:
            return "known difference", False
        return "BROKEN ON KAFKA", True
    if "gregor" in cells and gregor != "passed":
        if known:
            return "known difference", False
        return "GREGOR DIFFERS", True
    if known:
        return "known difference (now passes)", False
    flaky = [n for n, c in cells.items() if c and c.get("first_failure")]
    if flaky:
        return f"ok on a rerun ({', '.join(flaky)} failed first)", False
    return "ok", False
