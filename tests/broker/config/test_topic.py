"""Topic configuration: Kafka 4.3.1's topic keys, overrides over the broker's
defaults, checks, DescribeConfigs views and the partition log settings."""

import pytest

from broker.config.broker import BrokerConfig
from broker.config.broker_keys import BROKER_CONFIG_KEYS
from broker.config.describe import ConfigSource, ConfigSynonym
from broker.config.keys import LONG_MAX, ConfigError, ConfigType
from broker.config.topic import (
    TOPIC_CONFIG_KEYS,
    TOPIC_CONFIG_SYNONYMS,
    effective_topic_config,
    validate_topic_config,
)
from tests.broker.config.support import HOUR, WEEK, props, syn


def test_topic_keys_are_kafka_4_topic_keys():
    assert len(TOPIC_CONFIG_KEYS) == 33
    assert set(TOPIC_CONFIG_SYNONYMS) <= set(TOPIC_CONFIG_KEYS)
    for synonyms in TOPIC_CONFIG_SYNONYMS.values():
        assert set(synonyms) <= set(BROKER_CONFIG_KEYS)
    for removed in ("message.downconversion.enable", "message.format.version"):
        assert removed not in TOPIC_CONFIG_KEYS


def test_effective_topic_config_takes_overrides_over_broker_defaults():
    broker = props("log.retention.hours=24\nlog.segment.bytes=2097152\nlog.cleanup.policy=compact")
    t = effective_topic_config(broker, {"retention.bytes": "1000", "segment.ms": "60000"})
    assert t.retention_ms == 24 * HOUR
    assert t.retention_bytes == 1000
    assert t.segment_bytes == 2097152
    assert t.segment_ms == 60000
    assert t.cleanup_policy == ["compact"]
    assert t.compact_enabled and not t.delete_enabled
    assert t.max_message_bytes == 1048588  # from message.max.bytes
    assert t["flush.ms"] == LONG_MAX  # from log.flush.scheduler.interval.ms
    assert t["remote.storage.enable"] is False  # no broker synonym: topic default


def test_internal_segment_bytes_overrides_segment_bytes_below_its_minimum():
    t = effective_topic_config(BrokerConfig(), {"internal.segment.bytes": "1024"})
    assert t.segment_bytes == 1024
    assert "internal.segment.bytes" not in {e.name for e in t.describe()}
    assert t.to_log_config().segment_bytes == 1024


def test_topic_describe_matches_kafka_sources_and_synonyms():
    # The same broker settings and topic as a real Kafka 4.3.1 broker was asked about.
    broker = props("log.retention.hours=24\nlog.roll.ms=3600000\nnum.partitions=3")
    t = effective_topic_config(broker, {"retention.bytes": "1000"})
    entries = {e.name: e for e in t.describe()}
    assert len(entries) == 33

    def view(name):
        e = entries[name]
        return e.value, e.source, syn(e.synonyms)

    D, S, T = (
        ConfigSource.DEFAULT_CONFIG,
        ConfigSource.STATIC_BROKER_CONFIG,
        ConfigSource.TOPIC_CONFIG,
    )
    assert view("cleanup.policy") == ("delete", D, [("log.cleanup.policy", "delete", D)])
    assert view("retention.bytes") == (
        "1000",
        T,
        [("retention.bytes", "1000", T), ("log.retention.bytes", "-1", D)],
    )
    # Kafka lists no synonym unless log.retention.ms itself is set, yet applies the hours.
    assert view("retention.ms") == ("86400000", D, [])
    assert view("segment.ms") == (
        "3600000",
        S,
        [("log.roll.ms", "3600000", S), ("log.roll.hours", "168", D)],
    )
    assert view("flush.ms") == (str(LONG_MAX), D, [])
    assert view("segment.jitter.ms") == ("0", D, [])
    assert view("max.message.bytes") == ("1048588", D, [("message.max.bytes", "1048588", D)])
    assert view("delete.retention.ms") == (
        "86400000",
        D,
        [("log.cleaner.delete.retention.ms", "86400000", D)],
    )
    assert view("leader.replication.throttled.replicas") == ("", D, [])
    assert view("remote.storage.enable") == ("false", D, [])
    assert view("min.cleanable.dirty.ratio") == (
        "0.5",
        D,
        [("log.cleaner.min.cleanable.ratio", "0.5", D)],
    )
    assert view("message.timestamp.after.max.ms") == (
        "3600000",
        D,
        [("log.message.timestamp.after.max.ms", "3600000", D)],
    )
    e = entries["retention.ms"]
    assert (e.read_only, e.sensitive, e.config_type) == (False, False, ConfigType.LONG)


