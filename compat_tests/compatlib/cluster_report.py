"""What a failed cluster test shows of its brokers, for a failure seen in CI
(where the cluster's logs are gone by the time anyone reads them). Used by
both cluster fixtures (compat_tests/cluster/ and tests/cluster/), which also
import the hook below so that their teardown can tell whether the test failed.
"""

from __future__ import annotations

import re

import pytest

# What a failure report shows of a Gregor broker's log: leaderships, ISR
# changes, truncations, coordinator loads, ZooKeeper sessions, starts and stops.
EVENT = re.compile(
    r"listening on|stopping|stopped|controller|leader \d+ -> |ISR|diverges|truncat"
    r"|loaded |session|no answer|refused|failed|ERROR|WARNING"
)

KAZOO_EVENT = re.compile(r"established|connection lost|expired|time-out|session closed")


def failure_report(node_id: int, lines: list[str], log_path, shown: int = 250) -> str:
    """A broker's own account of a failed test: the cluster's events over the
    whole run (the last `shown`), then its last 40 lines."""
    # kazoo's lines are its session's changes only, not every attempt to reconnect.
    lines = [line for line in lines if "kazoo.client" not in line or KAZOO_EVENT.search(line)]
    events = [line for line in lines if EVENT.search(line)]
    return (
        f"--- broker {node_id}: {len(events)} events (the last {shown}), "
        f"then the last 40 lines; all in {log_path} ---\n"
        + "".join(events[-shown:])
        + "...\n"
        + "".join(lines[-40:])
    )


def call_failed(item) -> bool:
    """Whether `item`'s call phase failed (set by the hook below)."""
    report = getattr(item, "rep_call", None)
    return report is not None and report.failed


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps each test's call report on its item, for `call_failed`."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.rep_call = report
