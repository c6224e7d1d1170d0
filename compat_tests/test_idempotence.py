"""The idempotent producer: InitProducerId, sequence numbers, duplicates and gaps."""

from __future__ import annotations

import asyncio

import pytest
from compatlib import franz, java, raw
from compatlib.common import ck_consume, ck_produce, ck_watermarks

OUT_OF_ORDER_SEQUENCE_NUMBER = 45


def assert_contiguous(offsets_by_partition: dict[int, list[int]]) -> None:
    for p, offsets in offsets_by_partition.items():
        assert sorted(offsets) == list(range(len(offsets))), f"partition {p}: {offsets}"


@pytest.mark.client("java")
@pytest.mark.api("InitProducerId", "Produce", "idempotence")
def test_idempotent_java_verifiable_producer(bootstrap, topic, tmp_path):
    t = topic(partitions=2)
    cfg = java.properties_file(
        {
            "enable.idempotence": "true",
            "retries": 100,
            "max.in.flight.requests.per.connection": 5,
            "linger.ms": 5,
            "batch.size": 2048,
        },
        tmp_path,
    )
    p = java.run(
        "kafka-verifiable-producer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        t,
        "--max-messages",
        500,
        "--acks",
        -1,
        "--command-config",
        cfg,
        "--repeating-keys",
        10,
        timeout=90,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    events = java.json_lines(p.stdout)
    acked = [e for e in events if e["name"] == "producer_send_success"]
    failed = [e for e in events if e["name"] == "producer_send_error"]
    assert not failed, failed[:3]
    assert len(acked) == 500
    by_partition: dict[int, list[int]] = {}
    for e in acked:
        by_partition.setdefault(e["partition"], []).append(e["offset"])
    assert_contiguous(by_partition)
    shutdown = [e for e in events if e["name"] == "tool_data"]
    assert shutdown and shutdown[-1]["sent"] == 500 and shutdown[-1]["acked"] == 500
    total = sum(ck_watermarks(bootstrap, t, part)[1] for part in (0, 1))
    assert total == 500


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("InitProducerId", "Produce", "idempotence")
def test_idempotent_confluent(bootstrap, topic):
    t = topic(partitions=3)
    recs = [{"key": f"k{i % 7}".encode(), "value": f"v{i}".encode()} for i in range(600)]
    delivered = ck_produce(
        bootstrap, t, recs, {"enable.idempotence": True, "acks": "all", "batch.num.messages": 20}
    )
    by_partition: dict[int, list[int]] = {}
    for m in delivered:
        by_partition.setdefault(m.partition(), []).append(m.offset())
    assert_contiguous(by_partition)
    assert sum(len(v) for v in by_partition.values()) == 600


@pytest.mark.client("kafka-python")
@pytest.mark.api("InitProducerId", "Produce", "idempotence")
def test_idempotent_kafka_python(bootstrap, topic):
    from kafka import KafkaProducer

    t = topic(partitions=2)
    p = KafkaProducer(
        bootstrap_servers=bootstrap,
        enable_idempotence=True,
        acks="all",
        batch_size=512,
        linger_ms=2,
    )
    try:
        futs = [p.send(t, key=f"k{i % 5}".encode(), value=f"v{i}".encode()) for i in range(300)]
        p.flush(timeout=30)
        metas = [f.get(timeout=10) for f in futs]
    finally:
        p.close(timeout=10)
    by_partition: dict[int, list[int]] = {}
    for m in metas:
        by_partition.setdefault(m.partition, []).append(m.offset)
    assert_contiguous(by_partition)


@pytest.mark.client("aiokafka")
@pytest.mark.api("InitProducerId", "Produce", "idempotence")
def test_idempotent_aiokafka(bootstrap, topic):
    from aiokafka import AIOKafkaProducer

    t = topic(partitions=2)

    async def main():
        p = AIOKafkaProducer(
            bootstrap_servers=bootstrap, enable_idempotence=True, linger_ms=2, max_batch_size=512
        )
        await p.start()
        try:
            futs = [
                await p.send(t, key=f"k{i % 5}".encode(), value=f"v{i}".encode())
                for i in range(300)
            ]
            return [await f for f in futs]
        finally:
            await p.stop()

    metas = asyncio.run(main())
    by_partition: dict[int, list[int]] = {}
    for m in metas:
        by_partition.setdefault(m.partition, []).append(m.offset)
    assert_contiguous(by_partition)


@pytest.mark.client("franz-go")
@pytest.mark.api("InitProducerId", "Produce", "idempotence")
def test_idempotent_franz(bootstrap, topic):
    t = topic()
    res = franz.run("produce", "--topic", t, "--count", 400, "--value-size", 100, brokers=bootstrap)
    assert res.returncode == 0, res
    assert [r["offset"] for r in res.lines] == list(range(400))
    assert ck_watermarks(bootstrap, t) == (0, 400)


@pytest.mark.client("raw")
@pytest.mark.api("InitProducerId", "Produce", "idempotence", "errors")
def test_idempotent_duplicate_and_gap_raw(bootstrap, topic):
    """A resent batch gets its first offsets back; a sequence gap is refused."""
    t = topic()
    with raw.Connection(bootstrap) as conn:
        error, pid, epoch = raw.init_producer_id(conn)
        assert error == 0 and pid >= 0 and epoch >= 0
        first = raw.record_batch([b"a", b"b"], producer_id=pid, epoch=epoch, sequence=0)
        r1 = raw.produce(conn, t, 0, first)
        assert (r1.error_code, r1.base_offset) == (0, 0)
        second = raw.record_batch([b"c"], producer_id=pid, epoch=epoch, sequence=2)
        r2 = raw.produce(conn, t, 0, second)
        assert (r2.error_code, r2.base_offset) == (0, 2)
        again = raw.produce(conn, t, 0, first)  # a retry of the first batch
        assert (again.error_code, again.base_offset) == (0, 0)
        gap = raw.record_batch([b"d"], producer_id=pid, epoch=epoch, sequence=7)
        r3 = raw.produce(conn, t, 0, gap)
        assert r3.error_code == OUT_OF_ORDER_SEQUENCE_NUMBER
        # a fresh producer id starts again at sequence 0, independent of the first
        error, pid2, epoch2 = raw.init_producer_id(conn)
        assert error == 0 and pid2 != pid
        r4 = raw.produce(
            conn, t, 0, raw.record_batch([b"e"], producer_id=pid2, epoch=epoch2, sequence=0)
        )
        assert (r4.error_code, r4.base_offset) == (0, 3)
    msgs = ck_consume(bootstrap, t, count=4)
    assert [m.value() for m in msgs] == [b"a", b"b", b"c", b"e"]
    assert ck_watermarks(bootstrap, t) == (0, 4)
