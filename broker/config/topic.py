"""Topic-level configuration: Kafka's topic keys, their broker synonyms, checks,
and the effective configuration of a topic.

    validate_topic_config({"retention.ms": "3600000"})   # CreateTopics/AlterConfigs
    cfg = effective_topic_config(broker_config, topic.configs)
    cfg.retention_ms, cfg["cleanup.policy"], cfg.source("retention.ms")
    cfg.describe()                                        # DescribeConfigs entries
    cfg.to_log_config()                                   # logstore.config.LogConfig

The key set, types, defaults, ranges, synonyms and error texts are Kafka
4.3.1's (LogConfig and ServerTopicConfigSynonyms). Kafka 4.x no longer knows
`message.format.version`, `message.timestamp.difference.max.ms` or
`message.downconversion.enable` as topic configs: they are unknown here too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from broker.config.broker import BrokerConfig
from broker.config.broker_keys import CLEANUP_POLICIES, COMPRESSION_TYPES, TIMESTAMP_TYPES
from broker.config.describe import ConfigEntry, ConfigSource, ConfigSynonym
from broker.config.keys import (
    LONG_MAX,
    ConfigError,
    ConfigKey,
    ConfigType,
    as_raw,
    at_least,
    between,
    define_key,
    gzip_level,
    one_of,
)

if TYPE_CHECKING:
    from logstore.config import LogConfig

B, S, I, L, D, LS = (  # noqa: E741
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
)

_DAY_MS = 24 * 60 * 60 * 1000
_WEEK_MS = 7 * _DAY_MS


def _throttled_replicas(name: str):
    """Kafka's ThrottledReplicaListValidator: '*' or partition:broker pairs."""

    def check(v):
        if v is None or v == ["*"]:
            return None
        if all(re.fullmatch(r"[0-9]+:[0-9]+", item.strip()) for item in v):
            return None
        return (
            "[" + ", ".join(v) + "]",
            f"{name} must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
        )

    check.describe = "[partitionId]:[brokerId],[partitionId]:[brokerId],..."  # type: ignore[attr-defined]
    return check


def _throttled(name: str) -> ConfigKey:
    doc = "Replicas whose replication is throttled (Gregor accepts and does not throttle)."
    return define_key(name, LS, [], doc, _throttled_replicas(name))


# fmt: off
_TOPIC_KEYS: list[ConfigKey] = [
    define_key("cleanup.policy", LS, ["delete"], "'delete' and/or 'compact': what happens to segments beyond the retention window.", one_of(*CLEANUP_POLICIES)),
    define_key("compression.gzip.level", I, -1, "Level for compression.type=gzip.", gzip_level),
    define_key("compression.lz4.level", I, 9, "Level for compression.type=lz4.", between(1, 17)),
    define_key("compression.type", S, "producer", "Final compression of the topic's batches; 'producer' keeps the producer's codec.", one_of(*COMPRESSION_TYPES)),
    define_key("compression.zstd.level", I, 3, "Level for compression.type=zstd.", between(-131072, 22)),
    define_key("delete.retention.ms", L, _DAY_MS, "How long tombstones are kept in a compacted topic.", at_least(0)),
    define_key("file.delete.delay.ms", L, 60000, "Delay before a deleted segment's files are removed.", at_least(0)),
    define_key("flush.messages", L, LONG_MAX, "fsync after this many messages.", at_least(1)),
    define_key("flush.ms", L, LONG_MAX, "fsync when data has been unflushed this long.", at_least(0)),
    _throttled("follower.replication.throttled.replicas"),
    define_key("index.interval.bytes", I, 4096, "Bytes of batches between two offset index entries.", at_least(0)),
    _throttled("leader.replication.throttled.replicas"),
    define_key("local.retention.bytes", L, -2, "Tiered storage (unsupported): local retention bytes, -2: retention.bytes.", at_least(-2)),
    define_key("local.retention.ms", L, -2, "Tiered storage (unsupported): local retention ms, -2: retention.ms.", at_least(-2)),
    define_key("max.compaction.lag.ms", L, LONG_MAX, "Maximum time a message stays ineligible for compaction.", at_least(1)),
    define_key("max.message.bytes", I, 1048588, "The largest record batch size allowed (after compression).", at_least(0)),
    define_key("message.timestamp.after.max.ms", L, 3600000, "How far a CreateTime timestamp may lie after the broker's clock.", at_least(0)),
    define_key("message.timestamp.before.max.ms", L, LONG_MAX, "How far a CreateTime timestamp may lie before the broker's clock.", at_least(0)),
    define_key("message.timestamp.type", S, "CreateTime", "CreateTime or LogAppendTime.", one_of(*TIMESTAMP_TYPES)),
    define_key("min.cleanable.dirty.ratio", D, 0.5, "Minimum dirty ratio of the log for it to be compacted.", between(0, 1)),
    define_key("min.compaction.lag.ms", L, 0, "Minimum time a message stays uncompacted.", at_least(0)),
    define_key("min.insync.replicas", I, 1, "Minimum ISR size for acks=all writes to succeed.", at_least(1)),
    define_key("preallocate", B, False, "Preallocate segment files."),
    define_key("remote.log.copy.disable", B, False, "Tiered storage (unsupported)."),
    define_key("remote.log.delete.on.disable", B, False, "Tiered storage (unsupported)."),
    define_key("remote.storage.enable", B, False, "Tiered storage (unsupported: true is rejected)."),
    define_key("retention.bytes", L, -1, "Maximum size of a partition's log before old segments are deleted (-1: none)."),
    define_key("retention.ms", L, _WEEK_MS, "How long a segment is kept before deletion (-1: no time limit).", at_least(-1)),
    define_key("segment.bytes", I, 1073741824, "Maximum size of a segment file.", at_least(1048576)),
    define_key("segment.index.bytes", I, 10485760, "Maximum size of a segment's offset index.", at_least(4)),
    define_key("segment.jitter.ms", L, 0, "Maximum random jitter subtracted from segment.ms.", at_least(0)),
    define_key("segment.ms", L, _WEEK_MS, "Roll a segment after this long.", at_least(1)),
    define_key("unclean.leader.election.enable", B, False, "Allow a replica outside the ISR to become leader, at the risk of data loss."),
]
# fmt: on

