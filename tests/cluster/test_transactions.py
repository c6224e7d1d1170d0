"""Transactions on a three-broker cluster: markers reach partitions led by
other brokers, a transaction survives the loss of its coordinator, and one
whose markers wait out a long min.insync.replicas shortfall still completes.

`__transaction_state` is replicated (factor 3, min.insync.replicas 2), so the
coordinator of a transactional id moves with the leadership of its partition:
the new leader replays the log and carries on with the open transaction.
"""

from __future__ import annotations

import time
import uuid

import pytest
from compatlib import raw
from compatlib.transactions import (
    java_transactions,
    read_isolated,
    transactions_table,
    values,
)
from confluent_kafka import KafkaException, Producer

from tests.cluster.test_failover import TIMEOUT, create, partitions_of, wait_until
from tests.support.clients import needs_java
from tests.support.raw import RawClient
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

pytestmark = pytest.mark.slow


def read_committed(bootstrap: str, topic: str, partitions: int, expect: int) -> list[bytes]:
    return sorted(values(read_isolated(bootstrap, topic, partitions, "read_committed", expect)))


def coordinator(cluster, key: str, key_type: int) -> int | None:
    """The broker coordinating `key` (key_type 0: a group, 1: a transactional
    id), as a running broker answers; None while there is none (its
    partition has no leader yet)."""
    node = next(n for n, broker in cluster.brokers.items() if broker.running())
    with RawClient(cluster.inbound[node].address) as client:
        response = client.call(
            ApiKey.FIND_COORDINATOR, 4, {"key_type": key_type, "coordinator_keys": [key]}
        )
    [found] = response.coordinators
    return found.node_id if found.error_code == 0 else None


def transaction_coordinator(cluster, txn_id: str) -> int | None:
    return coordinator(cluster, txn_id, 1)


def test_markers_reach_every_leader_and_commits_survive_the_coordinators_death(cluster):
    topic = "txn-" + uuid.uuid4().hex[:6]
    create(cluster, topic, partitions=3)
    leaders = sorted(leader for leader, _, _ in partitions_of(cluster, topic).values())
    assert leaders == [1, 2, 3]  # one partition on each broker
    txn_id = "txn-" + topic
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "transactional.id": txn_id, "linger.ms": 5}
    )
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    for i in range(30):
        producer.produce(topic, value=b"c%d" % i, partition=i % 3)
    producer.commit_transaction(TIMEOUT)
    producer.begin_transaction()
    for i in range(6):
        producer.produce(topic, value=b"a%d" % i, partition=i % 3)
    producer.flush(TIMEOUT)
    producer.abort_transaction(TIMEOUT)
    expected = sorted(b"c%d" % i for i in range(30))
    assert read_committed(cluster.bootstrap, topic, 3, 30) == expected

    # A transaction open when its coordinator dies is committed through the next one.
    producer.begin_transaction()
    for i in range(30, 60):
        producer.produce(topic, value=b"c%d" % i, partition=i % 3)
    producer.flush(TIMEOUT)
    coordinator = transaction_coordinator(cluster, txn_id)
    cluster.kill(coordinator)
    wait_until(
        lambda: transaction_coordinator(cluster, txn_id) not in (None, coordinator),
        "another broker coordinating the transactional id",
    )
    producer.commit_transaction(TIMEOUT)
    expected = sorted(b"c%d" % i for i in range(60))
    assert read_committed(cluster.bootstrap, topic, 3, 60) == expected

    # The broker comes back; a new producer of the id fences the old one and goes on.
    cluster.restart(coordinator)
    successor = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": txn_id})
    successor.init_transactions(TIMEOUT)
    successor.begin_transaction()
    successor.produce(topic, value=b"last", partition=0)
    successor.commit_transaction(TIMEOUT)
    with pytest.raises(KafkaException):
        producer.begin_transaction()
        producer.produce(topic, value=b"zombie", partition=1)
        producer.commit_transaction(TIMEOUT)
    assert read_committed(cluster.bootstrap, topic, 3, 61) == sorted([*expected, b"last"])


