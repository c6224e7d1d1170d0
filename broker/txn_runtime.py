"""Runs the transaction coordinator (`coordinator.transactions`) inside the broker.

The coordinator is served by the leaders of `__transaction_state`'s
partitions (the driver, `broker.coordinator_driver`, loads and unloads them
as leadership moves, writes its records with acks=all and runs its timers).
What is particular to transactions is here: the coordinator epoch of each
partition is its leader epoch (markers carry it, so a partition refuses the
markers of a coordinator that lost its place), and `SendMarkers` actions
become tasks that write the markers to every partition of the transaction
(`broker.txn_markers`) and then report `markers_written`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.config import BrokerConfig
from broker.coordinator_driver import CoordinatorDriver, now_ms
from broker.metadata.delta import MetadataDelta
from broker.metadata.image import MetadataImage
from broker.metadata.publisher import MetadataCache
from broker.replica_manager import ReplicaManager
from broker.txn_markers import Marker, MarkerSender
from coordinator.transactions import SendMarkers, TransactionCoordinator, TxnConfig

if TYPE_CHECKING:
    from broker.partition import Partition

TRANSACTION_TOPIC = "__transaction_state"


def txn_config(config: BrokerConfig, partitions: int | None) -> TxnConfig:
    """The existing topic's partition count wins over the setting, as in Kafka,
    so a changed setting cannot move transactional ids to other partitions."""
    return TxnConfig(
        num_partitions=partitions or config["transaction.state.log.num.partitions"],
        max_timeout_ms=config["transaction.max.timeout.ms"],
        id_expiration_ms=config["transactional.id.expiration.ms"],
        id_expiration_check_ms=config["transaction.remove.expired.transaction.cleanup.interval.ms"],
        transaction_version=config["gregor.transaction.version"],
    )


class TransactionRuntime(CoordinatorDriver):
    topic = TRANSACTION_TOPIC
    log = logging.getLogger("gregor.txn")
    coordinator: TransactionCoordinator

    def __init__(
        self,
        node_id: int,
        config: BrokerConfig,
        metadata: MetadataCache,
        replicas: ReplicaManager,
        sender: MarkerSender,
    ):
        super().__init__(
            node_id,
            config,
            metadata,
            replicas,
            TransactionCoordinator(txn_config(config, None)),
            compression=0,  # __transaction_state is written uncompressed, as in Kafka
            commit_timeout_ms=config["offsets.commit.timeout.ms"],
            load_buffer_bytes=config["transaction.state.log.load.buffer.size"],
        )
        self.sender = sender

    async def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        topic = image.topic(TRANSACTION_TOPIC)
        if topic is not None and len(topic.partitions) != self.coordinator.config.num_partitions:
            self.coordinator.config = txn_config(self.config, len(topic.partitions))
        self._follow(image)

    def _begin_loading(self, index: int, partition: Partition) -> None:
        self.coordinator.begin_loading(index, partition.leader_epoch)

    def _other_action(self, action) -> None:
        if not isinstance(action, SendMarkers):
            super()._other_action(action)
            return
        assert self._nursery is not None  # only loaded partitions act
        self._nursery.start_soon(self._send_markers, action)

    async def _send_markers(self, action: SendMarkers) -> None:
        coordinator = self.coordinator
        partition = coordinator.partition_for(action.transactional_id)
        epoch = action.coordinator_epoch

        def still_wanted() -> bool:
            return (
                coordinator.runtime.is_active(partition)
                and coordinator.coordinator_epochs.get(partition) == epoch
            )

        marker = Marker(
            action.producer_id,
            action.producer_epoch,
            action.commit,
            action.coordinator_epoch,
            action.partitions,
            action.transaction_version,
        )
        if await self.sender.send(marker, still_wanted) and still_wanted():
            self._execute(
                coordinator.markers_written(
                    action.transactional_id, action.producer_id, action.producer_epoch, now_ms()
                )
            )
