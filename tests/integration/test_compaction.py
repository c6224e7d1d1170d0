"""Log compaction on a real Gregor process: a topic with cleanup.policy=compact
written by confluent-kafka keeps, below its active segment, only each key's
latest record at its original offset; a consumer from the beginning sees
exactly that, and Kafka's DumpLogSegments reads the cleaned segments -- which
hold the same batches as Apache Kafka's own cleaner writes for the same input.

Segments are made small with Kafka's test-only topic config
`internal.segment.bytes`; the broker's cleaner looks every 100 ms
(`log.cleaner.backoff.ms`).
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from logstore.checkpoint import read_offset_checkpoint
from tests.support.gregor import GregorNode
from tests.support.topics import create_topic
from tools import kafka_cli
from tools.run_kafka import KafkaNode

# Slow (the cleaner at work, an Apache Kafka node): make unit leaves the module out.
pytestmark = pytest.mark.slow

TIMEOUT = 30.0
KEYS = [f"key-{i}" for i in range(5)]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = GregorNode(
        tmp_path_factory.mktemp("compaction") / "data",
        {"log.cleaner.backoff.ms": 100},
    ).start()
    yield process
    process.stop()


def produce(bootstrap, topic, records) -> dict[int, tuple[str, str | None]]:
    """Produce (key, value) records in order, a few per batch; offset -> record."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    acked: dict[int, tuple[str, str | None]] = {}

    def report(err, msg):
        assert err is None, err
        value = msg.value()
        acked[msg.offset()] = (msg.key().decode(), None if value is None else value.decode())

    for i, (key, value) in enumerate(records):
        producer.produce(topic, key=key, value=value, partition=0, on_delivery=report)
        if i % 7 == 6:
            assert producer.flush(TIMEOUT) == 0
    assert producer.flush(TIMEOUT) == 0
    assert len(acked) == len(records)
    return acked


def consume_all(bootstrap, topic, end) -> list[tuple[int, str, str | None]]:
    """Every record from the beginning up to offset `end` (exclusive)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "gregor-compaction-tests",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while not got or got[-1][0] < end - 1:
            assert time.monotonic() < deadline, f"read {len(got)} records, last {got[-1:]}"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            value = msg.value()
            got.append(
                (msg.offset(), msg.key().decode(), None if value is None else value.decode())
            )
    finally:
        consumer.close()
    return got


def segment_bases(broker, topic) -> list[int]:
    return sorted(int(p.stem) for p in (Path(broker.data_dir) / f"{topic}-0").glob("*.log"))


def cleaned_up_to(broker, topic) -> int:
    """The cleaner's first dirty offset for the partition (0 before any cleaning)."""
    path = Path(broker.data_dir) / "cleaner-offset-checkpoint"
    try:
        return read_offset_checkpoint(str(path)).get((topic, 0), 0)
    except FileNotFoundError:
        return 0


def test_compacted_topic_keeps_latest_value_per_key_at_original_offsets(broker):
    topic = "compacted-updates"
    create_topic(
        broker.bootstrap,
        topic,
        config={
            "cleanup.policy": "compact",
            "internal.segment.bytes": "1200",
            "min.cleanable.dirty.ratio": "0.01",
        },
    )
    updates = [(KEYS[i % len(KEYS)], f"value {i:04d} ".ljust(40, ".")) for i in range(300)]
    updates.append((KEYS[3], None))  # a tombstone: kept (delete.retention.ms is a day)
    produced = produce(broker.bootstrap, topic, updates)
    end = max(produced) + 1
    active_base = segment_bases(broker, topic)[-1]
    assert active_base > 100, "the writes should span many segments"

    # Bounded wait for the broker's cleaner to reach the active segment.
    deadline = time.monotonic() + TIMEOUT
    while cleaned_up_to(broker, topic) < active_base:
        assert time.monotonic() < deadline, "the cleaner did not compact the topic"
        time.sleep(0.1)

    got = consume_all(broker.bootstrap, topic, end)
    below = [(o, k, v) for o, k, v in got if o < active_base]
    latest_below = {}
    for offset in sorted(o for o in produced if o < active_base):
        latest_below[produced[offset][0]] = offset
    # Below the active segment: each key once, its latest record, at its offset.
    assert below == sorted((o, *produced[o]) for o in latest_below.values())
    # The active segment is untouched.
    assert [r for r in got if r[0] >= active_base] == [
        (o, *produced[o]) for o in sorted(produced) if o >= active_base
    ]
    # What a consumer rebuilding the table sees: the latest value of every key.
    table = {}
    for _, key, value in got:
        table[key] = value
    expected = {}
    for offset in sorted(produced):
        key, value = produced[offset]
        expected[key] = value
    assert table == expected and table[KEYS[3]] is None
    # The disk holds little more than the active segment and one record per key.
    cleaned_bytes = sum(
        p.stat().st_size
        for p in (Path(broker.data_dir) / f"{topic}-0").glob("*.log")
        if int(p.stem) < active_base
    )
    assert cleaned_bytes < 5 * 200

    # Kafka's own tool reads the cleaned segments.
    kafka_cli.check_installed()
    paths = [
        str(p)
        for p in sorted((Path(broker.data_dir) / f"{topic}-0").glob("*.log"))
        if int(p.stem) < active_base and p.stat().st_size > 0
    ]
    out = kafka_cli.run_tool("kafka-dump-log", "--deep-iteration", "--files", ",".join(paths))
    assert out.returncode == 0, out.stderr
    dumped = [int(o) for o in re.findall(r"\| offset: (\d+)", out.stdout)]
    assert dumped == [o for o, _, _ in below]
    assert out.stdout.count("isvalid: true") == out.stdout.count("baseOffset:")


