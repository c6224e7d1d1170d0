"""max.message.bytes (topic) and message.max.bytes (broker); fetching batches larger than
the fetch size limits (KIP-74)."""

from __future__ import annotations

import os
import time

import pytest
from compatlib import franz, java, raw
from compatlib.common import ck_consume, ck_produce, ck_watermarks

MESSAGE_TOO_LARGE = 10
LIMIT = 2048


@pytest.fixture
def small_topic(topic):
    return topic(config={"max.message.bytes": str(LIMIT)})


def _ck_send_one(bootstrap, t, value, **conf):
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, **conf})
    out = []
    p.produce(t, value, on_delivery=lambda err, msg: out.append((err, msg)))
    p.flush(20)
    ((err, msg),) = out
    return err, msg


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("Produce", "max.message.bytes", "errors")
def test_max_message_bytes_confluent(bootstrap, small_topic):
    t = small_topic
    err, msg = _ck_send_one(bootstrap, t, b"x" * 1000)
    assert err is None and msg.offset() == 0
    err, _ = _ck_send_one(bootstrap, t, os.urandom(4000))
    assert err is not None and err.code() == MESSAGE_TOO_LARGE, err
    # the limit applies to the batch after compression
    err, msg = _ck_send_one(bootstrap, t, b"y" * 100_000, **{"compression.type": "gzip"})
    assert err is None and msg.offset() == 1
    assert ck_watermarks(bootstrap, t) == (0, 2)
    assert [m.value() for m in ck_consume(bootstrap, t, count=2)] == [b"x" * 1000, b"y" * 100_000]


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("Produce", "message.max.bytes", "errors")
def test_broker_message_max_bytes_confluent(bootstrap, topic):
    """Without a topic override the broker's message.max.bytes (1048588) applies."""
    t = topic()
    err, _ = _ck_send_one(bootstrap, t, os.urandom(1_100_000), **{"message.max.bytes": 2_000_000})
    assert err is not None and err.code() == MESSAGE_TOO_LARGE, err
    err, msg = _ck_send_one(bootstrap, t, os.urandom(1_000_000), **{"message.max.bytes": 2_000_000})
    assert err is None and msg.offset() == 0


@pytest.mark.client("franz-go")
@pytest.mark.api("Produce", "max.message.bytes", "errors")
def test_max_message_bytes_franz(bootstrap, small_topic):
    res = franz.run(
        "produce", "--topic", small_topic, "--count", 1, "--value-size", 4000, brokers=bootstrap
    )
    assert res.returncode == 1
    assert res.lines[0]["code"] == MESSAGE_TOO_LARGE, res
    res = franz.run(
        "produce", "--topic", small_topic, "--count", 1, "--value-size", 500, brokers=bootstrap
    )
    assert res.returncode == 0, res


@pytest.mark.client("java")
@pytest.mark.api("Produce", "max.message.bytes", "errors")
def test_max_message_bytes_java_console_producer(bootstrap, small_topic):
    p = java.run(
        "kafka-console-producer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        small_topic,
        input="y" * 4000 + "\n",
    )
    # The broker sends no error message with MESSAGE_TOO_LARGE: the client shows its default.
    assert (
        "org.apache.kafka.common.errors.RecordTooLargeException: The request included a message "
        "larger than the max message size the server will accept.\n" in p.stderr
    ), p.stderr[-2000:]
    assert ck_watermarks(bootstrap, small_topic) == (0, 0)


@pytest.mark.client("kafka-python")
@pytest.mark.api("Produce", "max.message.bytes", "errors")
def test_max_message_bytes_kafka_python(bootstrap, small_topic):
    from kafka import KafkaProducer
    from kafka.errors import MessageSizeTooLargeError

    for value, ok in ((os.urandom(4000), False), (b"ok", True)):
        # (the idempotent producer treats MESSAGE_TOO_LARGE as fatal: a new one per send)
        p = KafkaProducer(bootstrap_servers=bootstrap)
        try:
            if ok:
                assert p.send(small_topic, value).get(timeout=20).offset == 0
            else:
                with pytest.raises(MessageSizeTooLargeError):
                    p.send(small_topic, value).get(timeout=20)
        finally:
            p.close(timeout=10)


@pytest.mark.client("raw")
@pytest.mark.api("Produce", "max.message.bytes", "errors")
def test_max_message_bytes_raw_produce_v8(bootstrap, small_topic):
    """Produce v8 carries an error message: Kafka leaves it null for MESSAGE_TOO_LARGE."""
    with raw.Connection(bootstrap) as conn:
        res = raw.produce(conn, small_topic, 0, raw.record_batch([os.urandom(4000)]), version=8)
    assert res.error_code == MESSAGE_TOO_LARGE
    assert res.base_offset == -1
    assert res.record_errors == []
    assert res.error_message is None


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("Fetch", "fetch-size", "KIP-74")
def test_fetch_batch_larger_than_fetch_limits_confluent(bootstrap, topic):
    t = topic(config={"max.message.bytes": "300000"})
    big = os.urandom(200_000)
    ck_produce(bootstrap, t, [{"value": big}])
    (m,) = ck_consume(
        bootstrap,
        t,
        conf={
            "max.partition.fetch.bytes": 1024,
            "fetch.max.bytes": 1024,
            "message.max.bytes": 1000,
        },
    )
    assert m.value() == big


@pytest.mark.client("kafka-python")
@pytest.mark.api("Fetch", "fetch-size", "KIP-74")
def test_fetch_batch_larger_than_fetch_limits_kafka_python(bootstrap, topic):
    from kafka import KafkaConsumer, TopicPartition

    t = topic(config={"max.message.bytes": "300000"})
    big = os.urandom(200_000)
    ck_produce(bootstrap, t, [{"value": big}, {"value": b"small"}])
    c = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=1024,
        fetch_max_bytes=1024,
    )
    try:
        c.assign([TopicPartition(t, 0)])
        got = []
        deadline = time.monotonic() + 15
        while len(got) < 2 and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=300).values():
                got += recs
    finally:
        c.close()
    assert [r.value for r in got] == [big, b"small"]
