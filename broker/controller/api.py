"""The controller side of the cluster metadata: the one place that changes it.

Handlers and broker parts never edit the metadata image; they ask the
controller, and see the result when the new image reaches them through the
`MetadataCache`. Every method returns once the change is durable (and, for
the embedded single node, published). A refused change raises
`ControllerError` with Kafka's error code.

Two implementations fit behind this interface: the embedded single node
(`broker.controller.local`, a file under the first log dir) and, for
clusters, one backed by ZooKeeper, in the model Kafka used for a decade
(conditional writes; brokers follow through watches).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from broker.metadata.image import BrokerRegistration, PartitionRegistration, TopicImage
from wire.error_codes import ErrorCode

TopicPartition = tuple[str, int]


class ControllerError(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message or code.name)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ProducerIdBlock:
    """Producer ids [first, first + size) for one broker to hand out alone."""

    broker_id: int
    first: int
    size: int

    @property
    def next_after(self) -> int:
        return self.first + self.size


class Controller(Protocol):
    async def register_broker(self, registration: BrokerRegistration) -> None:
        """A broker (re)starts with these endpoints and rack."""

    async def create_topic(
        self, name: str, assignments: Mapping[int, list[int]], configs: Mapping[str, str]
    ) -> TopicImage:
        """A new topic, its partitions led by their first replica.
        TOPIC_ALREADY_EXISTS if the name is taken."""

    async def delete_topic(self, name: str) -> TopicImage:
        """The topic as it was. UNKNOWN_TOPIC_OR_PARTITION if there is none."""

    async def create_partitions(
        self, name: str, assignments: Mapping[int, list[int]]
    ) -> TopicImage:
        """Add partitions (indexes continue the existing ones)."""

    async def alter_topic_configs(self, name: str, configs: Mapping[str, str]) -> None:
        """Replace the topic's config overrides."""

    async def alter_broker_configs(self, resource: str, configs: Mapping[str, str]) -> None:
        """Replace the dynamic broker configs of `resource` ("" or a node id)."""

    async def alter_user_configs(self, changes: Mapping[str, Mapping[str, str | None]]) -> None:
        """Set (a value) or remove (None) configs of users, all of them or
        none: their SCRAM credentials, one per mechanism."""

    async def alter_partition(
        self,
        tp: TopicPartition,
        leader_id: int,
        leader_epoch: int,
        partition_epoch: int,
        isr: list[int],
    ) -> PartitionRegistration:
        """A leader changes its ISR (Kafka's AlterPartition): accepted only
        from the current leader at the current epochs (FENCED_LEADER_EPOCH,
        INVALID_UPDATE_VERSION otherwise), with an ISR of live replicas."""

    async def allocate_producer_ids(self, broker_id: int) -> ProducerIdBlock:
        """The next block of producer ids, never handed out before."""

    async def elect_leaders(
        self, tps: list[TopicPartition], election_type: int
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        """ElectLeaders (0 preferred, 1 unclean): each existing partition's
        (error code, message), the elections made (broker/controller/elections.py)."""

    async def alter_partition_reassignments(
        self, moves: dict[TopicPartition, list[int] | None]
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        """Start (target replicas) or cancel (None) reassignments, validated
        already; each partition's (error code, message)."""


def apply_config_changes(
    configs: dict[str, str], changes: Mapping[str, str | None]
) -> dict[str, str]:
    """`configs` with `changes` made: a value set, or the key removed (None)."""
    for key, value in changes.items():
        if value is None:
            configs.pop(key, None)
        else:
            configs[key] = value
    return configs


class MetadataBackend(Controller, Protocol):
    """A Controller as one broker starts and stops with it: the embedded single
    node's, or a cluster's (ZooKeeper). `start` publishes the first image to
    the broker's MetadataCache and registers the broker; from then on every
    change, this broker's or another's, reaches the cache."""

    async def start(self, registration: BrokerRegistration, nursery) -> None: ...

    async def controlled_shutdown(self) -> None:
        """Before a graceful stop: hand this broker's leaderships to others."""

    async def close(self) -> None:
        """After the logs are closed: leave the cluster (release sessions)."""
