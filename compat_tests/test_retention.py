"""Retention: old segments are deleted by time (retention.ms) and by size (retention.bytes).

The broker must check retention often (compat_tests/run.py sets
log.retention.check.interval.ms=1000 on both brokers, and log.initial.task.delay.ms=0 on
Kafka); segments roll by time with a small topic-level segment.ms.
"""

from __future__ import annotations

import time

import pytest
from compatlib import franz, java
from compatlib.common import ck_consume, ck_produce, ck_watermarks, wait_until

RETENTION_TIMEOUT = 20  # seconds: retention.ms + two check intervals, with room


def produce_in_segments(bootstrap, t, segments: int, per_segment: int = 5, pause: float = 0.7):
    """Produce `segments` groups of records, `pause` apart, so that segment.ms rolls segments."""
    for s in range(segments):
        ck_produce(bootstrap, t, [{"value": f"s{s}-{i}".encode()} for i in range(per_segment)])
        if s < segments - 1:
            time.sleep(pause)


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("retention.ms", "ListOffsets", "log-start-offset")
def test_retention_ms_confluent(bootstrap, topic):
    t = topic(config={"retention.ms": "2000", "segment.ms": "300"})
    produce_in_segments(bootstrap, t, 2)
    assert ck_watermarks(bootstrap, t)[1] == 10
    # every segment (even the active one) expires; the log keeps its end offset
    wait_until(
        lambda: ck_watermarks(bootstrap, t) == (10, 10),
        timeout=RETENTION_TIMEOUT,
        message="all segments deleted by retention.ms",
    )
    delivered = ck_produce(bootstrap, t, [{"value": b"after"}])
    assert delivered[0].offset() == 10
    (m,) = ck_consume(bootstrap, t)
    assert (m.offset(), m.value()) == (10, b"after")


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("retention.ms", "CreateTime", "log-start-offset")
def test_retention_of_old_timestamps_confluent(bootstrap, topic):
    """Records stamped 8 days ago are past the default 7-day retention on arrival."""
    t = topic()
    old = int(time.time() * 1000) - 8 * 86_400_000
    ck_produce(bootstrap, t, [{"value": b"old", "timestamp": old + i} for i in range(5)])
    wait_until(
        lambda: ck_watermarks(bootstrap, t) == (5, 5),
        timeout=RETENTION_TIMEOUT,
        message="old records deleted",
    )


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("retention.bytes", "log-start-offset")
def test_retention_bytes_confluent(bootstrap, topic):
    t = topic(config={"retention.bytes": "1500", "segment.ms": "300"})
    for _ in range(4):  # four segments of about 1.1 kB
        ck_produce(bootstrap, t, [{"value": b"x" * 200} for _ in range(5)], {"linger.ms": 50})
        time.sleep(0.5)
    wait_until(
        lambda: ck_watermarks(bootstrap, t)[0] == 10,
        timeout=RETENTION_TIMEOUT,
        message="oldest segments deleted by retention.bytes",
    )
    time.sleep(2.5)  # the remaining segments fit: nothing more is deleted
    assert ck_watermarks(bootstrap, t) == (10, 20)


@pytest.mark.client("java")
@pytest.mark.api("retention.ms", "IncrementalAlterConfigs", "ListOffsets")
def test_retention_java(bootstrap, name):
    t = name()
    p = java.run(
        "kafka-topics",
        "--bootstrap-server",
        bootstrap,
        "--create",
        "--topic",
        t,
        "--partitions",
        1,
        "--config",
        "segment.ms=300",
    )
    assert p.returncode == 0, p.stderr
    p = java.run(
        "kafka-console-producer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        t,
        input="".join(f"m{i}\n" for i in range(6)),
    )
    assert p.returncode == 0, p.stderr
    p = java.run(
        "kafka-configs",
        "--bootstrap-server",
        bootstrap,
        "--alter",
        "--entity-type",
        "topics",
        "--entity-name",
        t,
        "--add-config",
        "retention.ms=1000",
    )
    assert p.returncode == 0, p.stderr

    def start_offset():
        out = java.run(
            "kafka-get-offsets", "--bootstrap-server", bootstrap, "--topic", t, "--time", "earliest"
        )
        return out.stdout.strip() == f"{t}:0:6"

    wait_until(
        start_offset,
        timeout=RETENTION_TIMEOUT,
        interval=0.5,
        message="records deleted after retention.ms was lowered",
    )


@pytest.mark.client("kafka-python")
@pytest.mark.api("retention.ms", "AlterConfigs", "ListOffsets")
def test_retention_kafka_python(bootstrap, topic):
    from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType

    t = topic(config={"segment.ms": "300"})
    produce_in_segments(bootstrap, t, 2)
    a = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        a.alter_configs(
            [
                ConfigResource(
                    ConfigResourceType.TOPIC,
                    t,
                    configs={"retention.ms": "1000", "segment.ms": "300"},
                )
            ]
        )
    finally:
        a.close()
    tp = TopicPartition(t, 0)
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        wait_until(
            lambda: c.beginning_offsets([tp])[tp] == 10,
            timeout=RETENTION_TIMEOUT,
            message="log start offset moved by retention",
        )
        assert c.end_offsets([tp]) == {tp: 10}
    finally:
        c.close()


@pytest.mark.client("franz-go")
@pytest.mark.api("retention.ms", "IncrementalAlterConfigs", "ListOffsets")
def test_retention_franz(bootstrap, topic):
    t = topic(config={"segment.ms": "300"})
    res = franz.run("produce", "--topic", t, "--count", 8, brokers=bootstrap)
    assert res.returncode == 0, res
    res = franz.run(
        "admin alter-config", "--topic", t, "--config", "retention.ms=1000", brokers=bootstrap
    )
    assert res.returncode == 0, res

    def start():
        r = franz.run("admin list-offsets", "--topic", t, "--at", "start", brokers=bootstrap)
        return r.returncode == 0 and r.lines[0]["offset"] == 8

    wait_until(start, timeout=RETENTION_TIMEOUT, interval=0.5, message="records expired")