def test_consumer_offsets_is_compacted_and_commits_survive_a_restart(tmp_path):
    """The group coordinator's __consumer_offsets is a compacted topic: many
    commits of the same partitions shrink to the latest one per group, and a
    restarted broker replays the compacted log into the same committed
    offsets."""
    process = GregorNode(
        tmp_path / "data",
        {
            "log.cleaner.backoff.ms": 100,
            "log.cleaner.min.cleanable.ratio": 0.01,
            "offsets.topic.num.partitions": 1,
            "offsets.topic.segment.bytes": 1024 * 1024,
        },
    ).start()
    try:
        create_topic(process.bootstrap, "committed", config={})
        groups = [f"group-{i}" for i in range(3)]
        metadata = "m" * 3500  # big commits: the 1 MiB segments roll quickly
        consumers = {
            g: Consumer({"bootstrap.servers": process.bootstrap, "group.id": g}) for g in groups
        }
        try:
            for i in range(330):
                for g, consumer in consumers.items():
                    offset = TopicPartition("committed", 0, i * 10 + groups.index(g), metadata)
                    consumer.commit(offsets=[offset], asynchronous=False)
        finally:
            for consumer in consumers.values():
                consumer.close()
        offsets_dir = Path(process.data_dir) / "__consumer_offsets-0"
        bases = sorted(int(p.stem) for p in offsets_dir.glob("*.log"))
        assert len(bases) >= 3, "the commits should span several segments"

        deadline = time.monotonic() + TIMEOUT
        while cleaned_up_to(process, "__consumer_offsets") < bases[-1]:
            assert time.monotonic() < deadline, "the cleaner did not compact __consumer_offsets"
            time.sleep(0.1)
        cleaned_bytes = sum(
            p.stat().st_size for p in offsets_dir.glob("*.log") if int(p.stem) < bases[-1]
        )
        # One commit record per group (plus batch headers) below the active segment.
        assert cleaned_bytes < len(groups) * 4000
    finally:
        process.stop()

    process.start()
    try:
        for g in groups:
            consumer = Consumer({"bootstrap.servers": process.bootstrap, "group.id": g})
            try:
                [committed] = consumer.committed([TopicPartition("committed", 0)], timeout=TIMEOUT)
            finally:
                consumer.close()
            assert committed.offset == 3290 + groups.index(g)
            assert committed.metadata == metadata
    finally:
        process.stop()


def _compact_and_dump(bootstrap: str, data_dir: Path) -> str:
    """Write one workload to a topic, make it compacted, wait for the cleaner to reach
    the active segment, and dump the cleaned segments (deep iteration), with
    what differs between two runs (CRCs, delete horizons, paths) masked."""
    topic = "compacted-side-by-side"
    # Written uncompacted, then compacted in one pass: how often a cleaner
    # runs while records arrive would change the segment groups.
    create_topic(
        bootstrap,
        topic,
        config={
            "cleanup.policy": "delete",
            "retention.ms": "-1",
            "internal.segment.bytes": "1200",
            "min.cleanable.dirty.ratio": "0.01",
        },
    )
    # One batch of five records per flush: linger.ms is longer than a flush.
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 1000,
            "compression.type": "gzip",
        }
    )
    for i in range(400):
        value = None if i % 11 == 10 else f"value-{i:04d}".ljust(30, ".")
        key = f"k{i % 4}" if i % 3 else f"j{i % 17}"
        producer.produce(topic, key=key, value=value, partition=0, timestamp=1_700_000_000_000 + i)
        if i % 5 == 4:
            assert producer.flush(TIMEOUT) == 0
    partition_dir = data_dir / f"{topic}-0"
    active = sorted(int(p.stem) for p in partition_dir.glob("*.log"))[-1]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    compact = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    for future in admin.incremental_alter_configs([compact]).values():
        future.result(TIMEOUT)
    deadline = time.monotonic() + 60
    while cleaned_up_to_dir(data_dir, topic) < active:
        assert time.monotonic() < deadline, "the cleaner did not compact the topic"
        time.sleep(0.1)
    files = sorted(
        str(p) for p in partition_dir.glob("*.log") if int(p.stem) < active and p.stat().st_size > 0
    )
    out = kafka_cli.run_tool("kafka-dump-log", "--deep-iteration", "--files", ",".join(files))
    assert out.returncode == 0, out.stderr
    text = re.sub(r"crc: \d+ ", "", out.stdout)
    text = re.sub(r"deleteHorizonMs: OptionalLong\[\d+\]", "deleteHorizonMs: <set>", text)
    text = re.sub(r"producerId: \d+", "producerId: <id>", text)
    # Record timestamps are deltas from the delete horizon (the cleaning's
    # time), so compressed sizes, and the positions after them, vary by a byte.
    text = re.sub(r"position: \d+ ", "position: <p> ", text)
    text = re.sub(r"size: \d+ ", "size: <n> ", text)
    return "\n".join(line for line in text.splitlines() if not line.startswith("Dumping "))


