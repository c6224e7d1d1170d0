"""Producing and consuming through a real Gregor process with real clients:
confluent-kafka (librdkafka), kafka-python, kcat and Kafka 4.3.1's own CLI tools.

Every test uses its own topic on one broker per module: auto-created on first
Metadata (one partition), or created with CreateTopics by confluent-kafka's
AdminClient when it needs partitions or topic configs, as a Kafka user would.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import kafka
import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    TopicPartition,
)
from kafka.errors import MessageSizeTooLargeError
from kafka.partitioner.default import murmur2

from tests.support.clients import (
    TIMEOUT,
    needs_java,
    needs_kcat,
    produce_confluent,
    produce_ok,
)
from tests.support.topics import create_topic
from tools import kafka_cli
from wire.records import COMPRESSION_MASK, iter_batches

# Slow (real clients, Kafka's Java tools, retention and offset resets): make unit leaves the module out.
pytestmark = pytest.mark.slow

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
MIB = 1 << 20


def confluent_consumer(bootstrap, **conf) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "gregor-tests",  # librdkafka wants one; assign() never uses it
            "enable.auto.commit": False,
            **conf,
        }
    )


def consume_confluent(bootstrap, topic, count, partition=0, offset=OFFSET_BEGINNING, **conf):
    """`count` messages from `topic` (assign, no group), as Message objects."""
    consumer = confluent_consumer(bootstrap, **conf)
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        return poll_messages(consumer, count)
    finally:
        consumer.close()


def poll_messages(consumer: Consumer, count: int) -> list:
    got = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < count:
        assert time.monotonic() < deadline, f"timed out with {len(got)} of {count} messages"
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        got.append(msg)
    return got


def as_tuples(messages) -> list[tuple]:
    """(offset, key, value, headers) of confluent-kafka messages."""
    return [(m.offset(), m.key(), m.value(), m.headers() or []) for m in messages]


def consume_kafka_python(bootstrap, topic, count, partition=0, offset=0) -> list[tuple]:
    """(offset, key, value, headers) of the first `count` records kafka-python
    reads from `offset`."""
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tp = kafka.TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek(tp, offset)
        got = []
        deadline = time.monotonic() + TIMEOUT
        while len(got) < count:
            assert time.monotonic() < deadline, f"timed out with {len(got)} of {count} records"
            for records in consumer.poll(timeout_ms=500).values():
                got += [(r.offset, r.key, r.value, list(r.headers)) for r in records]
        return got[:count]
    finally:
        consumer.close()


def segment_batches(broker, topic, partition=0):
    """Batch headers of the partition's first segment file, as Gregor wrote them."""
    path = Path(broker.data_dir) / f"{topic}-{partition}" / ("0" * 20 + ".log")
    return [h for _, h in iter_batches(path.read_bytes())]


def watermarks(bootstrap, topic, partition=0) -> tuple[int, int]:
    """(log start offset, high watermark) by ListOffsets."""
    consumer = confluent_consumer(bootstrap)
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=TIMEOUT)
    finally:
        consumer.close()


# --- compression and client interoperability ----------------------------------


