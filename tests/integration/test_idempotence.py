"""Idempotent producers against a real Gregor process.

A lost Produce response: `LossyProxy` swallows the answer to the first
Produce request and cuts the connection; the client (confluent-kafka or
kafka-python, both idempotent here) retries the same batch with the same
producer id, epoch and sequence, and Gregor must answer with the offsets of the
first append instead of writing the records twice.

The proxy rewrites nothing. Clients learn broker addresses from Metadata, so
the broker advertises the proxy's address (`advertised.listeners`) and every
connection a client opens after bootstrapping goes through the proxy too. That
is simpler and more robust than decoding and re-encoding every Metadata
response version to patch the port, and it is how a Kafka broker behind a
proxy is configured. The proxy binds first (port 0), the broker is started
knowing the proxy's port, then the proxy learns the broker's port.

Sequence rules (duplicates, gaps, epochs) are driven with raw requests built
by `wire`, one socket, so every field is under the test's control.
"""

from __future__ import annotations

import time

import kafka
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from tests.integration.lossy_proxy import LossyProxy
from tests.support.raw import (
    RawClient,
    error_and_offset,
    init_producer_id,
    produce,
)
from tests.support.raw import idempotent_batch as batch
from tests.support.topics import ensure_topic
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.protocol import decode_response

# Slow (real producers retrying, a lossy proxy): make unit leaves the module out.
pytestmark = pytest.mark.slow

TIMEOUT = 20.0


# --- helpers ----------------------------------------------------------------------


def consume_all(bootstrap, topic, expected_count, partition=0) -> list[tuple]:
    """(offset, key, value) of every record from the start, once `expected_count`
    have arrived and a further poll shows nothing more."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "gregor-tests", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
    got = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while len(got) < expected_count:
            assert time.monotonic() < deadline, f"only {len(got)} of {expected_count} records"
            msg = consumer.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                got.append((msg.offset(), msg.key(), msg.value()))
        low, high = consumer.get_watermark_offsets(
            TopicPartition(topic, partition), timeout=TIMEOUT
        )
        assert (low, high) == (0, expected_count), "more records than expected in the log"
    finally:
        consumer.close()
    return got


@pytest.fixture
def raw(shared_gregor):
    client = RawClient(shared_gregor.bootstrap)
    yield client
    client.close()


# --- a lost response ----------------------------------------------------------------


@pytest.fixture
def proxied_broker(gregor_factory):
    """(broker, proxy): the broker advertises the proxy, which loses the first
    Produce response."""
    with LossyProxy(drop_produce_responses=1) as proxy:
        broker = gregor_factory({"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"})
        proxy.upstream = ("127.0.0.1", broker.port)
        yield broker, proxy


def _produce_with_confluent(bootstrap, topic, values) -> list[int]:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    reports = []
    for value in values:
        producer.produce(
            topic,
            key=b"k",
            value=value,
            partition=0,
            on_delivery=lambda err, msg: reports.append((err, msg.offset())),
        )
    assert producer.flush(TIMEOUT) == 0
    assert [err for err, _ in reports] == [None] * len(values)
    return [offset for _, offset in reports]


def _produce_with_kafka_python(bootstrap, topic, values) -> list[int]:
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
    futures = [producer.send(topic, key=b"k", value=v, partition=0) for v in values]
    producer.flush(TIMEOUT)
    offsets = [f.get(TIMEOUT).offset for f in futures]
    producer.close()
    return offsets


@pytest.mark.parametrize(
    "produce", [_produce_with_confluent, _produce_with_kafka_python], ids=["confluent", "kafka"]
)
def test_retry_after_a_lost_produce_response_is_written_once_at_its_original_offsets(
    proxied_broker, produce
):
    broker, proxy = proxied_broker
    topic = "lost-response"
    first = [b"a", b"b", b"c"]

    assert produce(proxy.bootstrap, topic, first) == [0, 1, 2]

    # The broker did append and answer the first Produce (offset 0), the
    # client never saw that answer, and the retry came on a new connection.
    [dropped] = proxy.dropped
    _, answer = decode_response(ApiKey.PRODUCE, dropped.api_version, dropped.response)
    [part] = answer.responses[0].partition_responses
    assert (part.error_code, part.base_offset) == (ErrorCode.NONE, 0)
    assert proxy.requests[ApiKey.PRODUCE] >= 2
    assert proxy.connections >= 2
    # Later records follow at once, with no gap or duplicate.
    assert produce(proxy.bootstrap, topic, [b"d"]) == [3]
    assert consume_all(broker.bootstrap, topic, 4) == [
        (0, b"k", b"a"),
        (1, b"k", b"b"),
        (2, b"k", b"c"),
        (3, b"k", b"d"),
    ]


def test_without_idempotence_the_retry_of_a_lost_response_is_a_second_copy(proxied_broker):
    """The contrast, as in Kafka: a plain producer's retry is appended again."""
    broker, proxy = proxied_broker
    producer = Producer({"bootstrap.servers": proxy.bootstrap, "acks": 1})
    producer.produce("plain", value=b"x", partition=0)
    assert producer.flush(TIMEOUT) == 0
    assert len(proxy.dropped) == 1
    low, high = consume_watermarks(broker.bootstrap, "plain")
    assert (low, high) == (0, 2)


