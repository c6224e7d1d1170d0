"""Several Gregor brokers in one process, sharing one in-memory controller.

The controller is a real implementation of the Controller interface
(broker/controller/api.py) for many brokers: it holds the cluster's image,
applies Kafka's election rules (broker/controller/elections.py) when a test
fences or unfences a broker, and publishes every new image to each live
broker's MetadataCache. The brokers are real (`Broker`, listeners on
loopback port 0, followers fetching from leaders over TCP); only the
controller's storage is memory, so replication can be driven and observed
step by step. Process-level clusters coordinate through ZooKeeper instead.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping

import trio

from broker.config import BrokerConfig
from broker.controller import elections
from broker.controller.api import ControllerError, ProducerIdBlock
from broker.metadata.image import BrokerRegistration, MetadataImage, TopicImage, random_uuid
from broker.metadata.publisher import MetadataCache
from broker.server import Broker
from wire.error_codes import ErrorCode


class SharedController:
    def __init__(self):
        self.image = MetadataImage("in-process-cluster-id", 1)
        self.caches: dict[int, MetadataCache] = {}
        self._lock = trio.Lock()
        self._next_producer_id = 0

    def backend(self, cache: MetadataCache, config: BrokerConfig) -> MemberBackend:
        return MemberBackend(self, cache, config.node_id)

    async def commit(self, image: MetadataImage) -> None:
        self.image = image
        for cache in list(self.caches.values()):
            await cache.publish(image)

    async def change_partitions(self, changes) -> None:
        image = self.image
        for (topic, index), reg in changes.items():
            image = image.with_partitions(topic, {index: reg})
        await self.commit(image)

    async def fence(self, node_id: int) -> None:
        """`node_id`'s session ended: it stops receiving metadata, others elect."""
        async with self._lock:
            self.caches.pop(node_id, None)
            reg = self.image.brokers[node_id]
            fenced = self.image.with_broker(
                BrokerRegistration(reg.node_id, reg.endpoints, reg.rack, fenced=True)
            )
            self.image = fenced
            await self.change_partitions(elections.broker_fenced(fenced, node_id, lambda t: False))


class MemberBackend:
    """One broker's view of the shared controller (a MetadataBackend)."""

    def __init__(self, shared: SharedController, cache: MetadataCache, node_id: int):
        self.shared = shared
        self.cache = cache
        self.node_id = node_id

    async def start(self, registration: BrokerRegistration, nursery) -> None:
        shared = self.shared
        async with shared._lock:
            shared.caches[self.node_id] = self.cache
            await self.cache.publish(shared.image)
            image = shared.image.with_broker(registration)
            shared.image = image
            changes = elections.broker_unfenced(image, self.node_id, lambda t: False)
            await shared.change_partitions(changes)

    async def close(self) -> None:
        self.shared.caches.pop(self.node_id, None)

    async def controlled_shutdown(self) -> None:
        async with self.shared._lock:
            await self.shared.change_partitions(
                elections.controlled_shutdown(self.shared.image, self.node_id)
            )

    async def register_broker(self, registration: BrokerRegistration) -> None:
        async with self.shared._lock:
            await self.shared.commit(self.shared.image.with_broker(registration))

    async def create_topic(self, name, assignments: Mapping[int, list[int]], configs) -> TopicImage:
        async with self.shared._lock:
            image = self.shared.image
            if name in image.topics:
                raise ControllerError(ErrorCode.TOPIC_ALREADY_EXISTS)
            topic = TopicImage(
                name,
                random_uuid(),
                {i: elections.new_partition(list(r), image) for i, r in assignments.items()},
                dict(configs),
            )
            await self.shared.commit(image.with_topic(topic))
            return topic

    async def delete_topic(self, name: str) -> TopicImage:
        async with self.shared._lock:
            topic = self.shared.image.topics.get(name)
            if topic is None:
                raise ControllerError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            await self.shared.commit(self.shared.image.without_topic(name))
            return topic

    async def create_partitions(self, name, assignments) -> TopicImage:
        async with self.shared._lock:
            image = self.shared.image
            new = {i: elections.new_partition(list(r), image) for i, r in assignments.items()}
            image = image.with_partitions(name, new)
            await self.shared.commit(image)
            return image.topics[name]

    async def alter_topic_configs(self, name, configs) -> None:
        async with self.shared._lock:
            await self.shared.commit(self.shared.image.with_topic_configs(name, configs))

    async def alter_broker_configs(self, resource, configs) -> None:
        async with self.shared._lock:
            await self.shared.commit(self.shared.image.with_broker_configs(resource, configs))

    async def alter_partition(self, tp, leader_id, leader_epoch, partition_epoch, isr):
        async with self.shared._lock:
            current = self.shared.image.partition(*tp)
            if current is None:
                raise ControllerError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            if leader_id != current.leader or leader_epoch != current.leader_epoch:
                raise ControllerError(ErrorCode.FENCED_LEADER_EPOCH)
            if partition_epoch != current.partition_epoch:
                raise ControllerError(ErrorCode.INVALID_UPDATE_VERSION)
            changed = current.changed(isr=tuple(isr))
            await self.shared.change_partitions({tp: changed})
            return changed

    async def elect_leaders(self, tps, election_type):
        async with self.shared._lock:
            changes, answers = elections.requested_elections(self.shared.image, tps, election_type)
            await self.shared.change_partitions(changes)
            return answers

    async def alter_partition_reassignments(self, moves):
        async with self.shared._lock:
            image = self.shared.image
            changes = {}
            for tp, target in moves.items():
                reg = image.partition(*tp)
                changes[tp] = (
                    elections.cancel_reassignment(reg, image)
                    if target is None
                    else elections.reassign(reg, target)
                )
            await self.shared.change_partitions(changes)
            return {tp: (ErrorCode.NONE, None) for tp in moves}

    async def finish_reassignments(self) -> None:
        """The controller's duty, on demand: settle reassignments now in sync."""
        async with self.shared._lock:
            await self.shared.change_partitions(elections.finished_reassignments(self.shared.image))

    async def allocate_producer_ids(self, broker_id: int) -> ProducerIdBlock:
        async with self.shared._lock:
            block = ProducerIdBlock(broker_id, self.shared._next_producer_id, 1000)
            self.shared._next_producer_id = block.next_after
            return block