def _records(n, tag):
    return [
        (
            f"key-{i}".encode(),
            f"{tag} value {i} ".encode() * 8,
            [("seq", str(i).encode()), ("tag", tag.encode()), ("tag", b"again")],
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_batches_in_every_codec_are_consumed_in_order_by_kafka_python(
    shared_gregor, codec
):
    topic = f"codec-ck-to-kp-{codec}"
    records = _records(50, codec)
    offsets = produce_ok(shared_gregor.bootstrap, topic, records, **{"compression.type": codec})
    assert offsets == list(range(50))

    got = consume_kafka_python(shared_gregor.bootstrap, topic, 50)

    assert got == [(i, k, v, h) for i, (k, v, h) in enumerate(records)]
    # Gregor stored the client's batches as they came, still compressed.
    codecs = {h.attributes & COMPRESSION_MASK for h in segment_batches(shared_gregor, topic)}
    assert codecs == {CODECS[codec]}


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_batches_in_every_codec_are_consumed_in_order_by_confluent(
    shared_gregor, codec
):
    topic = f"codec-kp-to-ck-{codec}"
    records = _records(50, codec)
    producer = kafka.KafkaProducer(
        bootstrap_servers=shared_gregor.bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=20,
    )
    futures = [producer.send(topic, key=k, value=v, headers=h, partition=0) for k, v, h in records]
    producer.flush(TIMEOUT)
    assert [f.get(TIMEOUT).offset for f in futures] == list(range(50))
    producer.close()

    got = as_tuples(consume_confluent(shared_gregor.bootstrap, topic, 50))

    assert got == [(i, k, v, h) for i, (k, v, h) in enumerate(records)]
    codecs = {h.attributes & COMPRESSION_MASK for h in segment_batches(shared_gregor, topic)}
    assert codecs == {CODECS[codec]}


def test_records_with_one_key_land_on_one_partition_and_keep_their_order(shared_gregor):
    broker = shared_gregor
    topic = "keyed"
    create_topic(broker.bootstrap, topic, partitions=6)
    keys = [f"user-{n}".encode() for n in range(8)]
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
    sent = []  # (key, value, partition, offset) in send order
    futures = []
    for i in range(15):
        for key in keys:
            value = f"{key.decode()} #{i}".encode()
            futures.append((key, value, producer.send(topic, key=key, value=value)))
    producer.flush(TIMEOUT)
    for key, value, future in futures:
        meta = future.get(TIMEOUT)
        sent.append((key, value, meta.partition, meta.offset))
    producer.close()

    # Java's default partitioner (murmur2 of the key), which kafka-python shares.
    for key, _, partition, _ in sent:
        assert partition == (murmur2(key) & 0x7FFFFFFF) % 6
    assert len({p for _, _, p, _ in sent}) > 1, "all keys hashed to one partition"

    consumer = confluent_consumer(broker.bootstrap)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(6)])
    got = poll_messages(consumer, len(sent))
    consumer.close()

    for key in keys:
        produced = [(p, o, v) for k, v, p, o in sent if k == key]
        consumed = [(m.partition(), m.offset(), m.value()) for m in got if m.key() == key]
        assert consumed == produced
        assert [v for _, _, v in consumed] == [f"{key.decode()} #{i}".encode() for i in range(15)]
    # Each partition's offsets are dense from 0.
    for p in range(6):
        offsets = sorted(m.offset() for m in got if m.partition() == p)
        assert offsets == list(range(len(offsets)))


def test_headers_keep_order_duplicates_empty_and_null_values(shared_gregor):
    topic = "headers"
    headers = [
        ("trace", b"1"),
        ("trace", b"2"),
        ("empty", b""),
        ("null", None),
        ("", b"no name"),
        ("bin", bytes(range(256))),
        ("trace", b"3"),
    ]
    records = [(b"k", b"v", headers), (b"k2", b"v2", [])]
    assert produce_ok(shared_gregor.bootstrap, topic, records) == [0, 1]

    by_confluent = as_tuples(consume_confluent(shared_gregor.bootstrap, topic, 2))
    by_kafka_python = consume_kafka_python(shared_gregor.bootstrap, topic, 2)

    expected = [(0, b"k", b"v", headers), (1, b"k2", b"v2", [])]
    assert by_confluent == expected
    assert by_kafka_python == expected


def test_null_keys_and_values_stay_distinct_from_empty_ones(shared_gregor):
    topic = "nulls"
    records = [
        (None, b"value without key", None),
        (b"tombstone", None, None),
        (None, None, None),
        (b"", b"", None),
    ]
    assert produce_ok(shared_gregor.bootstrap, topic, records) == [0, 1, 2, 3]

    expected = [(i, k, v, []) for i, (k, v, _) in enumerate(records)]
    assert as_tuples(consume_confluent(shared_gregor.bootstrap, topic, 4)) == expected
    assert consume_kafka_python(shared_gregor.bootstrap, topic, 4) == expected


# --- message size limits -------------------------------------------------------


