"""What changed between two metadata images, as the parts of a broker need to know it.

A delta is computed from the previous and the new image, whichever store
made the new one (the single node's local controller, or ZooKeeper watches
in a cluster), so publishers never depend on how a change was made. Unchanged
parts of an image are shared objects, so comparing them is cheap.

`local_changes(node_id)` is Kafka's TopicsDelta.localChanges: for one broker,
the partitions it must now lead, follow or stop hosting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.metadata.image import MetadataImage, PartitionRegistration, TopicImage

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class PartitionChange:
    topic: TopicImage
    index: int
    old: PartitionRegistration | None  # None: a new partition
    new: PartitionRegistration

    @property
    def tp(self) -> TopicPartition:
        return (self.topic.name, self.index)


@dataclass(frozen=True)
class LocalReplicaChanges:
    """One broker's share of a delta."""

    # Partitions it leads in the new image whose registration changed (or are new).
    leaders: list[PartitionChange] = field(default_factory=list)
    # Partitions it follows in the new image whose registration changed (or are new).
    followers: list[PartitionChange] = field(default_factory=list)
    # Replicas it hosted and must drop: (partition, whether its log is deleted).
    # A deleted topic deletes logs; a replica moved off this broker too.
    stopped: list[tuple[TopicPartition, bool]] = field(default_factory=list)


@dataclass(frozen=True)
class MetadataDelta:
    old: MetadataImage
    new: MetadataImage
    created_topics: frozenset[str]
    # Deleted topics as they were in the old image (a name may be re-created
    # in the same delta with a new topic id: it is then in both).
    deleted_topics: tuple[TopicImage, ...]
    changed_partitions: tuple[PartitionChange, ...]
    # Topics (still present) whose configs changed.
    changed_topic_configs: frozenset[str]
    changed_brokers: frozenset[int]
    changed_broker_configs: frozenset[str]

    @classmethod
    def between(cls, old: MetadataImage, new: MetadataImage) -> MetadataDelta:
        created, deleted, partitions, configs = set(), [], [], set()
        for name, topic in new.topics.items():
            before = old.topics.get(name)
            if before is topic:
                continue
            before_parts: Mapping[int, PartitionRegistration]
            if before is None or before.topic_id != topic.topic_id:
                created.add(name)
                if before is not None:
                    deleted.append(before)
                before_parts = {}
            else:
                before_parts = before.partitions
                if before.configs != topic.configs:
                    configs.add(name)
            for index, reg in topic.partitions.items():
                prev = before_parts.get(index)
                if prev != reg:
                    partitions.append(PartitionChange(topic, index, prev, reg))
        for name, topic in old.topics.items():
            if name not in new.topics:
                deleted.append(topic)
        brokers = {
            n
            for n in set(old.brokers) | set(new.brokers)
            if old.brokers.get(n) != new.brokers.get(n)
        }
        broker_configs = {
            r
            for r in set(old.broker_configs) | set(new.broker_configs)
            if old.broker_configs.get(r) != new.broker_configs.get(r)
        }
        return cls(
            old=old,
            new=new,
            created_topics=frozenset(created),
            deleted_topics=tuple(deleted),
            changed_partitions=tuple(partitions),
            changed_topic_configs=frozenset(configs),
            changed_brokers=frozenset(brokers),
            changed_broker_configs=frozenset(broker_configs),
        )

    @property
    def is_empty(self) -> bool:
        return not (
            self.created_topics
            or self.deleted_topics
            or self.changed_partitions
            or self.changed_topic_configs
            or self.changed_brokers
            or self.changed_broker_configs
            or self.old.controller_id != self.new.controller_id
        )

    def local_changes(self, node_id: int) -> LocalReplicaChanges:
        changes = LocalReplicaChanges()
        for topic in self.deleted_topics:
            for index, reg in topic.partitions.items():
                if node_id in reg.replicas:
                    changes.stopped.append(((topic.name, index), True))
        for change in self.changed_partitions:
            if node_id in change.new.replicas:
                if change.new.leader == node_id:
                    changes.leaders.append(change)
                else:
                    changes.followers.append(change)
            elif change.old is not None and node_id in change.old.replicas:
                # Reassigned away from this broker: its copy goes.
                changes.stopped.append((change.tp, True))
        return changes
