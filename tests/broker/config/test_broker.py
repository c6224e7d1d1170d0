"""BrokerConfig: the embedded profile, the layers (file, overrides, dynamic),
precedence of synonym keys, AlterConfigs and DescribeConfigs views (values
cross-checked against a real Kafka 4.3.1 broker)."""

import pytest

from broker.config.broker import BrokerConfig
from broker.config.broker_keys import BROKER_CONFIG_KEYS, EMBEDDED_PROFILE
from broker.config.describe import ConfigSource
from broker.config.keys import ConfigError, ConfigType
from broker.config.listeners import Endpoint
from broker.config.topic import effective_topic_config
from tests.broker.config.support import HOUR, WEEK, props, syn


def test_embedded_defaults_are_a_single_node_on_localhost_9092():
    c = BrokerConfig()
    assert c.listeners == [Endpoint("PLAINTEXT", "localhost", 9092)]
    assert c.node_id == 1
    assert c.log_dirs == ["./data"]
    assert c.advertised_listeners is None
    assert c.single_node
    assert c.warnings() == []


def test_embedded_profile_gives_internal_topics_replication_factor_one():
    c = BrokerConfig()
    assert c.offsets_topic_replication_factor == 1
    assert c.transaction_state_log_replication_factor == 1
    assert c.transaction_state_log_min_isr == 1
    assert c.source("offsets.topic.replication.factor") == ConfigSource.STATIC_BROKER_CONFIG
    assert set(EMBEDDED_PROFILE) <= set(c.static)


def test_a_properties_file_gets_kafkas_replication_factor_three_and_a_warning():
    c = props("num.partitions=3\n")
    assert c.offsets_topic_replication_factor == 3
    assert c.source("offsets.topic.replication.factor") == ConfigSource.DEFAULT_CONFIG
    assert any("offsets.topic.replication.factor=3" in w for w in c.warnings())


def test_load_without_a_file_is_the_embedded_profile(tmp_path):
    c = BrokerConfig.load(None, ["log.dirs=" + str(tmp_path)])
    assert c.offsets_topic_replication_factor == 1
    assert c.log_dirs == [str(tmp_path)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", WEEK),
        ("log.retention.hours=24", 24 * HOUR),
        ("log.retention.hours=24\nlog.retention.minutes=30", 30 * 60_000),
        ("log.retention.hours=24\nlog.retention.minutes=30\nlog.retention.ms=1234", 1234),
        ("log.retention.minutes=30\nlog.retention.ms=1234", 1234),
        ("log.retention.hours=-1", -1),
        ("log.retention.minutes=-5", -1),  # any negative is "unlimited"
        ("log.retention.ms=-2\nlog.retention.hours=1", -1),
        ("log.retention.ms=0", 0),
    ],
)
def test_retention_ms_beats_minutes_beats_hours(text, expected):
    assert props(text).log_retention_ms == expected


@pytest.mark.parametrize(
    ("text", "roll", "jitter"),
    [
        ("", WEEK, 0),
        ("log.roll.hours=2", 2 * HOUR, 0),
        ("log.roll.hours=2\nlog.roll.ms=500", 500, 0),
        ("log.roll.jitter.hours=1", WEEK, HOUR),
        ("log.roll.jitter.hours=1\nlog.roll.jitter.ms=7", WEEK, 7),
    ],
)
def test_roll_ms_beats_roll_hours(text, roll, jitter):
    c = props(text)
    assert (c.log_roll_ms, c.log_roll_jitter_ms) == (roll, jitter)


def test_flush_interval_ms_falls_back_to_the_scheduler_interval():
    assert props("log.flush.scheduler.interval.ms=2000").log_flush_interval_ms == 2000
    assert (
        props(
            "log.flush.scheduler.interval.ms=2000\nlog.flush.interval.ms=10"
        ).log_flush_interval_ms
        == 10
    )


def test_log_dirs_beats_log_dir():
    assert props("log.dir=/x").log_dirs == ["/x"]
    assert props("log.dir=/x\nlog.dirs=/y, /z").log_dirs == ["/y", "/z"]


def test_node_id_and_broker_id_are_one_setting():
    assert props("broker.id=3").node_id == 3
    assert props("node.id=4")["broker.id"] == 4
    assert props("node.id=5\nbroker.id=5").node_id == 5
    with pytest.raises(ConfigError, match="`node.id` to the same value as `broker.id`"):
        props("node.id=5\nbroker.id=6")


def test_zookeeper_connect_makes_a_broker_of_a_cluster():
    assert not props("zookeeper.connect=zk1:2181,zk2:2181/gregor").single_node
    assert props("zookeeper.connect=").single_node  # empty: unset
    assert props("").single_node


