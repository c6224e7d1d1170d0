"""The broker process: where its parts are built and wired, and its lifecycle.

    async with trio.open_nursery() as nursery:
        broker = await nursery.start(Broker(config).serve)
        host, port = broker.bound[0][1:]

This module is the composition root: it builds each part with exactly what
that part uses, and nothing else reaches across. Metadata flows one way:
the controller (here the embedded single node's, `LocalController`) makes
every change and publishes each new image to the `MetadataCache`, whose
publishers react in order: the dynamic broker config, the effective topic
configs, the replica manager (partitions to lead, follow or stop), the group
coordinator (its `__consumer_offsets` partitions to load or unload, and the
offsets of deleted topics).

`serve` reports readiness through `nursery.start` once every listener accepts
connections (port 0 binds a free port; `bound` says which). `stop()` is the
graceful path used for SIGTERM/SIGINT: stop accepting, let requests in flight
finish, flush and checkpoint the logs, return.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from functools import partial
from pathlib import Path

import trio

from broker.broker_client import BrokerConnections
from broker.config import BrokerConfig
from broker.connection import Connection, ConnectionLimits, peer_address
from broker.controller.api import MetadataBackend
from broker.controller.local import METADATA_FILE, LocalController, LocalMetadataStore
from broker.dynamic_broker_config import DynamicBrokerConfig
from broker.group_runtime import GroupRuntime
from broker.handlers import build_handlers
from broker.log_manager import LogDuties, LogManager
from broker.metadata.image import BrokerRegistration, Endpoint, MetadataImage
from broker.metadata.publisher import MetadataCache
from broker.producer_id_manager import ProducerIdManager
from broker.registry import RequestDispatcher
from broker.replica_fetcher import FetcherSettings, ReplicaFetcherManager
from broker.replica_manager import ReplicaManager
from broker.request_context import ANONYMOUS
from broker.security.sasl import SaslAuthenticator
from broker.security.scram import ScramCredential, ScramMechanism
from broker.security.tls import principal_of
from broker.topic_configs import EffectiveTopicConfigs
from broker.topics import TopicManager
from broker.txn_markers import MarkerSender, MarkerWriter
from broker.txn_runtime import TransactionRuntime
from broker.txn_verifier import TxnVerifier

log = logging.getLogger("gregor.broker")

# How long in-flight requests get to finish on a graceful stop.
_STOP_GRACE_SECONDS = 10


# Makes the metadata backend for a broker's cache: the embedded single node's
# by default; tests put several brokers of one process on a shared one.
BackendFactory = Callable[[MetadataCache, BrokerConfig], MetadataBackend]


def default_backend(cache: MetadataCache, config: BrokerConfig) -> MetadataBackend:
    """A cluster's ZooKeeper with zookeeper.connect, else the embedded single node."""
    if config.single_node:
        store = LocalMetadataStore(Path(config.log_dirs[0]) / METADATA_FILE)
        return LocalController(store, cache, config.node_id, cluster_id=config["gregor.cluster.id"])
    from broker.controller.zookeeper import ZkMetadataBackend

    return ZkMetadataBackend(
        config["zookeeper.connect"],
        cache,
        config.node_id,
        session_timeout_ms=config["zookeeper.session.timeout.ms"],
        connection_timeout_ms=config.zookeeper_connection_timeout_ms,
        unclean_leader_election=config["unclean.leader.election.enable"],
        auto_leader_rebalance=config["auto.leader.rebalance.enable"],
        leader_imbalance_check_interval_s=config["leader.imbalance.check.interval.seconds"],
        leader_imbalance_percentage=config["leader.imbalance.per.broker.percentage"],
        cluster_id=config["gregor.cluster.id"],
    )


