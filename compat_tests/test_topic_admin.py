"""Topic administration: create, describe, alter configs, add partitions, delete, and errors."""

from __future__ import annotations

import asyncio
import os
import re

import pytest
from compatlib import franz, java
from compatlib.common import ck_produce, unique, wait_for_leaders, wait_until

# --- confluent-kafka (librdkafka) ---------------------------------------------------


@pytest.mark.client("confluent-kafka")
@pytest.mark.api(
    "CreateTopics",
    "Metadata",
    "DescribeConfigs",
    "IncrementalAlterConfigs",
    "CreatePartitions",
    "DeleteTopics",
)
def test_topic_lifecycle_confluent(admin, name):
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
        NewPartitions,
        NewTopic,
    )

    t = name()
    admin.create_topics([NewTopic(t, 3, 1, config={"retention.ms": "123456"})])[t].result(20)
    wait_for_leaders(admin, t, 3)

    desc = admin.describe_topics(_topic_collection([t]))[t].result(20)
    assert [p.id for p in desc.partitions] == [0, 1, 2]
    assert all(p.leader is not None and p.leader.id == 1 for p in desc.partitions)

    res = ConfigResource("topic", t)
    configs = admin.describe_configs([res])[res].result(20)
    assert configs["retention.ms"].value == "123456"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["cleanup.policy"].value == "delete"
    assert configs["cleanup.policy"].source == ConfigSource.DEFAULT_CONFIG.value

    change = ConfigResource(
        "topic",
        t,
        incremental_configs=[
            ConfigEntry("retention.ms", "999999", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("max.message.bytes", "65536", incremental_operation=AlterConfigOpType.SET),
        ],
    )
    admin.incremental_alter_configs([change])[change].result(20)
    # Kafka's broker learns of a change from the metadata log a moment after the
    # controller accepts it, so DescribeConfigs right after may still show the old value.
    configs = wait_until(
        lambda: described_once(admin, res, "retention.ms", "999999"), message="change visible"
    )
    assert configs["max.message.bytes"].value == "65536"

    delete = ConfigResource(
        "topic",
        t,
        incremental_configs=[
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)
        ],
    )
    admin.incremental_alter_configs([delete])[delete].result(20)
    configs = wait_until(
        lambda: described_once(admin, res, "retention.ms", "604800000"), message="delete visible"
    )
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    admin.create_partitions([NewPartitions(t, 5)])[t].result(20)
    wait_for_leaders(admin, t, 5)

    admin.delete_topics([t])[t].result(20)
    wait_until(lambda: t not in admin.list_topics(timeout=5).topics, message=f"{t} deleted")


def described_once(admin, resource, key: str, value: str):
    """The resource's configs when `key` is described as `value`, else None."""
    configs = admin.describe_configs([resource])[resource].result(20)
    return configs if configs[key].value == value else None


def _topic_collection(names):
    from confluent_kafka import TopicCollection

    return TopicCollection(names)


def _confluent_error(fut):
    with pytest.raises(Exception) as info:
        fut.result(20)
    err = info.value.args[0]
    return err.code(), err.str()


