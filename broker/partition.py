"""One partition replica on this broker, and all of its replica state.

As Kafka's `Partition`, this owns what a replica knows beyond its log: whether
it leads, the leader epoch and partition epoch, the replica set and the ISR
(held here and nowhere else), and as leader each follower's fetch state (its
log end offset and when it was last caught up). The high watermark and last
stable offset live in the log (`UnifiedLog`), which persists them; this class
applies Kafka's rules for moving the high watermark:

- the leader's high watermark is the smallest log end offset among the ISR
  (and followers caught up enough to be waited for), and it does not move
  while the ISR is smaller than the effective min.insync.replicas;
- acks=all is answered once the high watermark covers the append, or
  NOT_ENOUGH_REPLICAS before the append / NOT_ENOUGH_REPLICAS_AFTER_APPEND
  after it when the ISR is too small (`min.insync.replicas`, capped at the
  replication factor as Kafka's effectiveMinIsr does);
- a follower that falls behind for `replica.lag.time.max.ms` leaves the ISR,
  and comes back once it reaches the high watermark and the start of the
  current leader epoch. ISR changes go to the controller (AlterPartition);
  the partition sees them when the new metadata arrives.

A single node is its own ISR: each append moves the high watermark to the
log end at once. Waiting (the purgatories of DESIGN.md) is one `trio.Event`
per partition, replaced on every change; long-poll Fetches and acks=all
Produces wait on it with their own deadlines.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import trio

from broker.metadata.image import NO_LEADER, PartitionRegistration
from logstore import AbortedTxn, AppendInfo, AppendOrigin, ReadResult, UnifiedLog
from logstore.errors import LogStorageError
from wire.error_codes import ErrorCode

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

# After the controller refuses an ISR change, how long before this partition
# proposes one again, unless new metadata for it comes first. A follower's
# every Fetch would otherwise propose the same expansion again: while this
# broker's image still shows a replica the controller no longer counts as
# alive, that was hundreds of refused proposals a second, each a read of
# ZooKeeper (Kafka's leader sees such a broker fenced in its own metadata
# sooner, and stops proposing).
ISR_REFUSAL_BACKOFF_MS = 500


class PartitionError(Exception):
    """A request this replica refuses, with Kafka's error code."""

    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message or code.name)
        self.code = code


@dataclass
class FollowerState:
    """The leader's view of one follower (Kafka's Replica)."""

    replica_id: int
    log_end_offset: int = -1  # unknown until it fetches
    log_start_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    # The leader's log end offset at the follower's previous fetch.
    last_fetch_leader_end_offset: int = 0

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        return (
            self.log_end_offset == leader_end_offset
            or now_ms - self.last_caught_up_ms <= max_lag_ms
        )

    def update(self, fetch_offset: int, log_start: int, now_ms: int, leader_end: int) -> None:
        # Kafka's Replica.updateFetchStateOrThrow: caught up when it asked for
        # the leader's end, or for at least what the leader's end was when it
        # last fetched (then it was caught up as of that fetch).
        if fetch_offset >= leader_end:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.log_start_offset = log_start
        self.last_fetch_leader_end_offset = leader_end
        self.last_fetch_ms = now_ms


