"""Describing and altering topic and broker configs on a real Gregor process
with confluent-kafka's AdminClient, kafka-python's KafkaAdminClient, Kafka
4.3.1's kafka-configs tool and raw requests: sources and synonyms as Kafka
reports them, AlterConfigs replacing the whole set, IncrementalAlterConfigs'
four operations, validate_only, Kafka's errors, changes reaching the logs,
and configs surviving a restart.

One broker serves most of the module (each test its own topics); tests that
restart a broker or need fast retention checks start their own.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient

from tests.support.gregor import GregorNode
from tests.support.raw import kafka_request
from tests.support.topics import create_topic
from tools import kafka_cli
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

# Slow (Kafka's Java tools, broker restarts, retention): make unit leaves the module out.
pytestmark = pytest.mark.slow

TIMEOUT = 20.0
TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = (
    AlterConfigOpType.SET,
    AlterConfigOpType.DELETE,
    AlterConfigOpType.APPEND,
    AlterConfigOpType.SUBTRACT,
)

needs_java = pytest.mark.skipif(
    not (kafka_cli.java_available() and kafka_cli.jars_available()),
    reason="Kafka's CLI tools are not installed (make clients)",
)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    node = GregorNode(tmp_path_factory.mktemp("admin-configs") / "data").start()
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


# --- helpers ----------------------------------------------------------------------


def describe(admin, resource_type, name) -> dict[str, ConfigEntry]:
    futures = admin.describe_configs([ConfigResource(resource_type, name)])
    (future,) = futures.values()
    return future.result(timeout=TIMEOUT)


def overrides(admin, topic) -> dict[str, str]:
    """The topic's own configs (source DYNAMIC_TOPIC_CONFIG)."""
    return {
        name: entry.value
        for name, entry in describe(admin, ResourceType.TOPIC, topic).items()
        if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    }


def incremental(admin, resource_type, name, *ops, validate_only=False) -> KafkaError | None:
    """confluent-kafka incremental_alter_configs with (key, op, value) triples."""
    entries = [ConfigEntry(k, v, incremental_operation=op) for k, op, v in ops]
    resource = ConfigResource(resource_type, name, incremental_configs=entries)
    futures = admin.incremental_alter_configs([resource], validate_only=validate_only)
    return _error_of(next(iter(futures.values())))


def _error_of(future) -> KafkaError | None:
    try:
        future.result(timeout=TIMEOUT)
    except KafkaException as e:
        return e.args[0]
    return None


def raw_alter(bootstrap, version, resources, validate_only=False):
    """AlterConfigs (legacy): (code, message) per resource."""
    body = {
        "resources": [
            {
                "resource_type": rtype,
                "resource_name": name,
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }
            for rtype, name, configs in resources
        ],
        "validate_only": validate_only,
    }
    response = kafka_request(bootstrap, ApiKey.ALTER_CONFIGS, version, body)
    return [(r.error_code, r.error_message) for r in response.responses]


def raw_incremental(bootstrap, resources, version=1, validate_only=False):
    """IncrementalAlterConfigs: (code, message) per resource of (type, name, ops)."""
    body = {
        "resources": [
            {
                "resource_type": rtype,
                "resource_name": name,
                "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops],
            }
            for rtype, name, ops in resources
        ],
        "validate_only": validate_only,
    }
    response = kafka_request(bootstrap, ApiKey.INCREMENTAL_ALTER_CONFIGS, version, body)
    return [(r.error_code, r.error_message) for r in response.responses]


def raw_describe(bootstrap, version, resources, synonyms=False, documentation=False):
    body = {
        "resources": [
            {"resource_type": t, "resource_name": n, "configuration_keys": keys}
            for t, n, keys in resources
        ],
        "include_synonyms": synonyms,
        "include_documentation": documentation,
    }
    return kafka_request(bootstrap, ApiKey.DESCRIBE_CONFIGS, version, body).results


def configs_tool(node, *args):
    return kafka_cli.run_tool("kafka-configs", "--bootstrap-server", node.bootstrap, *args)


def low_watermark(bootstrap, topic) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT)[0]
    finally:
        consumer.close()


def produce(bootstrap, topic, *values):
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(TIMEOUT) == 0


# --- DescribeConfigs --------------------------------------------------------------


