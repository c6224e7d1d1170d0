"""Creating, listing, describing, growing and deleting topics on a real Gregor
process with real admin clients: confluent-kafka's AdminClient (librdkafka),
kafka-python's KafkaAdminClient and Kafka 4.3.1's own kafka-topics tool, plus
raw requests where a version or field matters. Also DescribeCluster and
DescribeLogDirs.

One broker serves the module (auto-creation off, so a deleted topic stays
deleted); every test uses its own topic names.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka.admin import KafkaAdminClient
from kafka.admin import NewPartitions as KpNewPartitions
from kafka.admin import NewTopic as KpNewTopic
from kafka.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)

from tests.support.gregor import GregorNode
from tests.support.raw import RawClient, kafka_request
from tools import kafka_cli
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.records import RecordInput, build_batch
from wire.schema import ZERO_UUID

# Slow (Kafka's Java tools, topic deletion): make unit leaves the module out.
pytestmark = pytest.mark.slow

TIMEOUT = 20.0

needs_java = pytest.mark.skipif(
    not (kafka_cli.java_available() and kafka_cli.jars_available()),
    reason="Kafka's CLI tools are not installed (make clients)",
)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    node = GregorNode(
        tmp_path_factory.mktemp("admin-topics") / "data",
        {"auto.create.topics.enable": "false"},
    ).start()
    yield node
    node.stop()


@pytest.fixture(scope="module")
def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


@pytest.fixture(scope="module")
def kp_admin(broker):
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=20000)
    yield client
    client.close()


# --- helpers ------------------------------------------------------------------------


def create(admin, *topics, **options) -> dict[str, KafkaError | None]:
    """confluent-kafka create_topics: each topic's error (None when created)."""
    futures = admin.create_topics(list(topics), operation_timeout=TIMEOUT, **options)
    return {name: _error_of(f) for name, f in futures.items()}


def _error_of(future) -> KafkaError | None:
    try:
        future.result(timeout=TIMEOUT)
    except KafkaException as e:
        return e.args[0]
    return None


def topic_names(admin) -> set[str]:
    return set(admin.list_topics(timeout=TIMEOUT).topics)


def partition_count(admin, topic: str) -> int:
    return len(admin.list_topics(topic, timeout=TIMEOUT).topics[topic].partitions)


def produce_one(bootstrap: str, topic: str, partition: int, value: bytes, **conf):
    """Produce one record; (error, partition, offset) of its delivery report."""
    producer = Producer({"bootstrap.servers": bootstrap, **conf})
    reports = []
    producer.produce(
        topic, value=value, partition=partition, on_delivery=lambda e, m: reports.append((e, m))
    )
    producer.flush(TIMEOUT)
    assert len(reports) == 1, "no delivery report"
    err, msg = reports[0]
    return err, msg.partition(), msg.offset()


def raw_create(bootstrap, version, topics, validate_only=False):
    body = {"topics": topics, "timeout_ms": 10000, "validate_only": validate_only}
    return kafka_request(bootstrap, ApiKey.CREATE_TOPICS, version, body).topics


def creatable(name, partitions=1, rf=1, configs=None, assignments=None):
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": rf,
        "assignments": [
            {"partition_index": i, "broker_ids": ids} for i, ids in (assignments or {}).items()
        ],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }


def metadata_topic_id(bootstrap, topic) -> uuid.UUID:
    body = {
        "topics": [{"name": topic, "topic_id": ZERO_UUID}],
        "allow_auto_topic_creation": False,
    }
    response = kafka_request(bootstrap, ApiKey.METADATA, 12, body)
    assert response.topics[0].error_code == 0
    return response.topics[0].topic_id


def partition_dirs(broker, topic) -> list[Path]:
    return sorted(broker.data_dir.glob(f"{topic}-*"))


# --- CreateTopics -----------------------------------------------------------------


def test_confluent_admin_creates_a_topic_with_its_partitions_and_configs(admin):
    assert create(admin, NewTopic("ck-created", 3, 1, config={"retention.ms": "3600000"})) == {
        "ck-created": None
    }
    assert "ck-created" in topic_names(admin)
    assert partition_count(admin, "ck-created") == 3


def test_kafka_python_creates_lists_and_deletes_topics(kp_admin):
    kp_admin.create_topics([KpNewTopic("kp-created", 2, 1, topic_configs={"segment.ms": "60000"})])
    assert "kp-created" in kp_admin.list_topics()
    (described,) = kp_admin.describe_topics(["kp-created"])
    assert described["error_code"] == 0
    assert len(described["partitions"]) == 2
    kp_admin.delete_topics(["kp-created"])
    assert "kp-created" not in kp_admin.list_topics()


