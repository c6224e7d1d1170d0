"""Cluster metadata: brokers, topics, partition assignments, leaders and epochs.

A single node is a cluster of one: it is its own controller and keeps the
metadata in a local file (`LocalMetadataStore`). Several brokers will share it
through ZooKeeper behind the same `MetadataStore` interface, so nothing above
this module knows which store it runs on.

Every change goes through the store (`apply`), which persists it before the
in-memory image changes, so a crash never leaves the broker believing in a
topic the disk does not know.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


@dataclass
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass
class PartitionInfo:
    index: int
    replicas: list[int]
    leader: int
    leader_epoch: int = 0
    isr: list[int] = field(default_factory=list)
    # Bumped on every change of leader or ISR (Kafka's partition epoch).
    partition_epoch: int = 0


@dataclass
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionInfo]
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


@dataclass
class ClusterImage:
    """Everything the cluster agrees on, as one value."""

    cluster_id: str
    controller_id: int
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    next_producer_id: int = 0
    # Dynamic broker configs set with AlterConfigs, by resource name: "" for
    # the cluster-wide defaults, str(node id) for one broker's own.
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        for t in self.topics.values():
            if t.topic_id == topic_id:
                return t
        return None


def random_uuid() -> uuid.UUID:
    """A random uuid as Kafka's `Uuid.randomUuid` makes them, for topic and
    cluster ids: never one whose base64 starts with "-", which a command line
    (`kafka-storage format -t <id>`, `kafka-topics --topic-id`) would read as
    an option."""
    while True:
        value = uuid.uuid4()
        if not base64.urlsafe_b64encode(value.bytes).startswith(b"-"):
            return value


def new_cluster_id() -> str:
    """Kafka's cluster ids are base64url uuids without padding (22 chars)."""
    return base64.urlsafe_b64encode(random_uuid().bytes).rstrip(b"=").decode()


class MetadataStore(Protocol):
    def load(self) -> ClusterImage | None: ...

    def save(self, image: ClusterImage) -> None: ...


