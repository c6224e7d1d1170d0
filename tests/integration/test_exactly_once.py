"""Exactly once: a consume-transform-produce application with librdkafka's
transactions (send_offsets_to_transaction), the way Kafka Streams and every
EOS pipeline work, against a real Gregor.

The checker compares the output (read_committed) with the input: every input
record must appear exactly once, transformed; it prints the duplicates and
the losses, and both must be zero. The broker is killed and restarted in the
middle, and the application, restarted too, resumes from the offsets its
committed transactions stored.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from tests.integration.test_transactions import read_all
from tests.support.clients import TIMEOUT, produce_ok
from tests.support.gregor import assert_no_traceback
from tests.support.raw import RawClient
from tests.support.topics import create_topic, unique_name
from wire.api_keys import ApiKey

PARTITIONS = 3
RECORDS = 600


def transform(value: bytes) -> bytes:
    return value.upper()


def run_application(
    bootstrap: str,
    source: str,
    sink: str,
    group: str,
    txn_id: str,
    *,
    stop_after: int | None = None,
    abort_every: int = 0,
) -> int:
    """Consume `source` in `group`, write each record transformed to `sink` in
    transactions that also commit the consumed offsets; stop once the source
    is drained (or after `stop_after` transactions). Every `abort_every`-th
    transaction is aborted instead, and the consumer rewinds to the committed
    offsets, as an application does after an abort. Transactions committed."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    producer.init_transactions(TIMEOUT)
    consumer.subscribe([source])
    committed = 0
    transactions = 0
    at_end: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            batch = consumer.consume(50, timeout=0.5)
            records = []
            for msg in batch:
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        at_end.add(msg.partition())
                        continue
                    raise KafkaException(msg.error())
                at_end.discard(msg.partition())
                records.append(msg)
            if not records:
                if len(at_end) == PARTITIONS:
                    return committed
                continue
            transactions += 1
            producer.begin_transaction()
            for msg in records:
                producer.produce(sink, key=msg.key(), value=transform(msg.value()))
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(
                positions, consumer.consumer_group_metadata(), TIMEOUT
            )
            if abort_every and transactions % abort_every == 0:
                producer.abort_transaction(TIMEOUT)
                rewind = consumer.committed(consumer.assignment(), TIMEOUT)
                for tp in rewind:
                    consumer.seek(TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))
                at_end.clear()
                continue
            producer.commit_transaction(TIMEOUT)
            committed += 1
            if stop_after is not None and committed >= stop_after:
                return committed
        raise AssertionError("the source was not drained in time")
    finally:
        consumer.close()


def check_exactly_once(bootstrap: str, source: str, sink: str) -> None:
    inputs = read_all(bootstrap, source, PARTITIONS, "read_committed", RECORDS)
    outputs = read_all(bootstrap, sink, 1, "read_committed", RECORDS)
    want = Counter(transform(v) for _, _, v in inputs)
    got = Counter(v for _, _, v in outputs)
    duplicates = {v: n - 1 for v, n in got.items() if n > 1}
    lost = [v for v in want if v not in got]
    unexpected = [v for v in got if v not in want]
    print(
        f"exactly once: {len(want)} in, {sum(got.values())} out, "
        f"{sum(duplicates.values())} duplicates, {len(lost)} lost, {len(unexpected)} unexpected"
    )
    assert (duplicates, lost, unexpected) == ({}, [], [])


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    with RawClient(bootstrap) as client:
        response = client.call(
            ApiKey.OFFSET_FETCH,
            7,
            {
                "group_id": group,
                "topics": [{"name": topic, "partition_indexes": list(range(PARTITIONS))}],
                "require_stable": True,
            },
        )
    return {p.partition_index: p.committed_offset for p in response.topics[0].partitions}


def fill(bootstrap: str) -> tuple[str, str]:
    source = create_topic(bootstrap, unique_name("eos-in"), partitions=PARTITIONS)
    sink = create_topic(bootstrap, unique_name("eos-out"), partitions=1)
    for p in range(PARTITIONS):
        produce_ok(
            bootstrap,
            source,
            [(None, b"rec-%d-%d" % (p, i), []) for i in range(RECORDS // PARTITIONS)],
            partition=p,
        )
    return source, sink


def test_consume_transform_produce_is_exactly_once_with_aborts(gregor):
    source, sink = fill(gregor.bootstrap)
    group = "eos-" + uuid.uuid4().hex[:6]
    run_application(gregor.bootstrap, source, sink, group, "eos-" + source, abort_every=3)
    check_exactly_once(gregor.bootstrap, source, sink)
    # The group's committed offsets are the source's ends, from committed transactions only.
    assert committed_offsets(gregor.bootstrap, group, source) == {
        p: RECORDS // PARTITIONS for p in range(PARTITIONS)
    }


def test_consume_transform_produce_is_exactly_once_through_a_broker_kill(gregor):
    source, sink = fill(gregor.bootstrap)
    group = "eos-" + uuid.uuid4().hex[:6]
    txn_id = "eos-" + source
    # The application commits a few transactions, then leaves one open as
    # the broker dies under it.
    run_application(gregor.bootstrap, source, sink, group, txn_id, stop_after=2)
    zombie = Producer({"bootstrap.servers": gregor.bootstrap, "transactional.id": txn_id})
    zombie.init_transactions(TIMEOUT)
    zombie.begin_transaction()
    zombie.produce(sink, value=b"never committed")
    zombie.flush(TIMEOUT)
    gregor.kill()
    gregor.start()
    # The application restarts: its new producer fences and aborts what was open.
    run_application(gregor.bootstrap, source, sink, group, txn_id)
    check_exactly_once(gregor.bootstrap, source, sink)
    assert_no_traceback(gregor)