# (id, action, expected code, expected message: a regex; {t} is the existing topic)
CONFLUENT_ERRORS = [
    ("duplicate", "create_existing", 36, r"Topic '{t}' already exists\."),
    (
        "bad-chars",
        "create:bad name!",
        17,
        r"Topic name is invalid: 'bad name!' contains one or more characters other than "
        r"ASCII alphanumerics, '\.', '_' and '-'",
    ),
    ("dot", "create:.", 17, r"Topic name is invalid: '\.' is not allowed"),
    ("dotdot", "create:..", 17, r"Topic name is invalid: '\.\.' is not allowed"),
    (
        "too-long",
        "create:" + "a" * 250,
        17,
        r"Topic name is invalid: the length of 'a{{250}}' is longer than the max allowed length 249",
    ),
    ("collision", "create_colliding", 17, r"Topic '{c}' collides with existing topic: {t}"),
    (
        "replication-factor",
        "create_rf3",
        38,
        r"Unable to replicate the partition 3 time\(s\): The target replication factor of 3 "
        r"cannot be reached because only 1 broker\(s\) are registered",
    ),
    (
        "zero-partitions",
        "create_p0",
        37,
        r"Number of partitions was set to an invalid non-positive value\.",
    ),
    ("unknown-config", "create_cfg:foo.bar=1", 40, r"Unknown topic config name: foo\.bar"),
    (
        "bad-config-type",
        "create_cfg:retention.ms=abc",
        40,
        r"Invalid value abc for configuration retention\.ms: Not a number of type LONG",
    ),
    (
        "bad-config-choice",
        "create_cfg:cleanup.policy=zap",
        40,
        r"Invalid value zap for configuration cleanup\.policy: String must be one of: compact, delete",
    ),
    (
        "partitions-decrease",
        "partitions:2",
        37,
        r"The topic {t} currently has 3 partition\(s\); 2 would not be an increase\.",
    ),
    ("partitions-same", "partitions:3", 37, r"Topic already has 3 partition\(s\)\."),
    ("partitions-unknown-topic", "partitions_unknown", 3, r".*"),
    ("delete-unknown", "delete_unknown", 3, r".*"),
    ("describe-configs-unknown", "describe_configs_unknown", 3, r".*"),
    ("alter-unknown-key", "alter:foo.bar=1", 40, r"Unknown topic config name: foo\.bar"),
    (
        "alter-bad-value",
        "alter:retention.ms=abc",
        40,
        r"Invalid value abc for configuration retention\.ms: Not a number of type LONG",
    ),
    ("alter-unknown-topic", "alter_unknown", 3, r"The topic '{u}' does not exist\."),
]


@pytest.fixture
def existing_topic(topic):
    return topic(partitions=3)


@pytest.mark.client("confluent-kafka")
@pytest.mark.api(
    "CreateTopics",
    "CreatePartitions",
    "DeleteTopics",
    "DescribeConfigs",
    "IncrementalAlterConfigs",
    "errors",
)
@pytest.mark.parametrize("case", CONFLUENT_ERRORS, ids=[c[0] for c in CONFLUENT_ERRORS])
def test_topic_errors_confluent(admin, existing_topic, case):
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
    )

    _, action, want_code, want_message = case
    t = existing_topic
    u = unique("missing")
    colliding = t.replace("-", "_") + ".x"
    kind, _, arg = action.partition(":")
    if kind == "create_existing":
        fut = admin.create_topics([NewTopic(t, 1, 1)])[t]
    elif kind == "create":
        fut = admin.create_topics([NewTopic(arg, 1, 1)])[arg]
    elif kind == "create_colliding":
        first = t.replace("-", "_") + "_x"
        admin.create_topics([NewTopic(first, 1, 1)])[first].result(20)
        t = first
        fut = admin.create_topics([NewTopic(colliding, 1, 1)])[colliding]
    elif kind == "create_rf3":
        fut = admin.create_topics([NewTopic(u, 1, 3)])[u]
    elif kind == "create_p0":
        fut = admin.create_topics([NewTopic(u, 0, 1)])[u]
    elif kind == "create_cfg":
        k, _, v = arg.partition("=")
        fut = admin.create_topics([NewTopic(u, 1, 1, config={k: v})])[u]
    elif kind == "partitions":
        fut = admin.create_partitions([NewPartitions(t, int(arg))])[t]
    elif kind == "partitions_unknown":
        fut = admin.create_partitions([NewPartitions(u, 4)])[u]
    elif kind == "delete_unknown":
        fut = admin.delete_topics([u])[u]
    elif kind == "describe_configs_unknown":
        res = ConfigResource("topic", u)
        fut = admin.describe_configs([res])[res]
    elif kind in ("alter", "alter_unknown"):
        k, _, v = (arg or "retention.ms=1000").partition("=")
        res = ConfigResource(
            "topic",
            t if kind == "alter" else u,
            incremental_configs=[ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)],
        )
        fut = admin.incremental_alter_configs([res])[res]
    else:
        raise AssertionError(kind)
    code, message = _confluent_error(fut)
    assert code == want_code, message
    pattern = want_message.format(t=re.escape(t), u=re.escape(u), c=re.escape(colliding))
    assert re.match(pattern, message), f"{message!r} does not match {pattern!r}"
    if kind.startswith("create") and kind != "create_existing":
        assert u not in admin.list_topics(timeout=5).topics