def test_one_mib_value_is_refused_with_message_too_large_at_kafkas_default_limit(shared_gregor):
    """Kafka's message.max.bytes default (1048588) leaves 12 bytes for the batch
    and record overhead: a 1 MiB value does not fit, so both clients get the
    broker's MESSAGE_TOO_LARGE (their own limits are raised above it)."""
    topic = "too-large"
    value = os.urandom(MIB)

    reports = produce_confluent(
        shared_gregor.bootstrap, topic, [(None, value, None)], **{"message.max.bytes": 2 * MIB}
    )
    [(err, _)] = reports
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE

    producer = kafka.KafkaProducer(
        bootstrap_servers=shared_gregor.bootstrap, max_request_size=2 * MIB, retries=0
    )
    future = producer.send(topic, value=value, partition=0)
    with pytest.raises(MessageSizeTooLargeError):  # (Kafka sends no message with it)
        future.get(TIMEOUT)
    producer.close()

    assert watermarks(shared_gregor.bootstrap, topic) == (0, 0)


def test_one_mib_value_round_trips_between_clients_when_the_topic_allows_it(shared_gregor):
    """As a Kafka user would: raise the topic's max.message.bytes and the clients' limits."""
    broker = shared_gregor
    topic = "one-mib"
    create_topic(broker.bootstrap, topic, config={"max.message.bytes": str(2 * MIB)})
    first, second = os.urandom(MIB), os.urandom(MIB)

    offsets = produce_ok(
        broker.bootstrap, topic, [(b"a", first, None)], **{"message.max.bytes": 2 * MIB}
    )
    assert offsets == [0]
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, max_request_size=2 * MIB)
    assert producer.send(topic, key=b"b", value=second, partition=0).get(TIMEOUT).offset == 1
    producer.close()

    assert consume_kafka_python(broker.bootstrap, topic, 2) == [
        (0, b"a", first, []),
        (1, b"b", second, []),
    ]
    assert as_tuples(consume_confluent(broker.bootstrap, topic, 2)) == [
        (0, b"a", first, []),
        (1, b"b", second, []),
    ]


def test_batch_over_the_topic_limit_gets_message_too_large_and_smaller_ones_still_go_in(
    shared_gregor,
):
    broker = shared_gregor
    topic = "limit"
    create_topic(broker.bootstrap, topic, config={"max.message.bytes": "10000"})
    reports = produce_confluent(
        broker.bootstrap,
        topic,
        [(b"small", b"x" * 100, None)],
        **{"linger.ms": 0},
    )
    assert [(e, m.offset()) for e, m in reports] == [(None, 0)]
    reports = produce_confluent(
        broker.bootstrap,
        topic,
        [(b"big", os.urandom(20_000), None)],
        **{"linger.ms": 0, "message.max.bytes": 100_000},
    )
    [(err, _)] = reports
    assert err.code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert produce_ok(broker.bootstrap, topic, [(b"small", b"y", None)]) == [1]
    assert watermarks(broker.bootstrap, topic) == (0, 2)


# --- where a consumer starts ----------------------------------------------------


@pytest.fixture(scope="module")
def timed_topic(shared_gregor):
    """Ten records at known timestamps: base + 1000 * i, offsets 0..9."""
    topic = "timed"
    base = int(time.time() * 1000) - 60_000
    records = [(f"k{i}".encode(), f"v{i}".encode(), None, base + 1000 * i) for i in range(10)]
    assert produce_ok(shared_gregor.bootstrap, topic, records) == list(range(10))
    return topic, base


def test_consumer_from_earliest_reads_from_offset_zero(shared_gregor, timed_topic):
    topic, base = timed_topic
    got = consume_confluent(shared_gregor.bootstrap, topic, 10, offset=OFFSET_BEGINNING)
    assert [(m.offset(), m.value(), m.timestamp()) for m in got] == [
        (i, f"v{i}".encode(), (TIMESTAMP_CREATE_TIME, base + 1000 * i)) for i in range(10)
    ]


def test_consumer_from_a_specific_offset_reads_from_there(shared_gregor, timed_topic):
    topic, _ = timed_topic
    got = consume_confluent(shared_gregor.bootstrap, topic, 3, offset=7)
    assert [(m.offset(), m.key()) for m in got] == [(7, b"k7"), (8, b"k8"), (9, b"k9")]
    assert consume_kafka_python(shared_gregor.bootstrap, topic, 2, offset=8) == [
        (8, b"k8", b"v8", []),
        (9, b"k9", b"v9", []),
    ]


