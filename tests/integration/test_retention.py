"""Retention on a real Gregor process: by time and by size, whole segments go,
the log start offset moves, consumers at the head carry on and consumers below
the new start are out of range.

Segments are made small with Kafka's test-only topic config
`internal.segment.bytes` (segment.bytes has a 1 MiB minimum) and the broker
checks retention every 100 ms (`log.retention.check.interval.ms`).
"""

from __future__ import annotations

import time
from pathlib import Path

import kafka
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from tests.support.gregor import GregorNode
from tests.support.topics import create_topic

# Slow (retention waits): make unit leaves the module out.
pytestmark = pytest.mark.slow

TIMEOUT = 20.0
SEGMENT_BYTES = 1000  # a batch of one ~150-byte record is ~230 bytes: ~4 batches a segment
HOUR_MS = 3_600_000


# --- helpers -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = GregorNode(
        tmp_path_factory.mktemp("retention") / "data",
        {"log.retention.check.interval.ms": 100},
    ).start()
    yield process
    process.stop()


def segment_files(broker, topic) -> list[tuple[int, int]]:
    """(base offset, size) of the partition's segments on disk, oldest first."""
    found = []
    for path in (Path(broker.data_dir) / f"{topic}-0").glob("*.log"):
        try:
            found.append((int(path.stem), path.stat().st_size))
        except FileNotFoundError:  # deleted by retention while we looked
            pass
    return sorted(found)


def watermarks(bootstrap, topic) -> tuple[int, int]:
    """(log start offset, high watermark), by ListOffsets -2 and -1."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "gregor-tests"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT)
    finally:
        consumer.close()


def wait_for(condition, what: str):
    deadline = time.monotonic() + TIMEOUT
    while True:
        result = condition()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class HeadReader:
    """A confluent consumer that reads each record right after it is produced."""

    def __init__(self, bootstrap, topic, offset=0):
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "gregor-tests",
                "enable.auto.commit": False,
                "auto.offset.reset": "error",  # any out-of-range read fails the test
                "fetch.wait.max.ms": 50,
            }
        )
        self.consumer.assign([TopicPartition(topic, 0, offset)])
        self.got: list[tuple[int, bytes]] = []

    def read(self, count: int) -> list[tuple[int, bytes]]:
        new = []
        deadline = time.monotonic() + TIMEOUT
        while len(new) < count:
            assert time.monotonic() < deadline, f"head reader got {len(new)} of {count}"
            msg = self.consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            new.append((msg.offset(), msg.value()))
        self.got += new
        return new

    def close(self):
        self.consumer.close()


def produce_one(producer: Producer, topic: str, value: bytes, timestamp=None) -> int:
    """One record in its own batch; its offset."""
    reports = []
    kwargs = {"timestamp": timestamp} if timestamp is not None else {}
    producer.produce(
        topic,
        value=value,
        partition=0,
        on_delivery=lambda err, msg: reports.append((err, msg.offset())),
        **kwargs,
    )
    assert producer.flush(TIMEOUT) == 0
    [(err, offset)] = reports
    assert err is None, err
    return offset


def first_record_after_reset(bootstrap, topic, offset, reset) -> int | str:
    """Assign `offset` with auto.offset.reset=`reset`: the first record's
    offset, or the error name."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "gregor-tests",
            "enable.auto.commit": False,
            "auto.offset.reset": reset,
        }
    )
    consumer.assign([TopicPartition(topic, 0, offset)])
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._AUTO_OFFSET_RESET, msg.error()
                assert "Offset out of range" in msg.error().str()
                return "OFFSET_OUT_OF_RANGE"
            return msg.offset()
    finally:
        consumer.close()
    raise AssertionError("no record and no error")


def wait_for_size_retention(broker, topic, retention_bytes, end):
    """The segment files once retention by size has nothing left to delete.

    Kafka's rule: delete the oldest segment while the others still hold
    retention.bytes; the log start offset is then the oldest remaining base."""

    def settled():
        files = segment_files(broker, topic)
        if sum(size for _, size in files) - files[0][1] >= retention_bytes:
            return None
        start, high = watermarks(broker.bootstrap, topic)
        return files if (start, high) == (files[0][0], end) else None

    return wait_for(settled, "retention by size to finish")


