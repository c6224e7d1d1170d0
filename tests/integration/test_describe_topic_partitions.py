"""DescribeTopicPartitions (key 75) on a real Gregor process: Kafka 4.3.1's
kafka-topics --describe and kafka-python's describe_topic_partitions use it,
and answers come a page at a time (response_partition_limit and a cursor), as
Apache Kafka pages them (compared against a real Kafka node with the same
requests).

One broker serves the module; every test uses its own topic names.
"""

from __future__ import annotations

import pytest
from kafka.admin import KafkaAdminClient

from tests.support.gregor import GregorNode
from tests.support.raw import kafka_request
from tests.support.topics import create_topic, unique_name
from tools import kafka_cli
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.schema import ZERO_UUID

needs_java = pytest.mark.skipif(
    not (kafka_cli.java_available() and kafka_cli.jars_available()),
    reason="Kafka's CLI tools are not installed (make clients)",
)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    node = GregorNode(tmp_path_factory.mktemp("describe-topic-partitions") / "data").start()
    yield node
    node.stop()


def create_topics(broker, prefix: str = "dtp", **partitions: int) -> dict[str, str]:
    """Create topics sharing a fresh prefix: a=3 -> {"a": "<prefix>-<hex>-a"}."""
    prefix = unique_name(prefix)
    return {
        key: create_topic(broker.bootstrap, f"{prefix}-{key}", count)
        for key, count in partitions.items()
    }


def describe(broker, topics, limit=2000, cursor=None):
    body = {
        "topics": [{"name": t} for t in topics],
        "response_partition_limit": limit,
        "cursor": None
        if cursor is None
        else {"topic_name": cursor[0], "partition_index": cursor[1]},
    }
    return kafka_request(broker.bootstrap, ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, body)


def pages(response):
    """(topic, [partition indexes]) per topic, and the next cursor."""
    got = [(t.name, [p.partition_index for p in t.partitions]) for t in response.topics]
    cursor = response.next_cursor
    return got, None if cursor is None else (cursor.topic_name, cursor.partition_index)


def test_kafka_python_describes_a_topic(broker):
    names = create_topics(broker, a=3)
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=20000)
    try:
        out = client.describe_topic_partitions([names["a"]])
    finally:
        client.close()
    (desc,) = out["topics"]
    assert (desc["name"], desc["error_code"], desc["is_internal"]) == (names["a"], 0, False)
    assert desc["topic_id"] is not None
    assert [
        (p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"])
        for p in desc["partitions"]
    ] == [(i, 1, [1], [1]) for i in range(3)]


@needs_java
def test_kafka_topics_describe_pages_through_partitions(broker):
    """kafka-topics asks two partitions at a time and follows the cursor."""
    names = create_topics(broker, a=3, b=2)
    described = kafka_cli.run_tool(
        "kafka-topics", "--bootstrap-server", broker.bootstrap, "--describe",
        "--topic", f"{names['a'][:-2]}.*", "--partition-size-limit-per-response", "2",
    )  # fmt: skip
    assert described.returncode == 0, described.stderr
    headers, partitions = {}, {}
    for line in described.stdout.strip().splitlines():
        fields = dict(f.split(": ", 1) for f in line.strip().split("\t") if ": " in f)
        if "PartitionCount" in fields:
            headers[fields["Topic"]] = fields["PartitionCount"]
        else:
            partitions.setdefault(fields["Topic"], []).append(line.strip())
    assert headers == {names["a"]: "3", names["b"]: "2"}
    for key, count in (("a", 3), ("b", 2)):
        topic = names[key]
        assert partitions[topic] == [
            f"Topic: {topic}\tPartition: {i}\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr:"
            for i in range(count)
        ]


def test_limit_and_cursor_page_as_kafka_does(broker):
    n = create_topics(broker, a=3, b=2, c=1)
    a, b, c = n["a"], n["b"], n["c"]
    everything = [a, b, c]
    assert pages(describe(broker, everything)) == ([(a, [0, 1, 2]), (b, [0, 1]), (c, [0])], None)
    # The limit cuts inside a topic: the cursor names the first partition left out...
    assert pages(describe(broker, everything, limit=2)) == ([(a, [0, 1])], (a, 2))
    # ...or the next topic when the limit ran out at a topic's end.
    assert pages(describe(broker, everything, limit=3)) == ([(a, [0, 1, 2])], (b, 0))
    assert pages(describe(broker, everything, limit=4)) == ([(a, [0, 1, 2]), (b, [0])], (b, 1))
    # A limit below 1 counts as 1.
    assert pages(describe(broker, everything, limit=0)) == ([(a, [0])], (a, 1))
    # Resuming at the cursor skips the topics before it.
    assert pages(describe(broker, everything, cursor=(b, 1))) == ([(b, [1]), (c, [0])], None)
    assert pages(describe(broker, everything, cursor=(b, 5))) == ([(b, []), (c, [0])], None)


def test_every_topic_when_none_is_named(broker):
    n = create_topics(broker, prefix="zzz", a=2, b=1)  # no other topic sorts after them
    response = describe(broker, [], limit=1, cursor=(n["a"], 1))
    got, cursor = pages(response)
    assert got[0] == (n["a"], [1])
    assert cursor == (n["b"], 0)
    assert all(t.name >= n["a"] for t in response.topics)


def test_unknown_and_invalid_topics_use_none_of_the_limit(broker):
    n = create_topics(broker, a=1, b=2)
    missing = n["a"] + "-missing"
    response = describe(broker, [n["b"], "bad name!", missing, n["a"]], limit=3)
    assert [(t.name, t.error_code, t.topic_id == ZERO_UUID) for t in response.topics] == [
        ("bad name!", ErrorCode.INVALID_TOPIC_EXCEPTION, True),
        (n["a"], ErrorCode.NONE, False),
        (missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True),
        (n["b"], ErrorCode.NONE, False),
    ]
    assert response.next_cursor is None


@pytest.mark.parametrize("cursor_partition", [0, -1], ids=["topic not listed", "negative"])
def test_a_bad_cursor_is_invalid_request(broker, cursor_partition):
    n = create_topics(broker, a=1, b=1)
    listed = [n["a"]] if cursor_partition == 0 else [n["a"], n["b"]]
    response = describe(broker, listed, cursor=(n["b"], cursor_partition))
    assert [(t.name, t.error_code, t.partitions) for t in response.topics] == [
        (name, ErrorCode.INVALID_REQUEST, []) for name in listed
    ]
    assert response.next_cursor is None