def test_a_config_set_at_creation_is_reported_as_a_dynamic_topic_config(broker, admin, kp_admin):
    create_topic(broker.bootstrap, "described", config={"retention.ms": "3600000"})
    configs = describe(admin, ResourceType.TOPIC, "described")
    retention = configs["retention.ms"]
    assert (retention.value, retention.source) == (
        "3600000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
    )
    assert not retention.is_read_only and not retention.is_sensitive
    segment = configs["segment.bytes"]
    assert (segment.value, segment.source) == ("1073741824", ConfigSource.DEFAULT_CONFIG.value)

    kp = kp_admin.describe_configs(
        [KpConfigResource(ConfigResourceType.TOPIC, "described", configs=["retention.ms"])],
        include_synonyms=True,
    )
    entry = kp["topic"]["described"]["retention.ms"]
    assert (entry["value"], entry["config_source"], entry["config_type"]) == (
        "3600000",
        "DYNAMIC_TOPIC_CONFIG",
        "LONG",
    )
    assert entry["synonyms"] == [
        {"name": "retention.ms", "value": "3600000", "source": "DYNAMIC_TOPIC_CONFIG"}
    ]


def test_describing_an_unknown_topic_is_unknown_topic_or_partition(admin, broker):
    with pytest.raises(KafkaException) as caught:
        describe(admin, ResourceType.TOPIC, "no-such-topic")
    assert caught.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    (bad_name,) = raw_describe(broker.bootstrap, 4, [(TOPIC, "bad name!", None)])
    assert (bad_name.error_code, bad_name.error_message) == (
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        "Topic name is invalid: 'bad name!' contains one or more characters other than "
        "ASCII alphanumerics, '.', '_' and '-'",
    )


@pytest.mark.parametrize("version", range(1, 5))
def test_describe_configs_answers_each_version_with_synonyms_types_and_documentation(
    broker, admin, version
):
    name = f"describe-v{version}"
    create_topic(broker.bootstrap, name, config={"cleanup.policy": "compact"})
    (result,) = raw_describe(
        broker.bootstrap, version, [(TOPIC, name, ["cleanup.policy", "no.such.key"])],
        synonyms=True, documentation=True,
    )  # fmt: skip
    assert result.error_code == 0
    (entry,) = result.configs  # unknown keys are left out
    assert (entry.name, entry.value, entry.config_source) == ("cleanup.policy", "compact", 1)
    assert [(s.name, s.value, s.source) for s in entry.synonyms] == [
        ("cleanup.policy", "compact", 1),
        ("log.cleanup.policy", "delete", 5),
    ]
    if version >= 3:
        assert entry.config_type == 7  # LIST
        assert entry.documentation


def test_broker_configs_describe_sources_read_only_and_sensitive_keys(admin, broker):
    configs = describe(admin, ResourceType.BROKER, "1")
    node_id = configs["node.id"]
    assert (node_id.value, node_id.source, node_id.is_read_only) == (
        "1",
        ConfigSource.STATIC_BROKER_CONFIG.value,
        True,
    )
    threads = configs["log.cleaner.threads"]
    assert (threads.source, threads.is_read_only) == (ConfigSource.DEFAULT_CONFIG.value, False)
    (other, word) = raw_describe(broker.bootstrap, 4, [(BROKER, "2", None), (BROKER, "x", None)])
    assert (other.error_code, other.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Unexpected broker id, expected 1 or empty string, but received 2",
    )
    assert word.error_message == "Broker id must be an integer, but it is: x"


# --- altering topic configs --------------------------------------------------------


def test_incremental_alter_sets_deletes_appends_and_subtracts(broker, admin):
    create_topic(broker.bootstrap, "altered", config={"retention.ms": "3600000"})
    assert incremental(
        admin, ResourceType.TOPIC, "altered",
        ("segment.ms", SET, "600000"), ("retention.ms", DELETE, None),
        ("cleanup.policy", APPEND, "compact"),
    ) is None  # fmt: skip
    # APPEND starts from the default "delete".
    assert overrides(admin, "altered") == {
        "segment.ms": "600000",
        "cleanup.policy": "delete,compact",
    }
    assert (
        incremental(admin, ResourceType.TOPIC, "altered", ("cleanup.policy", SUBTRACT, "delete"))
        is None
    )
    assert overrides(admin, "altered") == {"segment.ms": "600000", "cleanup.policy": "compact"}