class Cluster:
    """Brokers 1..n of one process; each runs in the test's nursery."""

    def __init__(self, tmp_path, n: int = 3, overrides: dict | None = None):
        self.tmp_path = tmp_path
        self.n = n
        self.overrides = dict(overrides or {})
        self.controller = SharedController()
        self.brokers: dict[int, Broker] = {}
        self._scopes: dict[int, trio.CancelScope] = {}

    def config(self, node_id: int) -> BrokerConfig:
        return BrokerConfig(
            {
                "listeners": "PLAINTEXT://127.0.0.1:0",
                "log.dirs": str(self.tmp_path / f"broker-{node_id}"),
                "node.id": node_id,
                "replica.fetch.wait.max.ms": 100,
                "replica.fetch.backoff.ms": 50,
                **self.overrides,
            }
        )

    async def start(self, nursery: trio.Nursery, node_id: int) -> Broker:
        broker = Broker(self.config(node_id), self.controller.backend)
        scope = trio.CancelScope()

        async def run(task_status=trio.TASK_STATUS_IGNORED):
            with scope:
                await broker.serve(task_status=task_status)

        await nursery.start(run)
        self.brokers[node_id] = broker
        self._scopes[node_id] = scope
        return broker

    async def start_all(self, nursery: trio.Nursery) -> None:
        for node_id in range(1, self.n + 1):
            await self.start(nursery, node_id)

    async def kill(self, node_id: int) -> None:
        """Like kill -9: the broker's tasks end where they are, nothing is flushed
        or handed over, and nothing more leaves its sockets (a task already
        woken would otherwise run on to its next checkpoint, and an answer it
        writes straight to the socket would still go out); the controller
        notices its session end."""
        broker = self.brokers.pop(node_id)
        for conn in list(broker._connections):
            if isinstance(conn.stream, trio.SocketStream):
                try:
                    conn.stream.socket.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # already gone
        self._scopes.pop(node_id).cancel()
        await self.controller.fence(node_id)

    async def isolate(self, node_id: int) -> None:
        """Like a network cut: the broker runs on, but the controller fences it
        and it hears of no metadata change until heal()."""
        await self.controller.fence(node_id)

    async def heal(self, nursery: trio.Nursery, node_id: int) -> None:
        """The isolated broker registers again (a new session) and gets the current image."""
        broker = self.brokers[node_id]
        await broker.controller.start(broker._registration(), nursery)

    async def stop_all(self) -> None:
        for node_id in list(self.brokers):
            await self.brokers[node_id].stop()