class LocalMetadataStore:
    """The single-node store: one JSON file, replaced atomically on each change."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def load(self) -> ClusterImage | None:
        if not self.path.exists():
            return None
        raw = json.loads(self.path.read_text())
        return ClusterImage(
            cluster_id=raw["cluster_id"],
            controller_id=raw["controller_id"],
            brokers={int(k): BrokerInfo(**v) for k, v in raw["brokers"].items()},
            topics={
                name: TopicInfo(
                    name=name,
                    topic_id=uuid.UUID(t["topic_id"]),
                    partitions={int(i): PartitionInfo(**p) for i, p in t["partitions"].items()},
                    configs=t["configs"],
                )
                for name, t in raw["topics"].items()
            },
            next_producer_id=raw.get("next_producer_id", 0),
            broker_configs={k: dict(v) for k, v in raw.get("broker_configs", {}).items()},
        )

    def save(self, image: ClusterImage) -> None:
        raw = {
            "cluster_id": image.cluster_id,
            "controller_id": image.controller_id,
            "brokers": {str(k): asdict(v) for k, v in image.brokers.items()},
            "topics": {
                name: {
                    "topic_id": str(t.topic_id),
                    "partitions": {str(i): asdict(p) for i, p in t.partitions.items()},
                    "configs": t.configs,
                }
                for name, t in image.topics.items()
            },
            "next_producer_id": image.next_producer_id,
            "broker_configs": {k: v for k, v in image.broker_configs.items() if v},
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


class TopicExists(Exception):
    pass


class UnknownTopic(Exception):
    pass


class ClusterMetadata:
    """The broker's view of the cluster, changed only through its methods."""

    # Producer ids are handed out in blocks, persisted before use, so a
    # restart never reuses an id.
    PRODUCER_ID_BLOCK = 1000

    def __init__(self, store: MetadataStore, node_id: int, cluster_id: str | None = None):
        self.store = store
        self.node_id = node_id
        image = store.load()
        if image is None:
            image = ClusterImage(cluster_id=cluster_id or new_cluster_id(), controller_id=node_id)
            store.save(image)
        self.image = image
        self._producer_ids = range(0)

    # --- reads ------------------------------------------------------------

    @property
    def cluster_id(self) -> str:
        return self.image.cluster_id

    @property
    def controller_id(self) -> int:
        return self.image.controller_id

    @property
    def brokers(self) -> dict[int, BrokerInfo]:
        return self.image.brokers

    @property
    def topics(self) -> dict[str, TopicInfo]:
        return self.image.topics

    def topic(self, name: str) -> TopicInfo | None:
        return self.image.topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self.image.topic_by_id(topic_id)

    def live_broker_ids(self) -> list[int]:
        return sorted(self.image.brokers)

    # --- changes ----------------------------------------------------------

    def _commit(self) -> None:
        self.store.save(self.image)

    def register_broker(self, info: BrokerInfo) -> None:
        if self.image.brokers.get(info.node_id) != info:
            self.image.brokers[info.node_id] = info
            self._commit()

    def rejoin(self) -> None:
        """This node starts again: lead its partitions under new leader epochs.

        A single node is its own controller, so it does what a KRaft
        controller does when a partition's only replica comes back: the
        previous incarnation is fenced (no leader, epoch + 1) and the new one
        elected (epoch + 1). Apache Kafka 4.3 shows the same two epochs per
        restart, clean or after kill -9. New epochs let clients and, later,
        followers tell the data of one incarnation from the next
        (OffsetForLeaderEpoch, FENCED_LEADER_EPOCH on a stale fetch).
        """
        led = [
            p
            for topic in self.image.topics.values()
            for p in topic.partitions.values()
            if p.leader == self.node_id
        ]
        for p in led:
            p.leader_epoch += 2
            p.partition_epoch += 2
        if led:
            self._commit()

    def create_topic(
        self,
        name: str,
        assignments: dict[int, list[int]],
        configs: dict[str, str] | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> TopicInfo:
        if name in self.image.topics:
            raise TopicExists(name)
        topic = TopicInfo(
            name=name,
            topic_id=topic_id or random_uuid(),
            partitions={
                i: PartitionInfo(index=i, replicas=list(r), leader=r[0], isr=list(r))
                for i, r in assignments.items()
            },
            configs=dict(configs or {}),
        )
        self.image.topics[name] = topic
        self._commit()
        return topic

    def delete_topic(self, name: str) -> TopicInfo:
        topic = self.image.topics.pop(name, None)
        if topic is None:
            raise UnknownTopic(name)
        self._commit()
        return topic

    def add_partitions(self, name: str, assignments: dict[int, list[int]]) -> TopicInfo:
        topic = self.image.topics.get(name)
        if topic is None:
            raise UnknownTopic(name)
        for i, r in assignments.items():
            topic.partitions[i] = PartitionInfo(index=i, replicas=list(r), leader=r[0], isr=list(r))
        self._commit()
        return topic

    def remove_partitions(self, name: str, indexes: list[int]) -> None:
        """Undo add_partitions (their logs could not be made)."""
        topic = self.image.topics.get(name)
        if topic is None:
            raise UnknownTopic(name)
        for i in indexes:
            topic.partitions.pop(i, None)
        self._commit()

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        topic = self.image.topics.get(name)
        if topic is None:
            raise UnknownTopic(name)
        topic.configs = dict(configs)
        self._commit()

    def broker_configs(self, resource: str) -> dict[str, str]:
        """The dynamic broker configs of `resource` ("" cluster defaults, or a node id)."""
        return dict(self.image.broker_configs.get(resource, {}))

    def set_broker_configs(self, resource: str, configs: dict[str, str]) -> None:
        """Replace the dynamic broker configs of `resource` ("" or a node id)."""
        if configs:
            self.image.broker_configs[resource] = dict(configs)
        else:
            self.image.broker_configs.pop(resource, None)
        self._commit()

    def next_producer_id(self) -> int:
        if not self._producer_ids:
            start = self.image.next_producer_id
            self.image.next_producer_id = start + self.PRODUCER_ID_BLOCK
            self._commit()
            self._producer_ids = range(start, start + self.PRODUCER_ID_BLOCK)
        pid = self._producer_ids[0]
        self._producer_ids = self._producer_ids[1:]
        return pid