def test_consumer_from_latest_sees_only_records_produced_after(shared_gregor):
    topic = "latest"
    produce_ok(shared_gregor.bootstrap, topic, [(None, b"old", None)] * 3)
    consumer = kafka.KafkaConsumer(bootstrap_servers=shared_gregor.bootstrap)
    tp = kafka.TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_end(tp)
    assert consumer.position(tp) == 3
    produce_ok(shared_gregor.bootstrap, topic, [(None, b"new1", None), (None, b"new2", None)])
    got = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < 2 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got += [(r.offset, r.value) for r in records]
    consumer.close()
    assert got == [(3, b"new1"), (4, b"new2")]


def test_offsets_for_times_finds_the_first_record_at_or_after_a_timestamp(
    shared_gregor, timed_topic
):
    topic, base = timed_topic
    consumer = confluent_consumer(shared_gregor.bootstrap)
    found = consumer.offsets_for_times(
        [
            TopicPartition(topic, 0, base + 3500),  # between records 3 and 4
        ],
        timeout=TIMEOUT,
    )
    assert [(tp.offset, tp.error) for tp in found] == [(4, None)]
    exact = consumer.offsets_for_times([TopicPartition(topic, 0, base + 3000)], timeout=TIMEOUT)
    assert exact[0].offset == 3
    before = consumer.offsets_for_times([TopicPartition(topic, 0, base - 99_000)], timeout=TIMEOUT)
    assert before[0].offset == 0
    after = consumer.offsets_for_times([TopicPartition(topic, 0, base + 99_000)], timeout=TIMEOUT)
    assert after[0].offset == OFFSET_END  # -1: no record that late
    # Seeking there reads on from the found record.
    consumer.assign(found)
    assert [m.offset() for m in poll_messages(consumer, 2)] == [4, 5]
    consumer.close()

    kp = kafka.KafkaConsumer(bootstrap_servers=shared_gregor.bootstrap)
    tp = kafka.TopicPartition(topic, 0)
    result = kp.offsets_for_times({tp: base + 6500}, timeout_ms=int(TIMEOUT * 1000))
    assert (result[tp].offset, result[tp].timestamp) == (7, base + 7000)
    assert kp.offsets_for_times({tp: base + 99_000}, timeout_ms=int(TIMEOUT * 1000)) == {tp: None}
    kp.close()


def test_offset_out_of_range_is_an_error_or_a_reset_by_auto_offset_reset(
    shared_gregor, timed_topic
):
    topic, _ = timed_topic

    consumer = confluent_consumer(shared_gregor.bootstrap, **{"auto.offset.reset": "error"})
    consumer.assign([TopicPartition(topic, 0, 100)])
    deadline = time.monotonic() + TIMEOUT
    msg = None
    while msg is None and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
    consumer.close()
    assert msg is not None and msg.error() is not None
    assert msg.error().code() == KafkaError._AUTO_OFFSET_RESET
    assert "Offset out of range" in msg.error().str()

    [first] = consume_confluent(
        shared_gregor.bootstrap, topic, 1, offset=100, **{"auto.offset.reset": "earliest"}
    )
    assert (first.offset(), first.key()) == (0, b"k0")

    kp = kafka.KafkaConsumer(
        bootstrap_servers=shared_gregor.bootstrap, auto_offset_reset="earliest"
    )
    tp = kafka.TopicPartition(topic, 0)
    kp.assign([tp])
    kp.seek(tp, 100)
    got = []
    deadline = time.monotonic() + TIMEOUT
    while not got and time.monotonic() < deadline:
        for records in kp.poll(timeout_ms=500).values():
            got += [r.offset for r in records]
    kp.close()
    assert got[:1] == [0]


