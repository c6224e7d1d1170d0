"""Coordinators move with their partitions' leaders, side by side on three
Kafka nodes and three Gregor brokers: a consumer group and a transaction each
ride the kill -9 of the broker coordinating them (the new leader of their
`__consumer_offsets` / `__transaction_state` partition takes over from the log);
a transaction whose markers cannot be written while a partition is under
min.insync.replicas stays prepared, and completes once the ISR is back.
"""

from __future__ import annotations

import time

import pytest
from compatlib import raw
from compatlib.common import ck_produce, unique, wait_until
from compatlib.transactions import read_isolated, txn_producer, values
from confluent_kafka import Consumer, KafkaError, TopicPartition

from .test_cluster_replication import create, partition_0_is, partitions_of

pytestmark = pytest.mark.client("confluent-kafka")
RECORDS = 300


def _group_coordinator(admin, group: str) -> int | None:
    try:
        described = admin.describe_consumer_groups([group])[group].result(10)
    except Exception:  # noqa: BLE001 - no coordinator yet: asked again
        return None
    return described.coordinator.id if described.coordinator is not None else None


@pytest.mark.api("FindCoordinator", "OffsetCommit", "JoinGroup", "coordinator failover")
def test_a_consumer_group_rides_the_kill_of_its_coordinator(cluster, cluster_admin):
    topic = create(cluster_admin, unique("group-failover"), partitions=3)
    ck_produce(
        cluster.bootstrap,
        topic,
        [{"value": b"%d" % i, "partition": i % 3} for i in range(RECORDS)],
        {"acks": "all"},
        timeout=60,
    )
    group = unique("rides")
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 30_000,
        }
    )
    consumer.subscribe([topic])
    seen: list[bytes] = []
    killed = None
    deadline = time.monotonic() + 120
    while len(set(seen)) < RECORDS:
        assert time.monotonic() < deadline, f"read {len(set(seen))} of {RECORDS}"
        batch = [m for m in consumer.consume(20, timeout=0.5) if m.error() is None]
        if not batch:
            continue
        seen += [m.value() for m in batch]
        try:
            consumer.commit(asynchronous=False)
        except Exception:  # noqa: BLE001 - a commit while the coordinator moves: the next one counts
            pass
        if killed is None and len(seen) >= RECORDS // 2:
            killed = wait_until(
                lambda: _group_coordinator(cluster_admin, group),
                timeout=30,
                message="for the group's coordinator",
            )
            cluster.kill(killed)
    # Every record read; a repeat only of what was read but not yet committed
    # when the coordinator died.
    assert set(seen) == {b"%d" % i for i in range(RECORDS)}
    assert len(seen) - RECORDS <= 20 * 3
    wait_until(
        lambda: _group_coordinator(cluster_admin, group) not in (None, killed),
        timeout=60,
        message="for another coordinator",
    )

    def committed() -> dict[int, int]:
        try:
            tps = consumer.committed([TopicPartition(topic, p) for p in range(3)], 10)
        except Exception:  # noqa: BLE001
            return {}
        return {tp.partition: tp.offset for tp in tps}

    while True:  # the last commit goes to the new coordinator
        try:
            consumer.commit(asynchronous=False)
            break
        except Exception as e:  # noqa: BLE001
            if e.args and getattr(e.args[0], "code", lambda: None)() == KafkaError._NO_OFFSET:
                break
            assert time.monotonic() < deadline, f"the last commit kept failing: {e}"
            time.sleep(0.5)
    assert wait_until(lambda: committed() == {0: 100, 1: 100, 2: 100}, timeout=60)
    consumer.close()


@pytest.mark.api("InitProducerId", "EndTxn", "WriteTxnMarkers", "coordinator failover")
def test_a_transaction_rides_the_kill_of_its_coordinator(cluster, cluster_admin):
    topic = create(cluster_admin, unique("txn-failover"), partitions=3)
    txn_id = unique("txn-failover")
    producer = txn_producer(cluster.bootstrap, txn_id)
    producer.begin_transaction()
    for i in range(60):
        producer.produce(topic, value=b"first-%d" % i, partition=i % 3)
    producer.commit_transaction(60)
    producer.begin_transaction()
    for i in range(60):
        producer.produce(topic, value=b"second-%d" % i, partition=i % 3)
    producer.flush(60)
    coordinator = wait_until(
        lambda: _transaction_coordinator(cluster, txn_id),
        timeout=30,
        message="for the transaction coordinator",
    )
    cluster.kill(coordinator)
    producer.commit_transaction(120)
    want = sorted([b"first-%d" % i for i in range(60)] + [b"second-%d" % i for i in range(60)])
    got = values(read_isolated(cluster.bootstrap, topic, 3, "read_committed", 120))
    assert sorted(got) == want


