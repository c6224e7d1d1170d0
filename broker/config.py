"""The broker's configuration: Apache Kafka's property names, types, defaults and checks.

    config = BrokerConfig.load("server.properties", ["log.dirs=/data", "node.id=2"])
    config.listeners            # [Listener("PLAINTEXT", "localhost", 9092)]
    config.log_retention_ms     # log.retention.ms > .minutes > .hours, negative -> -1
    config["num.partitions"]    # the typed value of any defined key
    config.num_partitions       # the same, as an attribute (dots become underscores)

Sources are layered as in Kafka, highest first: DYNAMIC_BROKER_CONFIG (this
broker, set through AlterConfigs), DYNAMIC_DEFAULT_BROKER_CONFIG (cluster-wide),
STATIC_BROKER_CONFIG (server.properties and --override) and DEFAULT_CONFIG.

Facts (names, types, defaults, ranges, which keys are dynamic, the exact
error texts) follow Apache Kafka 4.3.1, read from its own ConfigDefs; the
ZooKeeper keys, removed from Kafka in 4.0, follow Kafka 3.9. Where Gregor
differs it says so in `GREGOR_DEVIATIONS`. Keys that a real server.properties
may carry but Gregor does not act on are accepted, kept in `ignored` and
reported by `warnings()` (see `IGNORED_KEYS`); any other key is a ConfigError.

Topic-level configuration lives in `broker.topic_config`.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import IntEnum
from pathlib import Path
from typing import Any, NamedTuple

INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)
SHORT_MAX = 2**15 - 1
SHORT_MIN = -(2**15)

_HOUR_MS = 60 * 60 * 1000
_MINUTE_MS = 60 * 1000


class ConfigError(ValueError):
    """A configuration key or value Gregor cannot accept.

    The message names the key (and, for a bad value, the value and what was
    expected), in Kafka's own words where Kafka has them. The CLI turns it into
    exit code 2; CreateTopics/AlterConfigs into INVALID_CONFIG with the message.
    """

    def __init__(self, message: str, key: str | None = None, value: Any = None):
        super().__init__(message)
        self.key = key
        self.value = value


class ConfigType(IntEnum):
    """Kafka's DescribeConfigs (v3+) config type codes."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):
    """Kafka's DescribeConfigs config source codes."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


# Dynamic update modes, as Kafka's DynamicBrokerConfig reports them.
PER_BROKER = "per-broker"
CLUSTER_WIDE = "cluster-wide"

# --- validators ----------------------------------------------------------------
# A validator takes the parsed value and returns None or the reason it is bad,
# worded as Kafka's validators word it (or a pair: the part of the value to
# show, and the reason).

Validator = Callable[[Any], "str | tuple[str, str] | None"]


def at_least(low: int | float) -> Validator:
    def check(v):
        if v is not None and v < low:
            return f"Value must be at least {low}"
        return None

    check.describe = f"[{low},...]"  # type: ignore[attr-defined]
    return check


def between(low: int | float, high: int | float) -> Validator:
    def check(v):
        if v is None:
            return None
        if v < low:
            return f"Value must be at least {low}"
        if v > high:
            return f"Value must be no more than {high}"
        return None

    check.describe = f"[{low},...,{high}]"  # type: ignore[attr-defined]
    return check


def one_of(*allowed: str) -> Validator:
    """Kafka's ValidString.in / ValidList.in: case-sensitive membership."""

    def check(v):
        items = v if isinstance(v, list) else [v]
        for item in items:
            if item is not None and item not in allowed:
                # (the offending item, the reason): Kafka names the item, not the list
                return item, f"String must be one of: {', '.join(allowed)}"
        return None

    check.describe = "[" + ", ".join(allowed) + "]"  # type: ignore[attr-defined]
    return check


def gzip_level(v):
    if v is None or v == -1 or 1 <= v <= 9:
        return None
    return "Value must be between 1 and 9 or equal to -1"


gzip_level.describe = "[1,...,9] or -1"  # type: ignore[attr-defined]


def _port(v):
    if v is not None and not 0 <= v <= 65535:
        return "Value must be a TCP port in [0,...,65535] (0 picks a free port)"
    return None


_port.describe = "[0,...,65535]"  # type: ignore[attr-defined]


def _non_empty_list(v):
    return None if v is None or v else "must not be empty"


def _cluster_id(v):
    if v is None:
        return None
    if not re.fullmatch(r"[A-Za-z0-9_-]{22}", v):
        return (
            "must be a base64url-encoded 16-byte UUID (22 characters), as Kafka's cluster ids are"
        )
    return None


# --- keys -------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigKey:
    """One defined configuration key: its type, default, check and documentation."""

    name: str
    type: ConfigType
    default: Any
    doc: str
    validator: Validator | None = None
    # None: read-only; PER_BROKER or CLUSTER_WIDE: alterable with AlterConfigs.
    dynamic: str | None = None
    # Kafka's description of the valid values, for documentation tables.
    valid_values: str = ""

    @property
    def sensitive(self) -> bool:
        return self.type == ConfigType.PASSWORD

    @property
    def read_only(self) -> bool:
        return self.dynamic is None

    def parse(self, raw: Any) -> Any:
        """A raw (string) value to its typed value; ConfigError if it is not valid."""
        value = parse_value(self.name, self.type, raw)
        self.check(value, raw)
        return value

    def check(self, value: Any, raw: Any = None) -> None:
        if self.validator is None:
            return
        problem = self.validator(value)
        if problem is None:
            return
        if problem == "must not be empty":
            raise ConfigError(
                f"Configuration '{self.name}' must not be empty. "
                f"Valid values include: any non-empty value",
                self.name,
                raw,
            )
        if isinstance(problem, tuple):
            shown, problem = problem
        else:
            shown = to_string(value, self.type)
        raise ConfigError(
            f"Invalid value {shown} for configuration {self.name}: {problem}", self.name, raw
        )

    def to_string(self, value: Any) -> str | None:
        return to_string(value, self.type)

    @property
    def default_string(self) -> str | None:
        return to_string(self.default, self.type)


_INT_RE = re.compile(r"[+-]?[0-9]+")
_LIST_SPLIT = re.compile(r"\s*,\s*")


def parse_value(name: str, type_: ConfigType, raw: Any) -> Any:
    """Kafka's ConfigDef.parseType for one value (strings are trimmed first)."""
    if raw is None:
        return None
    if not isinstance(raw, str):
        raw = to_string(raw, type_)
    text = raw.strip()
    if type_ == ConfigType.BOOLEAN:
        if text.lower() == "true":
            return True
        if text.lower() == "false":
            return False
        raise ConfigError(
            f"Invalid value {raw} for configuration {name}: Expected value to be either true or false",
            name,
            raw,
        )
    if type_ in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
        low, high = {
            ConfigType.INT: (INT_MIN, INT_MAX),
            ConfigType.SHORT: (SHORT_MIN, SHORT_MAX),
            ConfigType.LONG: (LONG_MIN, LONG_MAX),
        }[type_]
        if not _INT_RE.fullmatch(text) or not low <= int(text) <= high:
            raise ConfigError(
                f"Invalid value {raw} for configuration {name}: Not a number of type {type_.name}",
                name,
                raw,
            )
        return int(text)
    if type_ == ConfigType.DOUBLE:
        try:
            if not re.fullmatch(r"[\s0-9eE+\-.a-zA-Z]+", text) or "_" in text:
                raise ValueError
            return float(text)
        except ValueError:
            raise ConfigError(
                f"Invalid value {raw} for configuration {name}: Not a number of type DOUBLE",
                name,
                raw,
            ) from None
    if type_ == ConfigType.LIST:
        return [] if not text else _LIST_SPLIT.split(text)
    # STRING, CLASS, PASSWORD
    return text