def consume_watermarks(bootstrap, topic):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "gregor-tests"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT)
    finally:
        consumer.close()


# --- sequence rules, raw ---------------------------------------------------------------


def test_duplicate_batches_get_their_original_offsets_and_are_not_written_again(shared_gregor, raw):
    topic = "raw-duplicates"
    ensure_topic(raw, topic)
    pid, epoch = init_producer_id(raw)
    batches = [
        batch(pid, epoch, 0, b"a", b"b", b"c"),
        batch(pid, epoch, 3, b"d"),
        batch(pid, epoch, 4, b"e", b"f"),
    ]
    assert [error_and_offset(produce(raw, topic, b, acks=-1)) for b in batches] == [
        (0, 0),
        (0, 3),
        (0, 4),
    ]

    # Each retried batch, the latest or older ones, is acknowledged at its
    # first offsets with no error (Kafka treats DUPLICATE_SEQUENCE as success).
    assert error_and_offset(produce(raw, topic, batches[2], acks=-1)) == (ErrorCode.NONE, 4)
    assert error_and_offset(produce(raw, topic, batches[0], acks=-1)) == (ErrorCode.NONE, 0)
    assert error_and_offset(produce(raw, topic, batches[1], acks=1)) == (ErrorCode.NONE, 3)
    # The next sequence goes on at the log end.
    assert error_and_offset(produce(raw, topic, batch(pid, epoch, 6, b"g"), acks=-1)) == (
        ErrorCode.NONE,
        6,
    )

    assert consume_all(shared_gregor.bootstrap, topic, 7) == [
        (i, b"k", v) for i, v in enumerate([b"a", b"b", b"c", b"d", b"e", b"f", b"g"])
    ]


def test_any_of_the_last_five_batches_is_recognised_as_a_duplicate(shared_gregor, raw):
    topic = "raw-last-five"
    ensure_topic(raw, topic)
    pid, epoch = init_producer_id(raw)
    batches = [batch(pid, epoch, i, f"v{i}".encode()) for i in range(6)]
    assert [error_and_offset(produce(raw, topic, b, acks=-1))[1] for b in batches] == [
        0,
        1,
        2,
        3,
        4,
        5,
    ]

    for i in range(1, 6):
        assert error_and_offset(produce(raw, topic, batches[i], acks=-1)) == (ErrorCode.NONE, i)
    # The sixth-newest is no longer remembered: Kafka then answers
    # OUT_OF_ORDER_SEQUENCE_NUMBER rather than writing it again.
    assert error_and_offset(produce(raw, topic, batches[0], acks=-1)) == (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        -1,
    )
    assert consume_watermarks(shared_gregor.bootstrap, topic) == (0, 6)