@needs_java
def test_java_transactions_v2_add_partitions_through_their_leaders(cluster):
    """Kafka's Java producer runs transactions v2 here: no AddPartitionsToTxn,
    so each partition's leader adds it with the transaction's coordinator
    (AddPartitionsToTxn v5 between brokers), and EndTxn v5's markers carry
    the bumped epoch to the other brokers (WriteTxnMarkers v2)."""
    topic = "txn2-" + uuid.uuid4().hex[:6]
    create(cluster, topic, partitions=3)
    leaders = sorted(leader for leader, _, _ in partitions_of(cluster, topic).values())
    assert leaders == [1, 2, 3]
    txn_id = "txn2-" + topic
    records = 600
    java_transactions(cluster.bootstrap, topic, txn_id, records, rate=2000)
    assert len(read_committed(cluster.bootstrap, topic, 3, records)) == records
    [state] = transactions_table(cluster.bootstrap, "describe", "--transactional-id", txn_id)
    assert state["TransactionState"] == "CompleteCommit"
    assert int(state["ProducerEpoch"]) >= 2  # bumped by every EndTxn v5


MARKER_WAIT_MS = 2000


@pytest.mark.cluster_settings(**{"request.timeout.ms": MARKER_WAIT_MS})
def test_a_transaction_completes_after_its_markers_waited_out_a_min_isr_shortfall(cluster):
    """Markers are acks=all writes: under min.insync.replicas they are
    refused before anything is written and retried until the ISR is back
    (compat_tests/cluster runs the short version beside Kafka). Here the
    shortfall outlasts the markers' acks=all wait (request.timeout.ms)
    several times over: a marker appended under min ISR would wait at a
    high watermark that cannot move and be appended again by each retry
    (five offsets here instead of two, before markers checked min ISR)."""
    topic = "txn-" + uuid.uuid4().hex[:6]
    create(cluster, topic, partitions=1, min_insync_replicas=3)
    txn_id = "txn-" + topic
    coordinator = wait_until(
        lambda: transaction_coordinator(cluster, txn_id), "a transaction coordinator"
    )
    leader = partitions_of(cluster, topic)[0][0]
    follower = next(n for n in cluster.brokers if n not in (leader, coordinator))
    cluster.kill(follower)
    wait_until(lambda: follower not in partitions_of(cluster, topic)[0][2], "the ISR to shrink")
    with (
        raw.Connection(cluster.brokers[coordinator].bootstrap, 30) as coord,
        raw.Connection(cluster.brokers[leader].bootstrap, 30) as lead,
    ):

        def initialized():
            error, pid, epoch = raw.init_transactional_producer(coord, txn_id)
            return (pid, epoch) if error == 0 else None

        pid, epoch = wait_until(initialized, "a producer id")
        batch = raw.record_batch(
            [b"committed"], producer_id=pid, epoch=epoch, sequence=0, transactional=True
        )
        assert raw.produce_v12(lead, topic, 0, batch, transactional_id=txn_id, acks=1) == 0
        assert raw.end_txn_v5(coord, txn_id, pid, epoch, True) == (0, pid, epoch + 1)
        # The outage being simulated (not a wait for something): three of the
        # markers' acks=all waits, each followed by a retry.
        time.sleep(3 * MARKER_WAIT_MS / 1000)
        waiting = ErrorCode.CONCURRENT_TRANSACTIONS
        assert raw.end_txn_v5(coord, txn_id, pid, epoch + 1, False)[0] == waiting
        cluster.restart(follower)

        def ended():
            answer = raw.end_txn_v5(coord, txn_id, pid, epoch + 1, False)
            return None if answer[0] == waiting else answer

        assert wait_until(ended, "the commit to complete") == (0, pid, epoch + 2)
        # The record and the one COMMIT marker.
        assert raw.list_offsets(lead, topic, 0, raw.LATEST)[2] == 2
    assert read_committed(cluster.bootstrap, topic, 1, 1) == [b"committed"]