def to_string(value: Any, type_: ConfigType) -> str | None:
    """Kafka's ConfigDef.convertToString: the string a DescribeConfigs answer carries."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, float) or type_ == ConfigType.DOUBLE:
        return java_double_string(float(value))
    return str(value)


def java_double_string(v: float) -> str:
    """Java's Double.toString (0.5, 1.0, 1.7976931348623157E308)."""
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if str(v).startswith("-") else "0.0"
    a = abs(v)
    if 1e-3 <= a < 1e7:
        s = repr(v)
        return s if "." in s or "e" in s else s + ".0"
    sign, digits, exp = Decimal(repr(v)).normalize().as_tuple()
    mantissa = "".join(map(str, digits))
    exponent = exp + len(digits) - 1
    frac = mantissa[1:] or "0"
    return f"{'-' if sign else ''}{mantissa[0]}.{frac}E{exponent}"


def define_key(
    name: str,
    type_: ConfigType,
    default: Any,
    doc: str,
    validator: Validator | None = None,
    dynamic: str | None = None,
) -> ConfigKey:
    valid = getattr(validator, "describe", "") if validator else ""
    return ConfigKey(name, type_, default, doc, validator, dynamic, valid)


B, S, I, SH, L, D, LS = (  # noqa: E741
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.SHORT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
)

DEFAULT_SECURITY_PROTOCOL_MAP = (
    "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
)
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("compact", "delete")

