"""A real Gregor broker in a child process, for tests that talk to it with real clients.

    with GregorNode(tmp_path / "data") as broker:
        Producer({"bootstrap.servers": broker.bootstrap})

tools/run_gregor.py's launcher, the one way the project starts Gregor:
`gregor serve` with `--override` settings, on port 0 by default (the port is
read from the broker's "listening on" log line); `stop()` sends SIGTERM,
`kill()` SIGKILL; `start()` again reuses the data directory and the port.
"""

from __future__ import annotations

from tools.run_gregor import GregorNode, GregorStartError

__all__ = ["GregorNode", "GregorStartError", "assert_no_traceback"]


def assert_no_traceback(broker: GregorNode) -> None:
    """The broker has not logged an exception."""
    log = broker.log()
    assert "Traceback" not in log, log[log.index("Traceback") - 2000 :]
