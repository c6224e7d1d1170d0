"""Creating, deleting and growing topics, with Kafka's validation and error codes.

Shared by CreateTopics, DeleteTopics, CreatePartitions, Metadata's
auto-creation and the coordinators' internal topics, so every path checks
the same rules and reports the same errors. A failure is a
`TopicError(code, message)`; the handlers put both into their per-topic
results.

This is the admin side (Kafka's ZooKeeper-era AdminManager): it validates a
change against the current metadata image, places the replicas, and asks the
controller to make the change. Opening and deleting logs, and groups
forgetting a deleted topic's offsets, follow from the metadata change itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from broker.config import BrokerConfig, ConfigError
from broker.controller.api import Controller, ControllerError
from broker.metadata.image import INTERNAL_TOPICS, TopicImage
from broker.metadata.publisher import MetadataCache
from broker.replica_placement import PlacementError, assign_replicas
from broker.topic_configs import EffectiveTopicConfigs
from wire.error_codes import ErrorCode

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")


class TopicError(Exception):
    def __init__(self, code: ErrorCode, message: str | None):
        super().__init__(message)
        self.code = code
        self.message = message


def validate_topic_name(name: str | None) -> None:
    """Kafka's Topic.validate: raise INVALID_TOPIC_EXCEPTION with its (4.3) messages."""
    if not name:
        raise TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            "Topic name is invalid: the empty string is not allowed",
        )
    if name in (".", ".."):
        raise TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: '{name}' is not allowed"
        )
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name is invalid: the length of '{name}' is longer than the max allowed "
            f"length {MAX_TOPIC_NAME_LENGTH}",
        )
    if not _LEGAL_NAME.fullmatch(name):
        raise TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name is invalid: '{name}' contains one or more characters other than "
            "ASCII alphanumerics, '.', '_' and '-'",
        )


def _collision_form(name: str) -> str:
    # '.' and '_' collide in metric names, so Kafka refuses topics that differ only there.
    return name.replace(".", "_")