def _value(i: int, tag: str) -> bytes:
    return f"{tag} {i:03d} ".encode().ljust(150, b".")


# --- by time ----------------------------------------------------------------------------


def test_retention_by_time_deletes_whole_segments_of_old_records_only(broker):
    topic = "retention-time"
    create_topic(
        broker.bootstrap,
        topic,
        config={"internal.segment.bytes": str(SEGMENT_BYTES), "retention.ms": str(HOUR_MS)},
    )
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    two_hours_ago = int(time.time() * 1000) - 2 * HOUR_MS
    # Twelve records past retention (retention may delete them as they come),
    # then six recent ones, one batch each, each read by a consumer at the
    # head as soon as it is acknowledged.
    for i in range(12):
        assert produce_one(producer, topic, _value(i, "old"), two_hours_ago + i) == i
    reader = HeadReader(broker.bootstrap, topic, offset=12)
    for i in range(12, 18):
        assert produce_one(producer, topic, _value(i, "new")) == i
        assert reader.read(1) == [(i, _value(i, "new"))]

    # The segment holding the first recent record stays, with any old records
    # that share it; every segment before it holds old records only and goes.
    keep = max(base for base, _ in segment_files(broker, topic) if base <= 12)
    assert keep > 0, "a segment of old records only should exist"
    wait_for(lambda: watermarks(broker.bootstrap, topic) == (keep, 18), "log start to move")
    wait_for(lambda: segment_files(broker, topic)[0][0] == keep, "old segment files to go")

    # The consumer at the head carries on.
    for i in range(18, 21):
        assert produce_one(producer, topic, _value(i, "new")) == i
    assert reader.read(3) == [(i, _value(i, "new")) for i in range(18, 21)]
    reader.close()
    assert watermarks(broker.bootstrap, topic) == (keep, 21)

    # A consumer from the beginning starts at the new log start offset.
    from_start = HeadReader(broker.bootstrap, topic, OFFSET_BEGINNING)
    got = from_start.read(21 - keep)
    from_start.close()
    assert got == [(i, _value(i, "old" if i < 12 else "new")) for i in range(keep, 21)]


def test_every_segment_past_retention_goes_and_the_log_restarts_at_its_end(broker):
    """Like Kafka: when even the active segment is past retention.ms, an empty
    segment is rolled at the log end and all the old ones are deleted."""
    topic = "retention-time-all"
    create_topic(
        broker.bootstrap,
        topic,
        config={"internal.segment.bytes": str(SEGMENT_BYTES), "retention.ms": str(HOUR_MS)},
    )
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    old = int(time.time() * 1000) - 2 * HOUR_MS
    for i in range(10):
        produce_one(producer, topic, _value(i, "old"), old)

    wait_for(lambda: watermarks(broker.bootstrap, topic) == (10, 10), "the log to empty")
    wait_for(lambda: segment_files(broker, topic) == [(10, 0)], "one empty segment at 10")
    assert produce_one(producer, topic, _value(10, "new")) == 10
    assert first_record_after_reset(broker.bootstrap, topic, 0, "earliest") == 10


# --- by size ------------------------------------------------------------------------------