# fmt: off
_KEYS: list[ConfigKey] = [
    # --- server -------------------------------------------------------------------
    define_key("node.id", I, 1, "The id of this broker (Gregor's default: 1; Kafka requires it).", at_least(0)),
    define_key("broker.id", I, -1, "The broker id; a synonym of node.id (if both are set they must agree)."),
    define_key("broker.rack", S, None, "Rack of the broker, for rack-aware replica placement."),
    define_key("process.roles", LS, [], "Accepted and recorded: 'broker', 'controller' or both. Gregor is always both.", one_of("broker", "controller")),
    define_key("controller.quorum.voters", LS, [], "Accepted and recorded (KRaft voters, {id}@{host}:{port}); Gregor coordinates through ZooKeeper."),
    define_key("controller.listener.names", LS, None, "Names of controller listeners: recorded, and not served as Kafka client listeners."),
    define_key("listeners", LS, ["PLAINTEXT://localhost:9092"], "Comma-separated NAME://host:port URIs to listen on (empty host: all interfaces; port 0: a free port). Gregor's default binds localhost.", _non_empty_list),
    define_key("advertised.listeners", LS, None, "Listener addresses published to clients, if different from listeners."),
    define_key("listener.security.protocol.map", S, DEFAULT_SECURITY_PROTOCOL_MAP, "Map of listener names to security protocols (NAME:PROTOCOL,...). Gregor serves PLAINTEXT only."),
    define_key("inter.broker.listener.name", S, None, "Listener used between brokers (replication); by default the first broker listener."),
    define_key("num.network.threads", I, 3, "Accepted, unused (Gregor runs on one Trio event loop).", at_least(1), CLUSTER_WIDE),
    define_key("num.io.threads", I, 8, "Accepted, unused (Gregor runs on one Trio event loop).", at_least(1), CLUSTER_WIDE),
    define_key("message.max.bytes", I, 1048588, "The largest record batch size allowed (after compression); per topic: max.message.bytes.", at_least(0), CLUSTER_WIDE),
    define_key("socket.request.max.bytes", I, 104857600, "The maximum number of bytes in a socket request.", at_least(1)),
    define_key("socket.send.buffer.bytes", I, 102400, "SO_SNDBUF of server sockets (-1: OS default)."),
    define_key("socket.receive.buffer.bytes", I, 102400, "SO_RCVBUF of server sockets (-1: OS default)."),
    define_key("socket.listen.backlog.size", I, 50, "Maximum number of pending connections on a listening socket.", at_least(1)),
    define_key("connections.max.idle.ms", L, 600000, "Idle connections are closed after this many milliseconds."),
    define_key("queued.max.requests", I, 500, "Requests a connection may have in flight before reading pauses.", at_least(1)),
    define_key("request.timeout.ms", I, 30000, "Timeout of the broker's own requests to other brokers."),
    define_key("fetch.max.bytes", I, 57671680, "The maximum number of bytes returned for a fetch request.", at_least(1024)),
    define_key("max.incremental.fetch.session.cache.slots", I, 1000, "The maximum number of incremental fetch sessions kept.", at_least(0)),
    define_key("delete.topic.enable", B, True, "When false, DeleteTopics is rejected."),
    define_key("auto.create.topics.enable", B, True, "Create a topic when a client asks for its metadata."),
    define_key("num.partitions", I, 1, "Default number of partitions of a new topic.", at_least(1)),
    define_key("default.replication.factor", I, 1, "Default replication factor of a new topic (Gregor: at least 1).", at_least(1)),
    define_key("min.insync.replicas", I, 1, "Minimum ISR size for acks=all writes to succeed (else NOT_ENOUGH_REPLICAS).", at_least(1), CLUSTER_WIDE),
    define_key("unclean.leader.election.enable", B, False, "Allow a replica outside the ISR to become leader, at the risk of data loss.", None, CLUSTER_WIDE),
    define_key("compression.type", S, "producer", "Final compression of a topic's batches; 'producer' keeps the producer's codec.", one_of(*COMPRESSION_TYPES), CLUSTER_WIDE),
    define_key("compression.gzip.level", I, -1, "Level for compression.type=gzip.", gzip_level, CLUSTER_WIDE),
    define_key("compression.lz4.level", I, 9, "Level for compression.type=lz4.", between(1, 17), CLUSTER_WIDE),
    define_key("compression.zstd.level", I, 3, "Level for compression.type=zstd.", between(-131072, 22), CLUSTER_WIDE),
    # --- log --------------------------------------------------------------------------
    define_key("log.dir", LS, ["./data"], "Directories of the log data, used if log.dirs is not set (Gregor's default: ./data).", _non_empty_list),
    define_key("log.dirs", LS, None, "Comma-separated directories of the log data; if unset, log.dir.", _non_empty_list),
    define_key("log.segment.bytes", I, 1073741824, "The maximum size of a single segment file.", at_least(1048576), CLUSTER_WIDE),
    define_key("log.roll.ms", L, None, "Roll a segment after this many ms; if unset, log.roll.hours.", None, CLUSTER_WIDE),
    define_key("log.roll.hours", I, 168, "Roll a segment after this many hours (secondary to log.roll.ms).", at_least(1)),
    define_key("log.roll.jitter.ms", L, None, "Maximum jitter subtracted from the roll time; if unset, log.roll.jitter.hours.", None, CLUSTER_WIDE),
    define_key("log.roll.jitter.hours", I, 0, "Maximum roll jitter in hours (secondary to log.roll.jitter.ms).", at_least(0)),
    define_key("log.retention.ms", L, None, "Keep a segment this many ms; if unset, log.retention.minutes. -1: no time limit.", None, CLUSTER_WIDE),
    define_key("log.retention.minutes", I, None, "Keep a segment this many minutes (secondary to log.retention.ms); if unset, log.retention.hours."),
    define_key("log.retention.hours", I, 168, "Keep a segment this many hours (tertiary to log.retention.ms)."),
    define_key("log.retention.bytes", L, -1, "Maximum size of a partition's log before old segments are deleted (-1: none).", None, CLUSTER_WIDE),
    define_key("log.retention.check.interval.ms", L, 300000, "How often retention is checked.", at_least(1)),
    define_key("log.cleanup.policy", LS, ["delete"], "Default cleanup policy: a list of 'delete' and/or 'compact'.", one_of(*CLEANUP_POLICIES), CLUSTER_WIDE),
    define_key("log.index.size.max.bytes", I, 10485760, "Maximum size of an offset index.", at_least(4), CLUSTER_WIDE),
    define_key("log.index.interval.bytes", I, 4096, "Bytes of batches between two offset index entries.", at_least(0), CLUSTER_WIDE),
    define_key("log.flush.interval.messages", L, LONG_MAX, "Messages accumulated on a partition before they are fsynced.", at_least(1), CLUSTER_WIDE),
    define_key("log.flush.interval.ms", L, None, "Maximum time a message stays unflushed; if unset, log.flush.scheduler.interval.ms.", at_least(0), CLUSTER_WIDE),
    define_key("log.flush.scheduler.interval.ms", L, LONG_MAX, "How often the flusher checks whether a log needs an fsync."),
    define_key("log.flush.offset.checkpoint.interval.ms", I, 60000, "How often the recovery-point checkpoint is written.", at_least(0)),
    define_key("log.flush.start.offset.checkpoint.interval.ms", I, 60000, "How often the log-start-offset checkpoint is written.", at_least(0)),
    define_key("log.segment.delete.delay.ms", L, 60000, "Delay before a deleted segment's files are removed.", at_least(0), CLUSTER_WIDE),
    define_key("log.preallocate", B, False, "Preallocate segment files.", None, CLUSTER_WIDE),
    define_key("log.message.timestamp.type", S, "CreateTime", "CreateTime or LogAppendTime.", one_of(*TIMESTAMP_TYPES), CLUSTER_WIDE),
    define_key("log.message.timestamp.before.max.ms", L, LONG_MAX, "How far a CreateTime timestamp may lie before the broker's clock.", at_least(0), CLUSTER_WIDE),
    define_key("log.message.timestamp.after.max.ms", L, 3600000, "How far a CreateTime timestamp may lie after the broker's clock.", at_least(0), CLUSTER_WIDE),
    define_key("log.cleaner.enable", B, True, "Run the log cleaner (compaction)."),
    define_key("log.cleaner.threads", I, 1, "Number of log cleaner threads.", at_least(0), CLUSTER_WIDE),
    define_key("log.cleaner.backoff.ms", L, 15000, "Sleep of the cleaner when there is nothing to clean.", at_least(0), CLUSTER_WIDE),
    define_key("log.cleaner.delete.retention.ms", L, 86400000, "How long tombstones are kept in compacted topics.", at_least(0), CLUSTER_WIDE),
    define_key("log.cleaner.min.compaction.lag.ms", L, 0, "Minimum time a message stays uncompacted.", at_least(0), CLUSTER_WIDE),
    define_key("log.cleaner.max.compaction.lag.ms", L, LONG_MAX, "Maximum time a message stays ineligible for compaction.", at_least(1), CLUSTER_WIDE),
    define_key("log.cleaner.min.cleanable.ratio", D, 0.5, "Minimum dirty ratio of a log for it to be cleaned.", between(0, 1), CLUSTER_WIDE),
    define_key("log.local.retention.ms", L, -2, "Tiered storage (unsupported): local retention, -2: retention.ms.", at_least(-2), CLUSTER_WIDE),
    define_key("log.local.retention.bytes", L, -2, "Tiered storage (unsupported): local retention, -2: retention.bytes.", at_least(-2), CLUSTER_WIDE),
    # --- replication ----------------------------------------------------------------
    define_key("replica.lag.time.max.ms", L, 30000, "A follower behind for this long leaves the ISR."),
    define_key("replica.fetch.wait.max.ms", I, 500, "Maximum wait of a follower's fetch request."),
    define_key("replica.fetch.min.bytes", I, 1, "Minimum bytes a follower's fetch waits for."),
    define_key("replica.fetch.max.bytes", I, 1048576, "Bytes a follower fetches per partition.", at_least(0)),
    define_key("replica.fetch.response.max.bytes", I, 10485760, "Maximum bytes of a whole follower fetch response.", at_least(0)),
    define_key("replica.fetch.backoff.ms", I, 1000, "Sleep of a follower after a fetch error.", at_least(0)),
    define_key("replica.socket.timeout.ms", I, 30000, "Socket timeout of follower fetches."),
    define_key("replica.high.watermark.checkpoint.interval.ms", L, 5000, "How often high watermarks are checkpointed."),
    define_key("num.replica.fetchers", I, 1, "Fetcher tasks per source broker.", at_least(1), CLUSTER_WIDE),
    # --- groups and offsets -------------------------------------------------------
    define_key("group.initial.rebalance.delay.ms", I, 3000, "Wait for more members before a new group's first rebalance."),
    define_key("group.min.session.timeout.ms", I, 6000, "Smallest session timeout a member may ask for."),
    define_key("group.max.session.timeout.ms", I, 1800000, "Largest session timeout a member may ask for."),
    define_key("group.max.size", I, INT_MAX, "Maximum number of members of a classic group.", at_least(1)),
    define_key("offsets.topic.num.partitions", I, 50, "Partitions of __consumer_offsets (do not change after deployment).", at_least(1)),
    define_key("offsets.topic.replication.factor", SH, 3, "Replication factor of __consumer_offsets. As in Kafka, the topic cannot be created while fewer brokers are registered (groups then get COORDINATOR_NOT_AVAILABLE).", at_least(1)),
    define_key("offsets.topic.segment.bytes", I, 104857600, "Segment size of __consumer_offsets.", at_least(1)),
    define_key("offsets.topic.compression.codec", I, 0, "Compression codec id of the coordinator's writes."),
    define_key("offsets.retention.minutes", I, 10080, "Committed offsets of empty groups expire after this long.", at_least(1)),
    define_key("offsets.retention.check.interval.ms", L, 600000, "How often stale offsets are looked for.", at_least(1)),
    define_key("offsets.commit.timeout.ms", I, 5000, "How long an offset commit waits for the offsets topic's replicas.", at_least(1)),
    define_key("offset.metadata.max.bytes", I, 4096, "Maximum size of the metadata string of a committed offset."),
    # --- transactions and producer ids -------------------------------------------
    define_key("transaction.state.log.num.partitions", I, 50, "Partitions of __transaction_state.", at_least(1)),
    define_key("transaction.state.log.replication.factor", SH, 3, "Replication factor of __transaction_state (created only once enough brokers exist).", at_least(1)),
    define_key("transaction.state.log.min.isr", I, 2, "min.insync.replicas of __transaction_state.", at_least(1)),
    define_key("transaction.state.log.segment.bytes", I, 104857600, "Segment size of __transaction_state.", at_least(1)),
    define_key("transaction.state.log.load.buffer.size", I, 5242880, "Read buffer when loading __transaction_state.", at_least(1)),
    define_key("transaction.max.timeout.ms", I, 900000, "Largest transaction timeout a producer may ask for.", at_least(1)),
    define_key("transactional.id.expiration.ms", I, 604800000, "A transactional id without status updates for this long expires.", at_least(1)),
    define_key("transaction.abort.timed.out.transaction.cleanup.interval.ms", I, 10000, "How often timed-out transactions are aborted.", at_least(1)),
    define_key("transaction.remove.expired.transaction.cleanup.interval.ms", I, 3600000, "How often expired transactional ids are removed.", at_least(1)),
    define_key("producer.id.expiration.ms", I, 86400000, "A partition forgets an idle producer id after this long.", at_least(1), CLUSTER_WIDE),
    # --- ZooKeeper (Kafka 3.9; removed from Kafka 4.0) ----------------------------
    define_key("zookeeper.connect", S, None, "ZooKeeper connection string host:port[,host:port...][/chroot]. Unset: single node, cluster metadata in a local file."),
    define_key("zookeeper.session.timeout.ms", I, 18000, "ZooKeeper session timeout."),
    define_key("zookeeper.connection.timeout.ms", I, None, "Maximum wait for a ZooKeeper connection; if unset, zookeeper.session.timeout.ms."),
    # --- Gregor's own ---------------------------------------------------------------
    define_key("gregor.metrics.port", I, None, "Gregor-specific: port of the Prometheus metrics HTTP endpoint (unset: disabled; 0: a free port).", _port),
    define_key("gregor.metrics.host", S, "localhost", "Gregor-specific: address the metrics endpoint binds."),
    define_key("gregor.cluster.id", S, None, "Gregor-specific: cluster id used when this node creates new cluster metadata (Kafka keeps it in meta.properties, set by kafka-storage format). Unset: generated.", _cluster_id),
]
# fmt: on

