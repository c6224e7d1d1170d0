"""Kafka's own ecosystem against the broker, from Maven Central's 4.3.1 jars:
Kafka Connect in distributed mode (FileStream connectors, a worker restart
resuming from its stored offsets) and MirrorMaker 2 (records mirrored in
order, a group's offsets translated to the mirrored topic).

MirrorMaker 2 mirrors between two clusters; the suite gives each test one
broker, so both cluster aliases point at it: `a.<topic>` is the mirror of
`<topic>`, which exercises every request MirrorMaker makes of a cluster.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from compatlib import java
from compatlib.common import ck_consume, ck_produce, unique

DEADLINE = 90.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rest(port: int, method: str, path: str, body: dict | None = None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=data,
        method=method,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read()
        return json.loads(text) if text else None


def _wait(condition, what: str, proc=None):
    deadline = time.monotonic() + DEADLINE
    while True:
        try:
            result = condition()
        except (OSError, urllib.error.URLError, ValueError):
            result = None
        if result:
            return result
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: the JVM exited ({proc.returncode})")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def _lines(path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


class _Worker:
    """One Connect worker in distributed mode, on a free REST port."""

    def __init__(self, bootstrap: str, tmp_path, name: str):
        self.port = _free_port()
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
            tmp_path,
        )
        self.log = tmp_path / f"{name}.log"
        self.proc = None

    def start(self) -> None:
        self.proc = java.popen(
            "org.apache.kafka.connect.cli.ConnectDistributed",
            self.props,
            stdout=open(self.log, "a"),  # noqa: SIM115 - the process owns it
            stderr=subprocess.STDOUT,
        )
        _wait(
            lambda: _rest(self.port, "GET", "/connectors") is not None,
            "the worker's REST API",
            self.proc,
        )

    def stop(self) -> None:
        if self.proc is not None:
            java.stop(self.proc, timeout=30)
            self.proc = None

    def running(self, connector: str) -> bool:
        status = _rest(self.port, "GET", f"/connectors/{connector}/status")
        return status["connector"]["state"] == "RUNNING" and any(
            t["state"] == "RUNNING" for t in status["tasks"]
        )


@pytest.mark.client("java")
@pytest.mark.api("Kafka Connect", "groups", "compacted internal topics")
def test_kafka_connect_file_stream_through_a_worker_restart(bootstrap, topic, tmp_path):
    t = topic(partitions=1)
    source, sink = tmp_path / "source.txt", tmp_path / "sink.txt"
    source.write_text("".join(f"line {i}\n" for i in range(50)))
    worker = _Worker(bootstrap, tmp_path, unique("connect"))
    worker.start()
    try:
        for name, config in (
            (
                "src",
                {
                    "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                    "file": str(source),
                    "topic": t,
                },
            ),
            (
                "sink",
                {
                    "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                    "file": str(sink),
                    "topics": t,
                },
            ),
        ):
            _rest(
                worker.port,
                "POST",
                "/connectors",
                {"name": name, "config": {"tasks.max": "1", **config}},
            )
        _wait(
            lambda: _lines(sink) == _lines(source), "the sink file to equal the source", worker.proc
        )
        worker.stop()
        # More lines while the worker is down; after its restart, exactly those are added.
        with source.open("a") as f:
            f.write("".join(f"line {i}\n" for i in range(50, 80)))
        worker.start()
        _wait(lambda: len(_lines(sink)) >= 80, "the new lines in the sink", worker.proc)
        assert _lines(sink) == _lines(source), "the restarted worker repeated or lost lines"
        assert [m.value() for m in ck_consume(bootstrap, t, count=80)] == [
            line.encode() for line in _lines(source)
        ]
    except BaseException:
        print(worker.log.read_text()[-5000:] if worker.log.exists() else "(no worker log)")
        raise
    finally:
        worker.stop()


@pytest.mark.client("java")
@pytest.mark.api("MirrorMaker 2", "groups", "OffsetCommit")
def test_mirror_maker_2_mirrors_records_and_translates_group_offsets(
    bootstrap, topic, admin, tmp_path
):
    from confluent_kafka import Consumer, TopicPartition

    t = topic(partitions=1)
    ck_produce(bootstrap, t, [{"value": b"m%d" % i} for i in range(100)])
    group = unique("mm2-group")
    # The group consumed (and committed) the first 60 records of the source.
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(t, 0, 60)], asynchronous=False)
    c.close()
    props = java.properties_file(
        {
            "clusters": "a, b",
            "a.bootstrap.servers": bootstrap,
            "b.bootstrap.servers": bootstrap,
            "a->b.enabled": "true",
            "a->b.topics": t,
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
    log = tmp_path / "mm2.log"
    mm2 = java.popen(
        "org.apache.kafka.connect.mirror.MirrorMaker",
        props,
        stdout=open(log, "w"),  # noqa: SIM115 - the process owns it
        stderr=subprocess.STDOUT,
    )
    mirror = f"a.{t}"
    try:
        _wait(lambda: mirror in admin.list_topics(timeout=5).topics, "the mirrored topic", mm2)
        got = [m.value() for m in ck_consume(bootstrap, mirror, count=100, timeout=DEADLINE)]
        assert got == [b"m%d" % i for i in range(100)]

        def translated():
            offsets = admin.list_consumer_group_offsets([_group_request(group, mirror)])[
                group
            ].result(10)
            return [tp.offset for tp in offsets.topic_partitions if tp.offset >= 0]

        # MirrorMaker translates conservatively, from the sparse offset syncs
        # it wrote: never past the group's real position (that would skip
        # records), at least past the first sync.
        [offset] = _wait(translated, "the group's offsets on the mirrored topic", mm2)
        assert 1 <= offset <= 60
    except BaseException:
        print(log.read_text()[-5000:])
        raise
    finally:
        java.stop(mm2, timeout=30)


def _group_request(group: str, topic: str):
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    return ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])
