"""Kafka's own ecosystem as the compat tests run it: a JVM with its log in a
file, a Kafka Connect worker in distributed mode driven over its REST API,
and MirrorMaker 2 mirroring a topic and a group's offsets between two
clusters (its checkpoint records read back from the target).

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
from compatlib.common import ck_consume, ck_produce, ck_watermarks, unique

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


def mirror_and_translate(source: str, target: str, topic: str, tmp_path: Path) -> None:
    """MirrorMaker 2 from `source` (alias a) to `target` (alias b), which may be
    one broker: 100 records of `topic` (existing, one partition, empty)
    appear in order in `a.<topic>` on the target, and a group that committed
    offset 60 upstream gets a translated offset there, from a checkpoint."""
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    mirror = f"a.{topic}"
    ck_produce(source, topic, [{"value": b"m%d" % i} for i in range(100)])
    group = unique("mm2-group")
    # The group consumed (and committed) the first 60 records of the source.
    c = Consumer({"bootstrap.servers": source, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, 0, 60)], asynchronous=False)
    c.close()
    props = java.properties_file(
        {
            "clusters": "a, b",
            "a.bootstrap.servers": source,
            "b.bootstrap.servers": target,
            "a->b.enabled": "true",
            "a->b.topics": topic,
            "a->b.groups": group,
            "b->a.enabled": "false",
            "replication.factor": 1,
            "checkpoints.topic.replication.factor": 1,
            "heartbeats.topic.replication.factor": 1,
            "offset-syncs.topic.replication.factor": 1,
            "offset.storage.replication.factor": 1,
            "status.storage.replication.factor": 1,
            "config.storage.replication.factor": 1,
            "sync.topic.configs.enabled": "false",
            "sync.topic.acls.enabled": "false",
            "emit.checkpoints.interval.seconds": 1,
            "sync.group.offsets.enabled": "true",
            "sync.group.offsets.interval.seconds": 1,
            "offset.lag.max": 0,
            "refresh.topics.interval.seconds": 1,
            "refresh.groups.interval.seconds": 1,
        },
        tmp_path,
    )
    admin = AdminClient({"bootstrap.servers": target})
    log = tmp_path / "mm2.log"
    mm2 = start_jvm("org.apache.kafka.connect.mirror.MirrorMaker", props, log=log)
    try:
        wait_for(lambda: mirror in admin.list_topics(timeout=5).topics, "the mirrored topic", mm2)
        got = [m.value() for m in ck_consume(target, mirror, count=100, timeout=DEADLINE)]
        assert got == [b"m%d" % i for i in range(100)]

        def checkpoints():
            _, end = ck_watermarks(target, "a.checkpoints.internal")
            records = ck_consume(target, "a.checkpoints.internal", count=end)
            found = [decode_checkpoint(m.key(), m.value()) for m in records]
            return [cp for cp in found if cp.group == group]

        def translated():
            request = ConsumerGroupTopicPartitions(group, [TopicPartition(mirror, 0)])
            offsets = admin.list_consumer_group_offsets([request])[group].result(10)
            return [tp.offset for tp in offsets.topic_partitions if tp.offset >= 0]

        # MirrorMaker translates conservatively, from the sparse offset syncs
        # it wrote: never past the group's real position (that would skip
        # records), at least past the first sync.
        [offset] = wait_for(translated, "the group's offsets on the mirrored topic", mm2)
        assert 1 <= offset <= 60
        # The checkpoint it synced them from: the group's position upstream
        # and the same translation.
        found = wait_for(checkpoints, "a checkpoint of the group", mm2)
        assert {(cp.topic, cp.partition, cp.upstream_offset) for cp in found} == {(mirror, 0, 60)}
        assert offset in {cp.downstream_offset for cp in found}
    except BaseException:
        print(log_tail(log))
        raise
    finally:
        java.stop(mm2, timeout=30)
