"""compat_tests/run.py's machinery: it starts the brokers (launcher), runs the
suite against each (orchestrate) and the clients' own suites (suites/), decides
each test's verdict (verdicts) and renders the matrix (report).

Standard library only, and nothing of Gregor's code: the runner, like the
suite, must work against any Kafka-protocol broker. tools/ (run_kafka,
run_gregor, go_toolchain) is put on sys.path as the scripts there expect.
"""

from __future__ import annotations

import sys
from pathlib import Path

COMPAT_DIR = Path(__file__).resolve().parents[1]
REPO = COMPAT_DIR.parent
OUT_DIR = REPO / ".cache" / "compat"
KNOWN_DIFFERENCES = COMPAT_DIR / "KNOWN_DIFFERENCES"
REPORT = COMPAT_DIR / "REPORT.md"

_TOOLS = str(REPO / "tools")
if _TOOLS not in sys.path:
    sys.path.insert(0, _TOOLS)