BROKER_CONFIG_KEYS: dict[str, ConfigKey] = {k.name: k for k in _KEYS}

GREGOR_DEVIATIONS: dict[str, str] = {
    "node.id": "default 1 (Kafka: required, no default)",
    "process.roles": "default empty and ignored (Kafka 4.x: required)",
    "controller.listener.names": "optional; named listeners are not served to clients",
    "listeners": "default PLAINTEXT://localhost:9092 (Kafka: PLAINTEXT://:9092); ports must be in "
    "0..65535; only PLAINTEXT; read-only (Kafka: per-broker dynamic)",
    "listener.security.protocol.map": "read-only (Kafka: per-broker dynamic)",
    "log.dir": "default ./data (Kafka: /tmp/kafka-logs)",
    "log.dirs": "duplicate directories are an error (Kafka 4.3 accepts them)",
    "default.replication.factor": "at least 1 (Kafka: unchecked)",
    "log.flush.interval.ms": "at least 0 (Kafka accepts any long at start-up and fails later)",
    "zookeeper.*": "kept from Kafka 3.9 (Gregor coordinates brokers through ZooKeeper)",
    "gregor.*": "Gregor-specific keys",
    "embedded": "BrokerConfig() without a file uses EMBEDDED_PROFILE (internal topics with "
    "replication factor 1), as Kafka's shipped config/server.properties does",
}

# Settings of the single-node embedded broker (`gregor serve` without a file, and
# BrokerConfig(...) built in code): they read as if from a server.properties,
# like the ones Kafka ships for a one-broker quickstart.
EMBEDDED_PROFILE: dict[str, str] = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
}

