"""KIP-392: a consumer reads from the in-sync replica in its own rack.

With replica.selector.class set to Kafka's RackAwareReplicaSelector, the
leader answers a consumer's Fetch (v11+, carrying the client's rack) with the
preferred read replica instead of records, and that follower serves the
consumer up to its own high watermark. Without client metadata (before v11)
a follower still refuses consumers.
"""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from tests.cluster.test_failover import create, partitions_of, wait_until
from tests.support.raw import kafka_request
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.records import iter_batches

pytestmark = [
    pytest.mark.slow,
    pytest.mark.cluster_settings(
        racks=True,
        **{"replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector"},
    ),
]


def fetch(bootstrap: str, topic_id, version: int, rack: str = ""):
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": "near",
                "topic_id": topic_id,
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": rack,
    }
    response = kafka_request(bootstrap, ApiKey.FETCH, version, body)
    return response.responses[0].partitions[0]


def test_the_leader_sends_a_consumer_to_the_replica_in_its_rack(cluster):
    create(cluster, "near", partitions=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce("near", f"v{i}".encode())
    assert producer.flush(30) == 0
    leader, replicas, _ = partitions_of(cluster, "near")[0]
    follower = next(r for r in replicas if r != leader)
    topic_id = _topic_id(cluster, leader)
    at_leader = cluster.brokers[leader].bootstrap
    at_follower = cluster.brokers[follower].bootstrap

    answer = fetch(at_leader, topic_id, 13, rack=f"rack-{follower}")
    assert (answer.error_code, answer.preferred_read_replica) == (ErrorCode.NONE, follower)
    assert not answer.records
    # The leader's own rack, or no rack: the leader serves it.
    assert fetch(at_leader, topic_id, 13, rack=f"rack-{leader}").preferred_read_replica == -1
    assert fetch(at_leader, topic_id, 13).preferred_read_replica == -1

    def follower_serves_all():
        got = fetch(at_follower, topic_id, 13, rack=f"rack-{follower}")
        offsets = [h.last_offset for _, h in iter_batches(bytes(got.records or b""))]
        return got.error_code == ErrorCode.NONE and offsets and offsets[-1] == 9

    wait_until(follower_serves_all, "the follower to serve all ten records")
    # A consumer without client metadata (Fetch v10) may not read from a follower.
    assert fetch(at_follower, None, 10).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_confluent_consumer_with_client_rack_reads_from_its_rack(cluster, caplog):
    create(cluster, "near", partitions=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(20):
        producer.produce("near", f"v{i}".encode())
    assert producer.flush(30) == 0
    leader, replicas, _ = partitions_of(cluster, "near")[0]
    follower = next(r for r in replicas if r != leader)
    logger = logging.getLogger("librdkafka-fetch")
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "near-readers",
            "client.rack": f"rack-{follower}",
            "debug": "fetch,topic",
        },
        logger=logger,
    )
    try:
        with caplog.at_level(logging.DEBUG, logger="librdkafka-fetch"):
            consumer.assign([TopicPartition("near", 0, OFFSET_BEGINNING)])
            values = []

            def read_all():
                m = consumer.poll(0.5)
                if m is not None and not m.error():
                    values.append(m.value())
                return len(values) == 20

            wait_until(read_all, "all twenty records")
    finally:
        consumer.close()
    assert values == [f"v{i}".encode() for i in range(20)]
    # librdkafka's own account: it moved the partition to the follower the leader named.
    assert f"migrating from broker {leader} to {follower}" in caplog.text
    assert "preferred replica updated" in caplog.text


def _topic_id(cluster, node_id):
    body = {"topics": [{"name": "near"}], "allow_auto_topic_creation": False}
    response = kafka_request(cluster.brokers[node_id].bootstrap, ApiKey.METADATA, 12, body)
    return response.topics[0].topic_id