class Partition:
    def __init__(
        self,
        tp: TopicPartition,
        log: UnifiedLog,
        node_id: int,
        clock_ms: Callable[[], int],
        min_insync_replicas: int = 1,
        replica_lag_time_max_ms: int = 30_000,
    ):
        self.topic, self.index = tp
        self.log = log
        self.node_id = node_id
        self._clock_ms = clock_ms
        self.min_insync_replicas = min_insync_replicas
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.leader = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        # An ISR change sent to the controller and not yet seen in the metadata.
        self.pending_isr: tuple[int, ...] | None = None
        # No ISR proposal before this time (ms): the controller refused the last.
        self._proposals_resume_ms = 0
        self.followers: dict[int, FollowerState] = {}
        # Events of the waiters for the next change (a Fetch watches several
        # partitions with one), set at the next notify() and then forgotten.
        self._watchers: set[trio.Event] = set()

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index}, epoch={self.leader_epoch})"

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.index)

    # --- state ---------------------------------------------------------------------

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
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.log.last_stable_offset

    @property
    def offline(self) -> bool:
        return self.log.offline

    @property
    def effective_min_isr(self) -> int:
        """min.insync.replicas, but never more than there are replicas (Kafka's
        effectiveMinIsr: a one-replica topic with min.insync.replicas=2 takes
        acks=all writes)."""
        return min(self.min_insync_replicas, max(len(self.replicas), 1))

    @property
    def is_under_min_isr(self) -> bool:
        return len(self.isr) < self.effective_min_isr

    def _maximal_isr(self) -> tuple[int, ...]:
        """The ISR as the high watermark must assume it: with replicas a
        pending expansion adds (they may already count as in sync)."""
        if self.pending_isr is None:
            return self.isr
        return tuple(dict.fromkeys(self.isr + self.pending_isr))

    # --- leadership ------------------------------------------------------------------

    def make_leader(self, reg: PartitionRegistration) -> bool:
        """Lead under `reg`; True if this is a new leadership (new epoch).

        A new epoch starts at the log end (recorded in the leader-epoch
        checkpoint, as a new leader records it); followers' states start
        over, those in the ISR counted as caught up now (Kafka's makeLeader)."""
        new_epoch = not self.is_leader or reg.leader_epoch != self.leader_epoch
        self._apply(reg)
        if new_epoch:
            now = self._clock_ms()
            self.followers = {
                r: FollowerState(r, last_caught_up_ms=now if r in reg.isr else 0)
                for r in reg.replicas
                if r != self.node_id
            }
            if self.log.latest_epoch != reg.leader_epoch:
                self._record_epoch_start()
        else:
            for r in reg.replicas:
                if r != self.node_id and r not in self.followers:
                    self.followers[r] = FollowerState(r)
            for r in list(self.followers):
                if r not in reg.replicas:
                    del self.followers[r]
        self.maybe_increment_high_watermark()
        self.notify()
        return new_epoch

    def make_follower(self, reg: PartitionRegistration) -> bool:
        """Follow `reg.leader`; True if the leader or its epoch changed."""
        changed = self.leader != reg.leader or self.leader_epoch != reg.leader_epoch
        self._apply(reg)
        self.followers = {}
        self.notify()
        return changed

    def _apply(self, reg: PartitionRegistration) -> None:
        self.leader = reg.leader
        self.leader_epoch = reg.leader_epoch
        self.partition_epoch = reg.partition_epoch
        self.replicas = tuple(reg.replicas)
        self.isr = tuple(reg.isr)
        self.pending_isr = None
        self._proposals_resume_ms = 0

    def _record_epoch_start(self) -> None:
        """On a full or failing disk the checkpoint cannot be written: the epoch
        is kept in memory and the first append under it writes the checkpoint
        before its data (failing with KAFKA_STORAGE_ERROR while the disk is
        full), while the partition goes on serving what it has. Refusing to
        lead would hide every record on the other log dirs too."""
        try:
            self.log.assign_epoch_start_offset(self.leader_epoch)
        except LogStorageError as e:
            logger.warning("%r: leader epoch checkpoint not written: %s", self, e)

    def check_leader_epoch(self, current_leader_epoch: int) -> ErrorCode:
        """KIP-320: a request naming another epoch than this replica's."""
        if current_leader_epoch < 0:
            return ErrorCode.NONE
        if current_leader_epoch > self.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        if current_leader_epoch < self.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        return ErrorCode.NONE

    # --- appends ----------------------------------------------------------------------

    def _check_min_isr(self) -> None:
        """An acks=all append's refusal, before anything is written, when the
        ISR is smaller than the effective min ISR."""
        if self.is_under_min_isr:
            raise PartitionError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {list(self.isr)} is insufficient to satisfy the "
                f"min.isr requirement of {self.effective_min_isr} for partition "
                f"{self.topic}-{self.index}",
            )

    def append_as_leader(
        self, records, required_acks: int = 1, origin: AppendOrigin = AppendOrigin.CLIENT
    ) -> AppendInfo:
        """Append validated batches under the current epoch (offsets are
        assigned by the log). NOT_ENOUGH_REPLICAS, before anything is written,
        for acks=all when the ISR is smaller than the effective min ISR; the
        same check guards the coordinators' internal writes."""
        if not self.is_leader:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if required_acks == -1:
            self._check_min_isr()
        info = self.log.append(records, self.leader_epoch, origin=origin)
        if not info.duplicate and not self.maybe_increment_high_watermark():
            self.notify()  # new data below the high watermark (a moved one notified)
        return info

    def append_transaction_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        *,
        commit: bool,
        coordinator_epoch: int,
        transaction_version: int = 0,
    ) -> AppendInfo:
        """WriteTxnMarkers: the leader appends the marker ending `producer_id`'s
        transaction here (raises what the log's marker append raises). Markers
        are acks=all writes, refused before anything is written while the ISR
        is under min ISR (the coordinator retries them), as in Kafka: a marker
        appended then would wait at a high watermark that cannot move, and be
        appended again by the retry."""
        if not self.is_leader:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self._check_min_isr()
        info = self.log.append_transaction_marker(
            producer_id,
            producer_epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            leader_epoch=self.leader_epoch,
            transaction_version=transaction_version,
        )
        self.maybe_increment_high_watermark()
        self.notify()
        return info

    def append_as_follower(self, records) -> AppendInfo | None:
        """Append batches fetched from the leader, offsets and epochs as they are."""
        info = self.log.append_as_follower(records)
        self.notify()
        return info

    def follow_high_watermark(self, leader_high_watermark: int) -> None:
        """A follower takes the leader's high watermark, bounded by its own log end."""
        self.log.update_high_watermark(min(leader_high_watermark, self.log.log_end_offset))
        self.notify()

    def truncate_to(self, offset: int) -> None:
        """Blocking: a follower cuts its log back to where it agrees with the
        leader (the log drops epoch entries past its end even when no batch goes)."""
        self.log.truncate_to(offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Blocking: a follower that fell below the leader's log start starts over there."""
        self.log.truncate_fully_and_start_at(offset)

    def diverging_epoch(self, last_fetched_epoch: int, fetch_offset: int) -> tuple[int, int] | None:
        """The leader's check of a follower's position (KIP-320/595): when the
        follower's last fetched epoch ends earlier on the leader than where it
        fetches from, or the leader never had that epoch, (epoch, end offset)
        to truncate to; None when they agree."""
        if last_fetched_epoch < 0:
            return None
        epoch, end_offset = self.log.end_offset_for_epoch(last_fetched_epoch)
        if epoch < last_fetched_epoch or end_offset < fetch_offset:
            return epoch, end_offset
        return None

    async def flush_if_message_count_due(self) -> None:
        """fsync now if flush.messages records are unflushed, as Kafka does at
        the end of an append, before the producer is answered. The disk wait
        runs in a worker thread; LogError if the flush fails."""
        if self.log.message_count_flush_due():
            await trio.to_thread.run_sync(self.log.flush)

    def replication_error(self, required_offset: int) -> ErrorCode | None:
        """For a waiting acks=all append ending before `required_offset`: None
        while the ISR has not got it yet; else its answer (Kafka's
        checkEnoughReplicasReachOffset)."""
        if not self.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark < required_offset:
            return None
        if self.is_under_min_isr:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE

    # --- the high watermark and the ISR ---------------------------------------------------

    def maybe_increment_high_watermark(self) -> bool:
        """The leader's rule: the smallest log end offset of the (maximal) ISR
        and of followers caught up enough to be waited for, never while under
        min ISR. True if it moved (waiters are woken)."""
        if not self.is_leader or self.is_under_min_isr:
            return False
        leader_end = self.log.log_end_offset
        new_hw = leader_end
        if self.followers:  # else (one replica) the log end, on every append
            now = self._clock_ms()
            isr = self._maximal_isr()
            for state in self.followers.values():
                wait_for = state.replica_id in isr or (
                    state.is_caught_up(leader_end, now, self.replica_lag_time_max_ms)
                    and state.log_end_offset >= 0
                )
                if wait_for and state.log_end_offset < new_hw:
                    new_hw = max(state.log_end_offset, 0)
        moved = self.log.maybe_increment_high_watermark(new_hw)
        if moved:
            self.notify()
        return moved

    def update_follower_fetch_state(
        self, replica_id: int, fetch_offset: int, log_start_offset: int
    ) -> tuple[int, ...] | None:
        """A follower fetched from `fetch_offset`: record its position, move the
        high watermark; the ISR to propose (with it added) when it has caught
        up to the high watermark and the current epoch, else None.
        NOT_LEADER_OR_FOLLOWER / UNKNOWN replica errors as PartitionError."""
        if not self.is_leader:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        state = self.followers.get(replica_id)
        if state is None:
            raise PartitionError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"replica {replica_id} is not a replica of {self.topic}-{self.index}",
            )
        state.update(fetch_offset, log_start_offset, self._clock_ms(), self.log.log_end_offset)
        proposal = self._isr_expansion(state)
        self.maybe_increment_high_watermark()
        return proposal

    def _isr_expansion(self, state: FollowerState) -> tuple[int, ...] | None:
        if state.replica_id in self._maximal_isr() or self._proposals_paused():
            return None
        epoch_start, _ = self._current_epoch_start()
        if state.log_end_offset >= self.high_watermark and state.log_end_offset >= epoch_start:
            proposed = self.isr + (state.replica_id,)
            self.pending_isr = proposed
            return proposed
        return None

    def _current_epoch_start(self) -> tuple[int, int]:
        for entry in reversed(self.log.epoch_entries()):
            if entry[0] == self.leader_epoch:
                return entry[1], entry[0]
        return self.log.log_end_offset, self.leader_epoch

    def isr_shrink(self) -> tuple[int, ...] | None:
        """The ISR without followers out of sync for replica.lag.time.max.ms,
        or None when all are in sync (Kafka's maybeShrinkIsr)."""
        if not self.is_leader or self.pending_isr is not None or self._proposals_paused():
            return None
        leader_end = self.log.log_end_offset
        now = self._clock_ms()
        lagging = [
            r
            for r in self.isr
            if r != self.node_id
            and r in self.followers
            and not self.followers[r].is_caught_up(leader_end, now, self.replica_lag_time_max_ms)
        ]
        if not lagging:
            return None
        proposed = tuple(r for r in self.isr if r not in lagging)
        self.pending_isr = proposed
        return proposed

    def isr_change_failed(self) -> None:
        """The controller refused the proposed ISR: the ISR is the metadata's
        again, and the next proposal waits ISR_REFUSAL_BACKOFF_MS (or for new
        metadata of this partition, which may be what it was refused for)."""
        self.pending_isr = None
        self._proposals_resume_ms = self._clock_ms() + ISR_REFUSAL_BACKOFF_MS

    def _proposals_paused(self) -> bool:
        return self._proposals_resume_ms > 0 and self._clock_ms() < self._proposals_resume_ms

    # --- reads --------------------------------------------------------------------------

    def fetch_limit(self, read_committed: bool) -> int:
        """Where a consumer's reads stop: the last stable offset for
        read_committed, else the high watermark."""
        return self.last_stable_offset if read_committed else self.high_watermark

    def read(self, offset: int, max_bytes: int, read_committed: bool, min_one: bool) -> ReadResult:
        """A consumer's read, up to the high watermark (or LSO)."""
        return self.log.read(offset, max_bytes, self.fetch_limit(read_committed), min_one)

    def aborted_transactions(self, result: ReadResult) -> list[AbortedTxn]:
        """The aborted transactions a read_committed consumer must skip in
        what `result` (a `read`) holds."""
        return self.log.aborted_transactions(result)

    def read_for_replica(self, offset: int, max_bytes: int, min_one: bool) -> ReadResult:
        """A follower's read: everything up to the log end."""
        return self.log.read(offset, max_bytes, self.log.log_end_offset, min_one)

    def preferred_read_replica(
        self, client_rack: str, fetch_offset: int, rack_of: Callable[[int], str | None]
    ) -> int | None:
        """KIP-392's RackAwareReplicaSelector, on the leader: the in-sync replica
        in the consumer's rack that has `fetch_offset` (the leader itself when
        it is in that rack; else the one furthest ahead), or None to read from
        the leader."""
        if not client_rack or rack_of(self.node_id) == client_rack:
            return None
        candidates = [
            state
            for r, state in self.followers.items()
            if r in self.isr
            and rack_of(r) == client_rack
            and state.log_end_offset >= fetch_offset
            and 0 <= state.log_start_offset <= fetch_offset
        ]
        if not candidates:
            return None
        best = max(candidates, key=lambda s: (s.log_end_offset, s.last_caught_up_ms))
        return best.replica_id

    def delete_records_before(self, offset: int) -> int:
        """Blocking (segment files may be deleted): DeleteRecords up to `offset`."""
        low = self.log.delete_records_before(offset, self.high_watermark)
        return low

    # --- waiting ------------------------------------------------------------------------

    def notify(self) -> None:
        """Wake every waiter: data, the high watermark or the log start moved,
        or leadership changed."""
        if self._watchers:
            for event in self._watchers:
                event.set()
            self._watchers.clear()

    def watch(self, event: trio.Event) -> None:
        """Set `event` at the next notify(), once. One event can watch many
        partitions, so a waiter on any of them needs no task per partition;
        `unwatch` forgets it when the waiter is done first."""
        self._watchers.add(event)

    def unwatch(self, event: trio.Event) -> None:
        self._watchers.discard(event)

    async def wait_for_change(self) -> None:
        """Return at the next notify() (the waiter is watching from the call
        on, before any checkpoint)."""
        changed = trio.Event()
        self.watch(changed)
        try:
            await changed.wait()
        finally:
            self.unwatch(changed)