def test_creating_an_existing_topic_is_topic_already_exists(admin, kp_admin):
    assert create(admin, NewTopic("dup-exists", 1, 1))["dup-exists"] is None
    err = create(admin, NewTopic("dup-exists", 1, 1))["dup-exists"]
    assert err.code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert err.str() == "Topic 'dup-exists' already exists."
    with pytest.raises(TopicAlreadyExistsError):
        kp_admin.create_topics([KpNewTopic("dup-exists", 1, 1)])


@pytest.mark.parametrize(
    "name, message",
    [
        ("bad name!", "Topic name is invalid: 'bad name!' contains one or more characters "
         "other than ASCII alphanumerics, '.', '_' and '-'"),
        ("..", "Topic name is invalid: '..' is not allowed"),
        ("x" * 250, f"Topic name is invalid: the length of '{'x' * 250}' is longer than the "
         "max allowed length 249"),
    ],
)  # fmt: skip
def test_illegal_topic_names_are_invalid_topic_exception(admin, name, message):
    err = create(admin, NewTopic(name, 1, 1))[name]
    assert err.code() == KafkaError.TOPIC_EXCEPTION
    assert err.str() == message


def test_a_name_colliding_on_dot_and_underscore_is_invalid_topic_exception(admin):
    assert create(admin, NewTopic("collide.me", 1, 1))["collide.me"] is None
    err = create(admin, NewTopic("collide_me", 1, 1))["collide_me"]
    assert err.code() == KafkaError.TOPIC_EXCEPTION
    assert err.str() == "Topic 'collide_me' collides with existing topic: collide.me"


def test_replication_factor_above_the_live_brokers_is_invalid_replication_factor(admin, kp_admin):
    err = create(admin, NewTopic("rf-three", 1, 3))["rf-three"]
    assert err.code() == KafkaError.INVALID_REPLICATION_FACTOR
    assert err.str() == (
        "Unable to replicate the partition 3 time(s): The target replication factor of 3 "
        "cannot be reached because only 1 broker(s) are registered or some brokers have all "
        "their log directories cordoned."
    )
    with pytest.raises(InvalidReplicationFactorError):
        kp_admin.create_topics([KpNewTopic("rf-three", 1, 3)])
    assert "rf-three" not in topic_names(admin)


@pytest.mark.parametrize(
    "configs, message",
    [
        ({"retention.ms": "soon"},
         "Invalid value soon for configuration retention.ms: Not a number of type LONG"),
        ({"no.such.key": "1"}, "Unknown topic config name: no.such.key"),
        ({"cleanup.policy": "shred"},
         "Invalid value shred for configuration cleanup.policy: String must be one of: "
         "compact, delete"),
        ({"segment.bytes": "100"},
         "Invalid value 100 for configuration segment.bytes: Value must be at least 1048576"),
    ],
)  # fmt: skip
def test_a_bad_topic_config_is_invalid_config_naming_the_key(admin, configs, message):
    name = "bad-config-" + next(iter(configs)).replace(".", "-")
    err = create(admin, NewTopic(name, 1, 1, config=configs))[name]
    assert err.code() == KafkaError.INVALID_CONFIG
    assert err.str() == message
    assert name not in topic_names(admin)


def test_non_positive_partitions_or_replication_factor_are_refused(broker):
    zero_partitions, zero_rf = raw_create(
        broker.bootstrap, 7, [creatable("zero-parts", 0, 1), creatable("zero-rf", 1, 0)]
    )
    assert (zero_partitions.error_code, zero_partitions.error_message) == (
        ErrorCode.INVALID_PARTITIONS,
        "Number of partitions was set to an invalid non-positive value.",
    )
    assert (zero_rf.error_code, zero_rf.error_message) == (
        ErrorCode.INVALID_REPLICATION_FACTOR,
        "Replication factor must be larger than 0, or -1 to use the default value.",
    )


def test_validate_only_checks_everything_and_creates_nothing(admin, kp_admin):
    assert create(admin, NewTopic("validated", 2, 1), validate_only=True) == {"validated": None}
    kp_admin.create_topics([KpNewTopic("validated-kp", 1, 1)], validate_only=True)
    err = create(admin, NewTopic("validated-rf", 1, 3), validate_only=True)["validated-rf"]
    assert err.code() == KafkaError.INVALID_REPLICATION_FACTOR
    names = topic_names(admin)
    assert not {"validated", "validated-kp", "validated-rf"} & names