# --- kafka-python ----------------------------------------------------------------


@pytest.fixture
def kp_admin(bootstrap):
    from kafka import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
    yield a
    a.close()


@pytest.mark.client("kafka-python")
@pytest.mark.api(
    "CreateTopics",
    "Metadata",
    "DescribeConfigs",
    "AlterConfigs",
    "CreatePartitions",
    "DeleteTopics",
)
def test_topic_lifecycle_kafka_python(kp_admin, name):
    from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions

    t = name()
    res = kp_admin.create_topics(
        {t: {"num_partitions": 2, "replication_factor": 1, "configs": {"retention.ms": "123456"}}}
    )
    created = res["topics"][0]
    assert created["error_code"] == 0
    assert created["num_partitions"] == 2
    assert created["configs"]["retention.ms"]["value"] == "123456"
    assert created["configs"]["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert created["configs"]["cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"

    # Kafka's broker learns of the topic from the controller after CreateTopics
    # answers: under load a describe right away may not find it yet.
    (desc,) = wait_until(
        lambda: [d for d in kp_admin.describe_topics([t]) if d["error_code"] == 0],
        message=f"{t} described",
    )
    assert sorted(p["partition_index"] for p in desc["partitions"]) == [0, 1]
    assert desc["topic_id"] is not None

    cfg = kp_admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, t)])
    assert cfg["topic"][t]["retention.ms"]["value"] == "123456"

    kp_admin.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, t, configs={"retention.ms": "5555"})]
    )
    topic_config = ConfigResource(ConfigResourceType.TOPIC, t)
    wait_until(
        lambda: (
            kp_admin.describe_configs([topic_config])["topic"][t]["retention.ms"]["value"] == "5555"
        ),
        message="change visible",
    )

    kp_admin.create_partitions({t: NewPartitions(4)})
    wait_until(
        lambda: len(kp_admin.describe_topics([t])[0]["partitions"]) == 4, message="4 partitions"
    )

    out = kp_admin.delete_topics([t])
    assert out["topics"][0]["error_code"] == 0
    wait_until(lambda: t not in kp_admin.list_topics(), message=f"{t} deleted")


@pytest.mark.client("kafka-python")
@pytest.mark.api("CreateTopics", "CreatePartitions", "DeleteTopics", "errors")
def test_topic_errors_kafka_python(kp_admin, existing_topic):
    from kafka.admin import NewPartitions
    from kafka.errors import (
        InvalidPartitionsError,
        InvalidReplicationFactorError,
        InvalidTopicError,
        TopicAlreadyExistsError,
        UnknownTopicOrPartitionError,
    )

    t = existing_topic
    res = kp_admin.create_topics(
        {t: {"num_partitions": 1, "replication_factor": 1}}, raise_errors=False
    )
    assert res["topics"][0]["error_code"] == 36
    assert res["topics"][0]["error_message"] == f"Topic '{t}' already exists."
    with pytest.raises(TopicAlreadyExistsError):
        kp_admin.create_topics({t: {"num_partitions": 1, "replication_factor": 1}})
    with pytest.raises(InvalidTopicError):
        kp_admin.create_topics({"bad name": {"num_partitions": 1, "replication_factor": 1}})
    with pytest.raises(InvalidReplicationFactorError):
        kp_admin.create_topics({unique("rf"): {"num_partitions": 1, "replication_factor": 3}})
    with pytest.raises(InvalidPartitionsError) as info:
        kp_admin.create_partitions({t: NewPartitions(1)})
    assert "1 would not be an increase" in str(info.value)
    with pytest.raises(UnknownTopicOrPartitionError) as info:
        kp_admin.delete_topics([unique("missing")])
    assert "This server does not host this topic-partition." in str(info.value)


@pytest.mark.client("kafka-python")
@pytest.mark.api("CreateTopics")
def test_create_topics_validate_only_kafka_python(kp_admin, name):
    t = name()
    res = kp_admin.create_topics(
        {t: {"num_partitions": 3, "replication_factor": 1}}, validate_only=True
    )
    assert res["topics"][0]["error_code"] == 0
    assert res["topics"][0]["num_partitions"] == 3
    assert t not in kp_admin.list_topics()