def test_topic_retention_synonyms_appear_when_log_retention_ms_is_set():
    broker = props("log.retention.ms=5000\nlog.retention.hours=2")
    t = effective_topic_config(broker, {})
    assert t.source("retention.ms") == ConfigSource.STATIC_BROKER_CONFIG
    S, D = ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG
    assert t.synonyms("retention.ms") == [
        ConfigSynonym("log.retention.ms", "5000", S),
        ConfigSynonym("log.retention.hours", "2", S),
        ConfigSynonym("log.retention.hours", "168", D),
    ]


def test_topic_source_follows_dynamic_broker_defaults():
    broker = BrokerConfig()
    broker.alter({"log.retention.ms": "60000"}, per_broker=False)
    t = effective_topic_config(broker, {})
    assert t.retention_ms == 60000
    assert t.source("retention.ms") == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG


def test_topic_describe_can_select_keys():
    t = effective_topic_config(BrokerConfig(), {})
    assert [e.name for e in t.describe(["segment.bytes", "nope"])] == ["segment.bytes"]


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"foo.bar": "1"}, "Unknown topic config name: foo.bar"),
        (
            {"message.downconversion.enable": "true"},
            "Unknown topic config name: message.downconversion.enable",
        ),
        (
            {"retention.ms": "abc"},
            "Invalid value abc for configuration retention.ms: Not a number of type LONG",
        ),
        (
            {"retention.ms": "-2"},
            "Invalid value -2 for configuration retention.ms: Value must be at least -1",
        ),
        (
            {"segment.bytes": "100"},
            "Invalid value 100 for configuration segment.bytes: Value must be at least 1048576",
        ),
        (
            {"cleanup.policy": "Delete"},
            "Invalid value Delete for configuration cleanup.policy: String must be one of: compact, delete",
        ),
        ({"min.cleanable.dirty.ratio": "1.5"}, "Value must be no more than 1"),
        ({"preallocate": "yes"}, "Expected value to be either true or false"),
        ({"max.message.bytes": "2147483648"}, "Not a number of type INT"),
        ({"min.insync.replicas": "0"}, "Value must be at least 1"),
        ({"compression.zstd.level": "-131073"}, "Value must be at least -131072"),
        (
            {"leader.replication.throttled.replicas": "x"},
            "Invalid value [x] for configuration leader.replication.throttled.replicas: "
            "leader.replication.throttled.replicas must be the literal '*'",
        ),
        (
            {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
            "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)",
        ),
        (
            {"remote.storage.enable": "true"},
            "Tiered Storage functionality is disabled in the broker",
        ),
        ({"retention.ms": None}, "Null value not supported for topic configs: retention.ms"),
    ],
)
def test_bad_topic_config_is_a_config_error_naming_the_key(configs, message):
    with pytest.raises(ConfigError) as info:
        validate_topic_config(configs)
    assert message in str(info.value)
    assert info.value.key in configs


def test_valid_topic_configs_parse_as_kafka_parses_them():
    typed = validate_topic_config(
        {
            "retention.ms": " 100 ",
            "cleanup.policy": "delete, compact",
            "preallocate": "TRUE",
            "leader.replication.throttled.replicas": "0:1,1:2",
            "follower.replication.throttled.replicas": "*",
        }
    )
    assert typed == {
        "retention.ms": 100,
        "cleanup.policy": ["delete", "compact"],
        "preallocate": True,
        "leader.replication.throttled.replicas": ["0:1", "1:2"],
        "follower.replication.throttled.replicas": ["*"],
    }


def test_altering_topic_overrides_sets_and_removes():
    t = effective_topic_config(BrokerConfig(), {"retention.ms": "100"})
    t2 = t.with_overrides({"retention.ms": None, "retention.bytes": 5})
    assert t2.overrides == {"retention.bytes": "5"}
    assert t2.retention_ms == WEEK
    with pytest.raises(ConfigError, match="Unknown topic config name: nope"):
        t.with_overrides({"nope": None})


def test_topic_config_gives_the_partition_log_settings():
    broker = props("log.flush.interval.messages=10\nproducer.id.expiration.ms=1000")
    log = effective_topic_config(
        broker, {"retention.ms": "-1", "cleanup.policy": "compact,delete"}
    ).to_log_config()
    assert log.retention_ms == -1
    assert log.flush_interval_messages == 10
    assert log.cleanup_policy == "compact,delete"
    assert log.producer_id_expiration_ms == 1000


def test_topic_compaction_lags_are_checked_against_the_broker_defaults():
    broker = props("log.cleaner.min.compaction.lag.ms=100")
    with pytest.raises(
        ConfigError, match=r"min.compaction.lag.ms \(100\) > max.compaction.lag.ms \(50\)"
    ):
        effective_topic_config(broker, {"max.compaction.lag.ms": "50"})
    assert validate_topic_config({"max.compaction.lag.ms": "50"}) == {"max.compaction.lag.ms": 50}
