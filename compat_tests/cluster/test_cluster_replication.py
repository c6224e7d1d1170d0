"""Replication, side by side: the same steps against three Apache Kafka nodes and
three Gregor brokers, with the answers Kafka gives.

A replicated topic is described with every replica in sync and leaders spread;
acks=all records survive the kill -9 of their partition's leader, and the
producer rides the leader change without losing or repeating one; with a
replica gone from a topic with min.insync.replicas=3, acks=all answers
NOT_ENOUGH_REPLICAS while acks=1 still works; kafka-reassign-partitions moves a partition's replicas to other brokers
and its records with them, and with --disallow-replication-factor-change
(KIP-860) refuses a plan that changes how many replicas a partition has.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from compatlib.common import ck_consume, ck_produce, unique, wait_until
from compatlib.java import run as run_tool
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import NewTopic

pytestmark = pytest.mark.client("confluent-kafka")


def create(admin, name: str, partitions: int = 3, replicas: int = 3, **config):
    topic = NewTopic(name, partitions, replicas, config=config)
    admin.create_topics([topic], operation_timeout=30)[name].result(60)
    wait_for_full_isr(admin, name, partitions, replicas)
    return name


def wait_for_full_isr(admin, name: str, partitions: int, replicas: int) -> None:
    wait_until(
        lambda: (
            len(partitions_of(admin, name)) == partitions
            and all(
                p.leader >= 0 and len(p.isrs) == replicas
                for p in partitions_of(admin, name).values()
            )
        ),
        timeout=60,
        message=f"for {name}: a leader and a full ISR for every partition",
    )


def partitions_of(admin, name: str):
    """The topic's partitions by index; none while the cluster cannot say (the
    topic has an error, or the Metadata request timed out, as it did on Kafka
    with a broker just killed), which every wait below takes as "not yet"."""
    try:
        topic = admin.list_topics(name, timeout=10).topics[name]
    except KafkaException:
        return {}
    return topic.partitions if topic.error is None else {}


def partition_0_is(admin, name: str, condition) -> bool:
    """Whether partition 0's metadata satisfies `condition` (False while the
    cluster cannot say)."""
    p = partitions_of(admin, name).get(0)
    return p is not None and condition(p)


@pytest.mark.api("CreateTopics", "Metadata", "DescribeCluster", "replication")
def test_a_replicated_topic_has_every_replica_in_sync(cluster, cluster_admin):
    topic = create(cluster_admin, unique("rf3"), partitions=6)
    partitions = partitions_of(cluster_admin, topic)
    ids = set(cluster.nodes)
    assert all(set(p.replicas) == ids and set(p.isrs) == ids for p in partitions.values())
    # Kafka's placement: leaders (first replicas) spread evenly over the brokers.
    leaders = [p.leader for p in partitions.values()]
    assert sorted(leaders.count(n) for n in ids) == [2, 2, 2]
    described = cluster_admin.describe_cluster().result(30)
    assert {n.id for n in described.nodes} == ids
    assert described.controller.id in ids


@pytest.mark.api("Produce", "acks=all", "leader failover", "idempotence")
def test_acks_all_records_survive_the_kill_of_their_leader(cluster, cluster_admin):
    topic = create(cluster_admin, unique("failover"), partitions=1)
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 120_000,
        }
    )
    acked: list[int] = []
    failed: list[str] = []

    def delivered(err, msg):
        if err:
            failed.append(str(err))
        else:
            acked.append(msg.offset())

    total = 600
    half = threading.Event()

    def send():
        for i in range(total):
            producer.produce(topic, value=b"%d" % i, partition=0, on_delivery=delivered)
            producer.poll(0)
            if i == total // 2:
                half.set()
                # The rest goes while the leader is gone: the client finds the new one.
                wait_until(killed.is_set, timeout=30, message="for the kill")
            time.sleep(0.002)
        producer.flush(150)

    killed = threading.Event()
    sender = threading.Thread(target=send)
    sender.start()
    assert half.wait(60)
    leader = partitions_of(cluster_admin, topic)[0].leader
    cluster.kill(leader)
    killed.set()
    sender.join(180)
    assert failed == []
    assert sorted(acked) == list(range(total))  # each once, in order of sending
    wait_until(
        lambda: partition_0_is(cluster_admin, topic, lambda p: p.leader not in (leader, -1)),
        timeout=60,
        message="for a new leader",
    )
    cluster.restart(leader)
    read = ck_consume(cluster.bootstrap, topic, count=total, timeout=60)
    assert [m.value() for m in read] == [b"%d" % i for i in range(total)]
    # The restarted broker catches up and is back in the ISR.
    wait_until(
        lambda: partition_0_is(cluster_admin, topic, lambda p: leader in p.isrs),
        timeout=60,
        message="for the ISR to grow back",
    )


@pytest.mark.api("Produce", "min.insync.replicas", "NOT_ENOUGH_REPLICAS")
def test_a_replica_gone_under_min_isr_3_acks_all_is_refused_and_acks_1_works(
    cluster, cluster_admin
):
    # One broker down, not two: each Kafka node is also a KRaft voter, and a
    # quorum of three without two of them cannot change any ISR.
    topic = create(cluster_admin, unique("minisr"), 1, 3, **{"min.insync.replicas": "3"})
    leader = partitions_of(cluster_admin, topic)[0].leader
    follower = next(n for n in cluster.nodes if n != leader)
    cluster.kill(follower)
    # The leader drops it from the ISR once its session ends.
    wait_until(
        lambda: partition_0_is(
            cluster_admin,
            topic,
            lambda p: sorted(p.isrs) == sorted(n for n in cluster.nodes if n != follower),
        ),
        timeout=60,
        message="for the ISR to shrink",
    )

    def produce(acks: str):
        errors: list[KafkaError | None] = []
        p = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "acks": acks,
                "retries": 0,
                # Room for a three-node Kafka on two loaded cores to answer:
                # with 10 s it once timed out locally before answering.
                "message.timeout.ms": 30_000,
            }
        )
        p.produce(topic, value=b"x", partition=0, on_delivery=lambda err, _m: errors.append(err))
        p.flush(60)
        return errors

    (err,) = produce("all")
    assert err is not None and err.code() == KafkaError.NOT_ENOUGH_REPLICAS
    assert produce("1") == [None]
    cluster.restart(follower)
    wait_until(
        lambda: partition_0_is(cluster_admin, topic, lambda p: len(p.isrs) == 3),
        timeout=60,
        message="for the ISR to grow back",
    )
    # The Metadata answer may come from a broker that learnt of the grown ISR
    # a moment before the leader applied it (on both brokers the leader and
    # the others learn of the commit separately), and a refusal in between
    # is NOT_ENOUGH_REPLICAS again, which clients retry: acks=all must be
    # taken again soon after, not necessarily on the first try.
    wait_until(
        lambda: produce("all") == [None],
        timeout=30,
        message="for acks=all to be taken again",
    )


def topic_on_broker_1(cluster, admin, prefix: str) -> str:
    """A one-partition topic whose one replica is on broker 1, made with
    kafka-topics (confluent-kafka 2.16's NewTopic refuses a replica assignment)."""
    topic = unique(prefix)
    made = run_tool(
        "kafka-topics",
        *("--bootstrap-server", cluster.bootstrap, "--create", "--topic", topic),
        *("--replica-assignment", "1"),
        timeout=120,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    wait_for_full_isr(admin, topic, 1, 1)
    return topic


def reassignment_plan(directory, topic: str, replicas: list[int]):
    """kafka-reassign-partitions' plan moving partition 0 of `topic` to `replicas`."""
    plan = directory / "plan.json"
    partition = {"topic": topic, "partition": 0, "replicas": replicas}
    plan.write_text(json.dumps({"version": 1, "partitions": [partition]}))
    return plan


@pytest.mark.client("java")
@pytest.mark.api("AlterPartitionReassignments", "ListPartitionReassignments", "replication")
def test_kafka_reassign_partitions_moves_a_partition_and_its_records(
    cluster, cluster_admin, tmp_path
):
    topic = topic_on_broker_1(cluster, cluster_admin, "moving")
    records = [{"value": b"%d" % i, "partition": 0} for i in range(50)]
    ck_produce(cluster.bootstrap, topic, records, {"acks": "all"}, timeout=30)
    plan = reassignment_plan(tmp_path, topic, [2, 3])
    args = ["--bootstrap-server", cluster.bootstrap, "--reassignment-json-file", str(plan)]
    execute = run_tool("kafka-reassign-partitions", *args, "--execute", timeout=120)
    assert execute.returncode == 0, execute.stdout + execute.stderr
    wait_until(
        lambda: (
            "is completed"
            in run_tool("kafka-reassign-partitions", *args, "--verify", timeout=120).stdout
        ),
        timeout=90,
        message="for the reassignment to complete",
    )
    partition = partitions_of(cluster_admin, topic)[0]
    assert sorted(partition.replicas) == [2, 3] and sorted(partition.isrs) == [2, 3]
    assert partition.leader in (2, 3)
    # The records moved with it: broker 1 no longer holds them, the others serve them.
    cluster.kill(1)
    read = ck_consume(cluster.bootstrap, topic, count=50, timeout=60)
    assert [m.value() for m in read] == [b"%d" % i for i in range(50)]


@pytest.mark.client("java")
@pytest.mark.api("AlterPartitionReassignments", "replication")
def test_kafka_reassign_partitions_can_refuse_a_change_of_replication_factor(
    cluster, cluster_admin, tmp_path
):
    """AlterPartitionReassignments v1's AllowReplicationFactorChange=false:
    a plan from one replica to two is refused with Kafka's message and
    leaves the partition alone; a plan that keeps one replica still moves it."""
    topic = topic_on_broker_1(cluster, cluster_admin, "fixed-rf")

    def execute(replicas: list[int]):
        plan = reassignment_plan(tmp_path, topic, replicas)
        return run_tool(
            "kafka-reassign-partitions",
            *("--bootstrap-server", cluster.bootstrap, "--reassignment-json-file", str(plan)),
            *("--execute", "--disallow-replication-factor-change"),
            timeout=120,
        )

    refused = execute([1, 2])
    assert refused.returncode != 0, refused.stdout
    said = refused.stdout + refused.stderr
    assert f"{topic}-0: The replication factor is changed from 1 to 2" in said, said
    assert sorted(partitions_of(cluster_admin, topic)[0].replicas) == [1]
    moved = execute([2])
    assert moved.returncode == 0, moved.stdout + moved.stderr
    wait_until(
        lambda: sorted(partitions_of(cluster_admin, topic)[0].replicas) == [2],
        timeout=90,
        message="for the one replica to move to broker 2",
    )
