"""The broker process: listeners, connections and background duties in one nursery.

    async with trio.open_nursery() as nursery:
        broker = await nursery.start(Broker(config).serve)
        host, port = broker.bound[0][1:]

`serve` reports readiness through `nursery.start` once every listener
accepts connections (port 0 binds a free port; `bound` says which). `stop()`
is the graceful path used for SIGTERM/SIGINT: stop accepting, let requests
in flight finish, flush and checkpoint the logs, return.
"""

from __future__ import annotations

import logging
from pathlib import Path

import trio

import broker.handlers  # noqa: F401  (registers every handler)
from broker.cluster import BrokerInfo, ClusterMetadata, LocalMetadataStore, TopicInfo
from broker.config import ConfigError
from broker.config.topic import TopicConfig, validate_topic_config
from broker.connection import Connection
from broker.group_runtime import GroupRuntime
from broker.replica_manager import ReplicaManager
from broker.topics import TopicError, TopicManager
from logstore import TopicLimits
from wire.error_codes import ErrorCode

log = logging.getLogger("gregor.broker")

METADATA_FILE = "gregor-cluster-metadata.json"
# How long in-flight requests get to finish on a graceful stop.
_STOP_GRACE_SECONDS = 10


class Broker:
    def __init__(self, config):
        self.config = config
        self.node_id: int = config.node_id
        self.log_dirs = [Path(d) for d in config.log_dirs]
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        self.cluster = ClusterMetadata(
            LocalMetadataStore(self.log_dirs[0] / METADATA_FILE), self.node_id
        )
        self._apply_dynamic_broker_configs()
        self.replicas = ReplicaManager(self)
        self.topics = TopicManager(self)
        self.groups = GroupRuntime(self)
        # Effective topic configs, keyed by topic name, valid while its overrides are.
        self._topic_configs: dict[str, tuple[dict, TopicConfig, TopicLimits]] = {}
        # (listener name, host, port) actually bound, in config order.
        self.bound: list[tuple[str, str, int]] = []
        self.stopping = False
        self._connections: set[Connection] = set()
        self._accept_scope: trio.CancelScope | None = None
        self._nursery: trio.Nursery | None = None
        self._stopped = trio.Event()

    # --- lifecycle --------------------------------------------------------

    async def serve(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self.cluster.rejoin()
            self.replicas.open_all()
            listeners = []
            for name, host, port in self.config.listeners:
                bound = await trio.open_tcp_listeners(port, host=host or None)
                listeners.append((name, bound))
                sockname = bound[0].socket.getsockname()
                self.bound.append((name, sockname[0], sockname[1]))
            self._register_self()
            accept_scope = trio.CancelScope()
            self._accept_scope = accept_scope
            for name, bound in listeners:
                nursery.start_soon(self._accept, name, bound, accept_scope)
            self.replicas.start_background(nursery)
            await nursery.start(self.groups.run)
            for name, host, port in self.bound:
                log.info("Gregor node %d listening on %s://%s:%d", self.node_id, name, host, port)
            task_status.started(self)
            await self._stopped.wait()
            nursery.cancel_scope.cancel()

    async def _accept(self, name: str, listeners, scope: trio.CancelScope) -> None:
        with scope:
            await trio.serve_listeners(
                lambda stream: self._handle(stream, name), listeners, handler_nursery=self._nursery
            )

    async def _handle(self, stream: trio.SocketStream, listener: str) -> None:
        conn = Connection(self, stream, listener)
        self._connections.add(conn)
        try:
            await conn.run()
        except* Exception:
            # A connection's failure must never reach the broker's nursery.
            log.exception("connection %s failed", conn.peer)
        finally:
            self._connections.discard(conn)

    async def stop(self) -> None:
        """Graceful stop: no new connections, in-flight requests answered,
        logs flushed and checkpointed."""
        if self.stopping:
            return
        self.stopping = True
        log.info("stopping: no longer accepting connections")
        if self._accept_scope is not None:
            self._accept_scope.cancel()
        # Parked group requests (a JoinGroup waiting for the join phase) are
        # answered NOT_COORDINATOR now instead of holding the stop up.
        self.groups.shutdown()
        with trio.move_on_after(_STOP_GRACE_SECONDS):
            for conn in list(self._connections):
                conn.stop_when_idle()
            # Long-poll Fetches stop waiting and answer with what they have.
            for partition in list(self.replicas.partitions.values()):
                partition.notify()
            while self._connections:
                await trio.sleep(0.01)
        await self.replicas.stop_background()
        await trio.to_thread.run_sync(self.replicas.close_all)
        log.info("stopped: logs flushed and checkpointed")
        self._stopped.set()

    # --- topic configuration ------------------------------------------------

    def topic_config(self, topic: TopicInfo) -> TopicConfig:
        return self._topic_entry(topic)[1]

    def topic_limits(self, topic: TopicInfo) -> TopicLimits:
        return self._topic_entry(topic)[2]

    def _topic_entry(self, topic: TopicInfo):
        cached = self._topic_configs.get(topic.name)
        if cached is not None and cached[0] == topic.configs:
            return cached
        cfg = TopicConfig(self.config, topic.configs)
        limits = TopicLimits(
            max_message_bytes=cfg["max.message.bytes"],
            log_append_time=cfg["message.timestamp.type"] == "LogAppendTime",
            compacted=cfg.compact_enabled,
            timestamp_before_max_ms=cfg["message.timestamp.before.max.ms"],
            timestamp_after_max_ms=cfg["message.timestamp.after.max.ms"],
            segment_bytes=cfg.segment_bytes,
            min_insync_replicas=cfg["min.insync.replicas"],
        )
        entry = (dict(topic.configs), cfg, limits)
        self._topic_configs[topic.name] = entry
        return entry

    def validate_topic_configs(self, configs: dict) -> None:
        """Raise TopicError(INVALID_CONFIG) naming the bad key, as CreateTopics does."""
        try:
            validate_topic_config(configs, self.config)
        except ConfigError as e:
            raise TopicError(ErrorCode.INVALID_CONFIG, str(e)) from None

    # --- dynamic broker configuration ------------------------------------------

    def _apply_dynamic_broker_configs(self) -> None:
        """Lay the dynamic broker configs persisted by AlterConfigs over the
        static ones, cluster defaults first, as Kafka does at start. A stored
        value that no longer validates is skipped with a warning."""
        for resource, per_broker in (("", False), (str(self.node_id), True)):
            stored = self.cluster.broker_configs(resource)
            if not stored:
                continue
            try:
                self.config.alter(stored, per_broker=per_broker)
                continue
            except ConfigError:
                pass
            for key, value in stored.items():
                try:
                    self.config.alter({key: value}, per_broker=per_broker)
                except ConfigError as e:
                    log.warning("ignoring stored dynamic broker config %s=%s: %s", key, value, e)

    def broker_config_changed(self) -> None:
        """After a dynamic broker config change: topics without an override of
        a changed key take the new default, and their logs with them."""
        self._topic_configs.clear()
        for topic in list(self.cluster.topics.values()):
            try:
                self.replicas.topic_config_changed(topic)
            except ConfigError as e:
                log.warning("topic %s keeps its previous log config: %s", topic.name, e)

    # --- cluster ----------------------------------------------------------

    def _register_self(self) -> None:
        name, host, port = self.advertised_endpoint(self.bound[0][0])
        self.cluster.register_broker(BrokerInfo(self.node_id, host, port, self.config.rack))

    def advertised_endpoint(self, listener: str) -> tuple[str, str, int]:
        """(listener, host, port) clients should use to reach this broker."""
        for name, host, port in self.config.advertised_listeners or ():
            if name == listener:
                return name, host, port
        for name, host, port in self.bound:
            if name == listener:
                return name, _client_host(host), port
        name, host, port = self.bound[0]
        return name, _client_host(host), port


def _client_host(host: str) -> str:
    # A wildcard bind is not an address a client can dial.
    return "localhost" if host in ("0.0.0.0", "::", "") else host
