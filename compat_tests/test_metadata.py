"""Metadata for unknown topics, with and without auto-creation (the broker runs with
auto.create.topics.enable=true and num.partitions=1)."""

from __future__ import annotations

import time

import pytest
from compatlib import franz, java
from compatlib.common import ck_watermarks, unique, wait_until

UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
INVALID_TOPIC_EXCEPTION = 17


def exists(admin, t) -> bool:
    return t in admin.list_topics(timeout=5).topics


def franz_metadata(bootstrap, t, auto_create=False):
    args = ["--topic", t] + (["--auto-create"] if auto_create else [])
    res = franz.run("admin metadata", *args, brokers=bootstrap)
    assert res.returncode == 0, res
    (topic,) = [x for x in res.lines if "topic" in x]
    return topic


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("Metadata", "auto-create")
def test_unknown_topic_without_auto_create_confluent(bootstrap, admin, name):
    from confluent_kafka import Consumer, KafkaError

    t = name()
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": unique("g"), "allow.auto.create.topics": False}
    )
    try:
        md = c.list_topics(topic=t, timeout=10)
    finally:
        c.close()
    assert md.topics[t].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    time.sleep(0.5)
    assert not exists(admin, t)


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("Metadata", "auto-create")
def test_unknown_topic_auto_created_by_producer_metadata_confluent(bootstrap, admin, name):
    from confluent_kafka import Producer

    t = name()
    p = Producer({"bootstrap.servers": bootstrap})  # producers allow auto-creation
    p.list_topics(topic=t, timeout=10)
    wait_until(
        lambda: len(admin.list_topics(topic=t, timeout=5).topics[t].partitions) == 1,
        message="auto-created with num.partitions=1",
    )
    p.produce(t, b"first")
    assert p.flush(15) == 0
    assert ck_watermarks(bootstrap, t) == (0, 1)


@pytest.mark.client("franz-go")
@pytest.mark.api("Metadata", "auto-create")
def test_metadata_auto_create_flag_franz(bootstrap, admin, name):
    t = name()
    assert franz_metadata(bootstrap, t)["code"] == UNKNOWN_TOPIC_OR_PARTITION
    time.sleep(0.5)
    assert not exists(admin, t)
    franz_metadata(bootstrap, t, auto_create=True)
    wait_until(
        lambda: franz_metadata(bootstrap, t) == {"topic": t, "code": 0, "partitions": 1},
        message="topic auto-created",
    )


@pytest.mark.client("franz-go")
@pytest.mark.api("Metadata", "auto-create")
def test_metadata_auto_create_first_answer_franz(bootstrap, name):
    """Kafka creates the topic through its controller and answers the first request with a
    retriable error; the topic appears on a later request."""
    t = name()
    first = franz_metadata(bootstrap, t, auto_create=True)
    assert first["code"] in (UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE), first


@pytest.mark.client("franz-go")
@pytest.mark.api("Metadata", "auto-create", "errors")
@pytest.mark.parametrize("bad", ["bad name!", "a" * 250, ".."], ids=["chars", "too-long", "dotdot"])
def test_metadata_auto_create_invalid_name_franz(bootstrap, admin, bad):
    assert franz_metadata(bootstrap, bad, auto_create=True)["code"] == INVALID_TOPIC_EXCEPTION
    assert not exists(admin, bad)


@pytest.mark.client("franz-go")
@pytest.mark.api("Produce", "Metadata", "auto-create")
def test_produce_to_unknown_topic_franz(bootstrap, name):
    t = name()
    res = franz.run("produce", "--topic", t, "--count", 1, brokers=bootstrap)
    assert res.returncode == 1
    assert res.lines[0]["code"] == UNKNOWN_TOPIC_OR_PARTITION, res
    res = franz.run("produce", "--topic", t, "--count", 1, "--auto-create", brokers=bootstrap)
    assert res.returncode == 0, res
    assert res.lines[0]["offset"] == 0


@pytest.mark.client("java")
@pytest.mark.api("Produce", "Metadata", "auto-create")
def test_produce_to_unknown_topic_java_console_producer(bootstrap, admin, name):
    t = name()
    p = java.run(
        "kafka-console-producer", "--bootstrap-server", bootstrap, "--topic", t, input="one\ntwo\n"
    )
    assert p.returncode == 0, p.stderr
    assert ck_watermarks(bootstrap, t) == (0, 2)
    assert len(admin.list_topics(topic=t, timeout=5).topics[t].partitions) == 1


@pytest.mark.client("java")
@pytest.mark.api("Metadata", "DescribeTopicPartitions")
def test_describe_unknown_topic_java(bootstrap, admin, name):
    t = name()
    p = java.run("kafka-topics", "--bootstrap-server", bootstrap, "--describe", "--topic", t)
    assert p.returncode == 1
    assert f"Topic '{t}' does not exist as expected" in p.stdout
    assert not exists(admin, t)


@pytest.mark.client("kafka-python")
@pytest.mark.api("Metadata", "auto-create")
def test_unknown_topic_kafka_python(bootstrap, admin, name):
    from kafka import KafkaConsumer, KafkaProducer

    t = name()
    c = KafkaConsumer(bootstrap_servers=bootstrap, allow_auto_create_topics=False)
    try:
        assert not c.partitions_for_topic(t)
    finally:
        c.close()
    assert not exists(admin, t)
    p = KafkaProducer(bootstrap_servers=bootstrap)  # allow_auto_create_topics=True
    try:
        assert p.send(t, b"v").get(timeout=30).offset == 0
    finally:
        p.close(timeout=10)
    assert exists(admin, t)


@pytest.mark.client("kcat")
@pytest.mark.api("Metadata")
def test_metadata_listing_kcat(bootstrap, topic):
    import json

    t = topic(partitions=3)
    p = java.kcat("-b", bootstrap, "-L", "-J", "-t", t)
    assert p.returncode == 0, p.stderr
    md = json.loads(p.stdout)
    (td,) = md["topics"]
    assert td["topic"] == t and "error" not in td
    assert [x["partition"] for x in td["partitions"]] == [0, 1, 2]
    assert all(x["leader"] == 1 and x["isrs"] == [{"id": 1}] for x in td["partitions"])
    assert md["controllerid"] == 1
