"""message.timestamp.type=LogAppendTime: the broker stamps batches; CreateTime keeps them."""

from __future__ import annotations

import json
import time

import pytest
from compatlib import franz, java, raw
from compatlib.common import ck_consume, ck_produce

OLD = 1_600_000_000_000  # a producer timestamp far in the past (2020)


def now_ms() -> int:
    return int(time.time() * 1000)


@pytest.fixture
def lat_topic(topic):
    # CreateTime records this old would be outside message.timestamp.before.max.ms if it were
    # set; LogAppendTime ignores the producer's timestamp. Retention must not delete them.
    return topic(config={"message.timestamp.type": "LogAppendTime", "retention.ms": "-1"})


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("Produce", "Fetch", "LogAppendTime")
def test_log_append_time_confluent(bootstrap, lat_topic):
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME

    before = now_ms()
    delivered = ck_produce(
        bootstrap, lat_topic, [{"value": f"v{i}".encode(), "timestamp": OLD} for i in range(5)]
    )
    after = now_ms()
    for m in delivered:  # the produce response carries the broker's append time
        kind, ts = m.timestamp()
        assert kind == TIMESTAMP_LOG_APPEND_TIME
        assert before - 1000 <= ts <= after + 1000
    msgs = ck_consume(bootstrap, lat_topic, count=5)
    stamps = {m.timestamp() for m in msgs}
    assert len(stamps) == 1  # one batch, one append time
    kind, ts = stamps.pop()
    assert kind == TIMESTAMP_LOG_APPEND_TIME
    assert before - 1000 <= ts <= after + 1000


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("Produce", "Fetch", "CreateTime")
def test_create_time_kept_confluent(bootstrap, topic):
    from confluent_kafka import TIMESTAMP_CREATE_TIME

    t = topic(config={"retention.ms": "-1"})
    ts = now_ms() - 3_600_000
    ck_produce(bootstrap, t, [{"value": b"v", "timestamp": ts}])
    (m,) = ck_consume(bootstrap, t)
    assert m.timestamp() == (TIMESTAMP_CREATE_TIME, ts)


@pytest.mark.client("kafka-python")
@pytest.mark.api("Produce", "Fetch", "LogAppendTime")
def test_log_append_time_kafka_python(bootstrap, lat_topic):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    before = now_ms()
    p = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        meta = p.send(lat_topic, b"v", timestamp_ms=OLD).get(timeout=20)
    finally:
        p.close(timeout=10)
    assert before - 1000 <= meta.timestamp <= now_ms() + 1000
    c = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    try:
        c.assign([TopicPartition(lat_topic, 0)])
        recs = []
        deadline = time.monotonic() + 15
        while not recs and time.monotonic() < deadline:
            for rs in c.poll(timeout_ms=300).values():
                recs += rs
    finally:
        c.close()
    assert recs[0].timestamp_type == 1
    assert recs[0].timestamp == meta.timestamp


@pytest.mark.client("franz-go")
@pytest.mark.api("Produce", "Fetch", "LogAppendTime")
def test_log_append_time_franz(bootstrap, lat_topic):
    before = now_ms()
    res = franz.run(
        "produce",
        "--topic",
        lat_topic,
        input=franz.records_input([{"value": "v", "timestamp": OLD}]),
        brokers=bootstrap,
    )
    assert res.returncode == 0, res
    res = franz.run("consume", "--topic", lat_topic, "--count", 1, brokers=bootstrap)
    (rec,) = res.records
    assert rec["timestamp_type"] == 1
    assert before - 1000 <= rec["timestamp"] <= now_ms() + 1000


@pytest.mark.client("java")
@pytest.mark.api("Produce", "Fetch", "LogAppendTime")
def test_log_append_time_java_console(bootstrap, lat_topic):
    p = java.run(
        "kafka-console-producer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        lat_topic,
        input="a\nb\n",
    )
    assert p.returncode == 0, p.stderr
    p = java.run(
        "kafka-console-consumer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        lat_topic,
        "--partition",
        0,
        "--offset",
        "earliest",
        "--max-messages",
        2,
        "--timeout-ms",
        15000,
        "--formatter-property",
        "print.timestamp=true",
    )
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 2
    for line in lines:
        kind, _, rest = line.partition(":")
        assert kind == "LogAppendTime", line
        assert abs(int(rest.split("\t")[0]) - now_ms()) < 60_000


@pytest.mark.client("kcat")
@pytest.mark.api("Fetch", "LogAppendTime")
def test_log_append_time_kcat(bootstrap, lat_topic):
    ck_produce(bootstrap, lat_topic, [{"value": b"v", "timestamp": OLD}])
    p = java.kcat("-b", bootstrap, "-C", "-t", lat_topic, "-o", "beginning", "-e", "-J")
    (rec,) = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    assert rec["tstype"] == "logappend"
    assert abs(rec["ts"] - now_ms()) < 60_000


@pytest.mark.client("raw")
@pytest.mark.api("Produce", "LogAppendTime")
def test_log_append_time_raw_produce_response(bootstrap, lat_topic, topic):
    create_time_topic = topic()
    with raw.Connection(bootstrap) as conn:
        r = raw.produce(conn, lat_topic, 0, raw.record_batch([b"x"], timestamp=OLD))
        assert r.error_code == 0
        assert abs(r.log_append_time - now_ms()) < 60_000
        r = raw.produce(conn, create_time_topic, 0, raw.record_batch([b"x"]))
        assert r.error_code == 0
        assert r.log_append_time == -1


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("IncrementalAlterConfigs", "LogAppendTime")
def test_switch_to_log_append_time_confluent(bootstrap, admin, topic):
    """Changing the timestamp type applies to batches appended afterwards."""
    from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    t = topic(config={"retention.ms": "-1"})
    ts = now_ms() - 7_200_000
    ck_produce(bootstrap, t, [{"value": b"before", "timestamp": ts}])
    res = ConfigResource(
        "topic",
        t,
        incremental_configs=[
            ConfigEntry(
                "message.timestamp.type",
                "LogAppendTime",
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    admin.incremental_alter_configs([res])[res].result(15)
    deadline = time.monotonic() + 10
    produced = 1
    while True:  # the change may take a moment to reach the partition
        ck_produce(bootstrap, t, [{"value": b"after", "timestamp": ts}])
        produced += 1
        msgs = ck_consume(bootstrap, t, count=produced)
        if msgs[-1].timestamp()[0] == TIMESTAMP_LOG_APPEND_TIME or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert msgs[0].timestamp() == (TIMESTAMP_CREATE_TIME, ts)
    assert msgs[-1].timestamp()[0] == TIMESTAMP_LOG_APPEND_TIME
