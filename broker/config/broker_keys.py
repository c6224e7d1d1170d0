"""The broker keys Gregor knows: Apache Kafka's broker property names, types,
defaults, checks and dynamic update modes, and the Kafka keys accepted and ignored.

Facts (names, types, defaults, ranges, which keys are dynamic, the exact
error texts) follow Apache Kafka 4.3.1, read from its own ConfigDefs; the
ZooKeeper keys, removed from Kafka in 4.0, follow Kafka 3.9. Where Gregor
differs it says so in `GREGOR_DEVIATIONS`. Keys that a real server.properties
may carry but Gregor does not act on are accepted, kept in `ignored` and
reported by `warnings()` (see `IGNORED_KEYS`); any other key is a ConfigError.
"""

from __future__ import annotations

import difflib
import re

from broker.config.keys import (
    CLUSTER_WIDE,
    INT_MAX,
    LONG_MAX,
    ConfigError,
    ConfigKey,
    ConfigType,
    at_least,
    between,
    define_key,
    gzip_level,
    non_empty_list,
    one_of,
)


def _port(v):
    if v is not None and not 0 <= v <= 65535:
        return "Value must be a TCP port in [0,...,65535] (0 picks a free port)"
    return None


_port.describe = "[0,...,65535]"  # type: ignore[attr-defined]


def _cluster_id(v):
    if v is None:
        return None
    if not re.fullmatch(r"[A-Za-z0-9_-]{22}", v):
        return (
            "must be a base64url-encoded 16-byte UUID (22 characters), as Kafka's cluster ids are"
        )
    return None


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
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("compact", "delete")

