"""What survives a stop: SIGTERM and kill -9 of a real Gregor process, then a
restart on the same data directory and port.

Every record a producer saw acknowledged must be read back at the offset the
acknowledgement named, idempotent producers' sequences must still be known,
and the files Gregor leaves are Kafka's own: Kafka 4.3.1's DumpLogSegments
reads the segments, indexes and producer snapshots.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support.raw import (
    RawClient,
    error_and_offset,
    init_producer_id,
    kafka_request,
    produce,
)
from tests.support.raw import idempotent_batch as batch
from tests.support.topics import create_topic, ensure_topic
from tools import kafka_cli
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.records import RecordInput, build_batch

# Slow (broker restarts and kills, time-based segment rolls): make unit leaves the module out.
pytestmark = pytest.mark.slow

TIMEOUT = 20.0
SEGMENT = "0" * 20


# --- helpers ---------------------------------------------------------------------


def read_partition(bootstrap, topic, partition) -> list[tuple]:
    """(offset, key, value, headers) of every record below the high watermark."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "gregor-tests",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    tp = TopicPartition(topic, partition)
    low, high = consumer.get_watermark_offsets(tp, timeout=TIMEOUT)
    assert low == 0
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
    got = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while len(got) < high:
            assert time.monotonic() < deadline, f"read {len(got)} of {high} records"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                continue
            got.append((msg.offset(), msg.key(), msg.value(), msg.headers() or []))
    finally:
        consumer.close()
    assert [r[0] for r in got] == list(range(high)), "offsets are not dense"
    return got


def restart_log(broker) -> str:
    """The restarted broker's log, after its listener is up."""
    return broker.log()


# --- acknowledged records survive ----------------------------------------------------