# Keys a Kafka server.properties may carry that Gregor accepts and does not act
# on: every other key of Kafka 4.3.1's broker ConfigDef (security, quotas,
# KRaft, share groups, tiered storage, metrics reporters, ...) and keys of Kafka
# 3.x removed in 4.0. Per-listener overrides (listener.name.<name>.<key>) and
# the authorizer's own keys are accepted too. All of these are reported by
# BrokerConfig.warnings().
IGNORED_KEYS: frozenset[str] = frozenset(
    """
    add.partitions.to.txn.retry.backoff.max.ms add.partitions.to.txn.retry.backoff.ms
    allow.everyone.if.no.acl.found alter.config.policy.class.name
    alter.log.dirs.replication.quota.window.num
    alter.log.dirs.replication.quota.window.size.seconds authorizer.class.name
    auto.include.jmx.reporter auto.leader.rebalance.enable background.threads
    broker.heartbeat.interval.ms broker.id.generation.enable broker.session.timeout.ms
    client.quota.callback.class config.providers connection.failed.authentication.delay.ms
    connections.max.reauth.ms control.plane.listener.name controlled.shutdown.enable
    controlled.shutdown.max.retries controlled.shutdown.retry.backoff.ms
    controller.performance.always.log.threshold.ms controller.performance.sample.period.ms
    controller.quorum.append.linger.ms controller.quorum.auto.join.enable
    controller.quorum.bootstrap.servers controller.quorum.election.backoff.max.ms
    controller.quorum.election.timeout.ms controller.quorum.fetch.max.bytes
    controller.quorum.fetch.snapshot.max.bytes controller.quorum.fetch.timeout.ms
    controller.quorum.request.timeout.ms controller.quorum.retry.backoff.ms
    controller.quota.window.num controller.quota.window.size.seconds
    controller.socket.timeout.ms cordoned.log.dirs create.topic.policy.class.name
    delegation.token.expiry.check.interval.ms delegation.token.expiry.time.ms
    delegation.token.max.lifetime.ms delegation.token.secret.key
    delete.records.purgatory.purge.interval.requests early.start.listeners
    eligible.leader.replicas.enable fetch.purgatory.purge.interval.requests
    follower.fetch.last.tiered.offset.enable follower.replication.throttled.rate
    follower.replication.throttled.replicas group.consumer.assignment.interval.ms
    group.consumer.assignors group.consumer.heartbeat.interval.ms
    group.consumer.max.assignment.interval.ms group.consumer.max.heartbeat.interval.ms
    group.consumer.max.session.timeout.ms group.consumer.max.size
    group.consumer.migration.policy group.consumer.min.assignment.interval.ms
    group.consumer.min.heartbeat.interval.ms group.consumer.min.session.timeout.ms
    group.consumer.regex.refresh.interval.ms group.consumer.session.timeout.ms
    group.coordinator.append.linger.ms group.coordinator.background.threads
    group.coordinator.cached.buffer.max.bytes group.coordinator.new.enable
    group.coordinator.rebalance.protocols group.coordinator.threads
    group.share.assignment.interval.ms group.share.assignors group.share.delivery.count.limit
    group.share.enable group.share.heartbeat.interval.ms
    group.share.initialize.retry.interval.ms group.share.max.assignment.interval.ms
    group.share.max.delivery.count.limit group.share.max.groups
    group.share.max.heartbeat.interval.ms group.share.max.partition.max.record.locks
    group.share.max.record.lock.duration.ms group.share.max.session.timeout.ms
    group.share.max.share.sessions group.share.max.size group.share.min.assignment.interval.ms
    group.share.min.delivery.count.limit group.share.min.heartbeat.interval.ms
    group.share.min.partition.max.record.locks group.share.min.record.lock.duration.ms
    group.share.min.session.timeout.ms group.share.partition.max.record.locks
    group.share.persister.class.name group.share.record.lock.duration.ms
    group.share.session.timeout.ms group.streams.assignment.interval.ms
    group.streams.heartbeat.interval.ms group.streams.initial.rebalance.delay.ms
    group.streams.max.assignment.interval.ms group.streams.max.heartbeat.interval.ms
    group.streams.max.session.timeout.ms group.streams.max.size
    group.streams.max.standby.replicas group.streams.min.assignment.interval.ms
    group.streams.min.heartbeat.interval.ms group.streams.min.session.timeout.ms
    group.streams.num.standby.replicas group.streams.session.timeout.ms
    initial.broker.registration.timeout.ms inter.broker.protocol.version
    internal.metadata.delete.delay.millis internal.metadata.log.segment.bytes
    internal.metadata.max.batch.size.in.bytes kafka.metrics.polling.interval.secs
    kafka.metrics.reporters leader.imbalance.check.interval.seconds
    leader.imbalance.per.broker.percentage leader.replication.throttled.rate
    leader.replication.throttled.replicas log.cleaner.dedupe.buffer.size
    log.cleaner.io.buffer.load.factor log.cleaner.io.buffer.size
    log.cleaner.io.max.bytes.per.second log.dir.failure.timeout.ms log.initial.task.delay.ms
    log.message.downconversion.enable log.message.format.version
    log.message.timestamp.difference.max.ms max.connection.creation.rate max.connections
    max.connections.per.ip max.connections.per.ip.overrides max.request.partition.size.limit
    metadata.log.dir metadata.log.max.record.bytes.between.snapshots
    metadata.log.max.snapshot.interval.ms metadata.log.segment.bytes
    metadata.log.segment.min.bytes metadata.log.segment.ms metadata.max.idle.interval.ms
    metadata.max.retention.bytes metadata.max.retention.ms metric.reporters metrics.num.samples
    metrics.recording.level metrics.sample.window.ms num.recovery.threads.per.data.dir
    num.replica.alter.log.dirs.threads offsets.load.buffer.size
    password.encoder.cipher.algorithm password.encoder.iterations password.encoder.key.length
    password.encoder.keyfactory.algorithm password.encoder.old.secret password.encoder.secret
    principal.builder.class producer.id.expiration.check.interval.ms
    producer.purgatory.purge.interval.requests queued.max.request.bytes quota.window.num
    quota.window.size.seconds remote.fetch.max.wait.ms remote.list.offsets.request.timeout.ms
    remote.log.index.file.cache.total.size.bytes remote.log.index.file.cache.ttl.ms
    remote.log.manager.copier.thread.pool.size remote.log.manager.copy.max.bytes.per.second
    remote.log.manager.copy.quota.window.num remote.log.manager.copy.quota.window.size.seconds
    remote.log.manager.expiration.thread.pool.size
    remote.log.manager.fetch.max.bytes.per.second remote.log.manager.fetch.quota.window.num
    remote.log.manager.fetch.quota.window.size.seconds
    remote.log.manager.follower.thread.pool.size remote.log.manager.task.interval.ms
    remote.log.manager.task.retry.backoff.max.ms remote.log.manager.task.retry.backoff.ms
    remote.log.manager.task.retry.jitter remote.log.manager.thread.pool.size
    remote.log.metadata.consume.wait.ms remote.log.metadata.custom.metadata.max.bytes
    remote.log.metadata.initialization.retry.interval.ms
    remote.log.metadata.initialization.retry.max.timeout.ms
    remote.log.metadata.manager.class.name remote.log.metadata.manager.class.path
    remote.log.metadata.manager.impl.prefix remote.log.metadata.manager.listener.name
    remote.log.metadata.topic.num.partitions remote.log.metadata.topic.replication.factor
    remote.log.metadata.topic.retention.ms remote.log.reader.max.pending.tasks
    remote.log.reader.threads remote.log.storage.manager.class.name
    remote.log.storage.manager.class.path remote.log.storage.manager.impl.prefix
    remote.log.storage.system.enable replica.alter.log.dirs.io.max.bytes.per.second
    replica.selector.class replica.socket.receive.buffer.bytes replication.quota.window.num
    replication.quota.window.size.seconds reserved.broker.max.id
    sasl.client.callback.handler.class sasl.enabled.mechanisms sasl.jaas.config
    sasl.kerberos.kinit.cmd sasl.kerberos.min.time.before.relogin
    sasl.kerberos.principal.to.local.rules sasl.kerberos.service.name
    sasl.kerberos.ticket.renew.jitter sasl.kerberos.ticket.renew.window.factor
    sasl.login.callback.handler.class sasl.login.class sasl.login.connect.timeout.ms
    sasl.login.read.timeout.ms sasl.login.refresh.buffer.seconds
    sasl.login.refresh.min.period.seconds sasl.login.refresh.window.factor
    sasl.login.refresh.window.jitter sasl.login.retry.backoff.max.ms
    sasl.login.retry.backoff.ms sasl.mechanism.controller.protocol
    sasl.mechanism.inter.broker.protocol sasl.oauthbearer.assertion.algorithm
    sasl.oauthbearer.assertion.claim.aud sasl.oauthbearer.assertion.claim.exp.seconds
    sasl.oauthbearer.assertion.claim.iss sasl.oauthbearer.assertion.claim.jti.include
    sasl.oauthbearer.assertion.claim.nbf.seconds sasl.oauthbearer.assertion.claim.sub
    sasl.oauthbearer.assertion.file sasl.oauthbearer.assertion.private.key.file
    sasl.oauthbearer.assertion.private.key.passphrase sasl.oauthbearer.assertion.template.file
    sasl.oauthbearer.client.credentials.client.id
    sasl.oauthbearer.client.credentials.client.secret sasl.oauthbearer.clock.skew.seconds
    sasl.oauthbearer.expected.audience sasl.oauthbearer.expected.issuer
    sasl.oauthbearer.jwks.endpoint.refresh.ms
    sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms
    sasl.oauthbearer.jwks.endpoint.retry.backoff.ms sasl.oauthbearer.jwks.endpoint.url
    sasl.oauthbearer.jwt.retriever.class sasl.oauthbearer.jwt.validator.class
    sasl.oauthbearer.scope sasl.oauthbearer.scope.claim.name sasl.oauthbearer.sub.claim.name
    sasl.oauthbearer.token.endpoint.url sasl.server.callback.handler.class
    sasl.server.max.receive.size security.inter.broker.protocol security.providers
    server.max.startup.time.ms share.coordinator.append.linger.ms
    share.coordinator.cached.buffer.max.bytes
    share.coordinator.cold.partition.snapshot.interval.ms share.coordinator.load.buffer.size
    share.coordinator.snapshot.update.records.per.snapshot
    share.coordinator.state.topic.compression.codec share.coordinator.state.topic.min.isr
    share.coordinator.state.topic.num.partitions
    share.coordinator.state.topic.prune.interval.ms
    share.coordinator.state.topic.replication.factor
    share.coordinator.state.topic.segment.bytes share.coordinator.threads
    share.coordinator.write.timeout.ms share.fetch.purgatory.purge.interval.requests
    socket.connection.setup.timeout.max.ms socket.connection.setup.timeout.ms
    ssl.allow.dn.changes ssl.allow.san.changes ssl.cipher.suites ssl.client.auth
    ssl.enabled.protocols ssl.endpoint.identification.algorithm ssl.engine.factory.class
    ssl.key.password ssl.keymanager.algorithm ssl.keystore.certificate.chain ssl.keystore.key
    ssl.keystore.location ssl.keystore.password ssl.keystore.type ssl.principal.mapping.rules
    ssl.protocol ssl.provider ssl.secure.random.implementation ssl.trustmanager.algorithm
    ssl.truststore.certificates ssl.truststore.location ssl.truststore.password
    ssl.truststore.type super.users telemetry.max.bytes
    transaction.partition.verification.enable transaction.two.phase.commit.enable
    unclean.leader.election.interval.ms unstable.api.versions.enable
    unstable.feature.versions.enable zookeeper.clientCnxnSocket
    zookeeper.max.in.flight.requests zookeeper.metadata.migration.enable
    zookeeper.metadata.migration.min.batch.size zookeeper.set.acl zookeeper.ssl.cipher.suites
    zookeeper.ssl.client.enable zookeeper.ssl.crl.enable zookeeper.ssl.enabled.protocols
    zookeeper.ssl.endpoint.identification.algorithm zookeeper.ssl.keystore.location
    zookeeper.ssl.keystore.password zookeeper.ssl.keystore.type zookeeper.ssl.ocsp.enable
    zookeeper.ssl.protocol zookeeper.ssl.truststore.location zookeeper.ssl.truststore.password
    zookeeper.ssl.truststore.type
    """.split()
)
IGNORED_PREFIXES: tuple[str, ...] = ("listener.name.",)


# --- Java properties ---------------------------------------------------------------

_WS = " \t\f"