def test_alter_configs_replaces_the_whole_override_set(admin, broker):
    create_topic(
        broker.bootstrap, "replaced", config={"retention.ms": "3600000", "segment.ms": "600000"}
    )
    resource = ConfigResource(ResourceType.TOPIC, "replaced", set_config={"flush.ms": "1000"})
    with pytest.warns(DeprecationWarning):
        futures = admin.alter_configs([resource])
    assert _error_of(next(iter(futures.values()))) is None
    assert overrides(admin, "replaced") == {"flush.ms": "1000"}
    for version in range(3):
        replacement = [(TOPIC, "replaced", {"max.message.bytes": str(2048 + version)})]
        assert raw_alter(broker.bootstrap, version, replacement) == [(ErrorCode.NONE, None)]
        assert overrides(admin, "replaced") == {"max.message.bytes": str(2048 + version)}


def test_kafka_python_alters_with_either_api(broker, admin, kp_admin):
    create_topic(broker.bootstrap, "kp-altered", config={"retention.ms": "3600000"})
    for incremental_api, value in ((True, "1000"), (False, "2000")):
        resource = KpConfigResource(
            ConfigResourceType.TOPIC, "kp-altered", configs={"flush.ms": value}
        )
        result = kp_admin.alter_configs([resource], incremental=incremental_api)
        assert result["topic"]["kp-altered"] == "OK"
        # (for AlterConfigs kafka-python itself sends the other overrides along)
        assert overrides(admin, "kp-altered") == {"retention.ms": "3600000", "flush.ms": value}


def test_validate_only_checks_and_changes_nothing(admin, broker):
    create_topic(broker.bootstrap, "unchanged", config={"retention.ms": "3600000"})
    assert (
        incremental(
            admin,
            ResourceType.TOPIC,
            "unchanged",
            ("retention.ms", SET, "1000"),
            validate_only=True,
        )
        is None
    )
    assert raw_alter(broker.bootstrap, 2, [(TOPIC, "unchanged", {})], validate_only=True) == [
        (0, None)
    ]
    err = incremental(
        admin, ResourceType.TOPIC, "unchanged", ("retention.ms", SET, "x"), validate_only=True
    )
    assert err.code() == KafkaError.INVALID_CONFIG
    assert overrides(admin, "unchanged") == {"retention.ms": "3600000"}


