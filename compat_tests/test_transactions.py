"""Transactions: commit, abort, read_committed, fencing, timeouts,
sendOffsetsToTransaction, Kafka's own transactional tools.

Apache Kafka 4.3.1 serves transactions v2 to the clients that use it (the
Java client), Gregor v1; what is asserted is what an application sees, which
both versions give alike.
"""

from __future__ import annotations

import pytest
from compatlib import java
from compatlib.common import ck_produce, unique, wait_until
from compatlib.transactions import (
    TIMEOUT,
    check_exactly_once,
    copy_exactly_once,
    read_isolated,
    txn_producer,
    values,
)


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("InitProducerId", "AddPartitionsToTxn", "EndTxn", "WriteTxnMarkers", "Fetch")
def test_read_committed_sees_committed_transactions_only(bootstrap, topic):
    t = topic(partitions=2)
    p = txn_producer(bootstrap, unique("txn"))
    for round_ in range(2):
        p.begin_transaction()
        for i in range(6):
            p.produce(t, value=b"c%d-%d" % (round_, i), partition=i % 2)
        p.commit_transaction(TIMEOUT)
        p.begin_transaction()
        for i in range(4):
            p.produce(t, value=b"a%d-%d" % (round_, i), partition=i % 2)
        p.flush(TIMEOUT)
        p.abort_transaction(TIMEOUT)
    committed = read_isolated(bootstrap, t, 2, "read_committed", 12)
    assert sorted(values(committed)) == sorted(
        b"c%d-%d" % (r, i) for r in range(2) for i in range(6)
    )
    everything = read_isolated(bootstrap, t, 2, "read_uncommitted", 20)
    assert len(everything) == 20
    # Offsets: data and one marker per partition per transaction, as Kafka lays them out.
    assert [(p_, o) for p_, o, _ in committed if p_ == 0] == [
        (0, 0),
        (0, 1),
        (0, 2),
        (0, 7),
        (0, 8),
        (0, 9),
    ]


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("ListOffsets", "last stable offset", "Fetch")
def test_an_open_transaction_holds_the_last_stable_offset(bootstrap, topic):
    from confluent_kafka import Consumer, TopicPartition

    t = topic(partitions=1)
    p = txn_producer(bootstrap, unique("txn"))
    p.begin_transaction()
    p.produce(t, value=b"first")
    p.commit_transaction(TIMEOUT)
    p.begin_transaction()
    p.produce(t, value=b"open")
    p.flush(TIMEOUT)
    marks = {}
    for isolation in ("read_committed", "read_uncommitted"):
        c = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": unique("wm"), "isolation.level": isolation}
        )
        marks[isolation] = c.get_watermark_offsets(TopicPartition(t, 0), TIMEOUT, cached=False)
        c.close()
    assert marks == {"read_committed": (0, 2), "read_uncommitted": (0, 3)}
    assert values(read_isolated(bootstrap, t, 1, "read_committed", 1)) == [b"first"]
    p.commit_transaction(TIMEOUT)
    assert values(read_isolated(bootstrap, t, 1, "read_committed", 2)) == [b"first", b"open"]


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("InitProducerId", "fencing")
def test_a_new_producer_fences_the_old_one_and_aborts_its_transaction(bootstrap, topic):
    from confluent_kafka import KafkaException

    t = topic(partitions=1)
    txn_id = unique("txn")
    zombie = txn_producer(bootstrap, txn_id)
    zombie.begin_transaction()
    zombie.produce(t, value=b"zombie")
    zombie.flush(TIMEOUT)
    successor = txn_producer(bootstrap, txn_id)
    successor.begin_transaction()
    successor.produce(t, value=b"successor")
    successor.commit_transaction(TIMEOUT)
    with pytest.raises(KafkaException) as raised:
        zombie.produce(t, value=b"late")
        zombie.commit_transaction(TIMEOUT)
    assert raised.value.args[0].fatal()
    assert values(read_isolated(bootstrap, t, 1, "read_committed", 1)) == [b"successor"]


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("InitProducerId", "transaction timeout")
def test_transaction_timeouts(bootstrap, topic):
    from confluent_kafka import KafkaException

    t = topic(partitions=1)
    # Above transaction.max.timeout.ms (15 minutes): refused.
    with pytest.raises(KafkaException) as raised:
        txn_producer(bootstrap, unique("txn"), **{"transaction.timeout.ms": 900_001})
    assert raised.value.args[0].name() == "INVALID_TRANSACTION_TIMEOUT"
    # A transaction left open past its timeout is aborted by the coordinator.
    stalled = txn_producer(bootstrap, unique("txn"), **{"transaction.timeout.ms": 2000})
    stalled.begin_transaction()
    stalled.produce(t, value=b"stalled")
    stalled.flush(TIMEOUT)
    other = txn_producer(bootstrap, unique("txn"))
    other.begin_transaction()
    other.produce(t, value=b"after")
    other.commit_transaction(TIMEOUT)
    assert values(read_isolated(bootstrap, t, 1, "read_committed", 1)) == [b"after"]
    with pytest.raises(KafkaException):
        stalled.commit_transaction(TIMEOUT)


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("AddOffsetsToTxn", "TxnOffsetCommit", "OffsetFetch")
def test_consume_transform_produce_is_exactly_once(bootstrap, topic):
    from confluent_kafka import Consumer, TopicPartition

    source, sink = topic(partitions=2), topic(partitions=1)
    ck_produce(bootstrap, source, [{"value": b"r%d" % i, "partition": i % 2} for i in range(200)])
    group = unique("eos")
    copy_exactly_once(bootstrap, source, sink, group, unique("eos"), abort_every=3)
    check_exactly_once(
        read_isolated(bootstrap, source, 2, "read_committed", 200),
        read_isolated(bootstrap, sink, 1, "read_committed", 200),
    )
    # The group's offsets are the source's ends, from committed transactions only.
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    committed = c.committed([TopicPartition(source, 0), TopicPartition(source, 1)], TIMEOUT)
    c.close()
    assert {tp.partition: tp.offset for tp in committed} == {0: 100, 1: 100}


