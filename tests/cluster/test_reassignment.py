"""Partition reassignment moves data between brokers, driven by Kafka's own tools.

kafka-reassign-partitions --execute starts the move, the new replicas copy the
log, --verify reports it complete once the old replicas are gone; the records
are all there on the new replicas, and the old replica's log is deleted.
kafka-leader-election --election-type preferred moves leadership back.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from tests.cluster.checker import read_everything
from tests.cluster.test_failover import create, partitions_of, wait_until
from tools import kafka_cli

pytestmark = pytest.mark.slow


def test_kafka_reassign_partitions_moves_a_partition_to_other_brokers(cluster, tmp_path):
    create(cluster, "moving", partitions=1, rf=2)
    _, before, _ = partitions_of(cluster, "moving")[0]
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(50):
        producer.produce("moving", f"v{i}".encode())
    assert producer.flush(30) == 0
    leaving = before[0]
    target = [r for r in (1, 2, 3) if r != leaving]
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": target}]}
        )
    )
    args = ["--bootstrap-server", cluster.bootstrap, "--reassignment-json-file", str(plan)]
    out = kafka_cli.run_tool("kafka-reassign-partitions", *args, "--execute")
    assert out.returncode == 0, out.stderr
    assert "Successfully started partition reassignment" in out.stdout

    def verified():
        result = kafka_cli.run_tool("kafka-reassign-partitions", *args, "--verify")
        return "Reassignment of partition moving-0 is completed" in result.stdout

    wait_until(verified, "kafka-reassign-partitions --verify to report it complete")
    leader, replicas, isr = partitions_of(cluster, "moving")[0]
    assert sorted(replicas) == sorted(target) and sorted(isr) == sorted(target)
    assert leader in target
    values = [v for _, _, v in read_everything(cluster.bootstrap, "moving", 1)[0]]
    assert values == [f"v{i}".encode() for i in range(50)]
    old_dir = cluster.brokers[leaving].data_dir / "moving-0"
    wait_until(lambda: not old_dir.exists(), "the leaving replica's log to be deleted")


@pytest.mark.cluster_settings(**{"auto.leader.rebalance.enable": "false"})
def test_kafka_leader_election_moves_leadership_to_the_preferred_replica(cluster):
    create(cluster, "elected", partitions=1)
    preferred = partitions_of(cluster, "elected")[0][1][0]
    cluster.kill(preferred)
    wait_until(lambda: partitions_of(cluster, "elected")[0][0] not in (preferred, -1), "failover")
    cluster.restart(preferred)
    wait_until(lambda: len(partitions_of(cluster, "elected")[0][2]) == 3, "the ISR whole again")
    out = kafka_cli.run_tool(
        "kafka-leader-election",
        "--bootstrap-server",
        cluster.bootstrap,
        "--election-type",
        "preferred",
        "--topic",
        "elected",
        "--partition",
        "0",
    )
    assert out.returncode == 0, out.stderr
    assert "Successfully completed leader election (PREFERRED)" in out.stdout
    assert partitions_of(cluster, "elected")[0][0] == preferred
