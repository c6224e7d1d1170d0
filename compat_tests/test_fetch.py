"""Fetch from earliest, latest, an offset and a timestamp; ListOffsets; out-of-range handling."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from compatlib import franz, java
from compatlib.common import ck_produce, unique

N = 10
STEP = 1000  # ms between record timestamps


@pytest.fixture
def filled(bootstrap, topic):
    """A one-partition topic with N records, timestamps base + i*STEP; (topic, base)."""
    t = topic()
    base = int(time.time() * 1000) - 60_000
    ck_produce(
        bootstrap,
        t,
        [
            {"key": f"k{i}".encode(), "value": f"v{i}".encode(), "timestamp": base + i * STEP}
            for i in range(N)
        ],
        {"linger.ms": 0, "batch.num.messages": 1},  # one batch per record
    )
    return t, base


# --- confluent-kafka -------------------------------------------------------------------------


def _ck_consumer(bootstrap, **conf):
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("compat-fetch"),
            "enable.auto.commit": False,
            **conf,
        }
    )


def _poll(c, count, timeout=15):
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        m = c.poll(0.3)
        if m is not None:
            out.append(m)
    return out


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("Fetch", "ListOffsets")
def test_fetch_positions_confluent(bootstrap, filled):
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TIMESTAMP_CREATE_TIME, TopicPartition

    t, base = filled
    c = _ck_consumer(bootstrap)
    try:
        c.assign([TopicPartition(t, 0, OFFSET_BEGINNING)])
        msgs = _poll(c, N)
        assert [m.offset() for m in msgs] == list(range(N))
        assert [m.timestamp() for m in msgs] == [
            (TIMESTAMP_CREATE_TIME, base + i * STEP) for i in range(N)
        ]
        c.assign([TopicPartition(t, 0, 6)])
        assert [m.value() for m in _poll(c, N - 6)] == [f"v{i}".encode() for i in range(6, N)]

        (found,) = c.offsets_for_times([TopicPartition(t, 0, base + 3 * STEP + 500)], timeout=10)
        assert found.offset == 4
        (found,) = c.offsets_for_times([TopicPartition(t, 0, base)], timeout=10)
        assert found.offset == 0
        (found,) = c.offsets_for_times([TopicPartition(t, 0, base + 100 * STEP)], timeout=10)
        assert found.offset == OFFSET_END  # -1: no record that late
        assert c.get_watermark_offsets(TopicPartition(t, 0), timeout=10, cached=False) == (0, N)

        c.assign([TopicPartition(t, 0, OFFSET_END)])
        assert _poll(c, 1, timeout=2) == []
        ck_produce(bootstrap, t, [{"value": b"late"}])
        (late,) = _poll(c, 1)
        assert (late.offset(), late.value()) == (N, b"late")
    finally:
        c.close()


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("ListOffsets")
def test_list_offsets_confluent_admin(admin, filled):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    t, base = filled
    tp = TopicPartition(t, 0)

    def offset(spec):
        return admin.list_offsets({tp: spec}, request_timeout=10)[tp].result(15)

    assert offset(OffsetSpec.earliest()).offset == 0
    assert offset(OffsetSpec.latest()).offset == N
    info = offset(OffsetSpec.max_timestamp())
    assert (info.offset, info.timestamp) == (N - 1, base + (N - 1) * STEP)
    info = offset(OffsetSpec.for_timestamp(base + 2 * STEP))
    assert (info.offset, info.timestamp) == (2, base + 2 * STEP)


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("Fetch", "ListOffsets", "out-of-range")
@pytest.mark.parametrize("reset", ["error", "earliest", "latest"])
def test_out_of_range_confluent(bootstrap, filled, reset):
    from confluent_kafka import KafkaError, TopicPartition

    t, _ = filled
    c = _ck_consumer(bootstrap, **{"auto.offset.reset": reset})
    try:
        c.assign([TopicPartition(t, 0, N + 40)])
        if reset == "error":
            (m,) = _poll(c, 1)
            assert m.error() is not None
            assert m.error().code() == KafkaError._AUTO_OFFSET_RESET
            assert "Offset out of range" in m.error().str()
        elif reset == "earliest":
            (m,) = _poll(c, 1)
            assert m.error() is None and m.offset() == 0
        else:
            assert _poll(c, 1, timeout=3) == []
            ck_produce(bootstrap, t, [{"value": b"new"}])
            (m,) = _poll(c, 1)
            assert m.error() is None and m.offset() == N
    finally:
        c.close()


# --- kafka-python -----------------------------------------------------------------------------


@pytest.mark.client("kafka-python")
@pytest.mark.api("Fetch", "ListOffsets")
def test_fetch_positions_kafka_python(bootstrap, filled):
    from kafka import KafkaConsumer, TopicPartition

    t, base = filled
    tp = TopicPartition(t, 0)
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        c.assign([tp])
        assert c.beginning_offsets([tp]) == {tp: 0}
        assert c.end_offsets([tp]) == {tp: N}
        found = c.offsets_for_times({tp: base + 3 * STEP + 1})[tp]
        assert (found.offset, found.timestamp) == (4, base + 4 * STEP)
        assert c.offsets_for_times({tp: base + 100 * STEP})[tp] is None

        c.seek_to_beginning(tp)
        got = _kp_poll(c, N)
        assert [r.offset for r in got] == list(range(N))
        assert [(r.timestamp, r.timestamp_type) for r in got] == [
            (base + i * STEP, 0) for i in range(N)
        ]
        c.seek(tp, 7)
        assert [r.value for r in _kp_poll(c, 3)] == [b"v7", b"v8", b"v9"]
        c.seek_to_end(tp)
        assert c.position(tp) == N
    finally:
        c.close()


def _kp_poll(c, count, timeout=15):
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        for recs in c.poll(timeout_ms=300).values():
            out += recs
    return out


@pytest.mark.client("kafka-python")
@pytest.mark.api("Fetch", "out-of-range")
def test_out_of_range_kafka_python(bootstrap, filled):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import OffsetOutOfRangeError

    t, _ = filled
    tp = TopicPartition(t, 0)
    c = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="none"
    )
    try:
        c.assign([tp])
        c.seek(tp, N + 50)
        with pytest.raises(OffsetOutOfRangeError):
            _kp_poll(c, 1, timeout=10)
    finally:
        c.close()
    c = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    try:
        c.assign([tp])
        c.seek(tp, N + 50)
        assert _kp_poll(c, 1)[0].offset == 0
    finally:
        c.close()


# --- aiokafka ------------------------------------------------------------------------------------


@pytest.mark.client("aiokafka")
@pytest.mark.api("Fetch", "ListOffsets", "out-of-range")
def test_fetch_positions_aiokafka(bootstrap, filled):
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.errors import OffsetOutOfRangeError

    t, base = filled
    tp = TopicPartition(t, 0)

    async def main():
        c = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="none"
        )
        await c.start()
        try:
            c.assign([tp])
            assert await c.beginning_offsets([tp]) == {tp: 0}
            assert await c.end_offsets([tp]) == {tp: N}
            found = (await c.offsets_for_times({tp: base + 5 * STEP}))[tp]
            assert (found.offset, found.timestamp) == (5, base + 5 * STEP)
            await c.seek_to_beginning(tp)
            first = await asyncio.wait_for(c.getone(), 15)
            assert (first.offset, first.timestamp) == (0, base)
            c.seek(tp, 8)
            assert (await asyncio.wait_for(c.getone(), 15)).value == b"v8"
            c.seek(tp, N + 50)
            with pytest.raises(OffsetOutOfRangeError):
                await asyncio.wait_for(c.getone(), 15)
        finally:
            await c.stop()

    asyncio.run(main())


# --- franz-go ------------------------------------------------------------------------------


@pytest.mark.client("franz-go")
@pytest.mark.api("Fetch", "ListOffsets", "out-of-range")
def test_fetch_positions_franz(bootstrap, filled):
    t, base = filled

    def consume(start, count, *extra):
        res = franz.run(
            "consume",
            "--topic",
            t,
            "--partition",
            0,
            "--from",
            start,
            "--count",
            count,
            *extra,
            brokers=bootstrap,
        )
        assert res.returncode == 0, res
        return res

    assert [r["offset"] for r in consume("start", N).records] == list(range(N))
    assert [r["offset"] for r in consume("5", 5).records] == [5, 6, 7, 8, 9]
    assert consume(f"ts:{base + 2 * STEP + 1}", 1).records[0]["offset"] == 3
    assert consume("end", 1, "--timeout", "2s").records == []

    res = consume(str(N + 30), 1, "--reset", "none", "--timeout", "10s")
    assert res.records == []
    assert res.errors and res.errors[0]["code"] == 1, res  # OFFSET_OUT_OF_RANGE

    for at, want in (("start", 0), ("end", N), (f"ts:{base + 4 * STEP}", 4)):
        r = franz.run("admin list-offsets", "--topic", t, "--at", at, brokers=bootstrap)
        assert r.returncode == 0, r
        assert r.lines[0]["offset"] == want, (at, r)


# --- kcat ---------------------------------------------------------------------------------


@pytest.mark.client("kcat")
@pytest.mark.api("Fetch", "ListOffsets")
def test_fetch_positions_kcat(bootstrap, filled):
    t, base = filled

    def consume(*args):
        p = java.kcat("-b", bootstrap, "-C", "-t", t, "-p", 0, "-e", "-J", *args)
        assert p.returncode == 0, p.stderr
        return [json.loads(x)["offset"] for x in p.stdout.splitlines() if x.startswith("{")]

    assert consume("-o", "beginning") == list(range(N))
    assert consume("-o", "6") == [6, 7, 8, 9]
    assert consume("-o", "-3") == [7, 8, 9]
    assert consume("-o", f"s@{base + 3 * STEP}") == [3, 4, 5, 6, 7, 8, 9]
    assert consume("-o", "end") == []

    p = java.kcat("-b", bootstrap, "-Q", "-t", f"{t}:0:{base + 5 * STEP}", "-J")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)[t]["0"]["offset"] == 5


# --- Java ------------------------------------------------------------------------------------------


@pytest.mark.client("java")
@pytest.mark.api("ListOffsets")
def test_get_offsets_java(bootstrap, filled):
    t, base = filled
    for time_arg, want in (("latest", N), ("-2", 0), ("-3", N - 1), (str(base + 6 * STEP), 6)):
        p = java.run(
            "kafka-get-offsets", "--bootstrap-server", bootstrap, "--topic", t, "--time", time_arg
        )
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == f"{t}:0:{want}", (time_arg, p.stdout)


@pytest.mark.client("java")
@pytest.mark.api("Fetch", "ListOffsets")
def test_fetch_from_offset_java_console_consumer(bootstrap, filled):
    t, _ = filled
    p = java.run(
        "kafka-console-consumer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        t,
        "--partition",
        0,
        "--offset",
        4,
        "--max-messages",
        6,
        "--timeout-ms",
        15000,
        "--formatter-property",
        "print.offset=true",
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [f"Offset:{i}\tv{i}" for i in range(4, N)]


# --- raw OffsetForLeaderEpoch (what the Java consumer validates positions with) ---------------


@pytest.mark.client("raw")
@pytest.mark.api("ListOffsets")
def test_list_offsets_sentinels_by_version_raw(bootstrap, filled):
    """Each sentinel timestamp from the version that brought it (a topic
    without tiered storage has nothing tiered and nothing pending upload);
    before that version, or a negative timestamp that is no sentinel, the
    partition's answer is UNSUPPORTED_VERSION (35)."""
    from compatlib import raw

    t, base = filled
    unknown = (-1, -1)
    with raw.Connection(bootstrap) as conn:
        for version in (6, 7, 8, 9, 10, 11):
            assert raw.list_offsets(conn, t, 0, raw.EARLIEST, version) == (0, -1, 0)
            assert raw.list_offsets(conn, t, 0, raw.LATEST, version) == (0, -1, N)
            assert raw.list_offsets(conn, t, 0, base + STEP, version) == (0, base + STEP, 1)
        # -3 max timestamp (v7), -4 earliest local (v8), -5 latest tiered
        # (v9), -6 earliest pending upload (v11).
        answers = {-3: (0, base + (N - 1) * STEP, N - 1), -4: (0, -1, 0), -5: (0, *unknown)}
        answers[-6] = (0, *unknown)
        since = {-3: 7, -4: 8, -5: 9, -6: 11}
        for sentinel, first in since.items():
            for version in range(6, 12):
                got = raw.list_offsets(conn, t, 0, sentinel, version)
                if version >= first:
                    assert got == answers[sentinel], (sentinel, version)
                else:
                    assert got == (35, *unknown), (sentinel, version)
        for version in (7, 11):
            assert raw.list_offsets(conn, t, 0, -7, version) == (35, *unknown)
        # The timestamp is checked before the topic is looked up.
        assert raw.list_offsets(conn, unique("missing"), 0, -6, 10) == (35, *unknown)
        assert raw.list_offsets(conn, unique("missing"), 0, -6, 11) == (3, *unknown)