def test_offset_out_of_range_with_latest_reset_waits_for_new_records(shared_gregor):
    topic = "reset-latest"
    produce_ok(shared_gregor.bootstrap, topic, [(None, b"a", None), (None, b"b", None)])
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=shared_gregor.bootstrap, auto_offset_reset="latest"
    )
    tp = kafka.TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 50)
    deadline = time.monotonic() + TIMEOUT
    while consumer.position(tp) != 2:  # the fetch at 50 is out of range: reset to the end
        assert time.monotonic() < deadline, f"position is still {consumer.position(tp)}"
        assert consumer.poll(timeout_ms=200) == {}
    produce_ok(shared_gregor.bootstrap, topic, [(None, b"c", None)])
    got = []
    while not got:
        assert time.monotonic() < deadline + TIMEOUT, "the new record never arrived"
        for records in consumer.poll(timeout_ms=500).values():
            got += [(r.offset, r.value) for r in records]
    consumer.close()
    assert got == [(2, b"c")]


# --- kcat ------------------------------------------------------------------------


@needs_kcat
def test_kcat_produces_keys_and_null_values_and_consumes_them_back(shared_gregor):
    topic = "kcat"
    bs = shared_gregor.bootstrap
    # -K: splits key and value at ':'; -Z turns empty keys and values into NULL.
    produced = kafka_cli.run_kcat(
        "-b", bs, "-P", "-t", topic, "-p", "0", "-K", ":", "-Z",
        input="k1:v1\nk2:\n:v3\nk4:v:with:colons\n",
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr

    expected = [
        (0, b"k1", b"v1", []),
        (1, b"k2", None, []),
        (2, None, b"v3", []),
        (3, b"k4", b"v:with:colons", []),
    ]
    assert as_tuples(consume_confluent(bs, topic, 4)) == expected

    consumed = kafka_cli.run_kcat(
        "-b", bs, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-Z",
        "-f", "%o|%k|%s|%K|%S\n",
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == [
        "0|k1|v1|2|2",
        "1|k2|NULL|2|-1",
        "2|NULL|v3|-1|2",
        "3|k4|v:with:colons|2|13",
    ]


@needs_kcat
def test_kcat_consumes_records_from_confluent_with_headers(shared_gregor):
    topic = "kcat-headers"
    bs = shared_gregor.bootstrap
    produce_ok(bs, topic, [(b"key", b"value", [("h1", b"a"), ("h1", b"b")]), (None, None, None)])
    consumed = kafka_cli.run_kcat(
        "-b", bs, "-C", "-t", topic, "-o", "beginning", "-e", "-J",
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    rows = [json.loads(line) for line in consumed.stdout.splitlines()]
    assert [(r["offset"], r["key"], r["payload"], r.get("headers")) for r in rows] == [
        (0, "key", "value", ["h1", "a", "h1", "b"]),
        (1, None, None, None),
    ]


# --- Kafka's Java CLI tools ---------------------------------------------------------


@needs_java
def test_java_console_producer_and_consumer_round_trip_keys_and_values(shared_gregor):
    topic = "java-console"
    bs = shared_gregor.bootstrap
    produced = kafka_cli.run_tool(
        "kafka-console-producer", "--bootstrap-server", bs, "--topic", topic,
        "--reader-property", "parse.key=true", "--reader-property", "key.separator=:",
        input="alpha:1\nbeta:2\ngamma:3\n",
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    assert as_tuples(consume_confluent(bs, topic, 3)) == [
        (0, b"alpha", b"1", []),
        (1, b"beta", b"2", []),
        (2, b"gamma", b"3", []),
    ]

    consumed = kafka_cli.run_tool(
        "kafka-console-consumer", "--bootstrap-server", bs, "--topic", topic,
        "--partition", "0", "--offset", "earliest", "--max-messages", "3",
        "--timeout-ms", "20000",
        "--formatter-property", "print.key=true", "--formatter-property", "print.offset=true",
        "--formatter-property", "key.separator=|",
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == [
        "Offset:0|alpha|1",
        "Offset:1|beta|2",
        "Offset:2|gamma|3",
    ]
    assert "Processed a total of 3 messages" in consumed.stderr


@needs_java
def test_java_console_consumer_from_beginning_in_a_group(shared_gregor):
    """--from-beginning subscribes with a consumer group (FindCoordinator, JoinGroup...)."""
    topic = "java-console-group"
    bs = shared_gregor.bootstrap
    produce_ok(bs, topic, [(b"a", b"1", None), (b"b", b"2", None)])
    consumed = kafka_cli.run_tool(
        "kafka-console-consumer", "--bootstrap-server", bs, "--topic", topic,
        "--from-beginning", "--max-messages", "2", "--timeout-ms", "20000",
        "--formatter-property", "print.key=true", "--formatter-property", "key.separator=:",
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == ["a:1", "b:2"]


def _get_offsets(bs, topic, time_spec) -> str:
    result = kafka_cli.run_tool(
        "kafka-get-offsets", "--bootstrap-server", bs, "--topic", topic, "--time", time_spec
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@needs_java
def test_kafka_get_offsets_reports_earliest_latest_and_max_timestamp(shared_gregor):
    topic = "get-offsets"
    bs = shared_gregor.bootstrap
    now = int(time.time() * 1000)
    # The largest timestamp is in the middle, at offset 2.
    stamps = [now - 5000, now - 4000, now - 1000, now - 3000, now - 2000]
    produce_ok(bs, topic, [(None, b"x", None, ts) for ts in stamps])

    assert _get_offsets(bs, topic, "-2") == f"{topic}:0:0"
    assert _get_offsets(bs, topic, "-1") == f"{topic}:0:5"
    assert _get_offsets(bs, topic, "-3") == f"{topic}:0:2"


@needs_java
def test_kafka_delete_records_moves_the_log_start_and_consumers_start_there(
    shared_gregor, tmp_path
):
    topic = "delete-records"
    bs = shared_gregor.bootstrap
    produce_ok(bs, topic, [(f"k{i}".encode(), f"v{i}".encode(), None) for i in range(10)])
    offsets_file = tmp_path / "offsets.json"
    offsets_file.write_text(
        json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": 4}], "version": 1})
    )

    result = kafka_cli.run_tool(
        "kafka-delete-records", "--bootstrap-server", bs, "--offset-json-file", str(offsets_file)
    )

    assert result.returncode == 0, result.stderr
    assert f"partition: {topic}-0\tlow_watermark: 4" in result.stdout
    assert watermarks(bs, topic) == (4, 10)
    # A consumer from the beginning starts at the new log start offset...
    got = consume_confluent(bs, topic, 6, offset=OFFSET_BEGINNING)
    assert [(m.offset(), m.key()) for m in got] == [(i, f"k{i}".encode()) for i in range(4, 10)]
    # ...and one positioned below it is out of range and resets there.
    [first] = consume_confluent(bs, topic, 1, offset=1, **{"auto.offset.reset": "earliest"})
    assert first.offset() == 4
    assert consume_kafka_python(bs, topic, 1, offset=4) == [(4, b"k4", b"v4", [])]


# --- LogAppendTime -----------------------------------------------------------------


def test_log_append_time_topic_returns_the_brokers_timestamps(shared_gregor):
    broker = shared_gregor
    topic = "append-time"
    create_topic(broker.bootstrap, topic, config={"message.timestamp.type": "LogAppendTime"})
    old = int(time.time() * 1000) - 3_600_000
    before = int(time.time() * 1000)
    reports = produce_confluent(
        broker.bootstrap, topic, [(b"k", f"v{i}".encode(), None, old) for i in range(3)]
    )
    after = int(time.time() * 1000)
    assert [e for e, _ in reports] == [None] * 3
    acked = [msg.timestamp() for _, msg in reports]
    for ts_type, ts in acked:
        assert ts_type == TIMESTAMP_LOG_APPEND_TIME
        assert before <= ts <= after

    got = consume_confluent(broker.bootstrap, topic, 3)
    assert [m.timestamp() for m in got] == acked

    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
    consumer.assign([kafka.TopicPartition(topic, 0)])
    records = []
    deadline = time.monotonic() + TIMEOUT
    while len(records) < 3 and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            records += batch
    consumer.close()
    assert [(r.offset, r.timestamp_type, r.timestamp) for r in records] == [
        (i, 1, acked[i][1]) for i in range(3)
    ]
    # Lookups by time use the broker's timestamps too, not the producer's.
    lookup = confluent_consumer(broker.bootstrap)
    found = [
        lookup.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=TIMEOUT)[0].offset
        for ts in (old, acked[0][1], acked[2][1] + 1)
    ]
    lookup.close()
    assert found == [0, 0, OFFSET_END]