def test_a_name_twice_in_one_request_is_invalid_request_for_both(broker):
    results = raw_create(
        broker.bootstrap, 7, [creatable("twice"), creatable("once"), creatable("twice")]
    )
    assert [(r.name, r.error_code, r.error_message) for r in results] == [
        ("once", ErrorCode.NONE, None),
        ("twice", ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
    ]


def test_defaults_of_minus_one_use_the_broker_settings(broker):
    (result,) = raw_create(broker.bootstrap, 7, [creatable("defaults", -1, -1)])
    assert (result.error_code, result.num_partitions, result.replication_factor) == (0, 1, 1)


def test_a_manual_assignment_places_the_replicas_asked_for(admin, broker):
    (result,) = raw_create(
        broker.bootstrap, 7, [creatable("manual", -1, -1, assignments={0: [1], 1: [1]})]
    )
    assert (result.error_code, result.num_partitions) == (0, 2)
    (bad,) = raw_create(
        broker.bootstrap, 7, [creatable("manual-bad", -1, -1, assignments={0: [1], 2: [1]})]
    )
    assert (bad.error_code, bad.error_message) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "partitions should be a consecutive 0-based integer sequence",
    )
    (unknown,) = raw_create(
        broker.bootstrap, 7, [creatable("manual-unknown", -1, -1, assignments={0: [7]})]
    )
    assert unknown.error_message == (
        "The manual partition assignment includes broker 7, but no such broker is registered."
    )


@pytest.mark.parametrize("version", range(2, 8))
def test_create_topics_answers_each_version_with_its_fields(broker, version):
    name = f"versioned-{version}"
    (result,) = raw_create(
        broker.bootstrap, version, [creatable(name, 2, 1, {"retention.ms": "5000"})]
    )
    assert (result.name, result.error_code, result.error_message) == (name, 0, None)
    if version >= 5:
        assert (result.num_partitions, result.replication_factor) == (2, 1)
        configs = {c.name: c for c in result.configs}
        assert configs["retention.ms"].value == "5000"
        assert configs["retention.ms"].config_source == 1  # DYNAMIC_TOPIC_CONFIG
        assert configs["segment.bytes"].config_source == 5  # DEFAULT_CONFIG
        assert not any(c.read_only for c in result.configs)
    if version >= 7:
        assert result.topic_id == metadata_topic_id(broker.bootstrap, name)


def test_validate_only_answers_the_configs_the_topic_would_get(broker):
    (result,) = raw_create(
        broker.bootstrap, 7, [creatable("dry-run", 4, 1, {"cleanup.policy": "compact"})],
        validate_only=True,
    )  # fmt: skip
    assert (result.error_code, result.num_partitions, result.replication_factor) == (0, 4, 1)
    assert {c.name: c.value for c in result.configs}["cleanup.policy"] == "compact"


# --- DeleteTopics -----------------------------------------------------------------


def test_deleting_a_topic_removes_its_directories_and_producing_to_it_fails(admin, broker):
    assert create(admin, NewTopic("doomed", 2, 1)) == {"doomed": None}
    err, _, _ = produce_one(broker.bootstrap, "doomed", 1, b"before")
    assert err is None
    assert [p.name for p in partition_dirs(broker, "doomed")] == ["doomed-0", "doomed-1"]

    assert _error_of(admin.delete_topics(["doomed"], operation_timeout=TIMEOUT)["doomed"]) is None
    assert "doomed" not in topic_names(admin)
    assert partition_dirs(broker, "doomed") == []
    # The broker answers a Produce for it with UNKNOWN_TOPIC_OR_PARTITION ...
    batch = build_batch([RecordInput(None, b"after", timestamp=int(time.time() * 1000))])
    body = {
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [{"name": "doomed", "partition_data": [{"index": 1, "records": batch}]}],
    }
    response = kafka_request(broker.bootstrap, ApiKey.PRODUCE, 9, body)
    (partition,) = response.responses[0].partition_responses
    assert partition.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # ... and a producer that may not create topics never delivers to it.
    err, _, _ = produce_one(
        broker.bootstrap, "doomed", 1, b"after",
        **{"allow.auto.create.topics": False, "message.timeout.ms": 2000},
    )  # fmt: skip
    assert err is not None and err.code() == KafkaError._MSG_TIMED_OUT
    assert partition_dirs(broker, "doomed") == []