@pytest.mark.parametrize(
    "op, message",
    [
        (("retention.ms", SET, "forever"),
         "Invalid value forever for configuration retention.ms: Not a number of type LONG"),
        (("no.such.key", SET, "1"), "Unknown topic config name: no.such.key"),
        (("min.insync.replicas", SET, "0"),
         "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
        (("retention.ms", APPEND, "1"), "Can't APPEND to key retention.ms because its type is not LIST."),
    ],
)  # fmt: skip
def test_a_bad_topic_config_is_invalid_config_naming_the_key(broker, admin, kp_admin, op, message):
    topic = "bad-alter-" + op[0].replace(".", "-") + f"-{op[1].value}"
    create_topic(broker.bootstrap, topic)
    err = incremental(admin, ResourceType.TOPIC, topic, op)
    assert (err.code(), err.str()) == (KafkaError.INVALID_CONFIG, message)
    assert overrides(admin, topic) == {}


def test_kafka_python_alter_with_a_bad_value_is_invalid_configuration(broker, admin, kp_admin):
    create_topic(broker.bootstrap, "kp-bad-alter")
    resource = KpConfigResource(
        ConfigResourceType.TOPIC, "kp-bad-alter", configs={"retention.ms": "x"}
    )
    result = kp_admin.alter_configs([resource])
    assert str(result["topic"]["kp-bad-alter"]) == (
        "[Error 40] InvalidConfigurationError: "
        "Invalid value x for configuration retention.ms: Not a number of type LONG"
    )
    assert overrides(admin, "kp-bad-alter") == {}


def test_list_config_resources_lists_brokers_loggers_and_every_topic(broker, kp_admin):
    """ListConfigResources as Kafka 4.3.1 answers it (KIP-1142): v1 by type in
    Kafka's order; an unknown type is UNSUPPORTED_VERSION;
    v0 lists client metrics resources, of which Gregor has none."""
    create_topic(broker.bootstrap, "listed-b")
    create_topic(broker.bootstrap, "listed-a")

    def listed(version, types=()):
        body = {"resource_types": list(types)} if version >= 1 else {}
        response = kafka_request(broker.bootstrap, ApiKey.LIST_CONFIG_RESOURCES, version, body)
        return response.error_code, [
            (r.resource_name, r.resource_type) for r in response.config_resources
        ]

    error, everything = listed(1)
    assert error == ErrorCode.NONE
    assert everything[:2] == [("1", 8), ("1", 4)]  # broker logger, broker
    topics = [name for name, kind in everything[2:] if kind == 2]
    assert len(topics) == len(everything) - 2
    assert {"listed-a", "listed-b"} <= set(topics)
    assert listed(1, [4, 2]) == listed(1, [2, 4]) == (ErrorCode.NONE, everything[1:])
    assert listed(1, [32]) == listed(1, [16]) == listed(0) == (ErrorCode.NONE, [])
    assert listed(1, [2, 64]) == (ErrorCode.UNSUPPORTED_VERSION, [])
    # kafka-python's admin, which asks v1 for every type.
    assert kp_admin.list_config_resources(["BROKER", "BROKER_LOGGER"]) == {
        "broker_logger": ["1"],
        "broker": ["1"],
    }


def test_altering_an_unknown_topic_is_unknown_topic_or_partition(broker):
    assert raw_alter(
        broker.bootstrap, 2, [(TOPIC, "nowhere", {"retention.ms": "1"}), (TOPIC, "", {})]
    ) == [
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nowhere' does not exist."),
        (ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."),
    ]
    assert raw_incremental(broker.bootstrap, [(TOPIC, "nowhere", [("retention.ms", 0, "1")])]) == [
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nowhere' does not exist.")
    ]


def test_malformed_alter_requests_are_invalid_request(admin, broker):
    create_topic(broker.bootstrap, "malformed")
    assert raw_incremental(
        broker.bootstrap,
        [
            (TOPIC, "malformed", [("retention.ms", 0, "1"), ("retention.ms", 0, "2")]),
        ],
    ) == [(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")]
    assert raw_incremental(
        broker.bootstrap, [(TOPIC, "malformed", [("retention.ms", 0, None)])]
    ) == [(ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms")]
    assert raw_alter(broker.bootstrap, 2, [(99, "x", {})]) == [
        (ErrorCode.INVALID_REQUEST, "Unknown resource type 99")
    ]
    twice = [(TOPIC, "malformed", {"retention.ms": "1"})] * 2
    assert (
        raw_alter(broker.bootstrap, 2, twice)
        == [(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")] * 2
    )
    assert overrides(admin, "malformed") == {}


# --- altering broker configs -------------------------------------------------------------


def test_broker_config_changes_are_reported_and_become_topic_defaults(admin, broker):
    # confluent-kafka refuses the cluster-default resource (name ""): raw requests for it.
    create_topic(broker.bootstrap, "inherits")
    assert (
        incremental(admin, ResourceType.BROKER, "1", ("log.retention.ms", SET, "7200000")) is None
    )
    cluster_default = [(BROKER, "", [("message.max.bytes", SET.value, "2000000")])]
    try:
        assert raw_incremental(broker.bootstrap, cluster_default) == [(0, None)]
        retention = describe(admin, ResourceType.BROKER, "1")["log.retention.ms"]
        assert (retention.value, retention.source) == (
            "7200000",
            ConfigSource.DYNAMIC_BROKER_CONFIG.value,
        )
        (defaults,) = raw_describe(broker.bootstrap, 4, [(BROKER, "", None)], synonyms=True)
        assert [(c.name, c.value, c.config_source, c.read_only) for c in defaults.configs] == [
            (
                "message.max.bytes",
                "2000000",
                ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
                False,
            )
        ]
        topic = describe(admin, ResourceType.TOPIC, "inherits")
        assert (topic["retention.ms"].value, topic["retention.ms"].source) == (
            "7200000",
            ConfigSource.DYNAMIC_BROKER_CONFIG.value,
        )
        assert (topic["max.message.bytes"].value, topic["max.message.bytes"].source) == (
            "2000000",
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
        )
    finally:
        incremental(admin, ResourceType.BROKER, "1", ("log.retention.ms", DELETE, None))
        cluster_default = [(BROKER, "", [("message.max.bytes", DELETE.value, None)])]
        raw_incremental(broker.bootstrap, cluster_default)
    topic = describe(admin, ResourceType.TOPIC, "inherits")
    assert (topic["retention.ms"].value, topic["max.message.bytes"].value) == (
        "604800000",
        "1048588",
    )


def test_broker_config_errors_are_kafkas(broker):
    assert raw_incremental(
        broker.bootstrap,
        [
            (BROKER, "1", [("num.partitions", SET.value, "3")]),
            (BROKER, "7", [("log.cleaner.threads", SET.value, "2")]),
            (BROKER, "x", [("log.cleaner.threads", SET.value, "2")]),
            (BROKER, "", [("log.cleaner.threads", SET.value, "many")]),
        ],
    ) == [
        (ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: [num.partitions]"),
        (ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 1, but received 7"),
        (ErrorCode.INVALID_REQUEST, "Node id must be an integer, but it is: x"),
        (
            ErrorCode.INVALID_REQUEST,
            "Invalid value many for configuration log.cleaner.threads: Not a number of type INT",
        ),
    ]
    assert raw_incremental(
        broker.bootstrap, [(BROKER, "1", [("log.cleaner.threads", APPEND.value, "2")])]
    ) == [
        (
            ErrorCode.INVALID_CONFIG,
            "Config value append is not allowed for config key: log.cleaner.threads",
        )
    ]
    assert raw_incremental(
        broker.bootstrap, [(BROKER, "1", [("listeners", SET.value, "PLAINTEXT://:1")])]
    ) == [(ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: [listeners]")]


# --- changes reach the logs ----------------------------------------------------------------


def test_config_changes_reach_the_partition_logs(gregor_factory):
    node = gregor_factory({"log.retention.check.interval.ms": 100})
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    create_topic(node.bootstrap, "topic-retention")
    create_topic(node.bootstrap, "broker-retention")
    produce(node.bootstrap, "topic-retention", b"a", b"b")
    produce(node.bootstrap, "broker-retention", b"a", b"b")
    time.sleep(0.5)  # several retention checks with the default (a week) delete nothing
    assert low_watermark(node.bootstrap, "topic-retention") == 0

    assert (
        incremental(admin, ResourceType.TOPIC, "topic-retention", ("retention.ms", SET, "1"))
        is None
    )
    _wait_for(lambda: low_watermark(node.bootstrap, "topic-retention") == 2)
    assert low_watermark(node.bootstrap, "broker-retention") == 0

    assert incremental(admin, ResourceType.BROKER, "1", ("log.retention.ms", SET, "1")) is None
    _wait_for(lambda: low_watermark(node.bootstrap, "broker-retention") == 2)


def _wait_for(condition, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)


# --- persistence ---------------------------------------------------------------------------


def test_topic_configs_survive_a_broker_restart(gregor):
    admin = AdminClient({"bootstrap.servers": gregor.bootstrap})
    create_topic(gregor.bootstrap, "kept", config={"retention.ms": "3600000"})
    assert (
        incremental(admin, ResourceType.TOPIC, "kept", ("cleanup.policy", SET, "compact")) is None
    )
    assert gregor.stop() == 0
    gregor.start()
    kp = KafkaAdminClient(bootstrap_servers=gregor.bootstrap)
    try:
        described = kp.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, "kept")])
    finally:
        kp.close()
    configs = described["topic"]["kept"]
    assert {
        k: v["value"] for k, v in configs.items() if v["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    } == {
        "retention.ms": "3600000",
        "cleanup.policy": "compact",
    }


@needs_java
def test_kafka_configs_tool_alters_and_describes_topics(broker, admin):
    create_topic(broker.bootstrap, "cli-configs")
    added = configs_tool(
        broker, "--entity-type", "topics", "--entity-name", "cli-configs", "--alter",
        "--add-config", "retention.ms=120000,cleanup.policy=[compact,delete]",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == "Completed updating config for topic cli-configs."
    described = configs_tool(
        broker, "--entity-type", "topics", "--entity-name", "cli-configs", "--describe"
    )
    assert described.stdout.splitlines() == [
        "Dynamic configs for topic cli-configs are:",
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  retention.ms=120000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=120000}",
    ]
    deleted = configs_tool(
        broker, "--entity-type", "topics", "--entity-name", "cli-configs", "--alter",
        "--delete-config", "retention.ms",
    )  # fmt: skip
    assert deleted.returncode == 0, deleted.stderr
    assert overrides(admin, "cli-configs") == {"cleanup.policy": "compact,delete"}
    bad = configs_tool(
        broker, "--entity-type", "topics", "--entity-name", "cli-configs", "--alter",
        "--add-config", "retention.ms=soon",
    )  # fmt: skip
    assert bad.returncode != 0
    assert (
        "InvalidConfigurationException: Invalid value soon for configuration retention.ms"
        in bad.stderr
    )


@needs_java
def test_kafka_configs_tool_broker_configs_survive_a_restart(gregor):
    node = configs_tool(
        gregor, "--entity-type", "brokers", "--entity-name", "1", "--alter",
        "--add-config", "log.retention.ms=3600000",
    )  # fmt: skip
    assert node.returncode == 0, node.stderr
    assert node.stdout.strip() == "Completed updating config for broker 1."
    default = configs_tool(
        gregor, "--entity-type", "brokers", "--entity-default", "--alter",
        "--add-config", "log.segment.bytes=2000000",
    )  # fmt: skip
    assert default.returncode == 0, default.stderr
    assert default.stdout.strip() == "Completed updating default config for brokers in the cluster."

    assert gregor.stop() == 0
    gregor.start()

    described = configs_tool(gregor, "--entity-type", "brokers", "--entity-name", "1", "--describe")
    assert described.stdout.splitlines() == [
        "Dynamic configs for broker 1 are:",
        "  log.retention.ms=3600000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=3600000, DEFAULT_CONFIG:log.retention.hours=168}",
    ]
    defaults = configs_tool(gregor, "--entity-type", "brokers", "--entity-default", "--describe")
    assert defaults.stdout.splitlines() == [
        "Default configs for brokers in the cluster are:",
        "  log.segment.bytes=2000000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=2000000}",
    ]
    refused = configs_tool(
        gregor, "--entity-type", "brokers", "--entity-name", "1", "--alter",
        "--add-config", "num.partitions=3",
    )  # fmt: skip
    assert refused.returncode != 0
    assert "InvalidRequestException: Cannot update these configs dynamically: [num.partitions]" in (
        refused.stderr
    )


@pytest.mark.parametrize(
    ("components", "code", "message"),
    [
        ([], ErrorCode.NONE, ""),
        ([{"entity_type": "user", "match_type": 0, "match": "alice"}], ErrorCode.NONE, ""),
        ([{"entity_type": "ip", "match_type": 2, "match": None}], ErrorCode.NONE, ""),
        (
            [{"entity_type": "foo", "match_type": 0, "match": "x"}],
            ErrorCode.UNSUPPORTED_VERSION,
            "Unsupported entity type foo",
        ),
        (
            [{"entity_type": "user", "match_type": 5, "match": "x"}],
            ErrorCode.INVALID_REQUEST,
            "Unknown match type 5",
        ),
        (
            [{"entity_type": "user", "match_type": 0, "match": None}],
            ErrorCode.INVALID_REQUEST,
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
        ),
        (
            [
                {"entity_type": "user", "match_type": 0, "match": "a"},
                {"entity_type": "user", "match_type": 0, "match": "b"},
            ],
            ErrorCode.INVALID_REQUEST,
            "Entity type user cannot appear more than once in the filter.",
        ),
        (
            [
                {"entity_type": "ip", "match_type": 0, "match": "1.2.3.4"},
                {"entity_type": "user", "match_type": 0, "match": "b"},
            ],
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be "
            "used with user or clientId filter component.",
        ),
    ],
)
def test_describe_client_quotas_checks_the_filter_and_finds_no_quotas(
    broker, components, code, message
):
    # Kafka 4.3.1's answers to the same filters; Gregor keeps no quotas, so a
    # valid filter matches nothing (kafka-configs --describe asks for them).
    for version in (0, 1):
        answer = kafka_request(
            broker.bootstrap,
            ApiKey.DESCRIBE_CLIENT_QUOTAS,
            version,
            {"components": components, "strict": False},
        )
        assert (answer.error_code, answer.error_message) == (code, message)
        assert answer.entries == ([] if code == ErrorCode.NONE else None)