@pytest.mark.client("kafka-python")
@pytest.mark.api("DescribeTopicPartitions")
def test_describe_topic_partitions_kafka_python(kp_admin, existing_topic):
    """The API Java's AdminClient.describeTopics (and kafka-topics --describe) prefers."""
    out = kp_admin.describe_topic_partitions([existing_topic])
    (desc,) = [t for t in out["topics"] if t["name"] == existing_topic]
    assert desc["error_code"] == 0
    assert sorted(p["partition_index"] for p in desc["partitions"]) == [0, 1, 2]
    for p in desc["partitions"]:
        assert p["leader_id"] == 1
        assert p["replica_nodes"] == [1] and p["isr_nodes"] == [1]


@pytest.mark.client("kafka-python")
@pytest.mark.api("DescribeLogDirs")
def test_describe_log_dirs_kafka_python(kp_admin, bootstrap, existing_topic):
    """The newest DescribeLogDirs both sides know (v5 with Kafka 4.3.1, which
    adds IsCordoned): each partition's size, and the volume's space."""
    ck_produce(bootstrap, existing_topic, [{"value": b"x" * 1000, "partition": 1}])
    (entry,) = kp_admin.describe_log_dirs(topic_partitions=[existing_topic])
    (log_dir,) = entry["log_dirs"]
    assert log_dir["error_code"] == 0
    assert os.path.isabs(log_dir["log_dir"])
    assert log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0
    assert log_dir["is_cordoned"] is False
    (described,) = log_dir["topics"]
    assert described["name"] == existing_topic
    sizes = {p["partition_index"]: p["partition_size"] for p in described["partitions"]}
    assert sorted(sizes) == [0, 1, 2]
    assert sizes[0] == sizes[2] == 0
    assert sizes[1] > 1000
    assert {p["offset_lag"] for p in described["partitions"]} == {0}


@pytest.mark.client("kafka-python")
@pytest.mark.api("ListConfigResources")
def test_list_config_resources_kafka_python(kp_admin, existing_topic):
    """ListConfigResources v1 (KIP-1142, Kafka 4.1): the one broker, as a broker
    and as a broker logger, and every topic; by type, or all types at once."""
    listed = kp_admin.list_config_resources()
    assert listed["broker"] == listed["broker_logger"] == ["1"]
    assert existing_topic in listed["topic"]
    assert set(listed) <= {"broker", "broker_logger", "topic", "group", "client_metrics"}
    only_topics = kp_admin.list_config_resources(["TOPIC"])
    assert list(only_topics) == ["topic"]
    assert sorted(only_topics["topic"]) == sorted(listed["topic"])


# --- franz-go ----------------------------------------------------------------------


@pytest.mark.client("franz-go")
@pytest.mark.api(
    "CreateTopics",
    "Metadata",
    "DescribeConfigs",
    "IncrementalAlterConfigs",
    "CreatePartitions",
    "DeleteTopics",
)
def test_topic_lifecycle_franz(bootstrap, name):
    t = name()
    res = franz.run(
        "admin create-topic",
        "--topic",
        t,
        "--partitions",
        2,
        "--config",
        "retention.ms=123456",
        brokers=bootstrap,
    )
    assert res.returncode == 0, res
    assert res.lines[0]["partitions"] == 2

    def described():
        r = franz.run("admin describe-topic", "--topic", t, brokers=bootstrap)
        return r.returncode == 0 and len(r.lines[0]["partitions"] or []) == 2 and r.lines[0]

    d = wait_until(described, message="topic described")
    assert all(p["leader"] == 1 and p["error"] is None for p in d["partitions"])

    res = franz.run("admin describe-configs", "--topic", t, brokers=bootstrap)
    assert res.returncode == 0, res
    assert res.lines[0]["configs"]["retention.ms"] == "123456"
    assert res.lines[0]["sources"]["retention.ms"] == "DYNAMIC_TOPIC_CONFIG"

    res = franz.run(
        "admin alter-config",
        "--topic",
        t,
        "--config",
        "segment.ms=3600000",
        "--delete",
        "retention.ms",
        brokers=bootstrap,
    )
    assert res.returncode == 0, res
    res = franz.run("admin describe-configs", "--topic", t, brokers=bootstrap)
    assert res.lines[0]["configs"]["segment.ms"] == "3600000"
    assert res.lines[0]["sources"]["retention.ms"] == "DEFAULT_CONFIG"

    res = franz.run("admin add-partitions", "--topic", t, "--partitions", 3, brokers=bootstrap)
    assert res.returncode == 0, res
    res = franz.run("admin delete-topic", "--topic", t, brokers=bootstrap)
    assert res.returncode == 0, res