@pytest.mark.client("raw")
@pytest.mark.api("OffsetForLeaderEpoch")
def test_offset_for_leader_epoch_raw(bootstrap, filled, topic):
    from compatlib import raw

    t, _ = filled
    empty = topic()
    with raw.Connection(bootstrap) as conn:
        # A new topic's leader is in epoch 0, which holds every record.
        assert raw.offset_for_leader_epoch(conn, t, [(0, -1, 0)]) == [(0, 0, 0, N)]
        assert raw.offset_for_leader_epoch(conn, t, [(0, 0, 0)]) == [(0, 0, 0, N)]
        assert raw.offset_for_leader_epoch(conn, empty, [(0, -1, 0)]) == [(0, 0, 0, 0)]
        # An epoch after the latest one is undefined.
        assert raw.offset_for_leader_epoch(conn, t, [(0, -1, 7)]) == [(0, 0, -1, -1)]
        # A client that knows a newer leader epoch than the broker's.
        ((error, *_),) = raw.offset_for_leader_epoch(conn, t, [(0, 3, 0)])
        assert error == 75  # UNKNOWN_LEADER_EPOCH
        ((error, *_),) = raw.offset_for_leader_epoch(conn, t, [(5, -1, 0)])
        assert error == 3  # UNKNOWN_TOPIC_OR_PARTITION
        ((error, *_),) = raw.offset_for_leader_epoch(conn, unique("missing"), [(0, -1, 0)])
        assert error == 3
