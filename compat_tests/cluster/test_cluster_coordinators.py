"""Coordinators move with their partitions' leaders, side by side on three
Kafka nodes and three Gregor brokers: a consumer group and a transaction each
ride the kill -9 of the broker coordinating them (the new leader of their
`__consumer_offsets` / `__transaction_state` partition takes over from the log).
"""

from __future__ import annotations

import time

import pytest
from compatlib import raw
from compatlib.common import ck_produce, unique, wait_until
from compatlib.transactions import read_isolated, txn_producer, values
from confluent_kafka import Consumer, KafkaError, TopicPartition

from .test_cluster_replication import create

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
