"""Cluster admin APIs a single node answers as Kafka 4.3.1 does: partition
reassignments (Gregor never moves replicas), with kafka-python's admin client
and Kafka's own kafka-reassign-partitions tool."""

from __future__ import annotations

import pytest
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KpNewTopic
from kafka.errors import NoReassignmentInProgressError
from kafka.structs import TopicPartition

from tests.support.gregor import GregorNode
from tests.support.raw import kafka_request
from tools import kafka_cli
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

# kafka_cli has no short name for it; the class kafka-reassign-partitions.sh runs.
REASSIGN_TOOL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"

needs_java = pytest.mark.skipif(
    not (kafka_cli.java_available() and kafka_cli.jars_available()),
    reason="Kafka's CLI tools are not installed (make clients)",
)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    node = GregorNode(
        tmp_path_factory.mktemp("admin-cluster") / "data",
        {"auto.create.topics.enable": "false"},
    ).start()
    yield node
    node.stop()


@pytest.fixture(scope="module")
def kp_admin(broker):
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=20000)
    client.create_topics([KpNewTopic("reassign-me", 2, 1)])
    yield client
    client.close()


# --- ListPartitionReassignments -------------------------------------------------------


def test_kafka_python_lists_no_ongoing_reassignments(kp_admin):
    assert kp_admin.list_partition_reassignments() == {}


@pytest.mark.parametrize(
    "topics",
    [
        None,
        [{"name": "reassign-me", "partition_indexes": [0, 5]}],
        [{"name": "no-such-topic", "partition_indexes": [0]}],
    ],
    ids=["all", "named", "unknown-topic"],
)
def test_listing_reassignments_answers_an_empty_list_as_kafka_does(broker, kp_admin, topics):
    response = kafka_request(
        broker.bootstrap,
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        0,
        {"timeout_ms": 1000, "topics": topics},
    )
    assert response.error_code == ErrorCode.NONE
    assert response.error_message is None
    assert response.topics == []


@needs_java
def test_kafka_reassign_partitions_tool_lists_nothing_in_progress(broker, kp_admin):
    listed = kafka_cli.run_tool(REASSIGN_TOOL, "--bootstrap-server", broker.bootstrap, "--list")
    assert listed.returncode == 0, listed.stderr
    assert "No partition reassignments found." in listed.stdout


# --- AlterPartitionReassignments ------------------------------------------------------


def node_id(kp_admin) -> int:
    return kp_admin.describe_cluster()["brokers"][0]["broker_id"]


def test_kafka_python_reassigning_to_the_current_replicas_succeeds(kp_admin):
    me = node_id(kp_admin)
    result = kp_admin.alter_partition_reassignments({TopicPartition("reassign-me", 0): [me]})
    assert result == {TopicPartition("reassign-me", 0): None}
    assert kp_admin.list_partition_reassignments() == {}


def test_kafka_python_cancelling_finds_no_reassignment_in_progress(kp_admin):
    result = kp_admin.alter_partition_reassignments({TopicPartition("reassign-me", 1): None})
    assert result == {TopicPartition("reassign-me", 1): NoReassignmentInProgressError}


def alter(broker, name, index, replicas, version=0, allow_replication_factor_change=True):
    response = kafka_request(
        broker.bootstrap,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        version,
        {
            "timeout_ms": 1000,
            "allow_replication_factor_change": allow_replication_factor_change,
            "topics": [
                {"name": name, "partitions": [{"partition_index": index, "replicas": replicas}]}
            ],
        },
    )
    assert response.error_code == ErrorCode.NONE
    # v1 answers whether the request allowed a change of replication factor.
    assert response.allow_replication_factor_change is (
        allow_replication_factor_change if version >= 1 else True
    )
    [topic] = response.responses
    assert topic.name == name
    [partition] = topic.partitions
    assert partition.partition_index == index
    return partition.error_code, partition.error_message


