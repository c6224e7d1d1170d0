"""Kafka's own ecosystem as the compat tests run it: a JVM with its log in a
file, a Kafka Connect worker in distributed mode driven over its REST API,
and MirrorMaker 2's checkpoint records read back from the broker.

Every JVM logs to a file in the test's tmp_path (never to a pipe that nobody
reads, which would stall it once full); `log_tail` is what a failing test
prints.
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from compatlib import java
from compatlib.common import unique

DEADLINE = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_jvm(main_class: str, *args, log: Path) -> subprocess.Popen:
    """Start a Kafka main class with its stdout and stderr appended to `log`."""
    with open(log, "a") as out:  # the child keeps its own copy of the descriptor
        return java.popen(main_class, *args, stdout=out, stderr=subprocess.STDOUT)


def log_tail(log: Path, chars: int = 5000) -> str:
    return log.read_text(errors="replace")[-chars:] if log.exists() else f"(no log at {log})"


def wait_for(condition, what: str, proc: subprocess.Popen | None = None, timeout=DEADLINE):
    """Poll condition() until truthy (returned). While a JVM starts its REST
    API refuses connections: those count as not yet. Fails at once if `proc`
    exited, and at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = condition()
        except (OSError, urllib.error.URLError, ValueError):
            result = None
        if result:
            return result
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: the JVM exited ({proc.returncode})")
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        time.sleep(0.3)


def rest(port: int, method: str, path: str, body: dict | None = None):
    """One call to a Connect REST API on loopback; the decoded JSON answer."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read()
        return json.loads(text) if text else None


class ConnectWorker:
    """One Kafka Connect worker in distributed mode (its own group and
    internal topics, replication factor 1, REST on a free loopback port).
    stop() then start() is a worker restart: it resumes from what it stored
    in the broker."""

    def __init__(self, bootstrap: str, directory: Path):
        name = unique("connect")
        self.port = free_port()
        self.log = directory / f"{name}.log"
        self.props = java.properties_file(
            {
                "bootstrap.servers": bootstrap,
                "group.id": name,
                "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                "offset.storage.topic": f"{name}-offsets",
                "config.storage.topic": f"{name}-configs",
                "status.storage.topic": f"{name}-status",
                "offset.storage.replication.factor": 1,
                "config.storage.replication.factor": 1,
                "status.storage.replication.factor": 1,
                "offset.flush.interval.ms": 500,
                "listeners": f"http://127.0.0.1:{self.port}",
                "plugin.discovery": "only_scan",
            },
            directory,
        )
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = start_jvm(
            "org.apache.kafka.connect.cli.ConnectDistributed", self.props, log=self.log
        )
        wait_for(
            lambda: self.call("GET", "/connectors") is not None,
            "the Connect worker's REST API",
            self.proc,
        )

    def stop(self) -> None:
        """SIGTERM (a clean shutdown: sink offsets committed), SIGKILL after 30 s."""
        if self.proc is not None:
            java.stop(self.proc, timeout=30)
            self.proc = None

    def call(self, method: str, path: str, body: dict | None = None):
        return rest(self.port, method, path, body)

    def create(self, connector: str, config: dict[str, str]) -> None:
        self.call("POST", "/connectors", {"name": connector, "config": config})

    def wait(self, condition, what: str):
        return wait_for(condition, what, self.proc)


@dataclass(frozen=True)
class Checkpoint:
    """One record of MirrorMaker 2's `<source>.checkpoints.internal` topic:
    a group's committed offset upstream and its translation downstream."""

    group: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int


def _string(data: bytes, at: int) -> tuple[str, int]:
    (size,) = struct.unpack_from(">h", data, at)
    return data[at + 2 : at + 2 + size].decode(), at + 2 + size


def decode_checkpoint(key: bytes, value: bytes) -> Checkpoint:
    """MirrorMaker's own layout (connect-mirror-client's Checkpoint): the key
    is group, topic (int16-prefixed strings) and partition (int32); the value
    a version (int16, 0), then upstream and downstream offsets (int64) and
    metadata."""
    group, at = _string(key, 0)
    topic, at = _string(key, at)
    (partition,) = struct.unpack_from(">i", key, at)
    version, upstream, downstream = struct.unpack_from(">hqq", value, 0)
    assert version == 0, f"unknown checkpoint version {version}"
    return Checkpoint(group, topic, partition, upstream, downstream)
