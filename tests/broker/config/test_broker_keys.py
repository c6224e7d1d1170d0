"""The broker key catalogue: Kafka's defaults, unknown and ignored keys, and
the checks of each value, in Kafka 4.3.1's words."""

import pytest

from broker.config.broker import BrokerConfig
from broker.config.broker_keys import BROKER_CONFIG_KEYS, IGNORED_KEYS
from broker.config.keys import LONG_MAX, ConfigError
from tests.broker.config.support import HOUR, WEEK, props


def test_embedded_defaults_carry_kafkas_defaults():
    c = BrokerConfig()
    assert c.num_partitions == 1
    assert c.default_replication_factor == 1
    assert c.auto_create_topics_enable is True
    assert c.delete_topic_enable is True
    assert c.log_retention_ms == WEEK
    assert c["log.retention.bytes"] == -1
    assert c["log.segment.bytes"] == 1 << 30
    assert c.log_roll_ms == WEEK
    assert c.log_roll_jitter_ms == 0
    assert c["log.retention.check.interval.ms"] == 300_000
    assert c["log.flush.interval.messages"] == LONG_MAX
    assert c["log.flush.interval.ms"] is None
    assert c.log_flush_interval_ms == LONG_MAX  # log.flush.scheduler.interval.ms
    assert c["log.index.interval.bytes"] == 4096
    assert c["log.index.size.max.bytes"] == 10 * 1024 * 1024
    assert c.log_cleanup_policy == ["delete"]
    assert c["log.message.timestamp.type"] == "CreateTime"
    assert c["log.message.timestamp.before.max.ms"] == LONG_MAX
    assert c["log.message.timestamp.after.max.ms"] == HOUR  # Kafka 4.0+ (KIP-1030)
    assert c.message_max_bytes == 1048588
    assert c.min_insync_replicas == 1
    assert c.socket_request_max_bytes == 104857600
    assert c.connections_max_idle_ms == 600_000
    assert c.offsets_topic_num_partitions == 50
    assert c.offsets_retention_minutes == 10080
    assert c.group_initial_rebalance_delay_ms == 3000
    assert c.group_min_session_timeout_ms == 6000
    assert c.group_max_session_timeout_ms == 1_800_000
    assert c.group_max_size == 2**31 - 1
    assert c.producer_id_expiration_ms == 86_400_000
    assert c.transactional_id_expiration_ms == 604_800_000
    assert c.replica_lag_time_max_ms == 30_000
    assert c.unclean_leader_election_enable is False
    assert c.zookeeper_connect is None
    assert c.zookeeper_session_timeout_ms == 18000
    assert c.zookeeper_connection_timeout_ms == 18000
    assert c.gregor_metrics_port is None  # metrics endpoint disabled


def test_unknown_key_is_a_config_error_naming_it():
    with pytest.raises(ConfigError, match="Unknown configuration 'num.partition'") as info:
        props("num.partition=3")
    assert info.value.key == "num.partition"
    assert "did you mean 'num.partitions'" in str(info.value)


def test_unknown_key_in_an_override_is_a_config_error():
    with pytest.raises(ConfigError, match="gregor.nope"):
        BrokerConfig.load(None, ["gregor.nope=1"])


def test_kafka_keys_gregor_does_not_use_are_accepted_and_reported():
    c = props(
        "num.recovery.threads.per.data.dir=4\n"
        "group.coordinator.rebalance.protocols=classic,consumer\n"
        "inter.broker.protocol.version=3.7\n"
        "ssl.keystore.password=secret\n"
        "listener.name.internal.ssl.keystore.location=/k\n"
        "share.coordinator.state.topic.replication.factor=1\n"
        "zookeeper.set.acl=false\n"
        "offsets.topic.replication.factor=1\n"
        "transaction.state.log.replication.factor=1\n"
    )
    assert c.ignored["num.recovery.threads.per.data.dir"] == "4"
    assert "listener.name.internal.ssl.keystore.location" in c.ignored
    assert c.warnings() == [
        f"configuration {k} is accepted but ignored by Gregor" for k in sorted(c.ignored)
    ]
    assert "secret" not in repr(c)


def test_ignored_keys_and_defined_keys_do_not_overlap():
    assert not IGNORED_KEYS & set(BROKER_CONFIG_KEYS)
    assert "num.recovery.threads.per.data.dir" in IGNORED_KEYS
    assert "message.downconversion.enable" not in IGNORED_KEYS  # a topic key, unknown in 4.x


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "num.partitions=x",
            "Invalid value x for configuration num.partitions: Not a number of type INT",
        ),
        (
            "num.partitions=1_0",
            "Invalid value 1_0 for configuration num.partitions: Not a number of type INT",
        ),
        (
            "num.partitions=0",
            "Invalid value 0 for configuration num.partitions: Value must be at least 1",
        ),
        (
            "num.partitions=2147483648",
            "Invalid value 2147483648 for configuration num.partitions: Not a number of type INT",
        ),
        (
            "offsets.topic.replication.factor=40000",
            "Invalid value 40000 for configuration offsets.topic.replication.factor: "
            "Not a number of type SHORT",
        ),
        (
            "auto.create.topics.enable=yes",
            "Invalid value yes for configuration auto.create.topics.enable: "
            "Expected value to be either true or false",
        ),
        (
            "log.segment.bytes=100",
            "Invalid value 100 for configuration log.segment.bytes: Value must be at least 1048576",
        ),
        (
            "log.cleanup.policy=bogus",
            "Invalid value bogus for configuration log.cleanup.policy: String must be one of: compact, delete",
        ),
        (
            "log.message.timestamp.type=createtime",
            "String must be one of: CreateTime, LogAppendTime",
        ),
        ("compression.type=GZIP", "for configuration compression.type: String must be one of"),
        ("compression.gzip.level=0", "Value must be between 1 and 9 or equal to -1"),
        (
            "log.cleaner.min.cleanable.ratio=1.5",
            "Invalid value 1.5 for configuration log.cleaner.min.cleanable.ratio: Value must be no more than 1",
        ),
        ("node.id=-1", "Invalid value -1 for configuration node.id: Value must be at least 0"),
        (
            "log.roll.hours=0",
            "Invalid value 0 for configuration log.roll.hours: Value must be at least 1",
        ),
        ("log.roll.ms=0", "log.roll.ms must be greater than or equal to 1"),
        ("log.roll.jitter.ms=-1", "log.roll.jitter.ms must be greater than or equal to 0"),
        (
            "process.roles=foo",
            "Invalid value foo for configuration process.roles: String must be one of",
        ),
        ("log.dirs=", "Configuration 'log.dirs' must not be empty"),
        ("log.dirs=/a,/a", "log.dirs"),
        ("gregor.metrics.port=70000", "gregor.metrics.port"),
        ("gregor.cluster.id=abc", "gregor.cluster.id"),
        (
            "controller.quorum.voters=x",
            "Invalid configuration value for controller.quorum.voters. "
            "Each entry should be in the form `{id}@{host}:{port}`.",
        ),
    ],
)
def test_bad_value_is_a_config_error_naming_the_key(text, message):
    key = text.partition("=")[0]
    with pytest.raises(ConfigError) as info:
        props(text)
    assert message in str(info.value)
    assert key in str(info.value)
    assert info.value.key == key


def test_a_bad_list_item_is_named_alone_as_kafka_does():
    with pytest.raises(
        ConfigError, match="Invalid value bogus for configuration log.cleanup.policy"
    ):
        props("log.cleanup.policy=delete,bogus")