# fmt: off
_KEYS: list[ConfigKey] = [
    # --- server -------------------------------------------------------------------
    define_key("node.id", I, 1, "The id of this broker (Gregor's default: 1; Kafka requires it).", at_least(0)),
    define_key("broker.id", I, -1, "The broker id; a synonym of node.id (if both are set they must agree)."),
    define_key("broker.rack", S, None, "Rack of the broker, for rack-aware replica placement."),
    define_key("replica.selector.class", S, None, "How a consumer's read replica is chosen: unset, the leader; org.apache.kafka.common.replica.RackAwareReplicaSelector, an in-sync replica in the consumer's client.rack (KIP-392).", one_of("org.apache.kafka.common.replica.RackAwareReplicaSelector", "org.apache.kafka.common.replica.LeaderSelector")),
    define_key("process.roles", LS, [], "Accepted and recorded: 'broker', 'controller' or both. Gregor is always both.", one_of("broker", "controller")),
    define_key("controller.quorum.voters", LS, [], "Accepted and recorded (KRaft voters, {id}@{host}:{port}); Gregor coordinates through ZooKeeper."),
    define_key("controller.listener.names", LS, None, "Names of controller listeners: recorded, and not served as Kafka client listeners."),
    define_key("listeners", LS, ["PLAINTEXT://localhost:9092"], "Comma-separated NAME://host:port URIs to listen on (empty host: all interfaces; port 0: a free port). Gregor's default binds localhost.", non_empty_list),
    define_key("advertised.listeners", LS, None, "Listener addresses published to clients, if different from listeners."),
    define_key("listener.security.protocol.map", S, DEFAULT_SECURITY_PROTOCOL_MAP, "Map of listener names to security protocols (NAME:PROTOCOL,...). Gregor serves PLAINTEXT and SASL_PLAINTEXT."),
    define_key("sasl.enabled.mechanisms", LS, ["GSSAPI"], "SASL mechanisms of SASL_PLAINTEXT listeners (per listener: listener.name.<listener>.sasl.enabled.mechanisms). Gregor serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; Kafka's default, GSSAPI, must be replaced."),
    define_key("sasl.server.max.receive.size", I, 524288, "The largest request a client may send on a SASL listener before it has authenticated.", at_least(1)),
    define_key("sasl.mechanism.inter.broker.protocol", S, "GSSAPI", "The mechanism a broker logs in to another with when the inter-broker listener is a SASL one; its credentials are the username and password options of that listener's JAAS config for the mechanism."),
    define_key("inter.broker.listener.name", S, None, "Listener used between brokers (replication); by default the first broker listener."),
    define_key("num.network.threads", I, 3, "Accepted, unused (Gregor runs on one Trio event loop).", at_least(1), CLUSTER_WIDE),
    define_key("num.io.threads", I, 8, "Accepted, unused (Gregor runs on one Trio event loop).", at_least(1), CLUSTER_WIDE),
    define_key("message.max.bytes", I, 1048588, "The largest record batch size allowed (after compression); per topic: max.message.bytes.", at_least(0), CLUSTER_WIDE),
    define_key("socket.request.max.bytes", I, 104857600, "The maximum number of bytes in a socket request.", at_least(1)),
    # -1 by default where Kafka has 102400: Linux then sizes each connection's
    # buffers to its traffic (to megabytes on a busy one); fixed at 100 KB,
    # Gregor used 1.14-1.55x the broker CPU per GiB consumed (README, "Running it").
    define_key("socket.send.buffer.bytes", I, -1, "SO_SNDBUF of accepted connections; -1 (Gregor's default, Kafka's is 102400): the OS's, which grows with the traffic."),
    define_key("socket.receive.buffer.bytes", I, -1, "SO_RCVBUF of accepted connections; -1 (Gregor's default, Kafka's is 102400): the OS's, which grows with the traffic."),
    # 4096 where Kafka has 50: Kafka accepts on a thread of its own, Gregor on
    # the event loop that also serves requests, so a burst of clients (all
    # reconnecting after a restart) can find a busy loop; beyond the backlog
    # Linux drops their SYNs and they retry after a second. 4096 is Linux's
    # usual cap (net.core.somaxconn), what Gregor listened with before the key
    # was applied.
    define_key("socket.listen.backlog.size", I, 4096, "Maximum number of pending connections on a listening socket (Gregor's default 4096, Kafka's 50; Linux caps it at net.core.somaxconn).", at_least(1)),
    define_key("connections.max.idle.ms", L, 600000, "Idle connections are closed after this many milliseconds."),
    define_key("connection.failed.authentication.delay.ms", I, 100, "How long the answer to a failed SASL login waits before it is sent and the connection closed (KIP-306), to slow down guessing.", at_least(0)),
    define_key("connections.max.reauth.ms", L, 0, "How long a SASL login lasts (0: as long as its connection); a client logs in again on the same connection before then (KIP-368), or the connection is closed at its next request.", at_least(0)),
    define_key("queued.max.requests", I, 500, "Accepted, unused (Gregor handles the requests of a connection one at a time, in order).", at_least(1)),
    define_key("request.timeout.ms", I, 30000, "Timeout of the broker's own requests to other brokers."),
    define_key("fetch.max.bytes", I, 57671680, "The maximum number of bytes returned for a fetch request.", at_least(1024)),
    define_key("max.incremental.fetch.session.cache.slots", I, 1000, "The most fetch sessions (KIP-227) the broker keeps; 0 answers every Fetch in full, with session id 0.", at_least(0)),
    define_key("delete.topic.enable", B, True, "When false, DeleteTopics is rejected."),
    define_key("auto.create.topics.enable", B, True, "Create a topic when a client asks for its metadata."),
    define_key("num.partitions", I, 1, "Default number of partitions of a new topic.", at_least(1)),
    define_key("default.replication.factor", I, 1, "Default replication factor of a new topic (Gregor: at least 1).", at_least(1)),
    define_key("min.insync.replicas", I, 1, "Minimum ISR size for acks=all writes to succeed (else NOT_ENOUGH_REPLICAS).", at_least(1), CLUSTER_WIDE),
    define_key("unclean.leader.election.enable", B, False, "Allow a replica outside the ISR to become leader, at the risk of data loss.", None, CLUSTER_WIDE),
    define_key("auto.leader.rebalance.enable", B, True, "The controller moves leadership back to preferred replicas when brokers' leaderships are imbalanced."),
    define_key("leader.imbalance.check.interval.seconds", L, 300, "How often the controller checks leader imbalance.", at_least(1)),
    define_key("leader.imbalance.per.broker.percentage", I, 10, "Share of a broker's preferred partitions led elsewhere that triggers a rebalance.", between(0, 100)),
    define_key("compression.type", S, "producer", "Final compression of a topic's batches; 'producer' keeps the producer's codec.", one_of(*COMPRESSION_TYPES), CLUSTER_WIDE),
    define_key("compression.gzip.level", I, -1, "Level for compression.type=gzip.", gzip_level, CLUSTER_WIDE),
    define_key("compression.lz4.level", I, 9, "Level for compression.type=lz4.", between(1, 17), CLUSTER_WIDE),
    define_key("compression.zstd.level", I, 3, "Level for compression.type=zstd.", between(-131072, 22), CLUSTER_WIDE),
    # --- log --------------------------------------------------------------------------
    define_key("log.dir", LS, ["./data"], "Directories of the log data, used if log.dirs is not set (Gregor's default: ./data).", non_empty_list),
    define_key("log.dirs", LS, None, "Comma-separated directories of the log data; if unset, log.dir.", non_empty_list),
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
    define_key("log.cleaner.threads", I, 1, "Accepted, unused: Gregor has one cleaner, which cleans one log at a time in a worker thread.", at_least(0), CLUSTER_WIDE),
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
    define_key("replica.socket.timeout.ms", I, 30000, "How long a follower waits for a Fetch answer before it reconnects (beyond replica.fetch.wait.max.ms)."),
    define_key("replica.high.watermark.checkpoint.interval.ms", L, 5000, "How often high watermarks are checkpointed."),
    define_key("num.replica.fetchers", I, 1, "Accepted, unused: a follower fetches from each leader broker with one task.", at_least(1), CLUSTER_WIDE),
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
    define_key("transaction.abort.timed.out.transaction.cleanup.interval.ms", I, 10000, "Accepted, unused: Gregor aborts each transaction at its own timeout, where Kafka looks for timed-out ones this often.", at_least(1)),
    define_key("transaction.remove.expired.transaction.cleanup.interval.ms", I, 3600000, "How often expired transactional ids are removed.", at_least(1)),
    define_key("producer.id.expiration.ms", I, 86400000, "A partition forgets an idle producer id after this long.", at_least(1), CLUSTER_WIDE),
    # --- ZooKeeper (Kafka 3.9; removed from Kafka 4.0) ----------------------------
    define_key("zookeeper.connect", S, None, "ZooKeeper connection string host:port[,host:port...][/chroot]: the broker is one of a cluster whose metadata lives in ZooKeeper. Unset: a single node, cluster metadata in a local file."),
    define_key("zookeeper.session.timeout.ms", I, 18000, "ZooKeeper session timeout."),
    define_key("zookeeper.connection.timeout.ms", I, None, "Maximum wait for a ZooKeeper connection; if unset, zookeeper.session.timeout.ms."),
    # --- Gregor's own ---------------------------------------------------------------
    define_key("gregor.metrics.port", I, None, "Gregor-specific, reserved: the port of a Prometheus metrics endpoint, which Gregor does not serve yet (accepted and checked, unused).", _port),
    define_key("gregor.metrics.host", S, "localhost", "Gregor-specific, reserved: the address of that metrics endpoint (accepted, unused)."),
    define_key("gregor.transaction.version", SH, 2, "Gregor-specific: the level of the transaction.version feature this broker finalizes and advertises in ApiVersions (Kafka sets it with kafka-storage format --feature or kafka-features). 2: transactions v2 (KIP-890 part 2), which Kafka 4.x clients then use; 0 or 1: clients use transactions v1. Set it alike on every broker of a cluster.", between(0, 2)),
    define_key("gregor.cluster.id", S, None, "Gregor-specific: cluster id used when this node creates new cluster metadata (Kafka keeps it in meta.properties, set by kafka-storage format). Unset: generated.", _cluster_id),
]
# fmt: on