def test_deleting_an_unknown_topic_is_unknown_topic_or_partition(admin, kp_admin):
    err = _error_of(admin.delete_topics(["never-was"], operation_timeout=TIMEOUT)["never-was"])
    assert err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    with pytest.raises(UnknownTopicOrPartitionError):
        kp_admin.delete_topics(["never-was"])


@pytest.mark.parametrize("version", [12, 13])
def test_metadata_asks_by_topic_id_and_answers_a_top_level_error_from_v13(broker, version):
    (created,) = raw_create(broker.bootstrap, 7, [creatable(f"md-v{version}", 2, 1)])
    unknown_id = uuid.uuid4()
    body = {
        "topics": [
            {"name": None, "topic_id": created.topic_id},
            {"name": None, "topic_id": unknown_id},
        ],
        "allow_auto_topic_creation": False,
    }
    response = kafka_request(broker.bootstrap, ApiKey.METADATA, version, body)
    assert [(t.name, t.topic_id, t.error_code, len(t.partitions)) for t in response.topics] == [
        (f"md-v{version}", created.topic_id, ErrorCode.NONE, 2),
        (None, unknown_id, ErrorCode.UNKNOWN_TOPIC_ID, 0),
    ]
    # v13's top-level error code (KIP-1102): nothing asks the client to
    # bootstrap again. (Decoding v12 fills in the default.)
    assert response.error_code == ErrorCode.NONE


def test_delete_topics_v6_deletes_by_topic_id(broker, admin):
    (created,) = raw_create(broker.bootstrap, 7, [creatable("by-id", 1, 1)])
    unknown_id = uuid.uuid4()
    body = {
        "topics": [
            {"name": None, "topic_id": created.topic_id},
            {"name": None, "topic_id": unknown_id},
        ],
        "timeout_ms": 10000,
    }
    responses = kafka_request(broker.bootstrap, ApiKey.DELETE_TOPICS, 6, body).responses
    assert [(r.name, r.topic_id, r.error_code, r.error_message) for r in responses] == [
        (None, unknown_id, ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID."),
        ("by-id", created.topic_id, ErrorCode.NONE, None),
    ]
    assert "by-id" not in topic_names(admin)
    assert partition_dirs(broker, "by-id") == []


@pytest.mark.parametrize("version", range(1, 6))
def test_delete_topics_by_name_answers_each_version(broker, version):
    name = f"delete-v{version}"
    raw_create(broker.bootstrap, 7, [creatable(name)])
    body = {"topic_names": [name, "absent"], "timeout_ms": 10000}
    responses = kafka_request(broker.bootstrap, ApiKey.DELETE_TOPICS, version, body).responses
    codes = {r.name: r.error_code for r in responses}
    assert codes == {name: ErrorCode.NONE, "absent": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_with_topic_deletion_disabled_delete_topics_is_refused(gregor_factory):
    node = gregor_factory({"delete.topic.enable": "false"})
    raw_create(node.bootstrap, 7, [creatable("kept")])
    v6 = {"topics": [{"name": "kept", "topic_id": ZERO_UUID}], "timeout_ms": 10000}
    (refused,) = kafka_request(node.bootstrap, ApiKey.DELETE_TOPICS, 6, v6).responses
    assert refused.error_code == ErrorCode.TOPIC_DELETION_DISABLED
    v2 = {"topic_names": ["kept"], "timeout_ms": 10000}
    (old,) = kafka_request(node.bootstrap, ApiKey.DELETE_TOPICS, 2, v2).responses
    assert old.error_code == ErrorCode.INVALID_REQUEST  # before v3 Kafka has no better code
    assert [p.name for p in partition_dirs(node, "kept")] == ["kept-0"]


# --- CreatePartitions -------------------------------------------------------------


def test_added_partitions_take_records(admin, broker):
    assert create(admin, NewTopic("growing", 1, 1)) == {"growing": None}
    futures = admin.create_partitions([NewPartitions("growing", 3)], operation_timeout=TIMEOUT)
    assert _error_of(futures["growing"]) is None
    assert partition_count(admin, "growing") == 3
    assert [p.name for p in partition_dirs(broker, "growing")] == [
        "growing-0", "growing-1", "growing-2",
    ]  # fmt: skip

    assert produce_one(broker.bootstrap, "growing", 2, b"in the new partition") == (None, 2, 0)
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition("growing", 2, 0)])
        deadline = time.monotonic() + TIMEOUT
        msg = None
        while msg is None and time.monotonic() < deadline:
            msg = consumer.poll(1)
        assert msg is not None and msg.error() is None
        assert (msg.partition(), msg.offset(), msg.value()) == (2, 0, b"in the new partition")
    finally:
        consumer.close()


