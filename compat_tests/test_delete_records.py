"""DeleteRecords and the log start offset it moves."""

from __future__ import annotations

import json

import pytest
from compatlib import franz, java
from compatlib.common import ck_consume, ck_produce, ck_watermarks, unique

OFFSET_OUT_OF_RANGE = 1
N = 10


@pytest.fixture
def filled(bootstrap, topic):
    t = topic()
    ck_produce(
        bootstrap, t, [{"value": f"v{i}".encode()} for i in range(N)], {"batch.num.messages": 3}
    )
    return t


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("DeleteRecords", "ListOffsets", "Fetch", "log-start-offset")
def test_delete_records_confluent(bootstrap, admin, filled):
    from confluent_kafka import TopicPartition

    t = filled
    (fut,) = admin.delete_records([TopicPartition(t, 0, 4)]).values()
    assert fut.result(15).low_watermark == 4
    assert ck_watermarks(bootstrap, t) == (4, N)
    # fetching from the beginning starts at the new log start offset
    msgs = ck_consume(bootstrap, t, count=N - 4)
    assert [m.offset() for m in msgs] == list(range(4, N))
    # reading below the log start offset is out of range: reset to earliest
    msgs = ck_consume(bootstrap, t, offset=1, count=1)
    assert msgs[0].offset() == 4
    # beyond the high watermark: OFFSET_OUT_OF_RANGE
    (fut,) = admin.delete_records([TopicPartition(t, 0, N + 5)]).values()
    with pytest.raises(Exception) as info:
        fut.result(15)
    assert info.value.args[0].code() == OFFSET_OUT_OF_RANGE
    # -1 means "up to the high watermark"
    (fut,) = admin.delete_records([TopicPartition(t, 0, -1)]).values()
    assert fut.result(15).low_watermark == N
    assert ck_watermarks(bootstrap, t) == (N, N)
    # a delete below the current start offset changes nothing
    (fut,) = admin.delete_records([TopicPartition(t, 0, 2)]).values()
    assert fut.result(15).low_watermark == N


@pytest.mark.client("java")
@pytest.mark.api("DeleteRecords", "ListOffsets", "log-start-offset", "errors")
def test_delete_records_java(bootstrap, filled, tmp_path):
    t = filled
    spec = tmp_path / "offsets.json"
    spec.write_text(
        json.dumps({"partitions": [{"topic": t, "partition": 0, "offset": 4}], "version": 1})
    )
    p = java.run(
        "kafka-delete-records", "--bootstrap-server", bootstrap, "--offset-json-file", spec
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "Executing records delete operation",
        "Records delete operation completed:",
        f"partition: {t}-0\tlow_watermark: 4",
    ]
    p = java.run(
        "kafka-get-offsets", "--bootstrap-server", bootstrap, "--topic", t, "--time", "earliest"
    )
    assert p.stdout.strip() == f"{t}:0:4"

    spec.write_text(
        json.dumps({"partitions": [{"topic": t, "partition": 0, "offset": 99}], "version": 1})
    )
    p = java.run(
        "kafka-delete-records", "--bootstrap-server", bootstrap, "--offset-json-file", spec
    )
    assert p.stdout.splitlines()[-1] == (
        f"partition: {t}-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: "
        "The requested offset is not within the range of offsets maintained by the server."
    )


@pytest.mark.client("kafka-python")
@pytest.mark.api("DeleteRecords", "ListOffsets", "log-start-offset")
def test_delete_records_kafka_python(bootstrap, filled):
    from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition

    t = filled
    tp = TopicPartition(t, 0)
    a = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        res = a.delete_records({tp: 7})
        assert res[tp]["low_watermark"] == 7
    finally:
        a.close()
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        assert c.beginning_offsets([tp]) == {tp: 7}
        assert c.end_offsets([tp]) == {tp: N}
    finally:
        c.close()


@pytest.mark.client("franz-go")
@pytest.mark.api("DeleteRecords", "ListOffsets", "Fetch", "log-start-offset", "errors")
def test_delete_records_franz(bootstrap, filled):
    t = filled
    res = franz.run("admin delete-records", "--topic", t, "--offset", 5, brokers=bootstrap)
    assert res.returncode == 0, res
    assert res.lines[0]["low_watermark"] == 5
    res = franz.run("admin list-offsets", "--topic", t, "--at", "start", brokers=bootstrap)
    assert res.lines[0]["offset"] == 5
    res = franz.run(
        "consume",
        "--topic",
        t,
        "--partition",
        0,
        "--from",
        "start",
        "--count",
        5,
        brokers=bootstrap,
    )
    assert [r["offset"] for r in res.records] == [5, 6, 7, 8, 9]
    res = franz.run("admin delete-records", "--topic", t, "--offset", N + 1, brokers=bootstrap)
    assert res.lines[0]["code"] == OFFSET_OUT_OF_RANGE, res
    res = franz.run(
        "admin delete-records", "--topic", unique("missing"), "--offset", 1, brokers=bootstrap
    )
    assert res.lines[0]["code"] == 3, res  # UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.client("aiokafka")
@pytest.mark.api("DeleteRecords", "log-start-offset")
def test_delete_records_aiokafka(bootstrap, filled):
    import asyncio

    from aiokafka import TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

    t = filled
    tp = TopicPartition(t, 0)

    async def main():
        a = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await a.start()
        try:
            return await a.delete_records({tp: RecordsToDelete(before_offset=3)})
        finally:
            await a.close()

    assert asyncio.run(main()) == {tp: 3}
    assert ck_watermarks(bootstrap, t) == (3, N)