BROKER_CONFIG_KEYS: dict[str, ConfigKey] = {k.name: k for k in _KEYS}

GREGOR_DEVIATIONS: dict[str, str] = {
    "node.id": "default 1 (Kafka: required, no default)",
    "process.roles": "default empty and ignored (Kafka 4.x: required)",
    "controller.listener.names": "optional; named listeners are not served to clients",
    "listeners": "default PLAINTEXT://localhost:9092 (Kafka: PLAINTEXT://:9092); ports must be in "
    "0..65535; PLAINTEXT and SASL_PLAINTEXT (no SSL yet); read-only (Kafka: per-broker dynamic)",
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
    auto.include.jmx.reporter background.threads
    broker.heartbeat.interval.ms broker.id.generation.enable broker.session.timeout.ms
    client.quota.callback.class config.providers
    control.plane.listener.name controlled.shutdown.enable
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
    kafka.metrics.reporters leader.replication.throttled.rate
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
    replica.socket.receive.buffer.bytes replication.quota.window.num
    replication.quota.window.size.seconds reserved.broker.max.id
    sasl.client.callback.handler.class sasl.jaas.config
    sasl.kerberos.kinit.cmd sasl.kerberos.min.time.before.relogin
    sasl.kerberos.principal.to.local.rules sasl.kerberos.service.name
    sasl.kerberos.ticket.renew.jitter sasl.kerberos.ticket.renew.window.factor
    sasl.login.callback.handler.class sasl.login.class sasl.login.connect.timeout.ms
    sasl.login.read.timeout.ms sasl.login.refresh.buffer.seconds
    sasl.login.refresh.min.period.seconds sasl.login.refresh.window.factor
    sasl.login.refresh.window.jitter sasl.login.retry.backoff.max.ms
    sasl.login.retry.backoff.ms sasl.mechanism.controller.protocol
    sasl.oauthbearer.assertion.algorithm
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
    security.inter.broker.protocol security.providers
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


def is_ignored_key(key: str) -> bool:
    return key in IGNORED_KEYS or key.startswith(IGNORED_PREFIXES)


def unknown_key_error(key: str) -> ConfigError:
    hint = difflib.get_close_matches(key, BROKER_CONFIG_KEYS, n=1)
    suffix = f" (did you mean '{hint[0]}'?)" if hint else ""
    return ConfigError(f"Unknown configuration '{key}'{suffix}", key)


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
