"""Runs the group coordinator (`coordinator/`) inside the broker.

The coordinator is a pure state machine: requests and time go in, actions
come out (`coordinator.actions`). Its driver (`broker.coordinator_driver`:
requests waiting for their Reply, acks=all writes to `__consumer_offsets`,
timers, loading and unloading partitions as leadership moves) is shared with
the transaction coordinator; what is particular to groups is here:

- a JoinGroup may be answered much later (when the join phase ends);
- a deleted topic's offsets are tombstoned;
- transactional offsets (TxnOffsetCommit) are written as transactional
  batches of their producer, replayed as pending until the transaction's
  marker, and completed when the transaction coordinator's marker is written
  to a partition this broker leads (`complete_transaction`).

`__consumer_offsets` is created when the first FindCoordinator for a group
arrives, as Kafka does, with `offsets.topic.*` settings and
cleanup.policy=compact. Time is wall-clock milliseconds: commit timestamps go
into the log and are compared by later processes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.config import BrokerConfig
from broker.coordinator_driver import CoordinatorDriver, now_ms
from broker.metadata.delta import MetadataDelta
from broker.metadata.image import MetadataImage, TopicImage
from broker.metadata.publisher import MetadataCache
from broker.replica_manager import ReplicaManager
from broker.request_context import RequestContext as BrokerRequestContext
from broker.topics import TopicError, TopicManager
from coordinator import CoordinatorConfig, GroupCoordinator, Persist
from coordinator.replay import TransactionalRecord, TransactionEnd
from logstore import AppendOrigin
from wire.error_codes import ErrorCode
from wire.records import (
    CONTROL_COMMIT,
    RecordInput,
    build_batch,
    iter_batches,
    iter_records,
    parse_control_record,
)

if TYPE_CHECKING:
    from broker.partition import Partition

log = logging.getLogger("gregor.groups")

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"

_COORDINATOR_KEYS = (
    "group.min.session.timeout.ms",
    "group.max.session.timeout.ms",
    "group.initial.rebalance.delay.ms",
    "group.max.size",
    "offsets.topic.num.partitions",
    "offsets.retention.minutes",
    "offsets.retention.check.interval.ms",
    "offset.metadata.max.bytes",
)


def coordinator_config(config, offsets_partitions: int | None) -> CoordinatorConfig:
    """The coordinator's settings; the partition count of an existing
    __consumer_offsets wins over the configured one, as in Kafka, so a changed
    setting cannot move groups to other partitions."""
    props = {k: config[k] for k in _COORDINATOR_KEYS}
    if offsets_partitions:
        props["offsets.topic.num.partitions"] = offsets_partitions
    return CoordinatorConfig.from_properties(props)


class GroupRuntime(CoordinatorDriver):
    topic = OFFSETS_TOPIC
    log = log
    coordinator: GroupCoordinator

    def __init__(
        self,
        node_id: int,
        config: BrokerConfig,
        metadata: MetadataCache,
        replicas: ReplicaManager,
        topics: TopicManager,
    ):
        existing = metadata.image.topic(OFFSETS_TOPIC)
        super().__init__(
            node_id,
            config,
            metadata,
            replicas,
            GroupCoordinator(
                coordinator_config(config, None if existing is None else len(existing.partitions))
            ),
            compression=config["offsets.topic.compression.codec"],
            commit_timeout_ms=config["offsets.commit.timeout.ms"],
        )
        # (At start the image has no topics yet: the first one published corrects this.)
        self.topics = topics

    # --- the internal topics ------------------------------------------------------

    async def ensure_topic(self, name: str) -> TopicImage | None:
        """The internal topic `name`, created (as Kafka does at the first
        FindCoordinator) when it does not exist yet; None when it cannot be
        created (too few brokers for its replication factor, a full disk)."""
        topic = self.metadata.image.topic(name)
        if topic is not None:
            return topic
        config = self.config
        if name == OFFSETS_TOPIC:
            partitions = self.coordinator.config.offsets_topic_num_partitions
            replication = config["offsets.topic.replication.factor"]
            configs = {
                "cleanup.policy": "compact",
                "compression.type": "producer",
                "segment.bytes": str(config["offsets.topic.segment.bytes"]),
            }
        else:
            partitions = config["transaction.state.log.num.partitions"]
            replication = config["transaction.state.log.replication.factor"]
            configs = {
                "cleanup.policy": "compact",
                "compression.type": "uncompressed",
                "min.insync.replicas": str(config["transaction.state.log.min.isr"]),
                "segment.bytes": str(config["transaction.state.log.segment.bytes"]),
            }
        try:
            topic = await self.topics.create(name, partitions, replication, configs=configs)
        except TopicError as e:
            if e.code == ErrorCode.TOPIC_ALREADY_EXISTS:
                return self.metadata.image.topic(name)
            log.warning("cannot create %s: %s", name, e.message)
            return None
        log.info("created %s with %d partitions", name, partitions)
        return topic

    # --- following the metadata --------------------------------------------------------

    async def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        offsets = image.topic(OFFSETS_TOPIC)
        if offsets is not None and (
            len(offsets.partitions) != self.coordinator.config.offsets_topic_num_partitions
        ):
            # The existing topic's partition count wins over the setting, as in
            # Kafka, so a changed setting cannot move groups to other partitions.
            self.coordinator.config = coordinator_config(self.config, len(offsets.partitions))
        deleted = [t for t in delta.deleted_topics if t.name != OFFSETS_TOPIC]
        if deleted:
            tps = [(t.name, index) for t in deleted for index in t.partitions]
            self._execute(self.coordinator.partitions_deleted(tps, now_ms()))
        self._follow(image)

    # --- requests ---------------------------------------------------------------

    async def request(self, api_key: int, ctx: BrokerRequestContext, body) -> dict:
        """Hand a group request to the coordinator; its response, when it comes."""
        coordinator = self.coordinator
        return await self.call(ctx, lambda rctx, now: coordinator.handle(api_key, rctx, body, now))

    def complete_transaction(self, index: int, producer_id: int, commit: bool) -> None:
        """The marker ending `producer_id`'s transaction is written to
        __consumer_offsets-`index` (led here): its offsets count now, or go."""
        self._execute(self.coordinator.complete_transaction(index, producer_id, commit, now_ms()))

    # --- the driver's hooks ---------------------------------------------------------

    def _build_batch(self, action: Persist, timestamp: int) -> bytes:
        if not action.transactional:
            return super()._build_batch(action, timestamp)
        return build_batch(
            [RecordInput(r.key, r.value, (), timestamp) for r in action.records],
            compression=self.compression,
            producer_id=action.producer_id,
            producer_epoch=action.producer_epoch,
            is_transactional=True,
        )

    def _append_origin(self, action: Persist) -> AppendOrigin:
        # The coordinator writes for the producer: epochs are checked (a
        # fenced producer's offsets are refused), sequences are not.
        return AppendOrigin.COORDINATOR if action.transactional else AppendOrigin.CLIENT

    def _read_chunk(self, partition: Partition, offset: int, end: int) -> tuple[list, int]:
        """Blocking: the records from `offset` below `end` (about
        load_buffer_bytes of them) as replay items, and the offset after them:
        (key, value) pairs, a transactional batch's records as
        TransactionalRecord, its marker as TransactionEnd."""
        result = partition.log.read(offset, self.load_buffer_bytes, end, True)
        data = result.read_bytes()
        items: list = []
        for pos, header in iter_batches(data):
            offset = header.next_offset
            if header.is_control:
                if header.producer_id >= 0:
                    for record in iter_records(data, pos):
                        kind, _ = parse_control_record(record)
                        items.append(TransactionEnd(header.producer_id, kind == CONTROL_COMMIT))
                continue
            if header.is_transactional:
                items.extend(
                    TransactionalRecord(header.producer_id, r.key, r.value)
                    for r in iter_records(data, pos)
                )
            else:
                items.extend((r.key, r.value) for r in iter_records(data, pos))
        return items, offset
