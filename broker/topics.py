"""Creating, deleting and growing topics, with Kafka's validation and error codes.

Shared by CreateTopics, DeleteTopics, CreatePartitions and Metadata's
auto-creation, so every path checks the same rules and reports the same
errors. A failure is a `TopicError(code, message)`; the handlers put both into
their per-topic results.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from broker.cluster import INTERNAL_TOPICS, TopicExists, TopicInfo, UnknownTopic
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.server import Broker

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")


class TopicError(Exception):
    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def validate_topic_name(name: str | None) -> None:
    """Kafka's Topic.validate: raise INVALID_TOPIC_EXCEPTION with its messages."""
    if not name:
        raise TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty"
        )
    if name in (".", ".."):
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, "
            f"topic name: {name}",
        )
    if not _LEGAL_NAME.fullmatch(name):
        raise TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'",
        )


def _collision_form(name: str) -> str:
    # '.' and '_' collide in metric names, so Kafka refuses topics that differ only there.
    return name.replace(".", "_")


class TopicManager:
    def __init__(self, broker: Broker):
        self.broker = broker

    @property
    def cluster(self):
        return self.broker.cluster

    def check_create(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        assignments: dict[int, list[int]] | None,
        configs: dict[str, str],
    ) -> dict[int, list[int]]:
        """Validate a creation; the replica assignment it would use."""
        validate_topic_name(name)
        if name in self.cluster.topics:
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        form = _collision_form(name)
        for existing in self.cluster.topics:
            if _collision_form(existing) == form:
                raise TopicError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    f"Topic '{name}' collides with existing topic: {existing}",
                )
        config = self.broker.config
        if assignments:
            if num_partitions != -1 or replication_factor != -1:
                raise TopicError(
                    ErrorCode.INVALID_REQUEST,
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time.",
                )
            live = set(self.cluster.live_broker_ids())
            for index, replicas in assignments.items():
                if not replicas or len(set(replicas)) != len(replicas):
                    raise TopicError(
                        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"Duplicate or empty replica assignment for partition {index}",
                    )
                if not set(replicas) <= live:
                    raise TopicError(
                        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"Replica assignment for partition {index} names unknown brokers",
                    )
            if sorted(assignments) != list(range(len(assignments))):
                raise TopicError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    "Partitions should be a consecutive 0-based integer sequence",
                )
        else:
            if num_partitions == -1:
                num_partitions = config.num_partitions
            if replication_factor == -1:
                replication_factor = config.default_replication_factor
            if num_partitions <= 0:
                raise TopicError(
                    ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."
                )
            if replication_factor <= 0:
                raise TopicError(
                    ErrorCode.INVALID_REPLICATION_FACTOR,
                    "Replication factor must be larger than 0.",
                )
            assignments = self.assign(num_partitions, replication_factor)
        self.broker.validate_topic_configs(configs)
        return assignments

    def assign(self, num_partitions: int, replication_factor: int, start: int = 0):
        """Round-robin replica placement over the live brokers."""
        brokers = self.cluster.live_broker_ids()
        if replication_factor > len(brokers):
            raise TopicError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {replication_factor} time(s): "
                f"The target replication factor of {replication_factor} cannot be reached "
                f"because only {len(brokers)} broker(s) are registered.",
            )
        return {
            p: [brokers[(p + r) % len(brokers)] for r in range(replication_factor)]
            for p in range(start, start + num_partitions)
        }

    def create(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        assignments: dict[int, list[int]] | None = None,
        configs: dict[str, str] | None = None,
    ) -> TopicInfo:
        configs = dict(configs or {})
        assignments = self.check_create(
            name, num_partitions, replication_factor, assignments, configs
        )
        try:
            topic = self.cluster.create_topic(name, assignments, configs)
        except TopicExists:
            raise TopicError(
                ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
            ) from None
        self.broker.replicas.topic_created(topic)
        return topic

    def delete(self, name: str) -> TopicInfo:
        if name in INTERNAL_TOPICS:
            raise TopicError(
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"Topic {name} is an internal topic and cannot be deleted",
            )
        if not self.broker.config.delete_topic_enable:
            raise TopicError(ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.")
        try:
            topic = self.cluster.delete_topic(name)
        except UnknownTopic:
            raise TopicError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "This server does not host this topic-partition.",
            ) from None
        self.broker.replicas.topic_deleted(topic)
        return topic

    def check_add_partitions(
        self, name: str, count: int, assignments: list[list[int]] | None
    ) -> dict[int, list[int]]:
        topic = self.cluster.topic(name)
        if topic is None:
            raise TopicError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "This server does not host this topic-partition.",
            )
        current = len(topic.partitions)
        if count < current:
            raise TopicError(
                ErrorCode.INVALID_PARTITIONS,
                f"Topic currently has {current} partitions, which is higher than the requested {count}.",
            )
        if count == current:
            raise TopicError(
                ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions."
            )
        rf = len(topic.partitions[0].replicas) if topic.partitions else 1
        if assignments:
            if len(assignments) != count - current:
                raise TopicError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Increasing the number of partitions by {count - current} but "
                    f"{len(assignments)} assignments provided.",
                )
            live = set(self.cluster.live_broker_ids())
            for replicas in assignments:
                if not set(replicas) <= live or len(set(replicas)) != len(replicas):
                    raise TopicError(
                        ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Invalid replica assignment"
                    )
            return {current + i: list(r) for i, r in enumerate(assignments)}
        return self.assign(count - current, rf, start=current)

    def add_partitions(self, name: str, count: int, assignments=None) -> TopicInfo:
        new = self.check_add_partitions(name, count, assignments)
        topic = self.cluster.add_partitions(name, new)
        self.broker.replicas.topic_created(topic)
        return topic