def test_reassignment_errors_name_what_is_wrong_as_kafka_does(broker, kp_admin):
    me = node_id(kp_admin)
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    invalid = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert alter(broker, "no-such-topic", 0, [me]) == (
        unknown,
        "Unable to find a topic named no-such-topic.",
    )
    assert alter(broker, "no-such-topic", 0, None) == (
        unknown,
        "Unable to find a topic named no-such-topic.",
    )
    assert alter(broker, "reassign-me", 9, None) == (
        unknown,
        "Unable to find partition reassign-me:9.",
    )
    assert alter(broker, "reassign-me", 0, []) == (
        invalid,
        "The manual partition assignment includes an empty replica list.",
    )
    assert alter(broker, "reassign-me", 0, [me, me + 7]) == (
        invalid,
        f"The manual partition assignment includes broker {me + 7}, but no such broker is registered.",
    )
    assert alter(broker, "reassign-me", 0, [me, me]) == (
        invalid,
        f"The manual partition assignment includes the broker {me} more than once.",
    )
    assert alter(broker, "reassign-me", 0, None) == (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)


def test_v1_refusing_a_replication_factor_change_checks_the_replica_list_first(broker, kp_admin):
    """On one broker a replication factor can only change towards a broker that
    does not exist, which the replica list's check answers first; keeping the
    partition's one replica is allowed. (compat_tests/cluster refuses a real
    change, on three brokers of each kind.)"""
    me = node_id(kp_admin)
    refuse = {"version": 1, "allow_replication_factor_change": False}
    assert alter(broker, "reassign-me", 0, [me], **refuse) == (ErrorCode.NONE, None)
    assert alter(broker, "reassign-me", 0, [me, me + 7], **refuse) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        f"The manual partition assignment includes broker {me + 7}, but no such broker is registered.",
    )
    assert alter(broker, "reassign-me", 0, [me], version=1) == (ErrorCode.NONE, None)


def test_altering_no_topics_answers_an_empty_message_as_kafka_does(broker, kp_admin):
    response = kafka_request(
        broker.bootstrap,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        0,
        {"timeout_ms": 1000, "topics": []},
    )
    assert (response.error_code, response.error_message, response.responses) == (0, "", [])


# --- ElectLeaders ---------------------------------------------------------------------

LEADER_ELECTION_TOOL = "org.apache.kafka.tools.LeaderElectionCommand"
PREFERRED, UNCLEAN = 0, 1


def elect(broker, version, election_type, topic_partitions):
    body = {
        "election_type": election_type,
        "topic_partitions": topic_partitions,
        "timeout_ms": 1000,
    }
    response = kafka_request(broker.bootstrap, ApiKey.ELECT_LEADERS, version, body)
    assert response.error_code == ErrorCode.NONE
    return {
        r.topic: [(p.partition_id, p.error_code, p.error_message) for p in r.partition_result]
        for r in response.replica_election_results
    }


@pytest.mark.parametrize(
    ("version", "election_type"),
    [(0, PREFERRED), (1, PREFERRED), (1, UNCLEAN), (2, PREFERRED), (2, UNCLEAN)],
)
def test_electing_the_current_leader_is_not_needed_as_kafka_answers(
    broker, kp_admin, version, election_type
):
    named = [
        {"topic": "reassign-me", "partitions": [0, 9]},
        {"topic": "no-such-topic", "partitions": [0]},
    ]
    assert elect(broker, version, election_type, named) == {
        "reassign-me": [
            (0, ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."),
            (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as reassign-me-9"),
        ],
        "no-such-topic": [
            (0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as no-such-topic")
        ],
    }
    # All partitions: each topic is listed, without the partitions that needed no election.
    everything = elect(broker, version, election_type, None)
    assert everything["reassign-me"] == []
    assert all(results == [] for results in everything.values())
    assert elect(broker, version, election_type, []) == {}


def test_kafka_python_elects_leaders_for_all_partitions(kp_admin):
    response = kp_admin.elect_leaders(PREFERRED)
    # kafka-python names every partition it knows of rather than sending null.
    results = {r.topic: r.partition_result for r in response.replica_election_results}
    assert sorted((p.partition_id, p.error_code) for p in results["reassign-me"]) == [
        (0, ErrorCode.ELECTION_NOT_NEEDED),
        (1, ErrorCode.ELECTION_NOT_NEEDED),
    ]


@needs_java
def test_kafka_leader_election_tool_finds_no_election_needed(broker, kp_admin):
    elected = kafka_cli.run_tool(
        LEADER_ELECTION_TOOL, "--bootstrap-server", broker.bootstrap,
        "--election-type", "PREFERRED", "--topic", "reassign-me", "--partition", "0",
    )  # fmt: skip
    assert elected.returncode == 0, elected.stderr
    assert "Valid replica already elected for partitions reassign-me-0" in elected.stdout
