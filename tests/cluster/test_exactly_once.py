"""Exactly once through failures: Kafka's own transactional copier against a
Gregor cluster, as Kafka's system tests run it (transactions_test.py).

An input topic of two partitions is filled with numbered records. Two
TransactionalMessageCopier processes (the Java client), one per input
partition, copy them to an output topic of three partitions in transactions,
each committing its consumer's offsets inside its transactions and aborting
a third of them on purpose, while processes are killed (-9) one after
another: the broker coordinating a copier's transactions, the leader of an
output partition, the broker coordinating the copiers' group (each started
again once the copiers went on without it), then a copier itself, whose
successor of the same transactional id fences it and carries on. Both
copiers must finish; a read_committed consumer must then find every input
record in the output exactly once, and the group's committed offsets must be
at the end of the input.

Kills, not network cuts: a broker cut off for longer than its ZooKeeper
session and then healed answers from its old state until its ZooKeeper client
reconnects and learns the session expired (a second or two). As a zombie
coordinator it answered a copier's OffsetFetch with an older committed offset
(the copier then copied records again) and a commit with INVALID_TXN_STATE
(fatal to the Java client). Kafka's brokers on ZooKeeper have such a window
too, until the controller tells them; tests/cluster/test_chaos.py cuts a
leader off instead.
"""

from __future__ import annotations

import pytest
from compatlib.transactions import read_isolated, values
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.cluster.checker import TransactionalCopier
from tests.cluster.test_failover import TIMEOUT, create, partitions_of, wait_until
from tests.cluster.test_transactions import coordinator, transaction_coordinator

pytestmark = pytest.mark.slow

INPUT, OUTPUT, GROUP = "eos-in", "eos-out", "eos-copier"
INPUT_PARTITIONS = 2
OUTPUT_PARTITIONS = 3
RECORDS = 40_000
TRANSACTION_SIZE = 100
# Records the copiers commit before each failure, and again after it.
PROGRESS = 1_000
IN_SYNC_TOPICS = (INPUT, OUTPUT, "__transaction_state", "__consumer_offsets")


def stopped(copiers: list[TransactionalCopier]) -> str:
    return "\n".join(
        f"{c.transactional_id} exited with {c.proc.poll()}:\n{c.log_tail()}"
        for c in copiers
        if not c.running()
    )


def seed(bootstrap: str) -> list[bytes]:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    written = [str(i).encode() for i in range(RECORDS)]
    for i, value in enumerate(written):
        while True:
            try:
                producer.produce(INPUT, value=value, partition=i % INPUT_PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(TIMEOUT) == 0, "the input was not all written"
    return written


def test_transactional_copies_hold_every_record_once_through_failures(cluster):
    create(cluster, INPUT, partitions=INPUT_PARTITIONS)
    create(cluster, OUTPUT, partitions=OUTPUT_PARTITIONS)
    written = seed(cluster.bootstrap)

    def copier(partition: int) -> TransactionalCopier:
        return TransactionalCopier(
            cluster.bootstrap, INPUT, partition, OUTPUT, GROUP, TRANSACTION_SIZE, random_aborts=True
        )

    copiers = [copier(p) for p in range(INPUT_PARTITIONS)]
    # In turn: kill -9 a broker found at that moment, started again once the
    # copiers went on without it; then kill -9 a copier, replaced by a new one
    # of the same transactional id, which fences it and takes over from the
    # offsets its last committed transaction committed.
    failures = [
        (
            "the transaction coordinator of a copier",
            lambda: transaction_coordinator(cluster, copiers[0].transactional_id),
        ),
        ("the leader of an output partition", lambda: partitions_of(cluster, OUTPUT)[0][0]),
        ("the group coordinator", lambda: coordinator(cluster, GROUP, 0)),
        ("a copier", None),
    ]
    done = []

    def committed_in_all() -> int:
        return sum(c.processed for c in copiers)

    def go_on(what: str) -> None:
        before = committed_in_all()
        wait_until(
            lambda: (
                committed_in_all() >= before + PROGRESS or not all(c.running() for c in copiers)
            ),
            f"the copiers to commit {PROGRESS} more records ({what})",
            timeout=120,
        )
        assert all(c.running() for c in copiers), stopped(copiers)

    try:
        for what, find in failures:
            go_on(f"before killing {what}")
            if find is None:
                copiers[1].kill()
                done.append((what, copiers[1].processed))
                copiers[1] = copier(1)
                go_on(f"after killing {what}")
                continue
            victim = wait_until(find, f"a broker to be {what}")
            done.append((what, victim))
            cluster.kill(victim)
            go_on(f"without broker {victim}, {what}")
            cluster.restart(victim)
            wait_until(
                lambda: all(cluster.in_sync(topic) for topic in IN_SYNC_TOPICS),
                f"every replica back in sync after killing {what}",
                timeout=90,
            )
        codes = [c.wait(180) for c in copiers]
    finally:
        for c in copiers:
            if c.running():
                c.stop()
    print(f"exactly once: killed {done}; copiers exited {codes}")
    assert codes == [0] * INPUT_PARTITIONS, stopped(copiers)
    # The group's offsets were committed with the copies, in the same transactions.
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": GROUP})
    try:
        committed = consumer.committed(
            [TopicPartition(INPUT, p) for p in range(INPUT_PARTITIONS)], timeout=TIMEOUT
        )
    finally:
        consumer.close()
    assert [tp.offset for tp in committed] == [RECORDS // INPUT_PARTITIONS] * INPUT_PARTITIONS
    copied = values(
        read_isolated(cluster.bootstrap, OUTPUT, OUTPUT_PARTITIONS, "read_committed", RECORDS)
    )
    assert len(copied) == RECORDS, f"{len(copied)} records copied of {RECORDS}"
    assert sorted(copied) == sorted(written), "records lost or copied twice"
