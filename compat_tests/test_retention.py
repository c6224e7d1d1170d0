"""Retention: old segments are deleted by time (retention.ms) and by size (retention.bytes).

The broker must check retention often (compat_tests/run.py sets
log.retention.check.interval.ms=1000 on both brokers, and log.initial.task.delay.ms=0 on
Kafka); segments roll by time with a small topic-level segment.ms.
"""

from __future__ import annotations

import time

import pytest
from compatlib import franz, java, raw
from compatlib.common import (
    ck_consume,
    ck_produce,
    ck_watermarks,
    wait_for_retention_checks,
    wait_until,
)

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
    wait_for_retention_checks(bootstrap)  # the remaining segments fit: nothing more goes
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


# --- records without a timestamp (-1) ---------------------------------------------------
# librdkafka sends CreateTime -1 (Kafka's NO_TIMESTAMP) when the application passes
# timestamp=-1; its batch header then says max timestamp 0. Kafka stores the records'
# largest timestamp instead (-1) and ages such a segment by its file's modification time,
# so the default 7-day retention keeps it.


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("retention.ms", "CreateTime", "log-start-offset")
def test_records_without_timestamps_outlive_retention_checks_confluent(bootstrap, topic):
    from confluent_kafka import TIMESTAMP_CREATE_TIME

    none, now = topic(), topic()
    ck_produce(bootstrap, none, [{"value": b"x" * 6000, "timestamp": -1} for _ in range(10)])
    # timestamp 0 is librdkafka's "stamp it now"
    ck_produce(bootstrap, now, [{"value": b"x" * 6000, "timestamp": 0} for _ in range(10)])
    wait_for_retention_checks(bootstrap)
    assert ck_watermarks(bootstrap, none) == (0, 10)
    assert ck_watermarks(bootstrap, now) == (0, 10)
    read = ck_consume(bootstrap, none, count=10)
    assert [(m.offset(), m.timestamp()) for m in read] == [
        (i, (TIMESTAMP_CREATE_TIME, -1)) for i in range(10)
    ]


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("retention.ms", "CreateTime", "ListOffsets", "Fetch")
def test_a_batch_mixing_no_timestamp_and_a_recent_one_confluent(bootstrap, topic):
    """One batch of [-1, now, -1]: stored with max timestamp `now`, aged by it, and
    ListOffsets answers by the record that carries it."""
    from confluent_kafka import TIMESTAMP_CREATE_TIME

    t = topic()
    stamp = int(time.time() * 1000) - 60_000
    records = [{"value": b"a", "timestamp": -1}, {"value": b"b", "timestamp": stamp}]
    records.append({"value": b"c", "timestamp": -1})
    ck_produce(bootstrap, t, records, {"linger.ms": 500})
    with raw.Connection(bootstrap) as conn:
        error, batches = raw.fetch_batches(conn, t, 0)
        assert error == 0
        assert [(b.base_offset, b.last_offset, b.max_timestamp) for b in batches] == [(0, 2, stamp)]
        assert raw.list_offsets(conn, t, 0, raw.MAX_TIMESTAMP) == (0, stamp, 1)
        assert raw.list_offsets(conn, t, 0, stamp) == (0, stamp, 1)
        assert raw.list_offsets(conn, t, 0, stamp + 1) == (0, -1, -1)
    wait_for_retention_checks(bootstrap)
    assert ck_watermarks(bootstrap, t) == (0, 3)
    read = ck_consume(bootstrap, t, count=3)
    assert [m.timestamp() for m in read] == [
        (TIMESTAMP_CREATE_TIME, -1),
        (TIMESTAMP_CREATE_TIME, stamp),
        (TIMESTAMP_CREATE_TIME, -1),
    ]


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("CreateTime", "ListOffsets", "Fetch")
def test_a_batch_without_timestamps_is_stored_with_none_confluent(bootstrap, topic):
    """librdkafka's header says max timestamp 0; the broker stores -1, the records' own."""
    t = topic()
    ck_produce(
        bootstrap, t, [{"value": b"v", "timestamp": -1} for _ in range(3)], {"linger.ms": 500}
    )
    with raw.Connection(bootstrap) as conn:
        error, batches = raw.fetch_batches(conn, t, 0)
        assert error == 0
        assert [
            (b.base_offset, b.last_offset, b.base_timestamp, b.max_timestamp) for b in batches
        ] == [(0, 2, -1, -1)]
        # the first record with the largest timestamp (-1), as Kafka answers it
        assert raw.list_offsets(conn, t, 0, raw.MAX_TIMESTAMP) == (0, -1, 0)
        assert raw.list_offsets(conn, t, 0, raw.EARLIEST) == (0, -1, 0)
        assert raw.list_offsets(conn, t, 0, 0) == (0, -1, -1)  # no record has a time


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("retention.ms", "LogAppendTime")
def test_records_without_timestamps_on_a_log_append_time_topic_confluent(bootstrap, topic):
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME

    t = topic(config={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    ck_produce(bootstrap, t, [{"value": b"v", "timestamp": -1} for _ in range(5)])
    wait_for_retention_checks(bootstrap)
    assert ck_watermarks(bootstrap, t) == (0, 5)
    for m in ck_consume(bootstrap, t, count=5):
        kind, ts = m.timestamp()
        assert kind == TIMESTAMP_LOG_APPEND_TIME and ts >= before - 1000