TOPIC_CONFIG_KEYS: dict[str, ConfigKey] = {k.name: k for k in _TOPIC_KEYS}

# Kafka's internal (undocumented, test-only) override of segment.bytes, below
# its 1 MiB minimum. Accepted, never described.
INTERNAL_SEGMENT_BYTES = "internal.segment.bytes"
INTERNAL_TOPIC_KEYS: dict[str, ConfigKey] = {
    INTERNAL_SEGMENT_BYTES: define_key(
        INTERNAL_SEGMENT_BYTES,
        I,
        None,
        "Test-only segment size (no minimum); overrides segment.bytes.",
    ),
}

# Topic key -> broker keys that provide its default, highest priority first
# (Kafka's ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS). Keys not here
# have no broker default.
TOPIC_CONFIG_SYNONYMS: dict[str, list[str]] = {
    "cleanup.policy": ["log.cleanup.policy"],
    "compression.gzip.level": ["compression.gzip.level"],
    "compression.lz4.level": ["compression.lz4.level"],
    "compression.type": ["compression.type"],
    "compression.zstd.level": ["compression.zstd.level"],
    "delete.retention.ms": ["log.cleaner.delete.retention.ms"],
    "file.delete.delay.ms": ["log.segment.delete.delay.ms"],
    "flush.messages": ["log.flush.interval.messages"],
    "flush.ms": ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
    "index.interval.bytes": ["log.index.interval.bytes"],
    "local.retention.bytes": ["log.local.retention.bytes"],
    "local.retention.ms": ["log.local.retention.ms"],
    "max.compaction.lag.ms": ["log.cleaner.max.compaction.lag.ms"],
    "max.message.bytes": ["message.max.bytes"],
    "message.timestamp.after.max.ms": ["log.message.timestamp.after.max.ms"],
    "message.timestamp.before.max.ms": ["log.message.timestamp.before.max.ms"],
    "message.timestamp.type": ["log.message.timestamp.type"],
    "min.cleanable.dirty.ratio": ["log.cleaner.min.cleanable.ratio"],
    "min.compaction.lag.ms": ["log.cleaner.min.compaction.lag.ms"],
    "min.insync.replicas": ["min.insync.replicas"],
    "preallocate": ["log.preallocate"],
    "retention.bytes": ["log.retention.bytes"],
    "retention.ms": ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
    "segment.bytes": ["log.segment.bytes"],
    "segment.index.bytes": ["log.index.size.max.bytes"],
    "segment.jitter.ms": ["log.roll.jitter.ms", "log.roll.jitter.hours"],
    "segment.ms": ["log.roll.ms", "log.roll.hours"],
    "unclean.leader.election.enable": ["unclean.leader.election.enable"],
}