def test_a_sequence_gap_gets_out_of_order_sequence_number_and_writes_nothing(shared_gregor, raw):
    topic = "raw-gap"
    ensure_topic(raw, topic)
    pid, epoch = init_producer_id(raw)
    assert error_and_offset(produce(raw, topic, batch(pid, epoch, 0, b"a", b"b"), acks=-1)) == (
        ErrorCode.NONE,
        0,
    )

    assert error_and_offset(produce(raw, topic, batch(pid, epoch, 3, b"skipped one"), acks=-1)) == (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        -1,
    )
    assert error_and_offset(produce(raw, topic, batch(pid, epoch, 1, b"overlaps"), acks=-1)) == (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        -1,
    )
    # The expected sequence still goes in right after.
    assert error_and_offset(produce(raw, topic, batch(pid, epoch, 2, b"c"), acks=-1)) == (
        ErrorCode.NONE,
        2,
    )
    assert consume_all(shared_gregor.bootstrap, topic, 3) == [
        (0, b"k", b"a"),
        (1, b"k", b"b"),
        (2, b"k", b"c"),
    ]


def test_a_bumped_epoch_restarts_sequences_and_fences_the_old_epoch(shared_gregor, raw):
    topic = "raw-epochs"
    ensure_topic(raw, topic)
    pid, epoch = init_producer_id(raw)
    assert error_and_offset(produce(raw, topic, batch(pid, epoch, 0, b"a"), acks=-1)) == (
        ErrorCode.NONE,
        0,
    )
    assert error_and_offset(produce(raw, topic, batch(pid, epoch, 1, b"b"), acks=-1)) == (
        ErrorCode.NONE,
        1,
    )

    # KIP-360: InitProducerId with the current id and epoch bumps the epoch.
    assert init_producer_id(raw, pid, epoch) == (pid, epoch + 1)
    # A new epoch must start at sequence 0...
    assert error_and_offset(produce(raw, topic, batch(pid, epoch + 1, 2, b"x"), acks=-1)) == (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        -1,
    )
    assert error_and_offset(produce(raw, topic, batch(pid, epoch + 1, 0, b"c"), acks=-1)) == (
        ErrorCode.NONE,
        2,
    )
    # ...and from then on the old epoch is fenced.
    assert error_and_offset(produce(raw, topic, batch(pid, epoch, 2, b"late"), acks=-1)) == (
        ErrorCode.INVALID_PRODUCER_EPOCH,
        -1,
    )
    assert consume_all(shared_gregor.bootstrap, topic, 3) == [
        (0, b"k", b"a"),
        (1, b"k", b"b"),
        (2, b"k", b"c"),
    ]


def test_two_producers_keep_separate_sequences_on_one_partition(shared_gregor, raw):
    topic = "raw-two-producers"
    ensure_topic(raw, topic)
    p1, e1 = init_producer_id(raw)
    p2, e2 = init_producer_id(raw)
    assert p1 != p2
    first = batch(p1, e1, 0, b"one")
    assert error_and_offset(produce(raw, topic, first, acks=-1)) == (ErrorCode.NONE, 0)
    assert error_and_offset(produce(raw, topic, batch(p2, e2, 0, b"two"), acks=-1)) == (
        ErrorCode.NONE,
        1,
    )
    assert error_and_offset(produce(raw, topic, first, acks=-1)) == (ErrorCode.NONE, 0)
    assert error_and_offset(produce(raw, topic, batch(p1, e1, 1, b"three"), acks=-1)) == (
        ErrorCode.NONE,
        2,
    )
    assert consume_all(shared_gregor.bootstrap, topic, 3) == [
        (0, b"k", b"one"),
        (1, b"k", b"two"),
        (2, b"k", b"three"),
    ]
