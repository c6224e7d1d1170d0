"""What transactional tests share (here and in tests/): a reader at either
isolation level, and a consume-transform-produce application with its
exactly-once checker. confluent-kafka throughout."""

from __future__ import annotations

import time
from collections import Counter

from compatlib import java
from compatlib.common import unique

TIMEOUT = 30.0


def txn_producer(bootstrap: str, txn_id: str, **conf):
    """A transactional producer, its transactions initialised."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, **conf})
    p.init_transactions(TIMEOUT)
    return p


def read_isolated(
    bootstrap: str, topic: str, partitions: int, isolation: str, expect: int
) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of every record a consumer at `isolation`
    reads from the start, sorted, once it reached the end of every partition
    with at least `expect` records."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("txn-read"),
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list = []
    at_end: set[int] = set()
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                at_end.add(m.partition())
                if len(at_end) == partitions and len(got) >= expect:
                    return sorted(got)
                continue
            at_end.discard(m.partition())
            got.append((m.partition(), m.offset(), m.value()))
        raise AssertionError(f"read {len(got)} of {expect}: {got}")
    finally:
        c.close()


def values(rows) -> list[bytes]:
    return [v for _, _, v in rows]


def transform(value: bytes) -> bytes:
    return value.upper()


def copy_exactly_once(
    bootstrap: str,
    source: str,
    sink: str,
    group: str,
    txn_id: str,
    *,
    stop_after: int | None = None,
    abort_every: int = 0,
    deadline_s: float = 60.0,
) -> int:
    """The application: consume `source` in `group`, write each record
    transformed to `sink` in transactions that commit the consumed offsets
    too (send_offsets_to_transaction); stop once every source partition is
    drained, or after `stop_after` commits. Every `abort_every`-th
    transaction is aborted instead and the consumer goes back to the
    committed offsets, as an application does. Returns the commits made."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

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
    producer = txn_producer(bootstrap, txn_id)
    consumer.subscribe([source])
    partitions = len(consumer.list_topics(source, timeout=TIMEOUT).topics[source].partitions)
    committed = transactions = 0
    at_end: set[int] = set()
    deadline = time.monotonic() + deadline_s
    try:
        while time.monotonic() < deadline:
            records = []
            for m in consumer.consume(50, timeout=0.5):
                if m.error():
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(m.error())
                    at_end.add(m.partition())
                else:
                    at_end.discard(m.partition())
                    records.append(m)
            if not records:
                if len(at_end) == partitions:
                    return committed
                continue
            transactions += 1
            producer.begin_transaction()
            for m in records:
                producer.produce(sink, key=m.key(), value=transform(m.value()))
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()),
                consumer.consumer_group_metadata(),
                TIMEOUT,
            )
            if abort_every and transactions % abort_every == 0:
                producer.abort_transaction(TIMEOUT)
                for tp in consumer.committed(consumer.assignment(), TIMEOUT):
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


def check_exactly_once(source_rows, sink_rows) -> None:
    """Every source record transformed in the sink exactly once: prints the
    counts of duplicates and losses, and fails unless both are 0."""
    want = Counter(transform(v) for v in values(source_rows))
    got = Counter(values(sink_rows))
    duplicates = {v: n - 1 for v, n in got.items() if n > 1}
    lost = [v for v in want if v not in got]
    unexpected = [v for v in got if v not in want]
    print(
        f"exactly once: {len(want)} in, {sum(got.values())} out, "
        f"{sum(duplicates.values())} duplicates, {len(lost)} lost, {len(unexpected)} unexpected"
    )
    assert (duplicates, lost, unexpected) == ({}, [], [])


def leave_transaction_open(
    bootstrap: str, source: str, sink: str, group: str, txn_id: str, records: int
):
    """An instance of the application that dies mid-transaction: it consumes
    `records` records of `source` in `group`, writes them transformed to `sink`
    with the consumed offsets in a transaction, flushes, and never ends it.
    Returns its producer (the zombie), so that nothing closes it meanwhile."""
    from confluent_kafka import Consumer, KafkaError, KafkaException

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    producer = txn_producer(bootstrap, txn_id)
    consumer.subscribe([source])
    got: list = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while len(got) < records:
            assert time.monotonic() < deadline, f"read {len(got)} of {records} from {source}"
            for m in consumer.consume(records - len(got), timeout=0.5):
                error = m.error()
                if error is None:
                    got.append(m)
                elif error.code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(error)
        producer.begin_transaction()
        for m in got:
            producer.produce(sink, key=m.key(), value=transform(m.value() or b""))
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), TIMEOUT
        )
        producer.flush(TIMEOUT)
        return producer
    finally:
        consumer.close()


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The offsets `group` has committed on each partition of `topic` (-1001: none)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        return {tp.partition: tp.offset for tp in c.committed(tps, TIMEOUT)}
    finally:
        c.close()


def java_transactions(bootstrap: str, topic: str, txn_id: str, records: int, rate: int) -> None:
    """Kafka's perf tool as a transactional Java producer: `records` 100-byte
    records at `rate` a second, a transaction committed every 100 ms (the
    Java client runs transactions v2 where the broker finalizes it)."""
    proc = java.run(
        "kafka-producer-perf-test",
        "--topic", topic, "--num-records", records, "--record-size", 100,
        "--throughput", rate, "--transactional-id", txn_id,
        "--transaction-duration-ms", 100,
        "--producer-props", f"bootstrap.servers={bootstrap}",
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]


def transactions_table(bootstrap: str, *args) -> list[dict[str, str]]:
    """The rows `kafka-transactions.sh <args>` prints."""
    out = java.run("kafka-transactions", "--bootstrap-server", bootstrap, *args)
    assert out.returncode == 0, out.stderr[-2000:]
    return java.table(out.stdout)