def _transaction_coordinator(cluster, txn_id: str) -> int | None:
    """The broker FindCoordinator names for `txn_id`, as a running node says
    (confluent-kafka's admin client does not describe transactions)."""
    for address in cluster.bootstrap.split(","):
        try:
            with raw.Connection(address, timeout=5) as conn:
                error, node_id, _, _ = raw.find_coordinator(conn, txn_id, 1)
        except OSError:
            continue
        if error == 0:
            return node_id
    return None


# Kafka's error codes the next test is told.
NONE, CONCURRENT_TRANSACTIONS = 0, 51
# What a transactional producer retries until its coordinator is ready.
_COORDINATOR_NOT_READY = {14, 15, 16, CONCURRENT_TRANSACTIONS}


@pytest.mark.api("Produce", "EndTxn", "WriteTxnMarkers", "replication")
def test_markers_wait_for_min_isr_and_the_next_end_waits_for_the_markers(cluster, cluster_admin):
    """Transaction markers are acks=all writes: while their partition is under
    min.insync.replicas they are refused and retried, and the transaction
    stays prepared. The producer's next EndTxn (transactions v2, at the epoch
    the commit handed out: what franz-go sends at once to abort a transaction
    whose batches all failed) is told CONCURRENT_TRANSACTIONS and retried, not
    PRODUCER_FENCED (KAFKA-18464). Once the ISR is whole again the marker is
    written, once, and the next end goes through."""
    topic = create(cluster_admin, unique("txn-minisr"), 1, 3, **{"min.insync.replicas": "3"})
    txn_id = unique("txn-minisr")
    coordinator = wait_until(
        lambda: _transaction_coordinator(cluster, txn_id),
        timeout=30,
        message="for the transaction coordinator",
    )
    leader = partitions_of(cluster_admin, topic)[0].leader
    # Stopped: a node that neither leads the partition nor coordinates.
    follower = next(n for n in cluster.nodes if n not in (leader, coordinator))
    brokers = cluster_admin.list_topics(timeout=10).brokers
    cluster.kill(follower)
    wait_until(
        lambda: partition_0_is(cluster_admin, topic, lambda p: follower not in p.isrs),
        timeout=60,
        message="for the ISR to shrink",
    )
    with (
        raw.Connection(f"{brokers[coordinator].host}:{brokers[coordinator].port}", 30) as coord,
        raw.Connection(f"{brokers[leader].host}:{brokers[leader].port}", 30) as lead,
    ):

        def initialized():
            error, pid, epoch = raw.init_transactional_producer(coord, txn_id)
            assert error in _COORDINATOR_NOT_READY | {NONE}, error
            return (pid, epoch) if error == NONE else None

        pid, epoch = wait_until(initialized, timeout=30, message="for a producer id")
        batch = raw.record_batch(
            [b"committed"], producer_id=pid, epoch=epoch, sequence=0, transactional=True
        )
        # acks=1: taken under min ISR; the partition joins the transaction.
        assert raw.produce_v12(lead, topic, 0, batch, transactional_id=txn_id, acks=1) == NONE
        assert raw.end_txn_v5(coord, txn_id, pid, epoch, True) == (NONE, pid, epoch + 1)
        # The commit's marker cannot be written: the next end waits.
        assert raw.end_txn_v5(coord, txn_id, pid, epoch + 1, False)[0] == CONCURRENT_TRANSACTIONS
        cluster.restart(follower)
        wait_until(
            lambda: partition_0_is(cluster_admin, topic, lambda p: len(p.isrs) == 3),
            timeout=60,
            message="for the ISR to grow back",
        )

        def ended():
            answer = raw.end_txn_v5(coord, txn_id, pid, epoch + 1, False)
            return None if answer[0] == CONCURRENT_TRANSACTIONS else answer

        assert wait_until(ended, timeout=60, message="for the commit to complete") == (
            NONE,
            pid,
            epoch + 2,
        )
        # The record and one COMMIT marker; the empty abort wrote none.
        assert raw.list_offsets(lead, topic, 0, raw.LATEST)[2] == 2
    got = values(read_isolated(cluster.bootstrap, topic, 1, "read_committed", 1))
    assert got == [b"committed"]