def parse_properties(text: str) -> dict[str, str]:
    """Java's Properties.load: `key=value`, `key: value` or `key value`;
    `#`/`!` comments; a line ending in an odd number of backslashes continues
    on the next (its leading whitespace dropped); escapes \\t \\n \\r \\f
    \\uXXXX and \\<char>. Later duplicates win."""
    result: dict[str, str] = {}
    lines = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(_WS)
        i += 1
        if not line or line[0] in "#!":
            continue
        logical = ""
        while True:
            trailing = len(line) - len(line.rstrip("\\"))
            if trailing % 2 == 1:
                logical += line[:-1]
                if i >= len(lines):
                    break
                line = lines[i].lstrip(_WS)
                i += 1
                continue
            logical += line
            break
        key, value = _split_key_value(logical)
        result[_unescape(key)] = _unescape(value)
    return result


def _split_key_value(line: str) -> tuple[str, str]:
    n = len(line)
    pos = 0
    escaped = False
    while pos < n:
        c = line[pos]
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in "=:" or c in _WS:
            break
        pos += 1
    key = line[:pos]
    rest = pos
    if rest < n and line[rest] in _WS:
        while rest < n and line[rest] in _WS:
            rest += 1
        if rest < n and line[rest] in "=:":
            rest += 1
    elif rest < n:
        rest += 1  # the '=' or ':'
    while rest < n and line[rest] in _WS:
        rest += 1
    return key, line[rest:]


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        i += 1
        if i >= len(s):
            break
        c = s[i]
        if c == "u":
            digits = s[i + 1 : i + 5]
            if len(digits) != 4 or not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                raise ConfigError(f"Malformed \\uxxxx encoding in properties: {s!r}")
            out.append(chr(int(digits, 16)))
            i += 5
            continue
        out.append(_ESCAPES.get(c, c))
        i += 1
    return "".join(out)


def parse_overrides(overrides: Iterable[str] | Mapping[str, Any]) -> dict[str, str]:
    """`--override key=value` arguments (split at the first '=')."""
    if isinstance(overrides, Mapping):
        return {str(k): _as_raw(v) for k, v in overrides.items()}
    result: dict[str, str] = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"Invalid override {item!r}: expected key=value")
        result[key.strip()] = value
    return result


def _as_raw(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(map(str, v))
    return str(v)


# --- listeners ---------------------------------------------------------------------


class Listener(NamedTuple):
    """One endpoint of `listeners`/`advertised.listeners` ("" host: all interfaces)."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


_ENDPOINT_RE = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")


def parse_listeners(key: str, entries: list[str]) -> list[Listener]:
    result = []
    for entry in entries:
        m = _ENDPOINT_RE.match(entry)
        if not m or not m.group(1):
            raise ConfigError(
                f"Invalid value {','.join(entries)} for configuration {key}: "
                f"Unable to parse {entry} to a broker endpoint (expected NAME://host:port)",
                key,
                entry,
            )
        port = int(m.group(3))
        if not 0 <= port <= 65535:
            raise ConfigError(
                f"Invalid value {','.join(entries)} for configuration {key}: "
                f"port {port} of {entry} is not in [0,...,65535]",
                key,
                entry,
            )
        result.append(Listener(m.group(1).upper(), m.group(2), port))
    return result


def parse_security_protocol_map(raw: str) -> dict[str, str]:
    key = "listener.security.protocol.map"
    result: dict[str, str] = {}
    text = raw.strip()
    if not text:
        return result
    for entry in _LIST_SPLIT.split(text):
        name, sep, proto = entry.partition(":")
        if not sep or not name.strip():
            raise ConfigError(
                f"Invalid value {raw} for configuration {key}: "
                f"each entry must be LISTENER_NAME:SECURITY_PROTOCOL, not {entry!r}",
                key,
                raw,
            )
        proto = proto.strip().upper()
        if proto not in SECURITY_PROTOCOLS:
            raise ConfigError(f"Invalid security protocol `{proto}` defined in {key}", key, raw)
        name = name.strip().upper()
        if name in result:
            raise ConfigError(
                f"Invalid value {raw} for configuration {key}: listener {name} appears twice",
                key,
                raw,
            )
        result[name] = proto
    return result


# --- the broker configuration -------------------------------------------------------


@dataclass(frozen=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class ConfigEntry:
    """One DescribeConfigs result entry."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    synonyms: list[ConfigSynonym] = field(default_factory=list)
    config_type: ConfigType = ConfigType.UNKNOWN
    documentation: str | None = None


# Broker keys that stand for one setting, highest priority first (Kafka's
# DynamicBrokerConfig.brokerConfigSynonyms).
_SYNONYM_GROUPS: list[list[str]] = [
    ["log.roll.ms", "log.roll.hours"],
    ["log.roll.jitter.ms", "log.roll.jitter.hours"],
    ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
]


def broker_synonyms(name: str) -> list[str]:
    """The broker keys that set the same thing as `name`, in Kafka's order."""
    for group in _SYNONYM_GROUPS:
        if name in group:
            return list(group)
    if name == "log.flush.interval.ms":
        return ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]
    return [name]


def _attr_to_key() -> dict[str, str]:
    return {k.replace(".", "_"): k for k in BROKER_CONFIG_KEYS}