def _produce_acknowledged(bootstrap, topic, partitions, count, acks) -> dict:
    """Produce `count` records per partition in several batches; the
    acknowledged ones as {(partition, offset): (key, value, headers)}."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "linger.ms": 2,
            "batch.num.messages": 25,
        }
    )
    acked = {}

    def delivered(record):
        def report(err, msg):
            assert err is None, err
            acked[(msg.partition(), msg.offset())] = record

        return report

    for i in range(count):
        for p in range(partitions):
            record = (
                f"key-{p}-{i}".encode(),
                f"value {p} {i} ".encode() * (1 + i % 7),
                [("i", str(i).encode())],
            )
            key, value, headers = record
            producer.produce(
                topic,
                key=key,
                value=value,
                headers=headers,
                partition=p,
                on_delivery=delivered(record),
            )
        if i % 50 == 49:
            producer.poll(0)
    assert producer.flush(TIMEOUT) == 0
    assert len(acked) == count * partitions
    return acked


def _assert_all_present(bootstrap, topic, partitions, acked) -> None:
    for p in range(partitions):
        records = read_partition(bootstrap, topic, p)
        expected = sorted((o, *v) for (q, o), v in acked.items() if q == p)
        assert records == expected


def test_sigterm_then_restart_keeps_every_acknowledged_record_at_its_offset(gregor):
    topic = "durable-sigterm"
    create_topic(gregor.bootstrap, topic, partitions=3)
    acked = _produce_acknowledged(gregor.bootstrap, topic, 3, 200, acks="all")

    assert gregor.stop() == 0
    assert "stopped: logs flushed and checkpointed" in gregor.log()
    gregor.start()

    _assert_all_present(gregor.bootstrap, topic, 3, acked)
    log = restart_log(gregor)
    for p in range(3):
        assert re.search(rf"opened log \S+/{topic}-{p}: offsets \[0, 200\)", log), log
    assert "WARNING" not in log and "ERROR" not in log, log
    # Appends go on at the log end.
    more = _produce_acknowledged(gregor.bootstrap, topic, 3, 1, acks="all")
    assert sorted(more) == [(p, 200) for p in range(3)]


@pytest.mark.parametrize("acks", ["all", "1"])
def test_kill_9_then_restart_keeps_every_acknowledged_record_at_its_offset(gregor, acks):
    topic = f"durable-kill-acks-{acks}"
    create_topic(gregor.bootstrap, topic, partitions=2)
    acked = _produce_acknowledged(gregor.bootstrap, topic, 2, 200, acks=acks)

    assert gregor.kill() == -9
    gregor.start()

    _assert_all_present(gregor.bootstrap, topic, 2, acked)
    log = restart_log(gregor)
    for p in range(2):
        assert re.search(rf"opened log \S+/{topic}-{p}: offsets \[0, 200\)", log), log
    assert "ERROR" not in log and "Traceback" not in log, log


def test_kill_9_while_producing_loses_no_acknowledged_record(gregor):
    """The broker dies with requests in flight: what was acknowledged is
    there afterwards, at its offset, and the log holds no gap and no torn batch."""
    topic = "durable-kill-in-flight"
    producer = Producer(
        {
            "bootstrap.servers": gregor.bootstrap,
            "acks": "all",
            "linger.ms": 1,
            "batch.num.messages": 10,
            "message.timeout.ms": 5000,
        }
    )
    acked: dict[int, bytes] = {}
    failed = 0

    def delivered(err, msg):
        nonlocal failed
        if err is None:
            acked[msg.offset()] = msg.value()
        else:
            failed += 1

    sent = 0
    deadline = time.monotonic() + TIMEOUT
    while len(acked) < 300:
        assert time.monotonic() < deadline, f"only {len(acked)} records acknowledged"
        producer.produce(topic, value=f"record {sent}".encode(), partition=0, on_delivery=delivered)
        sent += 1
        producer.poll(0 if sent % 20 else 0.001)
    assert gregor.kill() == -9
    # What the producer still holds fails (purged): only acknowledged records count.
    producer.purge()
    producer.flush(TIMEOUT)
    assert len(acked) + failed <= sent

    gregor.start()
    records = read_partition(gregor.bootstrap, topic, 0)
    by_offset = {offset: value for offset, _, value, _ in records}
    for offset, value in acked.items():
        assert by_offset.get(offset) == value, f"acknowledged offset {offset} lost"
    # Records are whole and in send order: "record 0", "record 1", ...
    assert [v for _, _, v, _ in records] == [f"record {i}".encode() for i in range(len(records))]
    assert "Traceback" not in restart_log(gregor)


def test_restart_after_kill_9_cuts_a_torn_batch_off_the_log_end(gregor):
    """A batch half-written when the process died (simulated by appending half
    of a valid batch to the active segment) is cut off by recovery; the
    acknowledged records stay and appends go on at the same offsets."""
    topic = "durable-torn-tail"
    create_topic(gregor.bootstrap, topic)
    acked = _produce_acknowledged(gregor.bootstrap, topic, 1, 50, acks="all")
    assert gregor.kill() == -9

    segment = Path(gregor.data_dir) / f"{topic}-0" / f"{SEGMENT}.log"
    good_size = segment.stat().st_size
    torn = build_batch([RecordInput(b"torn", b"x" * 500)], base_offset=50)
    with open(segment, "ab") as f:
        f.write(torn[: len(torn) // 2])
    gregor.start()

    log = restart_log(gregor)
    assert re.search(
        rf"truncating {len(torn) // 2} bytes of \S+{SEGMENT}\.log at position {good_size}", log
    ), log
    assert re.search(rf"opened log \S+/{topic}-0: offsets \[0, 50\)", log), log
    assert segment.stat().st_size == good_size
    _assert_all_present(gregor.bootstrap, topic, 1, acked)
    more = _produce_acknowledged(gregor.bootstrap, topic, 1, 1, acks="all")
    assert sorted(more) == [(0, 50)]


def test_graceful_stop_runs_no_background_duty_on_closed_logs(gregor_factory):
    broker = gregor_factory(
        {"log.retention.check.interval.ms": 10, "log.flush.scheduler.interval.ms": 10}
    )
    topic = "busy-duties"
    create_topic(broker.bootstrap, topic, partitions=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for p in range(30):
        producer.produce(topic, value=b"x", partition=p)
    assert producer.flush(TIMEOUT) == 0

    assert broker.stop() == 0
    problems = [line for line in broker.log().splitlines() if "WARNING" in line or "ERROR" in line]
    assert problems == []


# --- producer state ------------------------------------------------------------------


@pytest.mark.parametrize("stop", ["sigterm", "kill -9"])
def test_producer_state_survives_a_restart_so_a_retried_batch_is_still_a_duplicate(gregor, stop):
    topic = "durable-producer-state"
    client = RawClient(gregor.bootstrap)
    ensure_topic(client, topic)
    pid, epoch = init_producer_id(client)
    first = batch(pid, epoch, 0, b"a", b"b")
    second = batch(pid, epoch, 2, b"c")
    assert error_and_offset(produce(client, topic, first, acks=-1)) == (ErrorCode.NONE, 0)
    assert error_and_offset(produce(client, topic, second, acks=-1)) == (ErrorCode.NONE, 2)
    client.close()

    if stop == "sigterm":
        assert gregor.stop() == 0
        # A clean stop leaves Kafka's producer snapshot at the log end.
        assert (Path(gregor.data_dir) / f"{topic}-0" / f"{3:020d}.snapshot").exists()
    else:
        assert gregor.kill() == -9
    gregor.start()

    client = RawClient(gregor.bootstrap)
    try:
        # The producer retries both batches after the restart: no new records.
        assert error_and_offset(produce(client, topic, second, acks=-1)) == (ErrorCode.NONE, 2)
        assert error_and_offset(produce(client, topic, first, acks=-1)) == (ErrorCode.NONE, 0)
        # A gap is still a gap; the next sequence goes on at the log end.
        assert error_and_offset(produce(client, topic, batch(pid, epoch, 5, b"x"), acks=-1)) == (
            ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
            -1,
        )
        assert error_and_offset(produce(client, topic, batch(pid, epoch, 3, b"d"), acks=-1)) == (
            ErrorCode.NONE,
            3,
        )
        # Producer ids are never handed out twice, across restarts too.
        new_pid, _ = init_producer_id(client)
        assert new_pid > pid
    finally:
        client.close()
    assert [(o, v) for o, _, v, _ in read_partition(gregor.bootstrap, topic, 0)] == [
        (0, b"a"),
        (1, b"b"),
        (2, b"c"),
        (3, b"d"),
    ]


# --- Kafka's own tools read Gregor's files -------------------------------------------


_BATCH_LINE = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .* isvalid: (\w+)$")
_RECORD_LINE = re.compile(
    r"^\| offset: (\d+) CreateTime: \d+ keySize: (-?\d+) valueSize: (-?\d+) "
    r"sequence: (-?\d+) headerKeys: \[(.*?)\](?: key: (\S*))?(?: payload: (.*))?$"
)


@pytest.mark.skipif(
    not (kafka_cli.java_available() and kafka_cli.jars_available()),
    reason="Kafka's CLI tools are not installed (make clients)",
)
def test_kafka_dump_log_segments_reads_gregors_segments_indexes_and_snapshots(gregor):
    topic = "dump-log"
    producer = Producer(
        {
            "bootstrap.servers": gregor.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.num.messages": 20,
        }
    )
    expected = []  # (offset, key, value, header keys)
    # Each record carries its own millisecond: the time index gains an entry only
    # when the largest timestamp grows, and a fast broker takes several batches
    # within one millisecond of the wall clock.
    first_ms = int(time.time() * 1000) - 60_000
    for i in range(200):
        key, value = f"k{i}".encode(), f"value-{i}-".encode() + b"x" * 100
        producer.produce(
            topic,
            key=key,
            value=value,
            headers=[("h", b"1")],
            partition=0,
            timestamp=first_ms + i,
        )
        expected.append((i, key.decode(), value.decode(), "h"))
        if i % 20 == 19:
            producer.flush(TIMEOUT)
    producer.produce(topic, key=None, value=None, partition=0)
    expected.append((200, None, None, ""))
    assert producer.flush(TIMEOUT) == 0
    # A second codec in the same segment.
    gz = Producer({"bootstrap.servers": gregor.bootstrap, "compression.type": "gzip"})
    for i in range(3):
        gz.produce(topic, key=b"gz", value=f"zipped {i}".encode(), partition=0)
        expected.append((201 + i, "gz", f"zipped {i}", ""))
    assert gz.flush(TIMEOUT) == 0
    assert gregor.stop() == 0

    part = Path(gregor.data_dir) / f"{topic}-0"
    snapshots = sorted(part.glob("*.snapshot"))
    assert [s.name for s in snapshots] == [f"{204:020d}.snapshot"]
    files = [part / f"{SEGMENT}.log", part / f"{SEGMENT}.index", part / f"{SEGMENT}.timeindex"]
    result = kafka_cli.run_tool(
        "kafka-dump-log",
        "--files",
        ",".join(str(f) for f in [*files, *snapshots]),
        "--print-data-log",
        "--deep-iteration",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "mismatch" not in out.lower() and "out of order" not in out.lower(), out
    sections = re.split(r"^Dumping .*$", out, flags=re.M)[1:]
    log_part, index_part, time_part, snapshot_part = sections

    batches = [m.groups() for m in map(_BATCH_LINE.match, log_part.splitlines()) if m]
    assert all(valid == "true" for *_, valid in batches)
    assert [int(b[0]) for b in batches][:1] == [0]
    assert sum(int(b[2]) for b in batches) == 204
    records = []
    for line in log_part.splitlines():
        m = _RECORD_LINE.match(line)
        if m:
            offset, key_size, value_size, _, header_keys, key, value = m.groups()
            records.append(
                (
                    int(offset),
                    None if key_size == "-1" else key,
                    None if value_size == "-1" else value,
                    header_keys,
                )
            )
    assert records == expected

    # The sparse offset index has entries (log.index.interval.bytes=4096), each
    # naming the last offset of the batch at its position (the tool checked).
    index_entries = re.findall(r"^offset: (\d+) position: (\d+)$", index_part, flags=re.M)
    assert len(index_entries) >= 4
    time_entries = re.findall(r"^timestamp: (\d+) offset: (\d+)$", time_part, flags=re.M)
    assert len(time_entries) >= 4
    # The producer snapshot holds the idempotent producer's last batch.
    producer_lines = re.findall(
        r"^producerId: (\d+) producerEpoch: (\d+) .* lastSequence: (\d+) lastOffset: (\d+)",
        snapshot_part,
        flags=re.M,
    )
    assert producer_lines[-1][2:] == ("200", "200")


# --- the log start offset and segment rolls, through a real broker -----------------


def test_log_start_offset_moved_by_delete_records_survives_a_restart(gregor):
    create_topic(gregor.bootstrap, "trimmed")
    acked = _produce_acknowledged(gregor.bootstrap, "trimmed", 1, 40, acks=1)
    admin = AdminClient({"bootstrap.servers": gregor.bootstrap})
    (result,) = admin.delete_records(
        [TopicPartition("trimmed", 0, 25)], request_timeout=TIMEOUT
    ).values()
    assert result.result(TIMEOUT).low_watermark == 25
    assert gregor.stop() == 0, gregor.log()
    gregor.start()
    consumer = Consumer(
        {
            "bootstrap.servers": gregor.bootstrap,
            "group.id": "gregor-tests",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        assert consumer.get_watermark_offsets(TopicPartition("trimmed", 0), timeout=TIMEOUT) == (
            25,
            40,
        )
        consumer.assign([TopicPartition("trimmed", 0, OFFSET_BEGINNING)])
        msg = consumer.poll(TIMEOUT)
        assert msg is not None and msg.error() is None
        # The first record left is the one acknowledged at offset 25.
        assert (msg.offset(), msg.key(), msg.value()) == (25, *acked[(0, 25)][:2])
    finally:
        consumer.close()


def test_segment_ms_rolls_a_new_segment_on_the_next_append(gregor):
    create_topic(gregor.bootstrap, "rolling", config={"segment.ms": "300"})
    directory = Path(gregor.data_dir) / "rolling-0"
    producer = Producer({"bootstrap.servers": gregor.bootstrap, "linger.ms": 0})
    for i in range(3):
        producer.produce("rolling", value=f"r{i}".encode(), partition=0)
        assert producer.flush(TIMEOUT) == 0
        time.sleep(0.6)
    segments = sorted(p.name for p in directory.glob("*.log"))
    assert segments == [f"{offset:020d}.log" for offset in range(3)]
    assert [r[2] for r in read_partition(gregor.bootstrap, "rolling", 0)] == [b"r0", b"r1", b"r2"]


# --- leader epochs across restarts ------------------------------------------------


def _leader_epoch(bootstrap, topic) -> int:
    response = kafka_request(bootstrap, ApiKey.METADATA, 12, {"topics": [{"name": topic}]})
    (partition,) = response.topics[0].partitions
    assert partition.error_code == 0 and partition.leader_id == 1
    return partition.leader_epoch


def _epoch_ends(bootstrap, topic, epochs) -> list[tuple[int, int]]:
    """OffsetForLeaderEpoch v4 as a consumer asks it: (epoch, end offset) of each."""
    got = []
    for epoch in epochs:
        body = {
            "replica_id": -1,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {"partition": 0, "current_leader_epoch": -1, "leader_epoch": epoch}
                    ],
                }
            ],
        }
        response = kafka_request(bootstrap, ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, body)
        (p,) = response.topics[0].partitions
        assert p.error_code == 0
        got.append((p.leader_epoch, p.end_offset))
    return got


def test_each_restart_leads_under_two_new_leader_epochs_as_kafka_does(gregor):
    # The expected values are what Apache Kafka 4.3.1, as a single KRaft node,
    # answered to the same steps: epoch 0, then 2 after a SIGTERM restart, 4
    # after another, 6 after kill -9 and restart; each incarnation's epoch
    # starts at the log end it found.
    topic = "epochs"
    create_topic(gregor.bootstrap, topic)
    _produce_acknowledged(gregor.bootstrap, topic, 1, 3, acks="all")
    assert _leader_epoch(gregor.bootstrap, topic) == 0

    for expected_epoch in (2, 4):
        assert gregor.stop() == 0
        gregor.start()
        assert _leader_epoch(gregor.bootstrap, topic) == expected_epoch
        _produce_acknowledged(gregor.bootstrap, topic, 1, 2, acks="all")
    assert gregor.kill() == -9
    gregor.start()
    assert _leader_epoch(gregor.bootstrap, topic) == 6
    _produce_acknowledged(gregor.bootstrap, topic, 1, 1, acks="all")

    assert _epoch_ends(gregor.bootstrap, topic, range(7)) == [
        (0, 3), (0, 3), (2, 5), (2, 5), (4, 7), (4, 7), (6, 8),
    ]  # fmt: skip
    checkpoint = (Path(gregor.data_dir) / f"{topic}-0" / "leader-epoch-checkpoint").read_text()
    assert checkpoint.split("\n") == ["0", "4", "0 0", "2 3", "4 5", "6 7", ""]


def test_a_consumer_reads_on_across_a_restart_and_its_new_leader_epoch(gregor):
    create_topic(gregor.bootstrap, "epochs-live")
    producer = Producer({"bootstrap.servers": gregor.bootstrap, "linger.ms": 0})
    consumer = Consumer(
        {
            "bootstrap.servers": gregor.bootstrap,
            "group.id": "epochs-live",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition("epochs-live", 0, OFFSET_BEGINNING)])
        got = []

        def produce_and_read(values):
            for v in values:
                producer.produce("epochs-live", value=v, partition=0)
            assert producer.flush(TIMEOUT) == 0
            wanted = len(got) + len(values)
            deadline = time.monotonic() + 3 * TIMEOUT
            while len(got) < wanted:
                assert time.monotonic() < deadline, got
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    got.append((msg.offset(), msg.value()))

        produce_and_read([b"a", b"b"])
        assert gregor.stop() == 0
        gregor.start()
        produce_and_read([b"c"])
        # The consumer learned epoch 2, checked its position against it, and
        # read on: nothing twice, nothing skipped.
        assert got == [(0, b"a"), (1, b"b"), (2, b"c")]
    finally:
        consumer.close()