@pytest.mark.client("franz-go")
@pytest.mark.api(
    "CreateTopics", "CreatePartitions", "DeleteTopics", "IncrementalAlterConfigs", "errors"
)
def test_topic_errors_franz(bootstrap, existing_topic):
    t = existing_topic
    res = franz.run("admin create-topic", "--topic", t, brokers=bootstrap)
    assert res.returncode == 1
    assert res.lines[0]["code"] == 36
    assert res.lines[0]["message"] == f"Topic '{t}' already exists."

    res = franz.run("admin create-topic", "--topic", "bad/name", brokers=bootstrap)
    assert res.lines[0]["code"] == 17, res
    assert res.lines[0]["message"].startswith("Topic name is invalid: 'bad/name' contains")

    res = franz.run(
        "admin create-topic",
        "--topic",
        unique("cfg"),
        "--config",
        "max.message.bytes=-5",
        brokers=bootstrap,
    )
    assert res.lines[0]["code"] == 40, res
    assert res.lines[0]["message"] == (
        "Invalid value -5 for configuration max.message.bytes: Value must be at least 0"
    )

    res = franz.run("admin add-partitions", "--topic", t, "--partitions", 1, brokers=bootstrap)
    assert res.lines[0]["code"] == 37, res
    assert res.lines[0]["message"] == (
        f"The topic {t} currently has 3 partition(s); 1 would not be an increase."
    )

    res = franz.run(
        "admin alter-config", "--topic", t, "--config", "segment.bytes=10", brokers=bootstrap
    )
    assert res.lines[0]["code"] == 40, res
    assert res.lines[0]["message"] == (
        "Invalid value 10 for configuration segment.bytes: Value must be at least 1048576"
    )

    res = franz.run("admin delete-topic", "--topic", unique("missing"), brokers=bootstrap)
    assert res.lines[0]["code"] == 3, res


# --- Java: kafka-topics and kafka-configs ----------------------------------------------


