"""Transactions: commit, abort, read_committed, fencing, timeouts,
sendOffsetsToTransaction, Kafka's own transactional tools.

Both brokers finalize `transaction.version` 2, so the Java client and
franz-go run transactions v2 (KIP-890 part 2: no AddPartitionsToTxn, the
epoch bumped by every EndTxn); librdkafka and kafka-python run v1. What is
asserted is what an application and Kafka's tools see.
"""

from __future__ import annotations

import re

import pytest
from compatlib import franz, java
from compatlib.common import ck_produce, unique, wait_until
from compatlib.transactions import (
    TIMEOUT,
    check_exactly_once,
    committed_offsets,
    copy_exactly_once,
    java_transactions,
    leave_transaction_open,
    read_isolated,
    transactions_table,
    txn_producer,
    values,
)

# What librdkafka says when a Produce of a fenced producer is refused with
# INVALID_PRODUCER_EPOCH (47): Kafka's answer to a stale epoch on Produce.
OLD_EPOCH = "Producer attempted an operation with an old epoch"


def fenced(raised) -> tuple[str, bool]:
    """(error name, fatal) of a confluent-kafka KafkaException."""
    error = raised.value.args[0]
    return error.name(), error.fatal()


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("InitProducerId", "AddPartitionsToTxn", "EndTxn", "WriteTxnMarkers", "Fetch")
def test_read_committed_sees_committed_transactions_only(bootstrap, topic):
    from confluent_kafka import Consumer, TopicPartition

    t = topic(partitions=2)
    p = txn_producer(bootstrap, unique("txn"))
    # Three committed transactions of 3 records per partition, one aborted of
    # 2 per partition between the first and the second.
    for name, commit in (("c0", True), ("a", False), ("c1", True), ("c2", True)):
        p.begin_transaction()
        for i in range(6 if commit else 4):
            p.produce(t, value=b"%s-%d" % (name.encode(), i), partition=i % 2)
        if commit:
            p.commit_transaction(TIMEOUT)
        else:
            p.flush(TIMEOUT)
            p.abort_transaction(TIMEOUT)
    committed = read_isolated(bootstrap, t, 2, "read_committed", 18)
    for partition in (0, 1):
        # Every committed record once, in the order produced.
        assert [v for p_, _, v in committed if p_ == partition] == [
            b"%s-%d" % (name, i) for name in (b"c0", b"c1", b"c2") for i in range(partition, 6, 2)
        ]
    # Offsets: the data and one marker per partition per transaction, as Kafka
    # lays them out; the markers are never handed out as records.
    assert [o for p_, o, _ in committed if p_ == 0] == [0, 1, 2, 7, 8, 9, 11, 12, 13]
    everything = read_isolated(bootstrap, t, 2, "read_uncommitted", 22)
    assert [o for p_, o, _ in everything if p_ == 1] == [0, 1, 2, 4, 5, 7, 8, 9, 11, 12, 13]
    assert sorted(v for _, _, v in everything if v.startswith(b"a-")) == [
        b"a-%d" % i for i in range(4)
    ]
    # The high watermark counts the markers (offsets 3, 6, 10, 14).
    for isolation in ("read_committed", "read_uncommitted"):
        c = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": unique("wm"), "isolation.level": isolation}
        )
        marks = [
            c.get_watermark_offsets(TopicPartition(t, partition), TIMEOUT, cached=False)
            for partition in (0, 1)
        ]
        c.close()
        assert marks == [(0, 15), (0, 15)], isolation


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("ListOffsets", "last stable offset", "Fetch")
def test_an_open_transaction_holds_the_last_stable_offset(bootstrap, topic):
    from confluent_kafka import Consumer, IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

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
    # ListOffsets latest from the admin client: the LSO at read_committed.
    admin = AdminClient({"bootstrap.servers": bootstrap})
    latest = {}
    for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED):
        [answer] = admin.list_offsets(
            {TopicPartition(t, 0): OffsetSpec.latest()}, isolation_level=level
        ).values()
        latest[level] = answer.result(TIMEOUT).offset
    assert latest == {IsolationLevel.READ_COMMITTED: 2, IsolationLevel.READ_UNCOMMITTED: 3}
    # A read_committed consumer stops at the LSO: only the committed record.
    assert values(read_isolated(bootstrap, t, 1, "read_committed", 1)) == [b"first"]
    p.commit_transaction(TIMEOUT)
    assert values(read_isolated(bootstrap, t, 1, "read_committed", 2)) == [b"first", b"open"]


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("InitProducerId", "fencing", "Produce", "EndTxn")
def test_a_new_producer_fences_the_old_one_and_aborts_its_transaction(bootstrap, topic):
    from confluent_kafka import KafkaException

    t = topic(partitions=1)
    txn_id = unique("txn")
    zombie = txn_producer(bootstrap, txn_id)
    zombie.begin_transaction()
    zombie.produce(t, value=b"zombie")
    zombie.flush(TIMEOUT)
    successor = txn_producer(bootstrap, txn_id)
    # The zombie's next produce is refused for its old epoch: fatal.
    with pytest.raises(KafkaException) as raised:
        zombie.produce(t, value=b"late")
        zombie.flush(TIMEOUT)
    assert fenced(raised) == ("_FENCED", True)
    assert OLD_EPOCH in raised.value.args[0].str()
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(TIMEOUT)
    assert fenced(raised) == ("_FENCED", True)
    # Its transaction was aborted: written, never committed.
    assert values(read_isolated(bootstrap, t, 1, "read_uncommitted", 1)) == [b"zombie"]
    assert values(read_isolated(bootstrap, t, 1, "read_committed", 0)) == []
    successor.begin_transaction()
    successor.produce(t, value=b"successor")
    successor.commit_transaction(TIMEOUT)
    assert values(read_isolated(bootstrap, t, 1, "read_committed", 1)) == [b"successor"]


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("InitProducerId", "fencing", "EndTxn")
def test_a_fenced_producer_cannot_commit(bootstrap, topic):
    from confluent_kafka import KafkaException

    t = topic(partitions=1)
    txn_id = unique("txn")
    zombie = txn_producer(bootstrap, txn_id)
    zombie.begin_transaction()
    zombie.produce(t, value=b"zombie")
    zombie.flush(TIMEOUT)
    txn_producer(bootstrap, txn_id)
    # Straight to EndTxn with the old epoch, no produce in between.
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(TIMEOUT)
    assert fenced(raised) == ("_FENCED", True)
    assert values(read_isolated(bootstrap, t, 1, "read_committed", 0)) == []


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
    # The read waits for the LSO to pass the stalled transaction: its abort.
    assert values(read_isolated(bootstrap, t, 1, "read_committed", 1)) == [b"after"]
    assert values(read_isolated(bootstrap, t, 1, "read_uncommitted", 2)) == [b"stalled", b"after"]
    # The abort bumped the epoch: the stalled producer is fenced.
    with pytest.raises(KafkaException) as raised:
        stalled.commit_transaction(TIMEOUT)
    assert fenced(raised) == ("_FENCED", True)


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("AddOffsetsToTxn", "TxnOffsetCommit", "OffsetFetch")
def test_consume_transform_produce_is_exactly_once(bootstrap, topic):
    source, sink = topic(partitions=2), topic(partitions=1)
    ck_produce(bootstrap, source, [{"value": b"r%d" % i, "partition": i % 2} for i in range(200)])
    group = unique("eos")
    copy_exactly_once(bootstrap, source, sink, group, unique("eos"), abort_every=3)
    check_exactly_once(
        read_isolated(bootstrap, source, 2, "read_committed", 200),
        read_isolated(bootstrap, sink, 1, "read_committed", 200),
    )
    # The group's offsets are the source's ends, from committed transactions only.
    assert committed_offsets(bootstrap, group, source, 2) == {0: 100, 1: 100}


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("AddOffsetsToTxn", "TxnOffsetCommit", "OffsetFetch", "fencing")
def test_a_restarted_application_resumes_from_its_committed_transactions(bootstrap, topic):
    source, sink = topic(partitions=2), topic(partitions=1)
    ck_produce(bootstrap, source, [{"value": b"r%d" % i, "partition": i % 2} for i in range(120)])
    group, txn_id = unique("eos"), unique("eos")
    assert copy_exactly_once(bootstrap, source, sink, group, txn_id, stop_after=1) == 1
    first = read_isolated(bootstrap, sink, 1, "read_committed", 1)
    # An instance dies with a transaction open (records and offsets in it).
    zombie = leave_transaction_open(bootstrap, source, sink, group, txn_id, 10)
    # Its successor's init_transactions aborts it: the group's offsets are
    # those of the committed transaction, as many as it wrote.
    txn_producer(bootstrap, txn_id)
    offsets = committed_offsets(bootstrap, group, source, 2)
    assert sum(max(o, 0) for o in offsets.values()) == len(first), offsets
    # The new instance resumes there and drains the source: exactly once.
    copy_exactly_once(bootstrap, source, sink, group, txn_id)
    check_exactly_once(
        read_isolated(bootstrap, source, 2, "read_committed", 120),
        read_isolated(bootstrap, sink, 1, "read_committed", 120),
    )
    assert committed_offsets(bootstrap, group, source, 2) == {0: 60, 1: 60}
    # The records of the dead instance's transaction are in the log, aborted.
    assert len(read_isolated(bootstrap, sink, 1, "read_uncommitted", 130)) == 130
    del zombie


