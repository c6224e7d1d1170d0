"""Parts of real clients' own integration test suites, run against one broker.

    prepare()                                   # download + build once (cached)
    run = run_suites("gregor", "127.0.0.1:9093", OUT_DIR, "4.3.1")
    run.results["realsuite:franz-go/TestGroupETL"]["outcome"]   # "passed"

Two suites written by the clients' authors, obtained from registries only and
cached under .cache/realsuites/ (git-ignored), so a second run starts at once:
franz-go's `pkg/kgo` integration tests (franz_go.py) and kafka-python's
`test/integration` tests (kafka_python.py).

Both suites create their topics with explicit partition counts and replication
factor 1 and run on the launcher's BROKER_SETTINGS; the one setting added for
them is group.min.session.timeout.ms=1000 (kafka-python's test_group asks for
3 s sessions, and kafka-python's own test broker allows them the same way).
Tests deliberately left out are in NOT_RUN with the reason.

Each test becomes a row `realsuite:<suite>/<test>` with an outcome (passed,
failed, skipped, error), as the compat suite's rows; verdicts.py judges them and
report.py renders the section "Real suites written by others".
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import franz_go, kafka_python
from .suite import PREFIX, SUITE_ROW, SuiteUnavailable

__all__ = ["NOT_RUN", "SuiteUnavailable", "SuitesRun", "prepare", "run_suites"]

NOT_RUN = franz_go.NOT_RUN + kafka_python.NOT_RUN


@dataclass
class SuitesRun:
    name: str
    bootstrap: str
    results: dict[str, dict] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    logs: dict[str, Path] = field(default_factory=dict)


def prepare() -> None:
    """Obtain and build both suites (once; later calls find them in .cache/realsuites/)."""
    franz_go.prepare()
    kafka_python.prepare()


def run_suites(name: str, bootstrap: str, out_dir: Path, kafka_version: str) -> SuitesRun:
    """Run franz-go's and then kafka-python's chosen tests against one broker."""
    run = SuitesRun(name, bootstrap)
    out_dir.mkdir(parents=True, exist_ok=True)
    suites = [
        ("franz-go", lambda log: franz_go.run(bootstrap, log)),
        ("kafka-python", lambda log: kafka_python.run(bootstrap, log, kafka_version)),
    ]
    for suite, runner in suites:
        log = out_dir / f"{name}-realsuite-{suite}.log"
        t0 = time.monotonic()
        try:
            results = runner(log)
        except (SuiteUnavailable, OSError, subprocess.SubprocessError) as exc:
            results = {
                f"{PREFIX}{suite}{SUITE_ROW}": {
                    "outcome": "error",
                    "message": str(exc)[-2000:],
                    "client": suite,
                    "api": [],
                }
            }
        run.seconds[suite] = time.monotonic() - t0
        run.logs[suite] = log
        run.results.update(results)
    return run
