"""The embedded single node's controller: the metadata in one file under the first log dir.

A single node is a cluster of one and its own controller. Each change makes
a new image, writes it to `gregor-cluster-metadata.json` (atomically, with
fsync, in a worker thread) and only then publishes it to the broker's
`MetadataCache`, so the broker never acts on a change the disk does not hold.
Changes are serialized: one at a time, each checked against the image it
changes.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import trio

from broker.controller import elections
from broker.controller.api import (
    ControllerError,
    ProducerIdBlock,
    TopicPartition,
    apply_config_changes,
)
from broker.metadata.image import (
    BrokerRegistration,
    Endpoint,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    new_cluster_id,
    random_uuid,
)
from broker.metadata.publisher import MetadataCache
from wire.error_codes import ErrorCode

log = logging.getLogger("gregor.controller")

METADATA_FILE = "gregor-cluster-metadata.json"


class LocalMetadataStore:
    """The image and the producer id high-water mark, as one JSON file."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def load(self) -> tuple[MetadataImage, int] | None:
        if not self.path.exists():
            return None
        raw = json.loads(self.path.read_text())
        brokers = {int(k): _broker_from_json(int(k), v) for k, v in raw["brokers"].items()}
        topics = {
            name: TopicImage(
                name=name,
                topic_id=uuid.UUID(t["topic_id"]),
                partitions={int(i): _partition_from_json(p) for i, p in t["partitions"].items()},
                configs=dict(t["configs"]),
            )
            for name, t in raw["topics"].items()
        }
        image = MetadataImage(
            cluster_id=raw["cluster_id"],
            controller_id=raw["controller_id"],
            brokers=brokers,
            topics=topics,
            broker_configs={k: dict(v) for k, v in raw.get("broker_configs", {}).items()},
            user_configs={k: dict(v) for k, v in raw.get("user_configs", {}).items()},
        )
        return image, raw.get("next_producer_id", 0)

    def load_or_create(self, node_id: int, cluster_id: str | None) -> tuple[MetadataImage, int]:
        """Blocking: the stored image and next unused producer id, or a new
        cluster's (`cluster_id`, else a generated one), saved first."""
        loaded = self.load()
        if loaded is not None:
            return loaded
        image = MetadataImage(cluster_id=cluster_id or new_cluster_id(), controller_id=node_id)
        self.save(image, 0)
        return image, 0

    def save(self, image: MetadataImage, next_producer_id: int) -> None:
        """Blocking: replace the file atomically and durably."""
        raw = {
            "cluster_id": image.cluster_id,
            "controller_id": image.controller_id,
            "brokers": {str(k): _broker_to_json(v) for k, v in image.brokers.items()},
            "topics": {
                name: {
                    "topic_id": str(t.topic_id),
                    "partitions": {str(i): _partition_to_json(p) for i, p in t.partitions.items()},
                    "configs": dict(t.configs),
                }
                for name, t in image.topics.items()
            },
            "next_producer_id": next_producer_id,
            "broker_configs": {k: dict(v) for k, v in image.broker_configs.items() if v},
            "user_configs": {k: dict(v) for k, v in image.user_configs.items() if v},
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(raw, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _broker_to_json(b: BrokerRegistration) -> dict:
    return {
        "node_id": b.node_id,
        "rack": b.rack,
        "endpoints": [
            {
                "listener": e.listener,
                "host": e.host,
                "port": e.port,
                "protocol": e.security_protocol,
            }
            for e in b.endpoints
        ],
    }


def _broker_from_json(node_id: int, raw: dict) -> BrokerRegistration:
    if "endpoints" in raw:
        endpoints = tuple(
            Endpoint(e["listener"], e["host"], e["port"], e.get("protocol", "PLAINTEXT"))
            for e in raw["endpoints"]
        )
    else:  # written before brokers registered every listener: one endpoint
        endpoints = (Endpoint("PLAINTEXT", raw["host"], raw["port"]),)
    return BrokerRegistration(node_id, endpoints, raw.get("rack"))


def _partition_to_json(p: PartitionRegistration) -> dict:
    return {
        "replicas": list(p.replicas),
        "isr": list(p.isr),
        "leader": p.leader,
        "leader_epoch": p.leader_epoch,
        "partition_epoch": p.partition_epoch,
    }


def _partition_from_json(raw: dict) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=tuple(raw["replicas"]),
        isr=tuple(raw.get("isr") or raw["replicas"]),
        leader=raw["leader"],
        leader_epoch=raw.get("leader_epoch", 0),
        partition_epoch=raw.get("partition_epoch", 0),
    )


def _new_partition(replicas: list[int]) -> PartitionRegistration:
    return PartitionRegistration(replicas=tuple(replicas), isr=tuple(replicas), leader=replicas[0])


class LocalController:
    """Implements `broker.controller.api.Controller` for one node."""

    # Producer ids go out in blocks, each persisted before use, so a restart
    # never hands out an id twice.
    PRODUCER_ID_BLOCK = 1000

    def __init__(
        self,
        store: LocalMetadataStore,
        cache: MetadataCache,
        node_id: int,
        cluster_id: str | None = None,
    ):
        """`cluster_id`: the id a new cluster's metadata gets (gregor.cluster.id;
        None: generated); stored metadata keeps the id it has."""
        self.store = store
        self.cache = cache
        self.node_id = node_id
        self.cluster_id = cluster_id
        self._lock = trio.Lock()
        self._image = cache.image
        self._next_producer_id = 0

    def _load(self) -> tuple[MetadataImage, int]:
        """Blocking: the stored image (a new cluster's when there is none)
        and the next unused producer id."""
        return self.store.load_or_create(self.node_id, self.cluster_id)

    async def start(self, registration: BrokerRegistration, nursery=None) -> None:
        """This node starts: its stored metadata, led under new leader epochs,
        becomes the broker's first image, and the node registers its listeners.

        A single node is its own controller, so it does what a KRaft
        controller does when a partition's only replica comes back: the
        previous incarnation is fenced (no leader, epoch + 1) and the new one
        elected (epoch + 1). Apache Kafka 4.3 shows the same two epochs per
        restart, clean or after kill -9, and they let clients (and followers)
        tell the data of one incarnation from the next."""
        image, next_producer_id = await trio.to_thread.run_sync(self._load)
        async with self._lock:
            self._next_producer_id = next_producer_id
            topics = {}
            for name, topic in image.topics.items():
                led = {
                    i: PartitionRegistration(
                        p.replicas,
                        p.isr,
                        p.leader,
                        p.leader_epoch + 2,
                        p.partition_epoch + 2,
                    )
                    for i, p in topic.partitions.items()
                    if p.leader == self.node_id
                }
                topics[name] = (
                    TopicImage(name, topic.topic_id, {**topic.partitions, **led}, topic.configs)
                    if led
                    else topic
                )
            restarted = replace(image, topics=topics)
            if restarted.topics != image.topics:
                await self._save(restarted)
            self._image = restarted
            await self.cache.publish(restarted)
        await self.register_broker(registration)

    async def controlled_shutdown(self) -> None:
        """Nothing to hand over: a single node leads everything it hosts."""

    async def close(self) -> None:
        """Nothing to release: every change is already on disk."""

    async def _commit(self, image: MetadataImage) -> None:
        await self._save(image)
        self._image = image
        await self.cache.publish(image)

    async def _save(self, image: MetadataImage) -> None:
        await trio.to_thread.run_sync(self.store.save, image, self._next_producer_id)

    # --- changes -----------------------------------------------------------------

    async def register_broker(self, registration: BrokerRegistration) -> None:
        async with self._lock:
            if self._image.brokers.get(registration.node_id) != registration:
                await self._commit(self._image.with_broker(registration))

    async def create_topic(
        self,
        name: str,
        assignments: Mapping[int, list[int]],
        configs: Mapping[str, str],
        topic_id: uuid.UUID | None = None,
    ) -> TopicImage:
        async with self._lock:
            if name in self._image.topics:
                raise ControllerError(
                    ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
                )
            topic = TopicImage(
                name=name,
                topic_id=topic_id or random_uuid(),
                partitions={i: _new_partition(list(r)) for i, r in assignments.items()},
                configs=dict(configs),
            )
            await self._commit(self._image.with_topic(topic))
            return topic

    async def delete_topic(self, name: str) -> TopicImage:
        async with self._lock:
            topic = self._image.topics.get(name)
            if topic is None:
                raise ControllerError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "This server does not host this topic-partition.",
                )
            await self._commit(self._image.without_topic(name))
            return topic

    async def create_partitions(
        self, name: str, assignments: Mapping[int, list[int]]
    ) -> TopicImage:
        async with self._lock:
            if name not in self._image.topics:
                raise ControllerError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            new = {i: _new_partition(list(r)) for i, r in assignments.items()}
            image = self._image.with_partitions(name, new)
            await self._commit(image)
            return image.topics[name]

    async def remove_partitions(self, name: str, indexes: list[int]) -> None:
        """Undo create_partitions whose logs could not be made."""
        async with self._lock:
            if name in self._image.topics:
                await self._commit(self._image.without_partitions(name, indexes))

    async def alter_topic_configs(self, name: str, configs: Mapping[str, str]) -> None:
        async with self._lock:
            if name not in self._image.topics:
                raise ControllerError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            await self._commit(self._image.with_topic_configs(name, configs))

    async def alter_broker_configs(self, resource: str, configs: Mapping[str, str]) -> None:
        async with self._lock:
            await self._commit(self._image.with_broker_configs(resource, configs))

    async def alter_user_configs(self, changes: Mapping[str, Mapping[str, str | None]]) -> None:
        async with self._lock:
            image = self._image
            for user, change in changes.items():
                image = image.with_user_configs(
                    user, apply_config_changes(image.user_config(user), change)
                )
            await self._commit(image)

    async def alter_partition(
        self,
        tp: TopicPartition,
        leader_id: int,
        leader_epoch: int,
        partition_epoch: int,
        isr: list[int],
    ) -> PartitionRegistration:
        async with self._lock:
            current = self._image.partition(*tp)
            if current is None:
                raise ControllerError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            if leader_id != current.leader or leader_epoch != current.leader_epoch:
                raise ControllerError(ErrorCode.FENCED_LEADER_EPOCH)
            if partition_epoch != current.partition_epoch:
                raise ControllerError(ErrorCode.INVALID_UPDATE_VERSION)
            if not isr or any(r not in current.replicas or not self._image.is_live(r) for r in isr):
                raise ControllerError(ErrorCode.INELIGIBLE_REPLICA)
            if leader_id not in isr:
                raise ControllerError(ErrorCode.INVALID_REQUEST)
            changed = current.changed(isr=tuple(isr))
            await self._commit(self._image.with_partitions(tp[0], {tp[1]: changed}))
            return changed

    async def elect_leaders(self, tps, election_type: int):
        async with self._lock:
            changes, answers = elections.requested_elections(self._image, tps, election_type)
            if changes:
                image = self._image
                for (topic, index), reg in changes.items():
                    image = image.with_partitions(topic, {index: reg})
                await self._commit(image)
            return answers

    async def alter_partition_reassignments(self, moves):
        """One node: every valid target is the node itself, so nothing moves."""
        return {tp: (ErrorCode.NONE, None) for tp in moves}

    async def allocate_producer_ids(self, broker_id: int) -> ProducerIdBlock:
        async with self._lock:
            block = ProducerIdBlock(broker_id, self._next_producer_id, self.PRODUCER_ID_BLOCK)
            self._next_producer_id = block.next_after
            await self._save(self._image)
            return block
