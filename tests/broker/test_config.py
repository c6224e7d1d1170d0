"""Broker and topic configuration: Kafka's names, defaults, precedence, checks and
DescribeConfigs views (values cross-checked against a real Kafka 4.3.1 broker)."""

import pytest

from broker.config import (
    BROKER_CONFIG_KEYS,
    EMBEDDED_PROFILE,
    IGNORED_KEYS,
    LONG_MAX,
    BrokerConfig,
    ConfigError,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    Listener,
    java_double_string,
    parse_properties,
)
from broker.topic_config import (
    TOPIC_CONFIG_KEYS,
    TOPIC_CONFIG_SYNONYMS,
    effective_topic_config,
    validate_topic_config,
)

HOUR = 3_600_000
WEEK = 168 * HOUR


def props(text: str, *overrides: str) -> BrokerConfig:
    return BrokerConfig.from_properties_text(text, overrides)


def syn(entries):
    return [(s.name, s.value, s.source) for s in entries]


# --- embedded defaults ----------------------------------------------------------------


def test_embedded_defaults_are_a_single_node_on_localhost_9092():
    c = BrokerConfig()
    assert c.listeners == [Listener("PLAINTEXT", "localhost", 9092)]
    assert c.node_id == 1
    assert c.log_dirs == ["./data"]
    assert c.advertised_listeners is None
    assert c.single_node
    assert c.warnings() == []


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
    multi = props("zookeeper.connect=zk:2181\n")
    assert not multi.single_node
    assert not any("replication.factor" in w for w in multi.warnings())


def test_load_without_a_file_is_the_embedded_profile(tmp_path):
    c = BrokerConfig.load(None, ["log.dirs=" + str(tmp_path)])
    assert c.offsets_topic_replication_factor == 1
    assert c.log_dirs == [str(tmp_path)]


# --- properties files ---------------------------------------------------------------

SERVER_PROPERTIES = r"""
# A comment
! another comment
   # an indented comment \
num.partitions = 4
log.dirs=/var/lib/gregor/a,\
         /var/lib/gregor/b
listeners:PLAINTEXT://0.0.0.0:9093
broker.rack    rack\u002d1
advertised.listeners=PLAINTEXT://kafka.example.com:9093
log.retention.hours=24
log.cleanup.policy=compact,\
    delete
"""


def test_properties_file_with_comments_continuations_and_escapes(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text(SERVER_PROPERTIES)
    c = BrokerConfig.load(path)
    assert c.num_partitions == 4
    assert c.log_dirs == ["/var/lib/gregor/a", "/var/lib/gregor/b"]
    assert c.listeners == [Listener("PLAINTEXT", "0.0.0.0", 9093)]
    assert c.rack == "rack-1"
    assert c.advertised_listeners == [Listener("PLAINTEXT", "kafka.example.com", 9093)]
    assert c.log_retention_ms == 24 * HOUR
    assert c.log_cleanup_policy == ["compact", "delete"]
    assert c.source("num.partitions") == ConfigSource.STATIC_BROKER_CONFIG


def test_java_properties_syntax():
    # Checked line by line against java.util.Properties.load.
    text = "\n".join(
        [
            "a=1",
            "b: 2",
            "c 3",
            "d\t=\t4  ",
            "e=",
            "f",
            r"g\ key=with\=equals\:colon",
            r"h=tab\there",
            r"i=odd\\",
            "j=x",
            "j=last wins",
            r"k=\a\b",
            "  ! not a value",
            r"l=continued \\",
            "m=2",
            "n==double",
            "o \\",
            "  = split key",
        ]
    )
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4  ",
        "e": "",
        "f": "",
        "g key": "with=equals:colon",
        "h": "tab\there",
        "i": "odd\\",
        "j": "last wins",
        "k": "ab",
        "l": "continued \\",
        "m": "2",
        "n": "=double",
        "o": "split key",
    }