_TIERED_STORAGE_DISABLED = (
    "Tiered Storage functionality is disabled in the broker. "
    "Topic cannot be configured with remote log storage."
)


def topic_key(name: str) -> ConfigKey:
    spec = TOPIC_CONFIG_KEYS.get(name) or INTERNAL_TOPIC_KEYS.get(name)
    if spec is None:
        raise ConfigError(f"Unknown topic config name: {name}", name)
    return spec


def validate_topic_config(
    configs: Mapping[str, Any], broker: BrokerConfig | None = None
) -> dict[str, Any]:
    """Check topic overrides as CreateTopics/AlterConfigs do; their typed values.

    Raises ConfigError (→ INVALID_CONFIG) naming the key: unknown name, null
    value, unparsable or out-of-range value, min.compaction.lag.ms above
    max.compaction.lag.ms (with the broker's defaults for the one not
    overridden, when `broker` is given), or remote storage (which Gregor lacks).
    """
    typed: dict[str, Any] = {}
    for name, raw in configs.items():
        spec = topic_key(name)
        if raw is None:
            raise ConfigError(f"Null value not supported for topic configs: {name}", name)
        typed[name] = spec.parse(raw if isinstance(raw, str) else as_raw(raw))
    low = typed.get("min.compaction.lag.ms")
    high = typed.get("max.compaction.lag.ms")
    if low is None:
        low = broker["log.cleaner.min.compaction.lag.ms"] if broker else 0
    if high is None:
        high = broker["log.cleaner.max.compaction.lag.ms"] if broker else LONG_MAX
    if low > high:
        raise ConfigError(
            f"conflict topic config setting min.compaction.lag.ms ({low}) > "
            f"max.compaction.lag.ms ({high})",
            "min.compaction.lag.ms",
            low,
        )
    if typed.get("remote.storage.enable"):
        raise ConfigError(_TIERED_STORAGE_DISABLED, "remote.storage.enable", True)
    return typed


def broker_default(broker: BrokerConfig, name: str) -> Any:
    """The value a topic without an override of `name` gets from the broker
    (Kafka's KafkaConfig.extractLogConfigMap)."""
    derived = {
        "retention.ms": lambda: broker.log_retention_ms,
        "segment.ms": lambda: broker.log_roll_ms,
        "segment.jitter.ms": lambda: broker.log_roll_jitter_ms,
        "flush.ms": lambda: broker.log_flush_interval_ms,
    }
    if name in derived:
        return derived[name]()
    synonyms = TOPIC_CONFIG_SYNONYMS.get(name)
    if synonyms:
        value = broker[synonyms[0]]
        return list(value) if isinstance(value, list) else value
    return topic_key(name).default