@pytest.mark.client("java")
@pytest.mark.api("Java transactional producer", "TxnOffsetCommit", "EndTxn")
def test_java_transactional_message_copier(bootstrap, topic):
    source, sink = topic(partitions=1), topic(partitions=1)
    ck_produce(bootstrap, source, [{"value": b"m%d" % i} for i in range(300)])
    proc = java.run(
        "org.apache.kafka.tools.TransactionalMessageCopier",
        "--broker-list",
        bootstrap,
        "--transactional-id",
        unique("copier"),
        "--input-topic",
        source,
        "--input-partition",
        0,
        "--output-topic",
        sink,
        "--consumer-group",
        unique("copier"),
        "--max-messages",
        300,
        "--transaction-size",
        50,
        "--enable-random-aborts",
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    states = java.json_lines(proc.stdout)
    assert states[-1].get("message") == "shutdown_complete" or any(
        s.get("remaining") == 0 for s in states
    ), states[-3:]
    out = values(read_isolated(bootstrap, sink, 1, "read_committed", 300))
    assert sorted(out) == sorted(b"m%d" % i for i in range(300))


@pytest.mark.client("java")
@pytest.mark.api("ListTransactions", "DescribeTransactions", "DescribeProducers")
def test_kafka_transactions_tool(bootstrap, topic):
    t = topic(partitions=1)
    txn_id = unique("tool")
    p = txn_producer(bootstrap, txn_id)
    p.begin_transaction()
    p.produce(t, value=b"x")
    p.commit_transaction(TIMEOUT)

    def table(*args) -> list[dict[str, str]]:
        out = java.run("kafka-transactions", "--bootstrap-server", bootstrap, *args)
        assert out.returncode == 0, out.stderr[-2000:]
        return java.table(out.stdout)

    listed = wait_until(
        lambda: [r for r in table("list") if r["TransactionalId"] == txn_id],
        timeout=TIMEOUT,
        message="the transactional id listed",
    )
    assert listed[0]["TransactionState"] == "CompleteCommit"
    [described] = table("describe", "--transactional-id", txn_id)
    assert described["TransactionState"] == "CompleteCommit"
    assert described["TopicPartitions"] == ""
    producers = table("describe-producers", "--topic", t, "--partition", "0")
    assert len(producers) == 1 and producers[0]["CurrentTransactionStartOffset"] == "None"


@pytest.mark.client("kafka-python")
@pytest.mark.api("InitProducerId", "EndTxn", "Fetch")
def test_kafka_python_transactions(bootstrap, topic):
    import kafka

    t = topic(partitions=1)
    p = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id=unique("kp"))
    p.init_transactions()
    for value, commit in ((b"aborted", False), (b"committed", True)):
        p.begin_transaction()
        p.send(t, value=value).get(TIMEOUT)
        p.commit_transaction() if commit else p.abort_transaction()
    p.close()
    c = kafka.KafkaConsumer(
        t,
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        consumer_timeout_ms=3000,
    )
    assert [m.value for m in c] == [b"committed"]
    c.close()