def test_comment_lines_do_not_continue_and_crlf_is_a_line_end():
    assert parse_properties("# comment \\\na=1\r\nb=2\rc=3") == {"a": "1", "b": "2", "c": "3"}


def test_malformed_unicode_escape_is_a_config_error():
    with pytest.raises(ConfigError, match="Malformed"):
        parse_properties(r"a=\u12")


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="Cannot read configuration file"):
        BrokerConfig.load(tmp_path / "nope.properties")


# --- overrides ----------------------------------------------------------------------


def test_overrides_win_over_the_file(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("num.partitions=4\nlog.retention.hours=24\n")
    c = BrokerConfig.load(path, ["num.partitions=8", "log.retention.ms=1000", "broker.rack=a=b"])
    assert c.num_partitions == 8
    assert c.log_retention_ms == 1000
    assert c.rack == "a=b"  # split at the first '='
    assert c.source("num.partitions") == ConfigSource.STATIC_BROKER_CONFIG


def test_override_without_equals_is_a_config_error():
    with pytest.raises(ConfigError, match="num.partitions"):
        BrokerConfig.load(None, ["num.partitions"])


def test_overrides_may_be_a_mapping_of_python_values():
    c = BrokerConfig(
        {"num.partitions": 3, "auto.create.topics.enable": False, "log.dirs": ["/a", "/b"]}
    )
    assert c.num_partitions == 3
    assert c.auto_create_topics_enable is False
    assert c.log_dirs == ["/a", "/b"]


# --- precedence ---------------------------------------------------------------------


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


def test_zookeeper_connection_timeout_falls_back_to_the_session_timeout():
    c = props("zookeeper.connect=zk1:2181,zk2:2181/gregor\nzookeeper.session.timeout.ms=9000")
    assert c.zookeeper_connection_timeout_ms == 9000
    assert props("zookeeper.connection.timeout.ms=100").zookeeper_connection_timeout_ms == 100


# --- unknown and ignored keys --------------------------------------------------------------


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


# --- bad values ---------------------------------------------------------------------


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


@pytest.mark.parametrize(
    ("listeners", "message"),
    [
        ("localhost:9092", "Unable to parse localhost:9092 to a broker endpoint"),
        ("FOO://localhost:9092", "No security protocol defined for listener FOO"),
        (
            "PLAINTEXT://localhost:9092,PLAINTEXT://localhost:9093",
            "Each listener must have a different name",
        ),
        ("SSL://localhost:9093", "Gregor serves PLAINTEXT only"),
        ("PLAINTEXT://localhost:99999", "port 99999"),
        ("", "Configuration 'listeners' must not be empty"),
    ],
)
def test_bad_listener_is_a_config_error_naming_listeners(listeners, message):
    with pytest.raises(ConfigError, match="listeners") as info:
        props(f"listeners={listeners}")
    assert message in str(info.value)
    assert info.value.key == "listeners"


def test_listener_ports_must_differ_but_port_zero_may_repeat():
    text = "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT\n"
    with pytest.raises(ConfigError, match="Each listener must have a different port"):
        props(text + "listeners=PLAINTEXT://localhost:9092,EXTERNAL://localhost:9092")
    c = props(text + "listeners=PLAINTEXT://localhost:0,external://:0")
    assert c.listeners == [Listener("PLAINTEXT", "localhost", 0), Listener("EXTERNAL", "", 0)]


def test_listeners_parse_ipv6_and_named_listeners():
    c = props(
        "listeners=CLIENT://[::1]:9092,REPLICATION://127.0.0.1:9094,CONTROLLER://:9093\n"
        "listener.security.protocol.map=CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        "controller.listener.names=CONTROLLER\n"
        "inter.broker.listener.name=REPLICATION\n"
        "process.roles=broker,controller\n"
        "controller.quorum.voters=1@localhost:9093\n"
    )
    assert c.listeners == [
        Listener("CLIENT", "::1", 9092),
        Listener("REPLICATION", "127.0.0.1", 9094),
    ]
    assert [lst.name for lst in c.all_listeners] == ["CLIENT", "REPLICATION", "CONTROLLER"]
    assert str(c.listeners[0]) == "CLIENT://[::1]:9092"
    assert c.inter_broker_listener_name == "REPLICATION"
    assert c.process_roles == ["broker", "controller"]


def test_bad_advertised_listeners_are_config_errors():
    with pytest.raises(ConfigError, match="nonroutable meta-address 0.0.0.0") as info:
        props("advertised.listeners=PLAINTEXT://0.0.0.0:9092")
    assert info.value.key == "advertised.listeners"
    with pytest.raises(ConfigError, match="listener EXTERNAL is not in listeners"):
        props("advertised.listeners=EXTERNAL://host:9092")


def test_bad_security_protocol_map_is_a_config_error():
    with pytest.raises(ConfigError, match="Invalid security protocol `FOO`"):
        props("listener.security.protocol.map=PLAINTEXT:FOO")
    with pytest.raises(ConfigError, match="listener.security.protocol.map"):
        props("listener.security.protocol.map=PLAINTEXT")


# --- sources, dynamic configs and DescribeConfigs ------------------------------------------


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


def test_java_double_strings():
    assert [java_double_string(v) for v in (0.5, 1.0, 0.0, 1e7, 1.7976931348623157e308, 1e-4)] == [
        "0.5",
        "1.0",
        "0.0",
        "1.0E7",
        "1.7976931348623157E308",
        "1.0E-4",
    ]


# --- topic configs ------------------------------------------------------------------------


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


def test_an_ipv4_and_an_ipv6_listener_may_share_a_port():
    text = "listener.security.protocol.map=A:PLAINTEXT,B:PLAINTEXT,C:PLAINTEXT\n"
    c = props(text + "listeners=A://127.0.0.1:9092,B://[::1]:9092")
    assert [lst.port for lst in c.listeners] == [9092, 9092]
    with pytest.raises(ConfigError, match="different port"):
        props(text + "listeners=A://127.0.0.1:9092,B://[::1]:9092,C://10.0.0.1:9092")


def test_a_bad_list_item_is_named_alone_as_kafka_does():
    with pytest.raises(
        ConfigError, match="Invalid value bogus for configuration log.cleanup.policy"
    ):
        props("log.cleanup.policy=delete,bogus")


def test_none_in_a_mapping_means_unset():
    assert BrokerConfig({"log.retention.ms": None}).log_retention_ms == WEEK


def test_a_rejected_dynamic_update_changes_nothing():
    c = BrokerConfig()
    with pytest.raises(ConfigError, match="log.roll.ms must be greater than or equal to 1"):
        c.alter({"log.roll.ms": "0", "log.retention.ms": "5"})
    assert c.log_roll_ms == WEEK and c.log_retention_ms == WEEK
    assert c.dynamic_broker == {}


def test_returned_lists_are_copies():
    c = BrokerConfig()
    c["log.cleanup.policy"].append("compact")
    c.log_dirs.append("/elsewhere")
    assert c.log_cleanup_policy == ["delete"] and c.log_dirs == ["./data"]
    t = effective_topic_config(c, {"cleanup.policy": "compact"})
    t.cleanup_policy.append("delete")
    assert t.cleanup_policy == ["compact"]


def test_topic_compaction_lags_are_checked_against_the_broker_defaults():
    broker = props("log.cleaner.min.compaction.lag.ms=100")
    with pytest.raises(
        ConfigError, match=r"min.compaction.lag.ms \(100\) > max.compaction.lag.ms \(50\)"
    ):
        effective_topic_config(broker, {"max.compaction.lag.ms": "50"})
    assert validate_topic_config({"max.compaction.lag.ms": "50"}) == {"max.compaction.lag.ms": 50}
