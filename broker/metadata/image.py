"""The cluster metadata image: what every broker knows of the cluster, as one value.

An image is immutable. The controller side makes a new one for each change
(sharing every part that did not change), and the broker side holds the
newest and hands each new one, with the delta from the previous, to the parts
that care (`broker.metadata.publisher`). That is how Kafka's brokers follow
the metadata (MetadataImage / MetadataDelta / MetadataPublisher), and it lets
a handler read one consistent view for a whole request.

Mappings inside an image are plain dicts by convention never mutated after the
image is built; `with_*` methods return new images.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener of a broker as clients reach it."""

    listener: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """A broker as the cluster knows it: every listener's endpoint, its rack,
    and whether it is live (a registered broker whose session ended is fenced:
    it leads nothing and clients are not sent to it)."""

    node_id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    fenced: bool = False

    def endpoint(self, listener: str) -> Endpoint | None:
        for e in self.endpoints:
            if e.listener == listener:
                return e
        return None


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """One partition's replica assignment and leadership state.

    `leader_epoch` changes with every leader change; `partition_epoch` with
    every change of any of these fields (Kafka's partition epoch, the version
    an AlterPartition must name)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    # A reassignment in progress (Kafka's RS = TRS + (ORS - TRS)): `replicas`
    # holds old and new; the new ones catch up, then the old ones go.
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    @property
    def reassigning(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """Where a reassignment is going (the replicas when none is)."""
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    def changed(self, **changes) -> PartitionRegistration:
        """This registration with `changes` and the partition epoch bumped;
        the leader epoch too when the leader changes."""
        new = replace(self, **changes)
        leader_epoch = new.leader_epoch
        if new.leader != self.leader and "leader_epoch" not in changes:
            leader_epoch = self.leader_epoch + 1
        return replace(new, leader_epoch=leader_epoch, partition_epoch=self.partition_epoch + 1)


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration]
    configs: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS

    def partition(self, index: int) -> PartitionRegistration | None:
        return self.partitions.get(index)

    @property
    def replication_factor(self) -> int:
        first = self.partitions.get(0) or next(iter(self.partitions.values()), None)
        return len(first.replicas) if first is not None else 0


@dataclass(frozen=True)
class MetadataImage:
    """Everything the cluster agrees on."""

    cluster_id: str
    controller_id: int
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=dict)
    topics: Mapping[str, TopicImage] = field(default_factory=dict)
    # Dynamic broker configs set with AlterConfigs, by resource name: "" for
    # the cluster-wide defaults, str(node id) for one broker's own.
    broker_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # Configs of users by name, as Kafka's ZooKeeper mode kept them
    # (/config/users/<name>): today their SCRAM credentials, one value per
    # mechanism (broker/security/scram.py).
    user_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    # --- reads -----------------------------------------------------------------

    def topic(self, name: str) -> TopicImage | None:
        return self.topics.get(name)

    @cached_property
    def _topics_by_id(self) -> dict[uuid.UUID, TopicImage]:
        return {t.topic_id: t for t in self.topics.values()}

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicImage | None:
        return self._topics_by_id.get(topic_id)

    def partition(self, topic: str, index: int) -> PartitionRegistration | None:
        t = self.topics.get(topic)
        return None if t is None else t.partitions.get(index)

    def live_broker_ids(self) -> list[int]:
        return sorted(n for n, b in self.brokers.items() if not b.fenced)

    def is_live(self, node_id: int) -> bool:
        b = self.brokers.get(node_id)
        return b is not None and not b.fenced

    def broker_config(self, resource: str) -> dict[str, str]:
        return dict(self.broker_configs.get(resource, {}))

    def user_config(self, user: str) -> dict[str, str]:
        return dict(self.user_configs.get(user, {}))

    # --- new images --------------------------------------------------------------

    def with_topic(self, topic: TopicImage) -> MetadataImage:
        return replace(self, topics={**self.topics, topic.name: topic})

    def without_topic(self, name: str) -> MetadataImage:
        return replace(self, topics={n: t for n, t in self.topics.items() if n != name})

    def with_partitions(
        self, name: str, changes: Mapping[int, PartitionRegistration]
    ) -> MetadataImage:
        topic = self.topics[name]
        return self.with_topic(replace(topic, partitions={**topic.partitions, **changes}))

    def without_partitions(self, name: str, indexes: Iterable[int]) -> MetadataImage:
        topic = self.topics[name]
        gone = set(indexes)
        kept = {i: p for i, p in topic.partitions.items() if i not in gone}
        return self.with_topic(replace(topic, partitions=kept))

    def with_topic_configs(self, name: str, configs: Mapping[str, str]) -> MetadataImage:
        return self.with_topic(replace(self.topics[name], configs=dict(configs)))

    def with_broker(self, registration: BrokerRegistration) -> MetadataImage:
        return replace(self, brokers={**self.brokers, registration.node_id: registration})

    def with_broker_configs(self, resource: str, configs: Mapping[str, str]) -> MetadataImage:
        updated = {k: v for k, v in self.broker_configs.items() if k != resource}
        if configs:
            updated[resource] = dict(configs)
        return replace(self, broker_configs=updated)

    def with_user_configs(self, user: str, configs: Mapping[str, str]) -> MetadataImage:
        updated = {k: v for k, v in self.user_configs.items() if k != user}
        if configs:
            updated[user] = dict(configs)
        return replace(self, user_configs=updated)


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