class BrokerConfig:
    """The broker's settings: static (file and overrides) plus dynamic layers.

    `BrokerConfig(props)` takes a mapping of Kafka keys to values (strings, or
    Python values); with `embedded=True` (the default) EMBEDDED_PROFILE sits
    under them. `BrokerConfig.load(path, overrides)` reads a server.properties.
    """

    _ATTRS = _attr_to_key()

    def __init__(
        self,
        props: Mapping[str, Any] | None = None,
        *,
        embedded: bool = True,
    ):
        raw = dict(EMBEDDED_PROFILE) if embedded else {}
        raw.update({str(k): _as_raw(v) for k, v in (props or {}).items() if v is not None})
        static: dict[str, str] = {}
        ignored: dict[str, str] = {}
        for key, value in raw.items():
            if key in BROKER_CONFIG_KEYS:
                static[key] = value
            elif is_ignored_key(key):
                ignored[key] = value
            else:
                raise unknown_key_error(key)
        # Kafka's populateSynonyms: node.id and broker.id name the same id.
        if "node.id" in static and "broker.id" not in static:
            static["broker.id"] = static["node.id"]
        elif "broker.id" in static and "node.id" not in static:
            static["node.id"] = static["broker.id"]
        self.embedded = embedded
        self.static: dict[str, str] = static
        self.ignored: dict[str, str] = ignored
        self.dynamic_default: dict[str, str] = {}
        self.dynamic_broker: dict[str, str] = {}
        self._static_values = {k: BROKER_CONFIG_KEYS[k].parse(v) for k, v in static.items()}
        self._dynamic_values: dict[str, Any] = {}
        self._validate()

    # --- construction --------------------------------------------------------

    @classmethod
    def load(
        cls,
        path: str | Path | None = None,
        overrides: Iterable[str] | Mapping[str, Any] = (),
    ) -> BrokerConfig:
        """A server.properties file (or none: the embedded profile) plus overrides,
        which win."""
        props: dict[str, str] = {}
        if path is not None:
            props = read_properties_file(path)
        props.update(parse_overrides(overrides))
        return cls(props, embedded=path is None)

    @classmethod
    def from_properties_text(
        cls, text: str, overrides: Iterable[str] | Mapping[str, Any] = ()
    ) -> BrokerConfig:
        props = parse_properties(text)
        props.update(parse_overrides(overrides))
        return cls(props, embedded=False)

    # --- typed access ----------------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        if key not in BROKER_CONFIG_KEYS:
            raise unknown_key_error(key)
        if key in self._dynamic_values:
            value = self._dynamic_values[key]
        elif key in self._static_values:
            value = self._static_values[key]
        elif key == "broker.id":  # unset: the broker's id is node.id
            return self["node.id"]
        else:
            value = BROKER_CONFIG_KEYS[key].default
        return list(value) if isinstance(value, list) else value

    def get(self, key: str, default: Any = None) -> Any:
        value = self[key]
        return default if value is None else value

    def __contains__(self, key: str) -> bool:
        return self.is_set(key)

    def is_set(self, key: str) -> bool:
        """Whether the key was given anywhere (file, override or dynamically)."""
        return key in self.dynamic_broker or key in self.dynamic_default or key in self.static

    def __getattr__(self, attr: str) -> Any:
        key = BrokerConfig._ATTRS.get(attr)
        if key is None:
            raise AttributeError(f"{type(self).__name__} has no attribute {attr!r}")
        return self[key]

    def source(self, key: str) -> ConfigSource:
        if key in self.dynamic_broker:
            return ConfigSource.DYNAMIC_BROKER_CONFIG
        if key in self.dynamic_default:
            return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        if key in self.static:
            return ConfigSource.STATIC_BROKER_CONFIG
        return ConfigSource.DEFAULT_CONFIG

    def string_value(self, key: str) -> str | None:
        """The value as DescribeConfigs shows it."""
        return BROKER_CONFIG_KEYS[key].to_string(self[key])

    # --- derived settings ------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self["node.id"]

    @property
    def broker_id(self) -> int:
        return self["node.id"]

    @property
    def rack(self) -> str | None:
        return self["broker.rack"]

    @property
    def security_protocol_map(self) -> dict[str, str]:
        return parse_security_protocol_map(self["listener.security.protocol.map"])

    @property
    def all_listeners(self) -> list[Listener]:
        """Every entry of `listeners`, controller listeners included."""
        return parse_listeners("listeners", self["listeners"])

    @property
    def controller_listener_names(self) -> list[str]:
        return [n.upper() for n in self["controller.listener.names"] or []]

    @property
    def listeners(self) -> list[Listener]:
        """The listeners serving Kafka clients: `listeners` minus controller listeners."""
        controller = set(self.controller_listener_names)
        return [lst for lst in self.all_listeners if lst.name not in controller]

    @property
    def advertised_listeners(self) -> list[Listener] | None:
        """Parsed `advertised.listeners`, or None when unset (advertise what is bound)."""
        entries = self["advertised.listeners"]
        if entries is None:
            return None
        return parse_listeners("advertised.listeners", entries)

    @property
    def inter_broker_listener_name(self) -> str:
        name = self["inter.broker.listener.name"]
        return name.upper() if name else self.listeners[0].name

    @property
    def log_dirs(self) -> list[str]:
        """`log.dirs`, or `log.dir` when that is unset."""
        dirs = self["log.dirs"]
        return list(dirs if dirs is not None else self["log.dir"])

    @property
    def log_retention_ms(self) -> int:
        """log.retention.ms, else .minutes, else .hours, in ms; any negative is -1 (no limit)."""
        ms = self["log.retention.ms"]
        if ms is None:
            minutes = self["log.retention.minutes"]
            ms = (
                minutes * _MINUTE_MS
                if minutes is not None
                else self["log.retention.hours"] * _HOUR_MS
            )
        return -1 if ms < 0 else ms

    @property
    def log_roll_ms(self) -> int:
        ms = self["log.roll.ms"]
        return ms if ms is not None else self["log.roll.hours"] * _HOUR_MS

    @property
    def log_roll_jitter_ms(self) -> int:
        ms = self["log.roll.jitter.ms"]
        return ms if ms is not None else self["log.roll.jitter.hours"] * _HOUR_MS

    @property
    def log_flush_interval_ms(self) -> int:
        ms = self["log.flush.interval.ms"]
        return ms if ms is not None else self["log.flush.scheduler.interval.ms"]

    @property
    def log_cleanup_policy(self) -> list[str]:
        return list(self["log.cleanup.policy"])

    @property
    def zookeeper_connection_timeout_ms(self) -> int:
        ms = self["zookeeper.connection.timeout.ms"]
        return ms if ms is not None else self["zookeeper.session.timeout.ms"]

    @property
    def single_node(self) -> bool:
        """No zookeeper.connect: this broker is its own controller, metadata in a file."""
        return not self["zookeeper.connect"]

    @property
    def metrics_port(self) -> int | None:
        return self["gregor.metrics.port"]

    # --- validation ------------------------------------------------------------------

    def _validate(self) -> None:
        node = self._layered("node.id")
        broker = self._layered("broker.id")
        if node is not None and broker is not None and node != broker:
            raise ConfigError(
                "You must set `node.id` to the same value as `broker.id`.", "broker.id", broker
            )
        protocols = self.security_protocol_map
        listeners = self.all_listeners
        names = [lst.name for lst in listeners]
        shown = "[" + ", ".join(self["listeners"]) + "]"
        for lst in listeners:
            proto = protocols.get(lst.name)
            if proto is None:
                raise ConfigError(
                    f"Error creating broker listeners from '{shown}': "
                    f"No security protocol defined for listener {lst.name}",
                    "listeners",
                    lst.name,
                )
            if proto != "PLAINTEXT":
                raise ConfigError(
                    f"Invalid value {','.join(self['listeners'])} for configuration listeners: "
                    f"listener {lst.name} uses security protocol {proto}; Gregor serves PLAINTEXT only",
                    "listeners",
                    lst.name,
                )
        if len(set(names)) != len(names):
            raise ConfigError(
                f"Error creating broker listeners from '{shown}': "
                f"Each listener must have a different name, listeners: {shown}",
                "listeners",
            )
        if _port_clash(listeners):
            raise ConfigError(
                f"Error creating broker listeners from '{shown}': "
                f"Each listener must have a different port, listeners: {shown}",
                "listeners",
            )
        if not self.listeners:
            raise ConfigError(
                "Invalid value for configuration listeners: every listener is named in "
                "controller.listener.names; at least one must serve clients",
                "listeners",
            )
        advertised = self.advertised_listeners
        for lst in advertised or ():
            if lst.host == "0.0.0.0":
                raise ConfigError(
                    "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                    "Use a routable IP address.",
                    "advertised.listeners",
                    str(lst),
                )
            if lst.name not in names:
                raise ConfigError(
                    f"Invalid value {','.join(self['advertised.listeners'])} for configuration "
                    f"advertised.listeners: listener {lst.name} is not in listeners "
                    f"({', '.join(names)})",
                    "advertised.listeners",
                    lst.name,
                )
        ibl = self["inter.broker.listener.name"]
        if ibl is not None and ibl.upper() not in {lst.name for lst in self.listeners}:
            raise ConfigError(
                f"Invalid value {ibl} for configuration inter.broker.listener.name: "
                f"it must be one of the client listeners ({', '.join(lst.name for lst in self.listeners)})",
                "inter.broker.listener.name",
                ibl,
            )
        for voter in self["controller.quorum.voters"]:
            if not re.fullmatch(r"[0-9]+@\[?[0-9a-zA-Z\-%._:]*\]?:[0-9]+", voter):
                raise ConfigError(
                    "Invalid configuration value for controller.quorum.voters. "
                    "Each entry should be in the form `{id}@{host}:{port}`.",
                    "controller.quorum.voters",
                    voter,
                )
        dirs = self.log_dirs
        if len(set(dirs)) != len(dirs):
            key = "log.dirs" if self["log.dirs"] is not None else "log.dir"
            raise ConfigError(
                f"Invalid value {','.join(dirs)} for configuration {key}: a directory appears twice",
                key,
            )
        if self.log_roll_ms < 1:
            raise ConfigError(
                "requirement failed: log.roll.ms must be greater than or equal to 1",
                "log.roll.ms",
                self["log.roll.ms"],
            )
        if self.log_roll_jitter_ms < 0:
            raise ConfigError(
                "requirement failed: log.roll.jitter.ms must be greater than or equal to 0",
                "log.roll.jitter.ms",
                self["log.roll.jitter.ms"],
            )

    def _layered(self, key: str) -> Any:
        for layer in (self._dynamic_values, self._static_values):
            if key in layer:
                return layer[key]
        return None

    # --- dynamic configuration ----------------------------------------------------------

    def dynamic_mode(self, key: str) -> str | None:
        """PER_BROKER, CLUSTER_WIDE, or None for a read-only key."""
        spec = BROKER_CONFIG_KEYS.get(key)
        return spec.dynamic if spec else None

    def alter(
        self,
        updates: Mapping[str, Any],
        *,
        per_broker: bool = True,
        validate_only: bool = False,
    ) -> None:
        """Set (value) or delete (None) dynamic configs, as AlterConfigs does:
        `per_broker` for this broker's resource, else the cluster default ("").
        All or nothing: ConfigError leaves the configuration unchanged."""
        for key in updates:
            if key not in BROKER_CONFIG_KEYS:
                raise unknown_key_error(key)
        read_only = sorted(k for k in updates if self.dynamic_mode(k) is None)
        if read_only:
            raise ConfigError(
                f"Cannot update these configs dynamically: [{', '.join(read_only)}]",
                read_only[0],
            )
        if not per_broker:
            broker_only = sorted(k for k in updates if self.dynamic_mode(k) == PER_BROKER)
            if broker_only:
                raise ConfigError(
                    "Cannot update these configs at default cluster level, broker id must be "
                    f"specified: [{', '.join(broker_only)}]",
                    broker_only[0],
                )
        layer = dict(self.dynamic_broker if per_broker else self.dynamic_default)
        for key, value in updates.items():
            if value is None:
                layer.pop(key, None)
            else:
                raw = _as_raw(value)
                BROKER_CONFIG_KEYS[key].parse(raw)
                layer[key] = raw
        saved = (self.dynamic_broker, self.dynamic_default, self._dynamic_values)
        if per_broker:
            self.dynamic_broker = layer
        else:
            self.dynamic_default = layer
        merged = {**self.dynamic_default, **self.dynamic_broker}
        self._dynamic_values = {k: BROKER_CONFIG_KEYS[k].parse(v) for k, v in merged.items()}
        try:
            self._validate()
        except ConfigError:
            self.dynamic_broker, self.dynamic_default, self._dynamic_values = saved
            raise
        if validate_only:
            self.dynamic_broker, self.dynamic_default, self._dynamic_values = saved

    # --- DescribeConfigs ---------------------------------------------------------------

    def config_synonyms(self, name: str) -> list[ConfigSynonym]:
        """Kafka's ConfigHelper.configSynonyms for `name`: every set value of its
        synonym keys, dynamic-broker first, then dynamic-default, static and
        default, dropping the entries before the first one named `name`."""
        names = broker_synonyms(name)
        found: list[ConfigSynonym] = []
        layers: list[tuple[Mapping[str, str], ConfigSource]] = [
            (self.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
            (self.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (self.static, ConfigSource.STATIC_BROKER_CONFIG),
            (_DEFAULT_STRINGS, ConfigSource.DEFAULT_CONFIG),
        ]
        for layer, source in layers:
            for n in names:
                if n in layer:
                    spec = BROKER_CONFIG_KEYS.get(n)
                    value = None if spec is not None and spec.sensitive else layer[n]
                    found.append(ConfigSynonym(n, value, source))
        for i, syn in enumerate(found):
            if syn.name == name:
                return found[i:]
        return []

    def describe(
        self,
        keys: Iterable[str] | None = None,
        *,
        include_synonyms: bool = True,
        include_documentation: bool = False,
    ) -> list[ConfigEntry]:
        """DescribeConfigs of this broker's resource (its id): every defined key,
        or `keys` (unknown names are left out, as Kafka does)."""
        wanted = (
            sorted(BROKER_CONFIG_KEYS) if not keys else [k for k in keys if k in BROKER_CONFIG_KEYS]
        )
        return [
            self._entry(k, self.string_value(k), include_synonyms, include_documentation)
            for k in wanted
        ]

    def describe_cluster_defaults(
        self,
        keys: Iterable[str] | None = None,
        *,
        include_synonyms: bool = True,
        include_documentation: bool = False,
    ) -> list[ConfigEntry]:
        """DescribeConfigs of the cluster-default broker resource (""): only the
        dynamic default configs that are set."""
        wanted = sorted(self.dynamic_default)
        if keys:
            wanted = [k for k in wanted if k in set(keys)]
        entries = []
        for k in wanted:
            spec = BROKER_CONFIG_KEYS[k]
            value = None if spec.sensitive else self.dynamic_default[k]
            syns = [
                s
                for s in self.config_synonyms(k)
                if s.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
            ]
            entries.append(self._entry(k, value, include_synonyms, include_documentation, syns))
        return entries

    def _entry(
        self,
        key: str,
        value: str | None,
        include_synonyms: bool,
        include_documentation: bool,
        synonyms: list[ConfigSynonym] | None = None,
    ) -> ConfigEntry:
        spec = BROKER_CONFIG_KEYS[key]
        syns = self.config_synonyms(key) if synonyms is None else synonyms
        return ConfigEntry(
            name=key,
            value=None if spec.sensitive else value,
            source=syns[0].source if syns else ConfigSource.DEFAULT_CONFIG,
            read_only=self.dynamic_mode(key) is None,
            sensitive=spec.sensitive,
            synonyms=syns if include_synonyms else [],
            config_type=spec.type,
            documentation=spec.doc if include_documentation else None,
        )

    # --- reporting ------------------------------------------------------------------------

    def warnings(self) -> list[str]:
        """Things worth a log line at start-up: accepted-but-ignored keys, and
        internal topics a single node cannot create."""
        out = [
            f"configuration {key} is accepted but ignored by Gregor" for key in sorted(self.ignored)
        ]
        if self.single_node:
            for key in (
                "offsets.topic.replication.factor",
                "transaction.state.log.replication.factor",
            ):
                if self[key] > 1:
                    out.append(
                        f"{key}={self[key]} on a single node: as in Kafka, the internal topic cannot "
                        f"be created until that many brokers are registered; set {key}=1"
                    )
        return out

    def __repr__(self) -> str:
        shown = {
            k: ("[hidden]" if BROKER_CONFIG_KEYS[k].sensitive else v)
            for k, v in sorted(self.static.items())
        }
        return f"BrokerConfig({shown})"


_DEFAULT_STRINGS: dict[str, str] = {k.name: s for k in _KEYS if (s := k.default_string) is not None}


def _port_clash(listeners: list[Listener]) -> bool:
    """Kafka's rule: ports differ, except one IPv4 and one IPv6 listener may
    share a port. Port 0 (pick a free port) never clashes."""
    by_port: dict[int, list[Listener]] = {}
    for lst in listeners:
        if lst.port != 0:
            by_port.setdefault(lst.port, []).append(lst)
    for same in by_port.values():
        if len(same) == 1:
            continue
        families = [_ip_family(lst.host) for lst in same]
        if len(same) > 2 or None in families or families[0] == families[1]:
            return True
    return False


def _ip_family(host: str) -> int | None:
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return None


def read_properties_file(path: str | Path) -> dict[str, str]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"Cannot read configuration file {path}: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # Java's Properties.load reads ISO-8859-1
    return parse_properties(text)


def is_ignored_key(key: str) -> bool:
    return key in IGNORED_KEYS or key.startswith(IGNORED_PREFIXES)


def unknown_key_error(key: str) -> ConfigError:
    hint = difflib.get_close_matches(key, BROKER_CONFIG_KEYS, n=1)
    suffix = f" (did you mean '{hint[0]}'?)" if hint else ""
    return ConfigError(f"Unknown configuration '{key}'{suffix}", key)