@pytest.mark.client("java")
@pytest.mark.api(
    "CreateTopics", "DescribeTopicPartitions", "Metadata", "CreatePartitions", "DeleteTopics"
)
def test_topic_lifecycle_java_kafka_topics(bootstrap, name):
    t = name()
    base = ("--bootstrap-server", bootstrap)
    p = java.run(
        "kafka-topics",
        *base,
        "--create",
        "--topic",
        t,
        "--partitions",
        2,
        "--replication-factor",
        1,
        "--config",
        "retention.ms=123456",
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"Created topic {t}."

    p = java.run("kafka-topics", *base, "--alter", "--topic", t, "--partitions", 3)
    assert p.returncode == 0, p.stderr

    p = java.run("kafka-topics", *base, "--describe", "--topic", t)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().splitlines()
    assert re.match(
        rf"Topic: {t}\tTopicId: \S+\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: .*"
        r"retention\.ms=123456",
        lines[0],
    ), lines[0]
    for i, line in enumerate(lines[1:]):
        assert (
            line.strip()
            == (
                f"Topic: {t}\tPartition: {i}\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: "
            ).strip()
        ), line

    p = java.run("kafka-topics", *base, "--list")
    assert t in p.stdout.split()

    p = java.run("kafka-topics", *base, "--delete", "--topic", t)
    assert p.returncode == 0, p.stderr


@pytest.mark.client("java")
@pytest.mark.api("CreateTopics", "Metadata", "errors")
def test_topic_errors_java_kafka_topics(bootstrap, existing_topic):
    base = ("--bootstrap-server", bootstrap)
    t = existing_topic
    p = java.run("kafka-topics", *base, "--create", "--topic", t)
    assert p.returncode == 1
    assert p.stdout.strip() == (
        f"Error while executing topic command : Topic '{t}' already exists."
    )
    missing = unique("missing")
    p = java.run("kafka-topics", *base, "--describe", "--topic", missing)
    assert p.returncode == 1
    assert p.stdout.strip() == (
        f"Error while executing topic command : Topic '{missing}' does not exist as expected"
    )
    p = java.run("kafka-topics", *base, "--create", "--topic", "bad name")
    assert p.returncode == 1
    assert "Topic name is invalid: 'bad name' contains one or more characters" in p.stdout


@pytest.mark.client("java")
@pytest.mark.api("IncrementalAlterConfigs", "DescribeConfigs")
def test_topic_configs_java_kafka_configs(bootstrap, existing_topic):
    t = existing_topic
    base = ("--bootstrap-server", bootstrap, "--entity-type", "topics", "--entity-name", t)
    p = java.run(
        "kafka-configs",
        *base,
        "--alter",
        "--add-config",
        "retention.ms=999999,cleanup.policy=compact",
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"Completed updating config for topic {t}."
    p = wait_until(
        lambda: described_with(
            java.run("kafka-configs", *base, "--describe"), "retention.ms=999999"
        ),
        message="change visible",
    )
    assert p.stdout.splitlines() == [
        f"Dynamic configs for topic {t} are:",
        "  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy="
        "compact, DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  retention.ms=999999 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=999999}",
    ]
    p = java.run("kafka-configs", *base, "--alter", "--add-config", "retention.ms=abc")
    assert p.returncode != 0
    assert "Invalid value abc for configuration retention.ms: Not a number of type LONG" in (
        p.stdout + p.stderr
    )


def described_with(p, text: str):
    """The finished kafka-configs --describe when its output has `text`, else None."""
    assert p.returncode == 0, p.stderr
    return p if text in p.stdout else None


# --- aiokafka ---------------------------------------------------------------------


@pytest.mark.client("aiokafka")
@pytest.mark.api("CreateTopics", "Metadata", "CreatePartitions", "DeleteTopics", "errors")
def test_topic_lifecycle_aiokafka(bootstrap, name):
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
    from aiokafka.errors import TopicAlreadyExistsError

    t = name()

    async def main():
        a = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await a.start()
        try:
            resp = await a.create_topics([NewTopic(t, 2, 1)])
            assert [x[1] for x in resp.topic_errors] == [0], resp
            resp = await a.create_topics([NewTopic(t, 2, 1)])
            assert resp.topic_errors[0][1] == TopicAlreadyExistsError.errno
            resp = await a.create_partitions({t: NewPartitions(3)})
            assert [x[1] for x in resp.topic_errors] == [0], resp
            # Kafka's brokers apply the controller's new partition to their metadata
            # after CreatePartitions answers, so a describe right away may still show 2.
            for _ in range(50):
                desc = await a.describe_topics([t])
                if len(desc[0]["partitions"]) == 3:
                    break
                await asyncio.sleep(0.2)
            assert len(desc[0]["partitions"]) == 3, desc
            await a.delete_topics([t])
            for _ in range(50):
                if t not in await a.list_topics():
                    break
                await asyncio.sleep(0.2)
            assert t not in await a.list_topics()
        finally:
            await a.close()

    asyncio.run(main())


# --- raw ----------------------------------------------------------------------------


@pytest.mark.client("raw")
@pytest.mark.api("AlterPartitionReassignments")
def test_refusing_a_replication_factor_change_on_one_broker_raw(bootstrap, existing_topic):
    """AlterPartitionReassignments v1 (KIP-860) with AllowReplicationFactorChange
    false, on one broker (node 1): keeping the one replica is allowed; a
    second replica on a broker that does not exist is refused, and which of
    the two checks answers says their order."""
    from compatlib import raw

    with raw.Connection(bootstrap) as conn:
        assert raw.alter_partition_reassignment_v1(conn, existing_topic, 0, [1], False) == (
            False,
            0,
            None,
        )
        assert raw.alter_partition_reassignment_v1(conn, existing_topic, 0, [1, 9], False) == (
            False,
            39,  # INVALID_REPLICA_ASSIGNMENT
            "The manual partition assignment includes broker 9, but no such broker is registered.",
        )
        assert raw.alter_partition_reassignment_v1(conn, existing_topic, 0, [1], True) == (
            True,
            0,
            None,
        )
