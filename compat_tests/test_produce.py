"""Produce with every acks mode and codec, with keys and headers; read back by other clients."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from compatlib import franz, java
from compatlib.common import ck_consume, ck_produce, wait_until

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CODEC_ID = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
ACKS = ["0", "1", "all"]
N = 20


def records(n: int = N, null_header: bytes | None = None) -> list[dict]:
    """Records with keys (one null), headers (one with a null value) and values."""
    out = []
    for i in range(n):
        out.append(
            {
                "key": None if i == 3 else f"key-{i}".encode(),
                "value": (f"value-{i}-" + "abc" * 20).encode(),
                "headers": [("h", f"hv-{i}".encode()), ("n", null_header)] if i % 2 == 0 else [],
            }
        )
    return out


def check_confluent_messages(msgs, expected):
    assert [m.offset() for m in msgs] == list(range(len(expected)))
    for m, e in zip(msgs, expected, strict=True):
        assert m.value() == e["value"]
        assert m.key() == e["key"]
        assert (m.headers() or []) == e["headers"]


def read_back(bootstrap, topic, expected):
    """Read with librdkafka (eventually: acks=0 gives no delivery guarantee of timing)."""
    msgs = ck_consume(bootstrap, topic, count=len(expected), timeout=20)
    check_confluent_messages(msgs, expected)


def codec_of_batches(bootstrap, topic, count):
    """The compression codec of each stored batch, as franz-go sees it when fetching."""
    res = franz.run("consume", "--topic", topic, "--count", count, brokers=bootstrap)
    assert res.returncode == 0, res
    return {r["codec"] for r in res.records}


# --- confluent-kafka -------------------------------------------------------------------


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("Produce", "Fetch", "compression", "headers")
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("acks", ACKS)
def test_produce_confluent(bootstrap, topic, acks, codec):
    t = topic()
    expected = records()
    conf = {"acks": acks, "compression.type": codec, "enable.idempotence": False}
    delivered = ck_produce(bootstrap, t, expected, conf)
    if acks != "0":
        assert [m.offset() for m in delivered] == list(range(N))
    read_back(bootstrap, t, expected)
    assert codec_of_batches(bootstrap, t, N) == {CODEC_ID[codec]}


# --- kafka-python ------------------------------------------------------------------------


def kp_produce(bootstrap, t, expected, **conf):
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **conf)
    try:
        futures = [
            p.send(t, value=r["value"], key=r["key"], headers=r["headers"], partition=0)
            for r in expected
        ]
        p.flush(timeout=20)
        return [f.get(timeout=20) for f in futures]
    finally:
        p.close(timeout=10)


@pytest.mark.client("kafka-python")
@pytest.mark.api("Produce", "Fetch", "compression", "headers")
@pytest.mark.parametrize("codec", CODECS)
def test_produce_codecs_kafka_python(bootstrap, topic, codec):
    t = topic()
    expected = records(null_header=b"")  # kafka-python: header values must be bytes
    metas = kp_produce(
        bootstrap, t, expected, acks="all", compression_type=None if codec == "none" else codec
    )
    assert [m.offset for m in metas] == list(range(N))
    read_back(bootstrap, t, expected)
    assert codec_of_batches(bootstrap, t, N) == {CODEC_ID[codec]}


@pytest.mark.client("kafka-python")
@pytest.mark.api("Produce", "acks")
@pytest.mark.parametrize("acks", [0, 1])
def test_produce_acks_kafka_python(bootstrap, topic, acks):
    t = topic()
    expected = records(null_header=b"")  # kafka-python: header values must be bytes
    metas = kp_produce(bootstrap, t, expected, acks=acks, enable_idempotence=False)
    if acks:
        assert [m.offset for m in metas] == list(range(N))
    read_back(bootstrap, t, expected)


@pytest.mark.client("kafka-python")
@pytest.mark.api("Fetch", "compression", "headers")
def test_consume_kafka_python(bootstrap, topic):
    """kafka-python reads batches librdkafka wrote with every codec."""
    from kafka import KafkaConsumer, TopicPartition

    t = topic()
    expected = []
    for codec in CODECS:
        batch = records(4)
        ck_produce(bootstrap, t, batch, {"compression.type": codec})
        expected += batch
    c = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    try:
        c.assign([TopicPartition(t, 0)])
        got = []
        for _ in range(40):
            for recs in c.poll(timeout_ms=500).values():
                got += recs
            if len(got) >= len(expected):
                break
    finally:
        c.close()
    assert [r.offset for r in got] == list(range(len(expected)))
    for r, e in zip(got, expected, strict=True):
        assert (r.key, r.value) == (e["key"], e["value"])
        assert list(r.headers) == e["headers"]


# --- aiokafka -------------------------------------------------------------------------------


@pytest.mark.client("aiokafka")
@pytest.mark.api("Produce", "Fetch", "compression", "headers", "acks")
@pytest.mark.parametrize("codec,acks", [(c, "all") for c in CODECS] + [("none", 0), ("none", 1)])
def test_produce_aiokafka(bootstrap, topic, codec, acks):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    t = topic()
    expected = records()

    async def main():
        p = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks=acks,
            compression_type=None if codec == "none" else codec,
            linger_ms=5,
        )
        await p.start()
        try:
            futs = [
                await p.send(t, value=r["value"], key=r["key"], headers=r["headers"], partition=0)
                for r in expected
            ]
            metas = [await f for f in futs]
        finally:
            await p.stop()
        if acks != 0:
            assert [m.offset for m in metas] == list(range(N))
        c = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        await c.start()
        try:
            c.assign([TopicPartition(t, 0)])
            got = []
            while len(got) < N:
                batch = await asyncio.wait_for(c.getmany(timeout_ms=500), 20)
                for recs in batch.values():
                    got += recs
        finally:
            await c.stop()
        return got

    got = asyncio.run(main())
    for r, e in zip(got, expected, strict=True):
        assert (r.key, r.value) == (e["key"], e["value"])
        assert list(r.headers) == e["headers"]
    read_back(bootstrap, t, expected)


# --- franz-go ---------------------------------------------------------------------------------


def franz_input(expected):
    return franz.records_input(
        [
            {
                "key": None if r["key"] is None else r["key"].decode(),
                "value": r["value"].decode(),
                "headers": [[k, (v or b"").decode()] for k, v in r["headers"]],
            }
            for r in expected
        ]
    )


@pytest.mark.client("franz-go")
@pytest.mark.api("Produce", "Fetch", "compression", "headers", "acks")
@pytest.mark.parametrize(
    "codec,acks", [(c, "all") for c in CODECS] + [("none", "0"), ("none", "1")]
)
def test_produce_franz(bootstrap, topic, codec, acks):
    t = topic()
    expected = records()
    res = franz.run(
        "produce",
        "--topic",
        t,
        "--acks",
        acks,
        "--codec",
        codec,
        input=franz_input(expected),
        brokers=bootstrap,
    )
    assert res.returncode == 0, res
    if acks != "0":
        assert [r["offset"] for r in res.lines] == list(range(N))
    # franz sends a null header value as empty bytes
    for r in expected:
        r["headers"] = [(k, v or b"") for k, v in r["headers"]]
    read_back(bootstrap, t, expected)
    assert codec_of_batches(bootstrap, t, N) == {CODEC_ID[codec]}


# --- Java console producer / consumer ------------------------------------------------------------


@pytest.mark.client("java")
@pytest.mark.api("Produce", "compression", "headers", "acks")
@pytest.mark.parametrize(
    "codec,acks",
    [("none", "0"), ("gzip", "1"), ("snappy", "all"), ("lz4", "1"), ("zstd", "all")],
)
def test_produce_java_console_producer(bootstrap, topic, codec, acks):
    t = topic()
    lines = "".join(
        f"h1:a{i},h2:b{i}\tkey-{i}\tvalue-{i}\n" if i % 2 == 0 else f"h1:c{i}\tkey-{i}\tvalue-{i}\n"
        for i in range(10)
    )
    p = java.run(
        "kafka-console-producer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        t,
        "--compression-codec",
        codec,
        "--command-property",
        f"acks={acks}",
        "--command-property",
        "linger.ms=50",
        "--reader-property",
        "parse.key=true",
        "--reader-property",
        "parse.headers=true",
        input=lines,
    )
    assert p.returncode == 0, p.stderr
    expected = [
        {
            "key": f"key-{i}".encode(),
            "value": f"value-{i}".encode(),
            "headers": [("h1", f"a{i}".encode()), ("h2", f"b{i}".encode())]
            if i % 2 == 0
            else [("h1", f"c{i}".encode())],
        }
        for i in range(10)
    ]
    read_back(bootstrap, t, expected)
    assert codec_of_batches(bootstrap, t, 10) == {CODEC_ID[codec]}


@pytest.mark.client("java")
@pytest.mark.api("Fetch", "compression", "headers")
def test_consume_java_console_consumer(bootstrap, topic):
    t = topic()
    now = int(time.time() * 1000)
    expected = []
    for codec in CODECS:
        batch = [
            {
                "key": f"k-{codec}".encode(),
                "value": f"v-{codec}".encode(),
                "headers": [("codec", codec.encode())],
                "timestamp": now - 60000 + len(expected),
            }
            for _ in range(2)
        ]
        ck_produce(bootstrap, t, batch, {"compression.type": codec})
        expected += batch
    p = java.run(
        "kafka-console-consumer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        t,
        "--partition",
        0,
        "--offset",
        "earliest",  # assign(): no consumer group
        "--max-messages",
        len(expected),
        "--timeout-ms",
        15000,
        "--formatter-property",
        "print.key=true",
        "--formatter-property",
        "print.headers=true",
        "--formatter-property",
        "print.timestamp=true",
        "--formatter-property",
        "print.offset=true",
    )
    assert p.returncode == 0, p.stderr
    got = p.stdout.splitlines()
    want = [
        f"CreateTime:{e['timestamp']}\tOffset:{i}\tcodec:{e['headers'][0][1].decode()}"
        f"\t{e['key'].decode()}\t{e['value'].decode()}"
        for i, e in enumerate(expected)
    ]
    assert got == want


# --- kcat ---------------------------------------------------------------------------------------


@pytest.mark.client("kcat")
@pytest.mark.api("Produce", "compression", "headers", "acks")
@pytest.mark.parametrize(
    "codec,acks",
    [("none", "all"), ("gzip", "0"), ("snappy", "1"), ("lz4", "all"), ("zstd", "all")],
)
def test_produce_kcat(bootstrap, topic, codec, acks):
    t = topic()
    # kcat -H applies the same headers to every message
    lines = "".join(f"key-{i}:value-{i}\n" for i in range(10))
    p = java.kcat(
        "-b",
        bootstrap,
        "-P",
        "-t",
        t,
        "-p",
        "0",
        "-K",
        ":",
        "-z",
        codec,
        "-X",
        f"acks={acks}",
        # One batch for all ten lines: librdkafka sends a batch uncompressed when
        # compressing does not shrink it, which a batch of one short line split off
        # by linger.ms's default 5 ms does not. kcat's flush at end of input does
        # not wait for the linger.
        "-X",
        "linger.ms=1000",
        "-H",
        "src=kcat",
        "-H",
        "n=x",
        input=lines,
    )
    assert p.returncode == 0, p.stderr
    expected = [
        {
            "key": f"key-{i}".encode(),
            "value": f"value-{i}".encode(),
            "headers": [("src", b"kcat"), ("n", b"x")],
        }
        for i in range(10)
    ]
    read_back(bootstrap, t, expected)
    assert codec_of_batches(bootstrap, t, 10) == {CODEC_ID[codec]}


@pytest.mark.client("kcat")
@pytest.mark.api("Fetch", "compression", "headers")
def test_consume_kcat(bootstrap, topic):
    t = topic()
    expected = []
    for codec in CODECS:
        batch = records(3)
        ck_produce(bootstrap, t, batch, {"compression.type": codec})
        expected += batch
    p = java.kcat("-b", bootstrap, "-C", "-t", t, "-o", "beginning", "-e", "-J")
    assert p.returncode == 0, p.stderr
    got = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    assert [g["offset"] for g in got] == list(range(len(expected)))
    for g, e in zip(got, expected, strict=True):
        assert g["payload"] == e["value"].decode()
        assert g["key"] == (None if e["key"] is None else e["key"].decode())
        flat = [x for k, v in e["headers"] for x in (k, None if v is None else v.decode())]
        assert g.get("headers", []) == flat
        assert g["tstype"] == "create"


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("Produce", "Metadata", "partitioning")
def test_produce_many_partitions_confluent(bootstrap, topic):
    """Keyed records spread over partitions; each partition keeps its own offsets."""
    t = topic(partitions=4)
    expected = [{"key": f"key-{i}".encode(), "value": f"v{i}".encode()} for i in range(200)]
    delivered = ck_produce(bootstrap, t, expected, {"acks": "all"})
    by_partition = {}
    for m in delivered:
        by_partition.setdefault(m.partition(), []).append(m.offset())
    assert len(by_partition) == 4
    for offsets in by_partition.values():
        assert offsets == list(range(len(offsets)))
    total = wait_until(
        lambda: (
            sum(
                len(ck_consume(bootstrap, t, p, count=len(o), timeout=10))
                for p, o in by_partition.items()
            )
            == 200
            or None
        ),
        timeout=30,
    )
    assert total


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("Produce", "acks", "min.insync.replicas")
def test_min_insync_replicas_above_the_replication_factor_confluent(bootstrap, topic):
    """A one-replica topic with min.insync.replicas=2 takes acks=all writes:
    Kafka caps the setting at the replication factor (effectiveMinIsr)."""
    t = topic(config={"min.insync.replicas": "2"})
    delivered = ck_produce(
        bootstrap, t, [{"value": b"all"}], {"acks": "all", "message.timeout.ms": 10000}
    )
    assert [m.offset() for m in delivered] == [0]
    (m,) = ck_consume(bootstrap, t)
    assert m.value() == b"all"