class Broker:
    def __init__(self, config: BrokerConfig, backend: BackendFactory = default_backend):
        self.config = config
        self.node_id: int = config.node_id
        self.log_dirs = [Path(d) for d in config.log_dirs]
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        # The broker starts from an image of no topics; the first published
        # image then reaches every part as a change, as any later one does.
        self.metadata = MetadataCache(MetadataImage("", -1))
        self.controller = backend(self.metadata, config)
        self.topic_configs = EffectiveTopicConfigs(config)
        self.logs = LogManager(
            [str(d) for d in self.log_dirs],
            LogDuties(
                retention_check_interval_ms=config.log_retention_check_interval_ms,
                flush_scheduler_interval_ms=config.log_flush_scheduler_interval_ms,
                checkpoint_interval_ms=config.log_flush_offset_checkpoint_interval_ms,
                cleaner_enable=config.log_cleaner_enable,
                cleaner_backoff_ms=config.log_cleaner_backoff_ms,
                log_start_checkpoint_interval_ms=config.log_flush_start_offset_checkpoint_interval_ms,
                high_watermark_checkpoint_interval_ms=config.replica_high_watermark_checkpoint_interval_ms,
            ),
        )
        # This broker's client side of TLS to the others, if they listen with it.
        settings_tls = config.inter_broker_tls
        inter_broker_tls = None if settings_tls is None else settings_tls.client_context
        self.replicas = ReplicaManager(
            self.node_id,
            self.logs,
            self.topic_configs,
            self.controller,
            replica_lag_time_max_ms=config["replica.lag.time.max.ms"],
            fetchers=ReplicaFetcherManager(
                self.node_id,
                FetcherSettings(
                    listener=config.inter_broker_listener_name,
                    max_wait_ms=config["replica.fetch.wait.max.ms"],
                    min_bytes=config["replica.fetch.min.bytes"],
                    max_bytes=config["replica.fetch.max.bytes"],
                    response_max_bytes=config["replica.fetch.response.max.bytes"],
                    backoff_ms=config["replica.fetch.backoff.ms"],
                    socket_timeout_ms=config["replica.socket.timeout.ms"],
                    login=config.inter_broker_login,
                    tls=inter_broker_tls,
                ),
                lambda: self.metadata.image,
            ),
        )
        self.topics = TopicManager(self.metadata, self.controller, self.topic_configs, config)
        self.groups = GroupRuntime(self.node_id, config, self.metadata, self.replicas, self.topics)
        self.metadata.subscribe(DynamicBrokerConfig(config, self.node_id))
        self.metadata.subscribe(self.topic_configs)
        self.metadata.subscribe(self.replicas)
        self.markers = MarkerWriter(
            self.replicas,
            lambda index, producer_id, commit: self.groups.complete_transaction(
                index, producer_id, commit
            ),
            timeout_ms=config["request.timeout.ms"],
        )
        self.txns = TransactionRuntime(
            self.node_id,
            config,
            self.metadata,
            self.replicas,
            MarkerSender(
                self.node_id,
                self.markers,
                lambda: self.metadata.image,
                BrokerConnections(
                    lambda: self.metadata.image,
                    config.inter_broker_listener_name,
                    f"broker-{self.node_id}-txn-markers",
                    config.inter_broker_login,
                    inter_broker_tls,
                ),
            ),
        )
        self.metadata.subscribe(self.groups)
        self.metadata.subscribe(self.txns)
        self.dispatcher = RequestDispatcher(
            build_handlers(
                node_id=self.node_id,
                config=config,
                metadata=self.metadata,
                controller=self.controller,
                topic_configs=self.topic_configs,
                logs=self.logs,
                replicas=self.replicas,
                topics=self.topics,
                groups=self.groups,
                producer_ids=ProducerIdManager(self.controller, self.node_id),
                txns=self.txns,
                markers=self.markers,
                verifier=TxnVerifier(
                    self.node_id,
                    self.txns,
                    lambda: self.metadata.image,
                    BrokerConnections(
                        lambda: self.metadata.image,
                        config.inter_broker_listener_name,
                        f"broker-{self.node_id}-txn-verify",
                        config.inter_broker_login,
                        inter_broker_tls,
                    ),
                ),
            )
        )
        self.limits = ConnectionLimits(
            socket_request_max_bytes=config.socket_request_max_bytes,
            connections_max_idle_ms=config.connections_max_idle_ms,
        )
        # Each TLS listener's server context, made once.
        self._tls_contexts = {
            name: tls.server_context
            for name, _, _ in config.listeners
            if (tls := config.listener_tls(name)) is not None
        }
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
            await trio.to_thread.run_sync(self.logs.load)
            self.replicas.start(nursery)
            listeners = []
            for name, host, port in self.config.listeners:
                bound = await trio.open_tcp_listeners(
                    port, host=host or None, backlog=self.config.socket_listen_backlog_size
                )
                if self.config.socket_receive_buffer_bytes != -1:
                    # On the listening socket, as Kafka sets it: accepted
                    # sockets inherit it, and the window a client is offered
                    # is fixed by it already in the handshake.
                    for listener in bound:
                        listener.socket.setsockopt(
                            socket.SOL_SOCKET,
                            socket.SO_RCVBUF,
                            self.config.socket_receive_buffer_bytes,
                        )
                listeners.append((name, bound))
                sockname = bound[0].socket.getsockname()
                self.bound.append((name, sockname[0], sockname[1]))
            # The metadata, this node's new incarnation and registration: the
            # replica manager opens the logs this node hosts.
            await self.controller.start(self._registration(), nursery)
            hosted = {
                (t.name, i)
                for t in self.metadata.image.topics.values()
                for i, p in t.partitions.items()
                if self.node_id in p.replicas
            }
            await trio.to_thread.run_sync(self.logs.finish_startup, hosted)
            accept_scope = trio.CancelScope()
            self._accept_scope = accept_scope
            nursery.start_soon(self._accept, listeners, accept_scope)
            nursery.start_soon(self._close_idle_connections)
            self.logs.start_background(nursery)
            await nursery.start(self.groups.run)
            await nursery.start(self.txns.run)
            for name, host, port in self.bound:
                log.info("Gregor node %d listening on %s://%s:%d", self.node_id, name, host, port)
            task_status.started(self)
            await self._stopped.wait()
            nursery.cancel_scope.cancel()

    async def _accept(
        self, listeners: list[tuple[str, list[trio.SocketListener]]], scope: trio.CancelScope
    ) -> None:
        # One scope for every listener (a cancel scope enters one block only).
        with scope:
            async with trio.open_nursery() as accepting:
                for name, bound in listeners:
                    accepting.start_soon(
                        partial(
                            trio.serve_listeners,
                            partial(self._handle, listener=name),
                            bound,
                            handler_nursery=self._nursery,
                        )
                    )

    async def _handle(self, stream: trio.SocketStream, listener: str) -> None:
        if self.config.socket_send_buffer_bytes != -1:
            try:
                stream.setsockopt(
                    socket.SOL_SOCKET, socket.SO_SNDBUF, self.config.socket_send_buffer_bytes
                )
            except OSError as e:  # the client already gone: run() ends it
                log.debug("SO_SNDBUF not set: %s", e)
        client: trio.abc.Stream = stream
        principal = ANONYMOUS
        tls = self._tls_contexts.get(listener)
        if tls is not None:
            secured = trio.SSLStream(stream, tls, server_side=True)
            try:
                # A client that never completes it is an idle connection.
                with trio.fail_after(self.limits.connections_max_idle_ms / 1000):
                    await secured.do_handshake()
            except (trio.BrokenResourceError, trio.TooSlowError) as e:
                log.info("TLS handshake with %s failed: %s", peer_address(stream), e.__cause__ or e)
                await _send_tls_alert(secured, stream)
                await stream.aclose()
                return
            principal = principal_of(secured.getpeercert(binary_form=True))
            client = secured
        sasl = self.config.listener_sasl(listener)
        authenticator = None if sasl is None else SaslAuthenticator(sasl, self._scram_credential)
        conn = Connection(self.dispatcher, self.limits, client, listener, authenticator, principal)
        self._connections.add(conn)
        try:
            await conn.run()
        except* Exception:
            # A connection's failure must never reach the broker's nursery.
            log.exception("connection %s failed", conn.peer)
        finally:
            self._connections.discard(conn)

    def _scram_credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        """The user's SCRAM credential for `mechanism` in the newest metadata."""
        value = self.metadata.image.user_configs.get(user, {}).get(mechanism.mechanism_name)
        return None if value is None else ScramCredential.from_config_value(value)

    async def _close_idle_connections(self) -> None:
        """Close connections that waited `connections.max.idle.ms` for a
        request. One sweep for all of them, a tenth of that apart (at most a
        second): a timer per wait cost each small request a cancel scope."""
        idle_seconds = self.limits.connections_max_idle_ms / 1000
        interval = min(max(idle_seconds / 10, 0.005), 1.0)
        while True:
            await trio.sleep(interval)
            now = trio.current_time()
            for conn in list(self._connections):
                conn.close_if_idle(now)

    async def stop(self) -> None:
        """Graceful stop: no new connections, in-flight requests answered,
        logs flushed and checkpointed."""
        if self.stopping:
            return
        self.stopping = True
        log.info("stopping: no longer accepting connections")
        if self._accept_scope is not None:
            self._accept_scope.cancel()
        # Leaderships move to other brokers first (a cluster's controlled
        # shutdown), so producers and consumers move on at once.
        with trio.move_on_after(_STOP_GRACE_SECONDS):
            try:
                await self.controller.controlled_shutdown()
            except Exception:
                # ZooKeeper unreachable or this broker's session gone: as Kafka,
                # stop anyway (the controller moves leaderships once the
                # session ends); the logs must still be flushed.
                log.warning("controlled shutdown failed; stopping without it", exc_info=True)
        # Parked group requests (a JoinGroup waiting for the join phase) are
        # answered NOT_COORDINATOR now instead of holding the stop up.
        self.groups.shutdown()
        self.txns.shutdown()
        with trio.move_on_after(_STOP_GRACE_SECONDS):
            for conn in list(self._connections):
                conn.stop_when_idle()
            # Long-poll Fetches stop waiting and answer with what they have.
            self.replicas.wake_all()
            while self._connections:
                await trio.sleep(0.01)
        await self.logs.stop_background()
        await trio.to_thread.run_sync(self.logs.close_all)
        await self.controller.close()
        log.info("stopped: logs flushed and checkpointed")
        self._stopped.set()

    # --- this broker as the cluster knows it ---------------------------------------

    def _registration(self) -> BrokerRegistration:
        """Every client listener with the endpoint clients should use for it."""
        endpoints = []
        for name, host, port in self.bound:
            endpoints.append(Endpoint(name, *self._advertised(name, host, port)))
        return BrokerRegistration(self.node_id, tuple(endpoints), self.config.rack)

    def _advertised(self, listener: str, host: str, port: int) -> tuple[str, int]:
        for name, a_host, a_port in self.config.advertised_listeners or ():
            if name == listener:
                return a_host, a_port
        return _client_host(host), port


def _client_host(host: str) -> str:
    # A wildcard bind is not an address a client can dial.
    return "localhost" if host in ("0.0.0.0", "::", "") else host


async def _send_tls_alert(secured: trio.SSLStream, stream: trio.SocketStream) -> None:
    """Send the alert OpenSSL wrote for a failed handshake (certificate
    unknown, ...), as Kafka does: a client then fails at once with the
    reason, where a bare close has it retry. trio.SSLStream leaves the alert
    in its outgoing buffer when the handshake fails."""
    outgoing = getattr(secured, "_outgoing", None)
    alert = outgoing.read() if outgoing is not None else b""
    if not alert:
        return
    with trio.move_on_after(1):
        try:
            await stream.send_all(alert)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