class TopicConfig:
    """A topic's effective configuration: its overrides over the broker's defaults.

    `cfg[key]` and `cfg.<key_with_underscores>` give typed values
    (`cfg.retention_ms`, `cfg.cleanup_policy`); `segment_bytes` honours
    internal.segment.bytes as Kafka's LogConfig does.
    """

    def __init__(self, broker: BrokerConfig, overrides: Mapping[str, Any] | None = None):
        self.broker = broker
        raw = {k: (v if isinstance(v, str) else as_raw(v)) for k, v in (overrides or {}).items()}
        self._typed = validate_topic_config(raw, broker)
        self.overrides: dict[str, str] = raw

    def __getitem__(self, name: str) -> Any:
        topic_key(name)
        if name in self._typed:
            value = self._typed[name]
            return list(value) if isinstance(value, list) else value
        return broker_default(self.broker, name)

    def __getattr__(self, attr: str) -> Any:
        name = attr.replace("_", ".")
        if name in TOPIC_CONFIG_KEYS or name in INTERNAL_TOPIC_KEYS:
            return self[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {attr!r}")

    @property
    def segment_bytes(self) -> int:
        internal = self._typed.get(INTERNAL_SEGMENT_BYTES)
        return internal if internal is not None else self["segment.bytes"]

    @property
    def delete_enabled(self) -> bool:
        return "delete" in [p.lower() for p in self["cleanup.policy"]]

    @property
    def compact_enabled(self) -> bool:
        return "compact" in [p.lower() for p in self["cleanup.policy"]]

    def values(self) -> dict[str, Any]:
        """Every described key's effective typed value."""
        return {name: self[name] for name in sorted(TOPIC_CONFIG_KEYS)}

    def string_value(self, name: str) -> str | None:
        return topic_key(name).to_string(self[name])

    def source(self, name: str) -> ConfigSource:
        if name in self.overrides:
            return ConfigSource.TOPIC_CONFIG
        syns = self.synonyms(name)
        return syns[0].source if syns else ConfigSource.DEFAULT_CONFIG

    def synonyms(self, name: str) -> list[ConfigSynonym]:
        """Kafka's synonym list for a topic key: the override (if any), then the
        broker's entries for its first broker synonym (see
        BrokerConfig.config_synonyms, including Kafka's quirk that a topic's
        retention.ms lists no synonyms unless log.retention.ms itself is set)."""
        spec = topic_key(name)
        server = TOPIC_CONFIG_SYNONYMS.get(name)
        found = list(self.broker.config_synonyms(server[0])) if server else []
        if name in self.overrides:
            value = None if spec.sensitive else self.string_value(name)
            found.insert(0, ConfigSynonym(name, value, ConfigSource.TOPIC_CONFIG))
        return found

    def describe(
        self,
        keys: Iterable[str] | None = None,
        *,
        include_synonyms: bool = True,
        include_documentation: bool = False,
    ) -> list[ConfigEntry]:
        """DescribeConfigs entries of the topic: every (non-internal) topic key,
        or only `keys` (unknown names are left out, as Kafka does)."""
        names = (
            sorted(TOPIC_CONFIG_KEYS) if not keys else [k for k in keys if k in TOPIC_CONFIG_KEYS]
        )
        entries = []
        for name in names:
            spec = TOPIC_CONFIG_KEYS[name]
            syns = self.synonyms(name)
            entries.append(
                ConfigEntry(
                    name=name,
                    value=None if spec.sensitive else self.string_value(name),
                    source=syns[0].source if syns else ConfigSource.DEFAULT_CONFIG,
                    read_only=False,
                    sensitive=spec.sensitive,
                    synonyms=syns if include_synonyms else [],
                    config_type=spec.type,
                    documentation=spec.doc if include_documentation else None,
                )
            )
        return entries

    def with_overrides(self, updates: Mapping[str, Any]) -> TopicConfig:
        """A copy with overrides set (value) or removed (None): IncrementalAlterConfigs."""
        merged = dict(self.overrides)
        for name, value in updates.items():
            if value is None:
                topic_key(name)
                merged.pop(name, None)
            else:
                merged[name] = value if isinstance(value, str) else as_raw(value)
        return TopicConfig(self.broker, merged)

    def to_log_config(self) -> LogConfig:
        """The settings of this topic's partition logs (logstore.config.LogConfig)."""
        from logstore.config import LogConfig

        props = {
            "segment.bytes": str(self.segment_bytes),
            "segment.ms": str(self["segment.ms"]),
            "segment.jitter.ms": str(self["segment.jitter.ms"]),
            "segment.index.bytes": str(self["segment.index.bytes"]),
            "index.interval.bytes": str(self["index.interval.bytes"]),
            "retention.ms": str(self["retention.ms"]),
            "retention.bytes": str(self["retention.bytes"]),
            "flush.messages": str(self["flush.messages"]),
            "flush.ms": str(self["flush.ms"]),
            "cleanup.policy": ",".join(self["cleanup.policy"]),
            "min.cleanable.dirty.ratio": str(self["min.cleanable.dirty.ratio"]),
            "min.compaction.lag.ms": str(self["min.compaction.lag.ms"]),
            "max.compaction.lag.ms": str(self["max.compaction.lag.ms"]),
            "delete.retention.ms": str(self["delete.retention.ms"]),
        }
        try:
            base = LogConfig(producer_id_expiration_ms=self.broker["producer.id.expiration.ms"])
            return LogConfig.from_topic_config(props, base)
        except ValueError as exc:
            raise ConfigError(f"Invalid log configuration: {exc}") from exc

    def __repr__(self) -> str:
        return f"TopicConfig(overrides={self.overrides!r})"


def effective_topic_config(
    broker: BrokerConfig, overrides: Mapping[str, Any] | None = None
) -> TopicConfig:
    """The effective configuration of a topic with these overrides on this broker."""
    return TopicConfig(broker, overrides)