def test_kafka_python_adds_partitions_and_validate_only_adds_none(kp_admin, admin):
    kp_admin.create_topics([KpNewTopic("kp-growing", 1, 1)])
    kp_admin.create_partitions({"kp-growing": KpNewPartitions(4)}, validate_only=True)
    assert partition_count(admin, "kp-growing") == 1
    kp_admin.create_partitions({"kp-growing": KpNewPartitions(2)})
    assert partition_count(admin, "kp-growing") == 2
    with pytest.raises(InvalidPartitionsError):
        kp_admin.create_partitions({"kp-growing": KpNewPartitions(1)})


def test_create_partitions_errors_are_worded_as_kafka_words_them(admin, broker):
    assert create(admin, NewTopic("fixed", 2, 1)) == {"fixed": None}
    topics = [
        {"name": "fixed", "count": 2, "assignments": None},
        {"name": "nowhere", "count": 3, "assignments": None},
    ]
    for version in range(4):
        body = {"topics": topics, "timeout_ms": 10000, "validate_only": False}
        results = kafka_request(broker.bootstrap, ApiKey.CREATE_PARTITIONS, version, body).results
        assert [(r.name, r.error_code, r.error_message) for r in results] == [
            ("fixed", ErrorCode.INVALID_PARTITIONS, "Topic already has 2 partition(s)."),
            ("nowhere", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None),
        ]
    err = _error_of(admin.create_partitions([NewPartitions("fixed", 1)])["fixed"])
    assert err.code() == KafkaError.INVALID_PARTITIONS
    assert err.str() == "The topic fixed currently has 2 partition(s); 1 would not be an increase."


# --- DescribeCluster and DescribeLogDirs ----------------------------------------------


def test_describe_cluster_names_the_broker_the_controller_and_the_cluster_id(
    admin, kp_admin, broker
):
    described = admin.describe_cluster(include_authorized_operations=True).result(timeout=TIMEOUT)
    assert [(n.id, n.host, n.port) for n in described.nodes] == [(1, "127.0.0.1", broker.port)]
    assert described.controller.id == 1
    assert described.cluster_id == admin.list_topics(timeout=TIMEOUT).cluster_id
    assert {op.name for op in described.authorized_operations} == {
        "CREATE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE",
    }  # fmt: skip
    kp = kp_admin.describe_cluster()
    assert (kp["cluster_id"], kp["controller_id"]) == (described.cluster_id, 1)
    # kafka-python asks v2 (KIP-1073), which says whether each broker is fenced.
    assert kp["brokers"] == [
        {"broker_id": 1, "host": "127.0.0.1", "port": broker.port, "rack": None, "is_fenced": False}
    ]


def test_describe_cluster_v1_refuses_a_controller_endpoint_request(broker):
    body = {"include_cluster_authorized_operations": False, "endpoint_type": 2}
    response = kafka_request(broker.bootstrap, ApiKey.DESCRIBE_CLUSTER, 1, body)
    assert (response.error_code, response.error_message) == (
        ErrorCode.MISMATCHED_ENDPOINT_TYPE,
        "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of "
        "type CONTROLLER",
    )


def test_describe_log_dirs_reports_partition_sizes_and_disk_space(admin, kp_admin, broker):
    assert create(admin, NewTopic("sized", 2, 1)) == {"sized": None}
    assert produce_one(broker.bootstrap, "sized", 1, b"x" * 1000)[0] is None
    (entry,) = kp_admin.describe_log_dirs()
    (log_dir,) = entry["log_dirs"]
    assert (log_dir["error_code"], log_dir["log_dir"]) == (0, os.path.abspath(broker.data_dir))
    assert log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0
    (sized,) = [t for t in log_dir["topics"] if t["name"] == "sized"]
    sizes = {p["partition_index"]: p for p in sized["partitions"]}
    assert sizes[0]["partition_size"] == 0
    assert sizes[1]["partition_size"] > 1000
    assert {p["offset_lag"] for p in sizes.values()} == {0}
    assert not any(p["is_future_key"] for p in sizes.values())
    assert log_dir["is_cordoned"] is False  # kafka-python asks v5; Gregor has no cordoning


