"""One partition replica on this broker: its log, leader epoch and high watermark.

The high watermark is the offset below which every in-sync replica has the
data; consumers read only below it. A single node is its own ISR, so each
append moves the high watermark to the log end at once; with followers the
leader will move it to the smallest ISR position (DESIGN.md, Partitions and
replication) and the same waiters wake up.

Waiting (the purgatories of DESIGN.md) is one `trio.Event` per partition,
replaced on every change: long-poll Fetches and acks=all Produces wait on it
with their own deadlines.
"""

from __future__ import annotations

import logging

import trio

from broker.cluster import PartitionInfo, TopicInfo
from logstore import AppendInfo, ReadResult, UnifiedLog
from logstore.errors import LogStorageError

logger = logging.getLogger(__name__)


class Partition:
    def __init__(self, topic: TopicInfo, info: PartitionInfo, log: UnifiedLog, node_id: int):
        self.topic = topic.name
        self.topic_id = topic.topic_id
        self.index = info.index
        self.log = log
        self.node_id = node_id
        self.leader_epoch = info.leader_epoch
        self.leader = info.leader
        self.replicas = list(info.replicas)
        self.isr = list(info.isr)
        # Everything on disk at open was acknowledged or is at least durable
        # on this replica; a single node's ISR is itself, so all of it is
        # committed. Followers will restore it from the replication checkpoint.
        self.high_watermark = log.log_end_offset
        self._changed = trio.Event()
        if self.is_leader and log.latest_epoch != self.leader_epoch:
            self._record_epoch_start()

    def _record_epoch_start(self) -> None:
        """A new leader epoch starts at the log end, as a new leader records it.

        On a full or failing disk the checkpoint cannot be written: the epoch
        is kept in memory and the first append under it writes the checkpoint
        before its data (failing with KAFKA_STORAGE_ERROR while the disk is
        full), while the partition goes on serving what it has. Refusing to
        start would hide every record on the other log dirs too."""
        try:
            self.log.assign_epoch_start_offset(self.leader_epoch)
        except LogStorageError as e:
            logger.warning("%r: leader epoch checkpoint not written: %s", self, e)

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index}, epoch={self.leader_epoch})"

    @property
    def is_leader(self) -> bool:
        return self.leader == self.node_id

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        # No open transactions yet: everything committed is stable.
        return self.high_watermark

    def append_as_leader(self, records) -> AppendInfo:
        """Append validated batches; offsets are assigned by the log."""
        info = self.log.append(records, self.leader_epoch)
        if not info.duplicate:
            self._advance_high_watermark()
        return info

    async def flush_if_message_count_due(self) -> None:
        """fsync now if flush.messages records are unflushed, as Kafka does at
        the end of an append, before the producer is answered. The disk wait
        runs in a worker thread; LogError if the flush fails."""
        if self.log.message_count_flush_due():
            await trio.to_thread.run_sync(self.log.flush)

    def _advance_high_watermark(self) -> None:
        if self.isr == [self.node_id] or self.replicas == [self.node_id]:
            self.high_watermark = self.log.log_end_offset
        self.notify()

    def notify(self) -> None:
        """Wake every waiter: data, the high watermark or the log start moved."""
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for_change(self) -> None:
        await self._changed.wait()

    def fetch_limit(self, read_committed: bool) -> int:
        return self.last_stable_offset if read_committed else self.high_watermark

    def read(self, offset: int, max_bytes: int, read_committed: bool, min_one: bool) -> ReadResult:
        return self.log.read(offset, max_bytes, self.fetch_limit(read_committed), min_one)

    def delete_records_before(self, offset: int) -> int:
        low = self.log.delete_records_before(offset, self.high_watermark)
        self.notify()
        return low