def cleaned_up_to_dir(data_dir: Path, topic: str) -> int:
    try:
        return read_offset_checkpoint(str(data_dir / "cleaner-offset-checkpoint")).get(
            (topic, 0), 0
        )
    except FileNotFoundError:
        return 0


def test_cleaned_segments_hold_the_batches_apache_kafka_writes(tmp_path):
    """Same records, same segment boundaries: the cleaned batches (offsets,
    counts, sequences, codec, timestamps, delete horizon set or not, the
    records kept) are what Apache Kafka 4.3's cleaner leaves."""
    kafka_cli.check_installed()
    with KafkaNode(overrides={"log.cleaner.backoff.ms": "100"}) as node:
        assert node.dir is not None
        kafka = _compact_and_dump(node.bootstrap, node.dir / "data")
    gregor_dir = tmp_path / "gregor"
    process = GregorNode(gregor_dir, {"log.cleaner.backoff.ms": 100}).start()
    try:
        gregor = _compact_and_dump(process.bootstrap, gregor_dir)
    finally:
        process.stop()
    assert "deleteHorizonMs: <set>" in kafka and kafka.count("| offset:") > 20
    assert gregor == kafka


def read_pass(bootstrap, topic, end) -> list[tuple[int, str, str | None]]:
    """One consumer from offset 0 until it has the record at `end` - 1 (the
    last record of a partition is always its key's latest: compaction keeps
    it)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "gregor-compaction-readers",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while not got or got[-1][0] < end - 1:
            assert time.monotonic() < deadline, f"a pass got {len(got)} records, last {got[-1:]}"
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            value = msg.value()
            got.append(
                (msg.offset(), msg.key().decode(), None if value is None else value.decode())
            )
    finally:
        consumer.close()
    return got


def test_consumers_read_correct_records_while_the_cleaner_swaps_segments(broker):
    """Consumers read from the beginning again and again while a producer
    writes and the cleaner rewrites and swaps segments under them: every
    record they get is the one produced at that offset, in offset order, no
    fetch fails, and passes that start after a cleaning see it."""
    topic = "compacted-busy"
    create_topic(
        broker.bootstrap,
        topic,
        config={
            "cleanup.policy": "compact",
            "internal.segment.bytes": "1200",
            "min.cleanable.dirty.ratio": "0.01",
        },
    )
    produced: dict[int, tuple[str, str | None]] = {}
    failures: list[BaseException] = []

    def write():
        try:
            for round in range(6):
                updates = [(KEYS[i % len(KEYS)], f"busy {round} {i:04d}") for i in range(300)]
                produced.update(produce(broker.bootstrap, topic, updates))
        except BaseException as e:  # reported by the main thread
            failures.append(e)

    writer = threading.Thread(target=write)
    writer.start()
    passes_after_cleaning = 0
    try:
        deadline = time.monotonic() + 3 * TIMEOUT
        while writer.is_alive() or passes_after_cleaning < 2:
            assert time.monotonic() < deadline, "no pass over a cleaned log"
            cleaned_before = cleaned_up_to(broker, "compacted-busy")
            consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "hw"})
            try:
                _, end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT)
            finally:
                consumer.close()
            if end == 0:
                continue
            got = read_pass(broker.bootstrap, topic, end)
            offsets = [o for o, _, _ in got]
            assert offsets == sorted(set(offsets))
            snapshot = dict(produced)
            assert all(snapshot.get(o, (k, v)) == (k, v) for o, k, v in got)
            if cleaned_before > 0:
                passes_after_cleaning += 1
                # Compacted below the cleaner's progress: each key at most once there.
                below = [k for o, k, _ in got if o < cleaned_before]
                assert len(below) == len(set(below))
    finally:
        writer.join(TIMEOUT)
    assert not failures, failures
    assert len(produced) == 1800