@pytest.mark.parametrize("version", range(1, 6))
def test_describe_log_dirs_answers_only_the_partitions_asked_for(broker, admin, version):
    name = f"logdirs-{version}"
    assert create(admin, NewTopic(name, 3, 1)) == {name: None}
    body = {
        "topics": [{"topic": name, "partitions": [0, 2, 9]}, {"topic": "absent", "partitions": [0]}]
    }
    response = kafka_request(broker.bootstrap, ApiKey.DESCRIBE_LOG_DIRS, version, body)
    (result,) = response.results
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in result.topics] == [
        (name, [0, 2])
    ]
    if version >= 4:
        assert result.total_bytes > 0
    else:
        assert result.total_bytes == -1  # not in the version: the default


# --- Kafka's kafka-topics tool --------------------------------------------------------


def topics_tool(broker, *args):
    return kafka_cli.run_tool("kafka-topics", "--bootstrap-server", broker.bootstrap, *args)


@needs_java
def test_kafka_topics_tool_creates_lists_describes_alters_and_deletes(broker):
    created = topics_tool(
        broker, "--create", "--topic", "cli-topic", "--partitions", "2",
        "--replication-factor", "1", "--config", "retention.ms=86400000",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "Created topic cli-topic."

    listed = topics_tool(broker, "--list")
    assert "cli-topic" in listed.stdout.split()

    altered = topics_tool(broker, "--alter", "--topic", "cli-topic", "--partitions", "3")
    assert altered.returncode == 0, altered.stderr

    described = topics_tool(broker, "--describe", "--topic", "cli-topic")
    assert described.returncode == 0, described.stderr
    header, *partitions = described.stdout.strip().splitlines()
    assert "PartitionCount: 3" in header
    assert "ReplicationFactor: 1" in header
    assert "Configs: retention.ms=86400000" in header
    assert [p.split("\t")[2] for p in partitions] == [f"Partition: {i}" for i in range(3)]

    deleted = topics_tool(broker, "--delete", "--topic", "cli-topic")
    assert deleted.returncode == 0, deleted.stderr
    assert "cli-topic" not in topic_names(AdminClient({"bootstrap.servers": broker.bootstrap}))
    assert partition_dirs(broker, "cli-topic") == []


@needs_java
def test_kafka_topics_tool_reports_kafkas_errors(broker):
    first = topics_tool(broker, "--create", "--topic", "cli-twice", "--partitions", "2")
    assert first.returncode == 0, first.stderr
    again = topics_tool(broker, "--create", "--topic", "cli-twice")
    assert again.returncode == 1
    assert "Topic 'cli-twice' already exists." in again.stdout

    rf = topics_tool(broker, "--create", "--topic", "cli-rf", "--replication-factor", "3")
    assert rf.returncode == 1
    assert "InvalidReplicationFactorException" in rf.stderr

    shrink = topics_tool(broker, "--alter", "--topic", "cli-twice", "--partitions", "1")
    assert shrink.returncode == 1
    assert "The topic cli-twice currently has 2 partition(s); 1 would not be an increase." in (
        shrink.stdout
    )


def test_auto_created_topics_get_num_partitions(gregor_factory):
    from confluent_kafka import Producer

    broker = gregor_factory({"num.partitions": 3})
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    # librdkafka asks Metadata for the topic (auto-creating it), then produces.
    producer.produce("auto-three", value=b"v")
    assert producer.flush(20) == 0
    topic = producer.list_topics("auto-three", timeout=20).topics["auto-three"]
    assert sorted(topic.partitions) == [0, 1, 2]


def test_auto_creation_answers_leader_not_available_then_the_topic(gregor):
    """Kafka's answer to a Metadata request that auto-creates a topic: the topic with
    LEADER_NOT_AVAILABLE, and the topic itself on the next request."""
    with RawClient(gregor.bootstrap) as client:
        codes = []
        for _ in range(2):
            response = client.call(
                ApiKey.METADATA,
                12,
                {
                    "topics": [{"name": "auto-created", "topic_id": ZERO_UUID}],
                    "allow_auto_topic_creation": True,
                    "include_topic_authorized_operations": False,
                },
            )
            codes.append(response.topics[0].error_code)
    assert codes == [ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NONE]