def test_retention_by_size_keeps_the_newest_segments_within_the_limit(broker):
    topic = "retention-size"
    retention_bytes = 2500
    create_topic(
        broker.bootstrap,
        topic,
        config={
            "internal.segment.bytes": str(SEGMENT_BYTES),
            "retention.bytes": str(retention_bytes),
        },
    )
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    reader = HeadReader(broker.bootstrap, topic)
    for i in range(40):
        assert produce_one(producer, topic, _value(i, "rec")) == i
        assert reader.read(1) == [(i, _value(i, "rec"))]

    files = wait_for_size_retention(broker, topic, retention_bytes, 40)
    start = files[0][0]
    assert start > 0
    assert sum(size for _, size in files) >= retention_bytes - SEGMENT_BYTES
    # Segments are whole: every one starts at a batch boundary Gregor wrote.
    assert all(size > 0 for _, size in files)

    # The head reader carries on; a reader from the start gets exactly the rest.
    assert produce_one(producer, topic, _value(40, "rec")) == 40
    assert reader.read(1) == [(40, _value(40, "rec"))]
    reader.close()
    from_start = HeadReader(broker.bootstrap, topic, OFFSET_BEGINNING)
    got = from_start.read(41 - start)
    from_start.close()
    assert got == [(i, _value(i, "rec")) for i in range(start, 41)]

    kp = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap)
    tp = kafka.TopicPartition(topic, 0)
    assert kp.beginning_offsets([tp]) == {tp: start}
    assert kp.end_offsets([tp]) == {tp: 41}
    kp.close()


def test_consumer_below_the_new_log_start_is_out_of_range_and_resets(broker):
    topic = "retention-reset"
    create_topic(
        broker.bootstrap,
        topic,
        config={"internal.segment.bytes": str(SEGMENT_BYTES), "retention.bytes": "1500"},
    )
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(20):
        produce_one(producer, topic, _value(i, "rec"))
    start = wait_for_size_retention(broker, topic, 1500, 20)[0][0]
    assert 0 < start < 20

    assert first_record_after_reset(broker.bootstrap, topic, 0, "error") == "OFFSET_OUT_OF_RANGE"
    assert first_record_after_reset(broker.bootstrap, topic, 0, "earliest") == start
    assert first_record_after_reset(broker.bootstrap, topic, start - 1, "earliest") == start

    # kafka-python resets the same way.
    kp = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
    tp = kafka.TopicPartition(topic, 0)
    kp.assign([tp])
    kp.seek(tp, 0)
    got = []
    deadline = time.monotonic() + TIMEOUT
    while not got:
        assert time.monotonic() < deadline, "kafka-python read nothing"
        for records in kp.poll(timeout_ms=500).values():
            got += [r.offset for r in records]
    kp.close()
    assert got[0] == start


def test_records_produced_without_timestamps_are_stored_with_none_and_kept(broker):
    """confluent-kafka's timestamp=-1 (librdkafka's header then says max timestamp 0):
    the segment stores -1, the records' own, so retention ages it by the file's
    time and keeps it, as Kafka does (compat_tests/test_retention.py runs the same
    side by side). Before, Gregor stored 0 (1970) and deleted the records within
    one retention check."""
    from wire.records import iter_batches

    topic = "no-timestamps"
    create_topic(broker.bootstrap, topic, config={})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 200})
    for _ in range(10):
        producer.produce(topic, value=b"x" * 6000, timestamp=-1)
    assert producer.flush(TIMEOUT) == 0
    data = (Path(broker.data_dir) / f"{topic}-0" / f"{0:020d}.log").read_bytes()
    headers = [h for _, h in iter_batches(data)]
    assert sum(h.records_count for h in headers) == 10
    assert {(h.base_timestamp, h.max_timestamp) for h in headers} == {(-1, -1)}
    wait_for_whole_retention_check(broker.bootstrap, producer)
    assert watermarks(broker.bootstrap, topic) == (0, 10)


def wait_for_whole_retention_check(bootstrap, producer) -> None:
    """Until one whole retention check has run after this call: three expired
    records, each produced after the one before was deleted, are deleted by
    three distinct checks, so the second ran from start to end after the call
    (compat_tests/compatlib/common.py explains it at length)."""
    sentinel = f"retention-sentinel-{time.monotonic_ns()}"
    create_topic(bootstrap, sentinel, config={})
    for n in range(3):
        producer.produce(sentinel, value=b"expired", timestamp=1000)
        assert producer.flush(TIMEOUT) == 0
        wait_for(lambda n=n: watermarks(bootstrap, sentinel)[0] == n + 1, "a retention check")