@pytest.mark.client("java")
@pytest.mark.api("Java transactional producer", "TxnOffsetCommit", "EndTxn")
def test_java_transactional_message_copier(bootstrap, topic):
    source, sink = topic(partitions=1), topic(partitions=1)
    ck_produce(bootstrap, source, [{"value": b"m%d" % i} for i in range(300)])
    txn_id = unique("copier")
    proc = java.run(
        "org.apache.kafka.tools.TransactionalMessageCopier",
        "--broker-list",
        bootstrap,
        "--transactional-id",
        txn_id,
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
    progress = [s for s in states if "remaining" in s]
    assert progress and all(s["transactionalId"] == txn_id for s in progress), states[-3:]
    assert progress[-1]["remaining"] == 0, progress[-3:]
    # Every input record once, in the input's order.
    out = values(read_isolated(bootstrap, sink, 1, "read_committed", 300))
    assert out == [b"m%d" % i for i in range(300)]


@pytest.mark.client("java")
@pytest.mark.api("ListTransactions")
def test_kafka_transactions_tool_lists_by_transactional_id_pattern(bootstrap, topic):
    """ListTransactions v2 (KIP-1152): the ids the pattern matches whole, in
    RE2's syntax (Kafka's RE2J); a pattern RE2 refuses is INVALID_REGULAR_EXPRESSION."""
    t = topic(partitions=1)
    prefix = unique("pattern")
    for suffix in ("a", "b"):
        p = txn_producer(bootstrap, f"{prefix}-{suffix}")
        p.begin_transaction()
        p.produce(t, value=b"x")
        p.commit_transaction(TIMEOUT)

    def listed(pattern: str) -> list[str]:
        rows = transactions_table(bootstrap, "list", "--transactional-id-pattern", pattern)
        return sorted(r["TransactionalId"] for r in rows)

    assert listed(re.escape(prefix) + "-.*") == [f"{prefix}-a", f"{prefix}-b"]
    assert listed(".*" + re.escape(prefix[len("pattern") :]) + "-[b-z]") == [f"{prefix}-b"]
    assert listed(re.escape(prefix)) == []  # the whole id must match
    for refused in ("(", f"(?={prefix}).*"):
        out = java.run(
            "kafka-transactions", "--bootstrap-server", bootstrap,
            "list", "--transactional-id-pattern", refused,
        )  # fmt: skip
        assert out.returncode == 1
        assert "INVALID_REGULAR_EXPRESSION" in out.stderr


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
        return transactions_table(bootstrap, *args)

    listed = wait_until(
        lambda: [r for r in table("list") if r["TransactionalId"] == txn_id],
        timeout=TIMEOUT,
        message="the transactional id listed",
    )
    assert listed[0]["TransactionState"] == "CompleteCommit"
    assert listed[0]["Coordinator"] == "1"
    [described] = table("describe", "--transactional-id", txn_id)
    assert described["TransactionalId"] == txn_id
    assert described["CoordinatorId"] == "1"
    assert described["TransactionState"] == "CompleteCommit"
    assert described["TopicPartitions"] == ""
    assert int(described["ProducerId"]) >= 0 and int(described["ProducerEpoch"]) >= 0
    assert described["ProducerId"] == listed[0]["ProducerId"]
    producers = table("describe-producers", "--topic", t, "--partition", "0")
    assert [r["ProducerId"] for r in producers] == [described["ProducerId"]]
    assert producers[0]["CurrentTransactionStartOffset"] == "None"


@pytest.mark.client("java")
@pytest.mark.api("ApiVersions", "Produce", "EndTxn", "DescribeTransactions", "DescribeProducers")
def test_java_producer_runs_transactions_v2(bootstrap, topic):
    """Kafka's perf tool commits a transaction every 100 ms. Under
    transactions v2 each EndTxn bumps the producer epoch and the markers carry
    it, so the epoch the coordinator and the partition report counts the
    transactions (it would stay 0 under v1), and read_committed sees every
    record."""
    t = topic(partitions=1)
    txn_id = unique("perf-txn")
    records = 400
    java_transactions(bootstrap, t, txn_id, records, rate=1000)

    def table(*args) -> list[dict[str, str]]:
        return transactions_table(bootstrap, *args)

    [described] = table("describe", "--transactional-id", txn_id)
    assert described["TransactionState"] == "CompleteCommit"
    epoch = int(described["ProducerEpoch"])
    assert epoch >= 2, described  # one bump per transaction, 0 under v1
    [producer] = table("describe-producers", "--topic", t, "--partition", "0")
    assert producer["ProducerId"] == described["ProducerId"]
    # The last marker was written with the epoch the last EndTxn bumped to.
    assert int(producer["ProducerEpoch"]) == epoch
    assert producer["CurrentTransactionStartOffset"] == "None"
    assert len(read_isolated(bootstrap, t, 1, "read_committed", records)) == records


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

    def read(isolation: str) -> list[bytes]:
        c = kafka.KafkaConsumer(
            t,
            bootstrap_servers=bootstrap,
            isolation_level=isolation,
            auto_offset_reset="earliest",
            consumer_timeout_ms=3000,
        )
        try:
            return [m.value for m in c]
        finally:
            c.close()

    assert read("read_committed") == [b"committed"]
    assert read("read_uncommitted") == [b"aborted", b"committed"]


@pytest.mark.client("franz-go")
@pytest.mark.api("InitProducerId", "AddPartitionsToTxn", "EndTxn", "Fetch")
def test_franz_go_transactions(bootstrap, topic):
    t = topic(partitions=2)
    plan = "commit:4,abort:4,commit:4"
    made = franz.run(
        "txn",
        "--topic",
        t,
        "--txn-id",
        unique("franz"),
        "--plan",
        plan,
        "--partitions",
        2,
        brokers=bootstrap,
    )
    assert made.returncode == 0 and not made.errors, made
    assert [(line["end"], line["records"]) for line in made.lines] == [
        ("commit", 4),
        ("abort", 4),
        ("commit", 4),
    ]
    committed = franz.run(
        "consume", "--topic", t, "--isolation", "committed", "--count", 8, brokers=bootstrap
    )
    assert committed.returncode == 0 and not committed.errors, committed
    want = sorted(f"{i}-commit-{j}" for i in (0, 2) for j in range(4))
    assert sorted(r["value"] for r in committed.records) == want
    # Nothing else at read_committed; everything, markers aside, at read_uncommitted.
    assert sorted(values(read_isolated(bootstrap, t, 2, "read_committed", 8))) == [
        v.encode() for v in want
    ]
    everything = franz.run("consume", "--topic", t, "--count", 12, brokers=bootstrap)
    assert sorted(r["value"] for r in everything.records) == sorted(
        f"{i}-{end}-{j}" for i, end in enumerate(("commit", "abort", "commit")) for j in range(4)
    )
    assert {(r["partition"], r["offset"]) for r in everything.records if r["partition"] == 0} == {
        (0, 0),
        (0, 1),
        (0, 3),
        (0, 4),
        (0, 6),
        (0, 7),
    }


@pytest.mark.client("franz-go")
@pytest.mark.api("AddOffsetsToTxn", "TxnOffsetCommit", "OffsetFetch", "EndTxn")
def test_franz_go_group_transact_session_is_exactly_once(bootstrap, topic):
    source, sink = topic(partitions=2), topic(partitions=1)
    ck_produce(bootstrap, source, [{"value": b"r%d" % i, "partition": i % 2} for i in range(200)])
    group = unique("franz-eos")
    copied = franz.run(
        "txn-copy",
        "--group",
        group,
        "--topic",
        source,
        "--output",
        sink,
        "--txn-id",
        unique("franz-eos"),
        "--count",
        200,
        "--abort-every",
        3,
        "--timeout",
        "60s",
        brokers=bootstrap,
        timeout=90,
    )
    assert copied.returncode == 0 and not copied.errors, copied
    # Polls of up to 20 records: ten transactions at least, some aborted.
    assert copied.lines[-1]["committed"] == 200 and copied.lines[-1]["aborted"] > 0, copied
    check_exactly_once(
        read_isolated(bootstrap, source, 2, "read_committed", 200),
        read_isolated(bootstrap, sink, 1, "read_committed", 200),
    )
    assert committed_offsets(bootstrap, group, source, 2) == {0: 100, 1: 100}