def test_zookeeper_connection_timeout_falls_back_to_the_session_timeout():
    c = props("zookeeper.session.timeout.ms=9000")
    assert c.zookeeper_connection_timeout_ms == 9000
    assert props("zookeeper.connection.timeout.ms=100").zookeeper_connection_timeout_ms == 100


def test_none_in_a_mapping_means_unset():
    assert BrokerConfig({"log.retention.ms": None}).log_retention_ms == WEEK


def test_each_value_knows_its_source():
    c = props("log.retention.ms=5000")
    assert c.source("log.retention.ms") == ConfigSource.STATIC_BROKER_CONFIG
    assert c.source("log.segment.bytes") == ConfigSource.DEFAULT_CONFIG
    c.alter({"log.segment.bytes": "2097152"}, per_broker=False)
    assert c.source("log.segment.bytes") == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    c.alter({"log.segment.bytes": "4194304"})
    assert c.source("log.segment.bytes") == ConfigSource.DYNAMIC_BROKER_CONFIG
    assert c["log.segment.bytes"] == 4194304
    c.alter({"log.segment.bytes": None})
    assert c["log.segment.bytes"] == 2097152
    c.alter({"log.retention.ms": "7000"})
    assert c.log_retention_ms == 7000


def test_read_only_and_per_broker_keys_cannot_be_altered_as_kafka_says():
    c = BrokerConfig()
    with pytest.raises(
        ConfigError, match=r"Cannot update these configs dynamically: \[log.retention.hours\]"
    ):
        c.alter({"log.retention.hours": "1"})
    with pytest.raises(ConfigError, match="Unknown configuration 'nope'"):
        c.alter({"nope": "1"})
    with pytest.raises(ConfigError, match="Invalid value 0 for configuration min.insync.replicas"):
        c.alter({"min.insync.replicas": "0"})
    c.alter({"min.insync.replicas": "2"}, validate_only=True)
    assert c.min_insync_replicas == 1
    assert c.describe(["log.retention.hours"])[0].read_only
    assert not c.describe(["log.retention.ms"])[0].read_only


def test_a_rejected_dynamic_update_changes_nothing():
    c = BrokerConfig()
    with pytest.raises(ConfigError, match="log.roll.ms must be greater than or equal to 1"):
        c.alter({"log.roll.ms": "0", "log.retention.ms": "5"})
    assert c.log_roll_ms == WEEK and c.log_retention_ms == WEEK
    assert c.dynamic_broker == {}


def test_broker_describe_reports_value_source_synonyms_and_type():
    c = props("log.retention.hours=24\nlog.roll.ms=3600000\nnode.id=7")
    by_name = {e.name: e for e in c.describe()}
    assert set(by_name) == set(BROKER_CONFIG_KEYS)
    hours = by_name["log.retention.hours"]
    assert (hours.value, hours.source, hours.config_type) == (
        "24",
        ConfigSource.STATIC_BROKER_CONFIG,
        ConfigType.INT,
    )
    assert syn(hours.synonyms) == [
        ("log.retention.hours", "24", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG),
    ]
    ms = by_name["log.retention.ms"]
    assert (ms.value, ms.source, ms.synonyms) == (None, ConfigSource.DEFAULT_CONFIG, [])
    roll = by_name["log.roll.ms"]
    assert syn(roll.synonyms) == [
        ("log.roll.ms", "3600000", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.roll.hours", "168", ConfigSource.DEFAULT_CONFIG),
    ]
    assert by_name["broker.id"].value == "7"
    assert by_name["log.cleaner.min.cleanable.ratio"].value == "0.5"
    assert by_name["log.cleaner.min.cleanable.ratio"].config_type == ConfigType.DOUBLE
    assert by_name["listeners"].read_only  # Gregor cannot rebind at run time
    doc = c.describe(["num.partitions"], include_documentation=True, include_synonyms=False)[0]
    assert doc.documentation and doc.synonyms == []


def test_cluster_default_describe_lists_only_dynamic_defaults():
    c = BrokerConfig()
    assert c.describe_cluster_defaults() == []
    c.alter({"log.retention.ms": "100"}, per_broker=False)
    (entry,) = c.describe_cluster_defaults()
    assert (entry.name, entry.value, entry.source) == (
        "log.retention.ms",
        "100",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
    assert syn(entry.synonyms) == [
        ("log.retention.ms", "100", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    ]


def test_returned_lists_are_copies():
    c = BrokerConfig()
    c["log.cleanup.policy"].append("compact")
    c.log_dirs.append("/elsewhere")
    assert c.log_cleanup_policy == ["delete"] and c.log_dirs == ["./data"]
    t = effective_topic_config(c, {"cleanup.policy": "compact"})
    t.cleanup_policy.append("delete")
    assert t.cleanup_policy == ["compact"]