class TopicManager:
    def __init__(
        self,
        metadata: MetadataCache,
        controller: Controller,
        topic_configs: EffectiveTopicConfigs,
        broker_config: BrokerConfig,
    ):
        self.metadata = metadata
        self.controller = controller
        self.topic_configs = topic_configs
        self.config = broker_config

    def validate_topic_configs(self, configs: Mapping[str, str]) -> None:
        """Raise TopicError(INVALID_CONFIG) naming the bad key, as CreateTopics does."""
        try:
            self.topic_configs.validate(dict(configs))
        except ConfigError as e:
            raise TopicError(ErrorCode.INVALID_CONFIG, str(e)) from None

    def check_create(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        assignments: dict[int, list[int]] | list[tuple[int, list[int]]] | None,
        configs: Mapping[str, str | None],
    ) -> dict[int, list[int]]:
        """Validate a creation; the replica assignment it would use.

        Kafka's order (ReplicationControlManager.createTopics): the name, then
        the configs, then the partitions and replicas. `assignments` is a dict
        or (partition, replicas) pairs as a request carries them."""
        validate_topic_name(name)
        image = self.metadata.image
        if name in image.topics:
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        form = _collision_form(name)
        for existing in image.topics:
            if _collision_form(existing) == form:
                raise TopicError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    f"Topic '{name}' collides with existing topic: {existing}",
                )
        nulls = [k for k, v in configs.items() if v is None]
        if nulls:
            raise TopicError(
                ErrorCode.INVALID_CONFIG,
                "Null value not supported for topic configs: " + ",".join(nulls),
            )
        self.validate_topic_configs({k: v for k, v in configs.items() if v is not None})
        config = self.config
        pairs = list(assignments.items() if isinstance(assignments, dict) else assignments or ())
        if pairs:
            if replication_factor != -1:
                raise TopicError(
                    ErrorCode.INVALID_REQUEST,
                    "A manual partition assignment was specified, but replication "
                    "factor was not set to -1.",
                )
            if num_partitions != -1:
                raise TopicError(
                    ErrorCode.INVALID_REQUEST,
                    "A manual partition assignment was specified, but numPartitions "
                    "was not set to -1.",
                )
            result: dict[int, list[int]] = {}
            rf = None
            for index, replicas in pairs:
                if index in result:
                    raise TopicError(
                        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"Found multiple manual partition assignments for partition {index}",
                    )
                self._check_manual_assignment(replicas, rf)
                rf = len(replicas)
                result[index] = list(replicas)
            if any(i not in result for i in range(len(result))):
                raise TopicError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    "partitions should be a consecutive 0-based integer sequence",
                )
            return result
        if replication_factor < -1 or replication_factor == 0:
            raise TopicError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if num_partitions < -1 or num_partitions == 0:
            raise TopicError(
                ErrorCode.INVALID_PARTITIONS,
                "Number of partitions was set to an invalid non-positive value.",
            )
        if num_partitions == -1:
            num_partitions = config.num_partitions
        if replication_factor == -1:
            replication_factor = config.default_replication_factor
        return self.assign(num_partitions, replication_factor)

    def _check_manual_assignment(self, replicas: list[int], replication_factor: int | None):
        """Kafka's validateManualPartitionAssignment, with its messages."""
        if not replicas:
            raise TopicError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        registered = set(self.metadata.image.brokers)
        previous = None
        for broker_id in sorted(replicas):
            if broker_id not in registered:
                raise TopicError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {broker_id}, but no such "
                    "broker is registered.",
                )
            if broker_id == previous:
                raise TopicError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {previous} more than "
                    "once.",
                )
            previous = broker_id
        if replication_factor is not None and len(replicas) != replication_factor:
            raise TopicError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes a partition with {len(replicas)} "
                "replica(s), but this is not consistent with previous partitions, which have "
                f"{replication_factor} replica(s).",
            )

    def assign(self, num_partitions: int, replication_factor: int, start: int = 0):
        """Kafka's replica placement over the live brokers (broker/replica_placement.py):
        round robin from a random start, rack-aware when brokers have racks."""
        image = self.metadata.image
        brokers = image.live_broker_ids()
        if replication_factor > len(brokers):
            raise TopicError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {replication_factor} time(s): "
                f"The target replication factor of {replication_factor} cannot be reached "
                f"because only {len(brokers)} broker(s) are registered or some brokers have "
                "all their log directories cordoned.",
            )
        try:
            return assign_replicas(
                [(b, image.brokers[b].rack) for b in brokers],
                num_partitions,
                replication_factor,
                start_partition=start,
            )
        except PlacementError as e:
            raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, str(e)) from None

    async def create(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        assignments: dict[int, list[int]] | list[tuple[int, list[int]]] | None = None,
        configs: Mapping[str, str | None] | None = None,
    ) -> TopicImage:
        given = dict(configs or {})
        assignments = self.check_create(
            name, num_partitions, replication_factor, assignments, given
        )
        present = {k: v for k, v in given.items() if v is not None}  # check_create refused nulls
        try:
            return await self.controller.create_topic(name, assignments, present)
        except ControllerError as e:
            raise TopicError(e.code, e.message) from None

    async def delete(self, name: str) -> TopicImage:
        if name in INTERNAL_TOPICS:
            raise TopicError(
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"Topic {name} is an internal topic and cannot be deleted",
            )
        if not self.config.delete_topic_enable:
            raise TopicError(ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.")
        try:
            return await self.controller.delete_topic(name)
        except ControllerError as e:
            raise TopicError(e.code, e.message) from None

    def check_add_partitions(
        self, name: str, count: int, assignments: list[list[int]] | None
    ) -> dict[int, list[int]]:
        """Validate growing `name` to `count` partitions (Kafka's messages);
        the new partitions' replicas. `assignments` None: placed like new topics."""
        topic = self.metadata.image.topic(name)
        if topic is None:
            # Kafka's UnknownTopicOrPartitionException() here carries no message.
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
        current = len(topic.partitions)
        if count == current:
            raise TopicError(
                ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s)."
            )
        if count < current:
            raise TopicError(
                ErrorCode.INVALID_PARTITIONS,
                f"The topic {name} currently has {current} partition(s); {count} would not "
                "be an increase.",
            )
        additional = count - current
        if assignments is not None and len(assignments) != additional:
            raise TopicError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Attempted to add {additional} additional partition(s), but only "
                f"{len(assignments)} assignment(s) were specified.",
            )
        rf = len(topic.partitions[min(topic.partitions)].replicas) if topic.partitions else 1
        if assignments is not None:
            for replicas in assignments:
                self._check_manual_assignment(replicas, rf)
            return {current + i: list(r) for i, r in enumerate(assignments)}
        return self.assign(additional, rf, start=current)

    async def add_partitions(self, name: str, count: int, assignments=None) -> TopicImage:
        new = self.check_add_partitions(name, count, assignments)
        try:
            return await self.controller.create_partitions(name, new)
        except ControllerError as e:
            raise TopicError(e.code, e.message) from None
