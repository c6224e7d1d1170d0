"""One partition's durable commit log (Kafka's UnifiedLog, minus tiering).

A UnifiedLog is the log the broker uses. Its segments are a LocalLog
(local_log.py: the segment list, append to the active segment, roll, read,
truncate, segment deletion, recovery point, fsync); on top of them it keeps
what is about the log rather than its files: the log start offset, the high
watermark and last stable offset, the leader epoch cache, the
idempotent-producer state, retention (time, size, log start) and
DeleteRecords, offset-for-timestamp lookups, the compaction hooks, the topic
id and config updates. All offsets are Kafka offsets; every method works on
whole record batches and reads only their 61-byte headers.

Transactions: producer state (producer_state.py) tracks the open ones; a
marker (`append_transaction_marker`, from the transaction coordinator) ends
one, and an aborted one is written to the transaction index of the segment
holding the marker (transaction_index.py). The last stable offset is the
first offset of the oldest transaction that is open or whose marker the high
watermark has not passed, bounded by the high watermark; read_committed
consumers read below it and skip the aborted transactions
`collect_aborted_transactions` lists.

Offsets, in order: log start offset <= last stable offset <= high watermark
<= log end offset. The high watermark is the offset below which every in-sync
replica has the data; consumers read only below it (`fetch_upper_bound`). The
log keeps it within [log start, log end] as Kafka's UnifiedLog does: a log
start moving past it (DeleteRecords, retention) carries it up, a truncation
below it carries it down. Appends do not move it: the leader moves it
(`maybe_increment_high_watermark`) when the in-sync replicas have the data, a
follower sets the leader's (`update_high_watermark`).

Threads: the LocalLog's lock serializes every method, so a log may be used
from several threads; the intended use is the broker's Trio thread for
everything and a worker thread for `flush()`. `flush()` holds the lock only
to collect what to fsync and to advance the recovery point, never while it
waits for the disk, so appends and reads never wait on an fsync. Nothing but
`flush()`, `close()` and `delete()` waits for the disk; run those three in a
worker thread (`close()` and `delete()` when nothing else uses the log any
more).

Time: `clock()` (wall-clock ms, injectable) is read for segment.ms rolls of
batches without timestamps, retention.ms, flush.ms and producer expiry.
"""

from __future__ import annotations

import enum
import logging
import os
import time
import uuid
from collections.abc import Callable

from logstore.checkpoint import EpochEntry
from logstore.cleanable import LogToClean, log_to_clean
from logstore.config import LogConfig
from logstore.epoch_cache import LeaderEpochCache
from logstore.errors import (
    ControlBatchFromClient,
    CorruptFileError,
    CorruptIndexError,
    InconsistentTopicId,
    InvalidRecords,
    LogOfflineError,
    LogStorageError,
    OffsetOutOfRange,
    RecordBatchTooLarge,
    UnexpectedAppendOffset,
    storage_errors,
)
from logstore.files import LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA, fsync_dir, fsync_path
from logstore.local_log import LocalLog
from logstore.partition_metadata import read_partition_metadata, write_partition_metadata
from logstore.producer_state import (
    AppendOrigin,
    CompletedTxn,
    Duplicate,
    ProducerEntry,
    ProducerStateManager,
    TxnMarker,
)
from logstore.recovery import load_log
from logstore.results import AppendInfo, ReadResult, TimestampAndOffset
from logstore.segment import LogSegment
from logstore.transaction_index import AbortedTxn
from wire.errors import DecodeError
from wire.records import (
    BATCH_HEADER_SIZE,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    BatchHeader,
    build_control_batch,
    iter_batches,
    iter_records,
    parse_control_record,
    read_batch_header,
    record_timestamp,
    set_base_offset,
    set_partition_leader_epoch,
)

log = logging.getLogger(__name__)


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class FetchIsolation(enum.Enum):
    """How far a fetch may read (Kafka's FetchIsolation)."""

    # Follower replicas: everything the leader has.
    LOG_END = "log_end"
    # Consumers with read_uncommitted: what every in-sync replica has.
    HIGH_WATERMARK = "high_watermark"
    # Consumers with read_committed: no open or aborted transaction's records.
    TXN_COMMITTED = "txn_committed"


class UnifiedLog:
    """Use `UnifiedLog.open(dir, config, ...)`."""

    def __init__(self, local: LocalLog, clock: Callable[[], int]):
        self._local = local
        self._clock = clock
        self._log_start_offset = 0
        self._high_watermark = 0
        self._metadata_dirty = False
        self.epochs = LeaderEpochCache(None)
        self.producers = ProducerStateManager(None)
        self.topic_id: uuid.UUID | None = None
        # The largest delete horizon of a tombstone the last cleaning kept
        # (-1: none); the cleaner revisits the log once it has passed.
        self.latest_delete_horizon = -1

    # ------------------------------------------------------------------ open

    @classmethod
    def open(
        cls,
        dir: str,
        config: LogConfig | None = None,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        high_watermark: int = 0,
        clean_shutdown: bool = False,
        clock: Callable[[], int] | None = None,
    ) -> UnifiedLog:
        """Open (creating if needed) the log in `dir`.

        `recovery_point`, `log_start_offset` and `high_watermark` come from
        the log dir's checkpoint files (0 when a file has no entry for the
        partition, as in Kafka), `clean_shutdown` from its
        `.kafka_cleanshutdown` marker (see logdir.py). After an unclean
        shutdown everything from the recovery point on is validated and a bad
        tail is cut; the high watermark is then kept within what is left.
        `clock` returns wall-clock milliseconds (tests pass their own).
        """
        config = config or LogConfig()
        clock = clock or wall_clock_ms
        epoch_path = os.path.join(dir, LEADER_EPOCH_CHECKPOINT)
        # A log created now has no files to list or read: a new topic's
        # partitions skip the dozen lookups of a log found on disk.
        fresh = not os.path.isdir(dir)
        epochs = None if fresh else _load_epoch_checkpoint(dir, epoch_path)

        def on_recovered_batch(h: BatchHeader) -> None:
            if epochs is not None:
                _assign_if_newer(epochs, h)

        try:
            loaded = load_log(
                dir,
                config,
                recovery_point=recovery_point,
                log_start_offset=log_start_offset,
                clean_shutdown=clean_shutdown,
                now_ms=clock(),
                on_recovered_batch=on_recovered_batch,
                fresh=fresh,
            )
        except OSError as e:
            raise LogStorageError("open log", dir, e) from e
        self = cls(LocalLog(dir, config, loaded.segments, loaded.recovery_point, clock), clock)
        try:
            self._load(
                loaded.log_start_offset,
                high_watermark,
                loaded.reset,
                epochs,
                epoch_path,
                loaded.recovered_from,
                fresh,
            )
        except OSError as e:
            self._local.close_quietly()
            raise LogStorageError("open log", dir, e) from e
        return self

    def _load(
        self,
        log_start_offset: int,
        high_watermark: int,
        reset: bool,
        epochs: LeaderEpochCache | None,
        epoch_path: str,
        recovered_from: int | None,
        fresh: bool = False,
    ) -> None:
        dir, leo = self.dir, self.log_end_offset
        self._log_start_offset = log_start_offset
        self._high_watermark = self._within_log(high_watermark)
        if epochs is None or reset:
            epochs = LeaderEpochCache(epoch_path)
            if not reset:
                for seg in self._local.segments:
                    for _, h in seg.batches():
                        _assign_if_newer(epochs, h)
            # A new log's checkpoint would be empty, which its absence says
            # too; its first entry (a new leader's epoch) writes the file.
            if not fresh:
                epochs.write(fsync=False)
        epochs.truncate_from_end(leo)
        epochs.truncate_from_start(self._log_start_offset)
        self.epochs = epochs

        self.producers = ProducerStateManager(dir, self.config.producer_id_expiration_ms)
        if reset:
            self.producers.truncate_fully_and_start_at(leo)
        elif fresh:
            self.producers.map_end_offset = leo  # no snapshot, no batch to replay
        else:
            self._rebuild_producer_state(
                self._clock(), self._txn_index_rebuild_from(recovered_from)
            )

        if not fresh:
            try:
                self.topic_id = read_partition_metadata(dir)
            except CorruptFileError as e:
                log.warning("%s: ignoring unreadable %s: %s", dir, PARTITION_METADATA, e)
        log.info(
            "opened log %s: offsets [%d, %d), high watermark %d, %d segments, recovery point %d",
            dir,
            self._log_start_offset,
            leo,
            self._high_watermark,
            len(self._local.segments),
            self.recovery_point,
        )

    def _txn_index_rebuild_from(self, recovered_from: int | None) -> int | None:
        """Where recovery rebuilds transaction indexes: from the first segment
        recovery validated (Kafka rebuilds the index of every recovered
        segment), or an earlier one whose index is unreadable."""
        for seg in self._local.segments:
            if recovered_from is not None and seg.base_offset >= recovered_from:
                break
            try:
                seg.txn_index.sanity_check()
            except CorruptIndexError as e:
                log.warning("%s: rebuilding transaction indexes: %s", self.dir, e)
                return seg.base_offset
        return recovered_from

    def _rebuild_producer_state(self, now_ms: int, txn_index_from: int | None = None) -> None:
        """Newest snapshot at or below the log end, then the batches after it.
        With `txn_index_from`, the transaction indexes of the segments from
        there on are rebuilt by the replay, which then starts at or below it."""
        leo = self.log_end_offset
        first_base = self._local.segments[0].base_offset
        limit = leo if txn_index_from is None else min(leo, txn_index_from)
        snap = self.producers.load_latest_snapshot(limit, now_ms)
        self.producers.delete_snapshots_below(first_base)
        start = snap if snap is not None else first_base
        if txn_index_from is not None:
            for seg in self._local.segments_from(txn_index_from):
                if seg.base_offset >= txn_index_from:
                    seg.txn_index.reset()
        for seg in self._local.segments_from(start):
            found = seg.translate_offset(start)
            if found is None:
                continue
            for pos, h in seg.batches(found[0]):
                marker = _replayed_marker(seg, pos, h) if h.is_control else None
                completed = self.producers.update_from_batch(h, marker)
                if completed is not None:
                    index = txn_index_from is not None and h.base_offset >= txn_index_from
                    self._complete_txns([completed], seg if index else None)
        self.producers.map_end_offset = leo
        self.producers.on_high_watermark_updated(self._high_watermark)

    def _complete_txns(self, completed: list[CompletedTxn], segment: LogSegment | None) -> None:
        """End transactions whose markers were just appended to `segment`
        (None: replayed, already indexed), indexing the aborted ones."""
        for txn, lso in self.producers.complete_txns(completed):
            if txn.is_aborted and segment is not None:
                aborted = AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso)
                try:
                    segment.update_txn_index(aborted)
                except LogStorageError as e:
                    # The marker is in the log but not in the index: only a
                    # reopen (recovery replays the marker) makes them agree.
                    self._local.mark_offline(e)
                    raise LogOfflineError(self.dir, e) from e

    # ------------------------------------------------------------- properties

    @property
    def dir(self) -> str:
        return self._local.dir

    @property
    def config(self) -> LogConfig:
        return self._local.config

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._local.log_end_offset

    @property
    def recovery_point(self) -> int:
        """Every offset below this is known to be on disk (fsynced)."""
        return self._local.recovery_point

    # --------------------------------------------- high watermark, stable offset

    @property
    def high_watermark(self) -> int:
        """The offset below which every in-sync replica has the data; always
        within [log start offset, log end offset]."""
        return self._high_watermark

    def producer_entry(self, producer_id: int) -> ProducerEntry | None:
        """The state of one producer, as it is now (each append replaces it)."""
        return self.producers.producers.get(producer_id)

    def active_producers(self) -> list[ProducerEntry]:
        """A copy of every producer the log tracks (DescribeProducers)."""
        return [entry.copy() for entry in self.producers.producers.values()]

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest transaction that is open or whose
        marker lies at or above the high watermark (never below the log
        start offset); None when there is none."""
        first = self.producers.first_unstable_offset()
        return None if first is None else max(first, self._log_start_offset)

    @property
    def last_stable_offset(self) -> int:
        """The offset below which every transaction is decided and its marker
        replicated: the first unstable offset when it lies below the high
        watermark, else the high watermark. read_committed reads stop here."""
        first = self.first_unstable_offset
        if first is not None and first < self._high_watermark:
            return first
        return self._high_watermark

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark to `offset` kept within [log start offset,
        log end offset], up or down: a follower takes the leader's (bounded by
        its own log end). Returns the high watermark now."""
        with self._local.lock:
            self._set_high_watermark(self._within_log(offset))
            return self._high_watermark

    def maybe_increment_high_watermark(self, offset: int) -> bool:
        """Move the high watermark up to `offset`, never down: a leader moves
        it to the smallest log end offset of its in-sync replicas. Returns
        whether it moved. ValueError when `offset` lies past the log end
        (Kafka's IllegalArgumentException: no replica can have more)."""
        with self._local.lock:
            leo = self.log_end_offset
            if offset > leo:
                raise ValueError(f"high watermark {offset} past the log end offset {leo}")
            if offset <= self._high_watermark:
                return False
            self._set_high_watermark(offset)
            return True

    def _set_high_watermark(self, offset: int) -> None:
        self._high_watermark = offset
        # Ended transactions whose markers it passed no longer hold the LSO.
        self.producers.on_high_watermark_updated(offset)

    def fetch_upper_bound(self, isolation: FetchIsolation) -> int:
        """The `max_offset` for a `read` with `isolation`."""
        if isolation is FetchIsolation.LOG_END:
            return self.log_end_offset
        if isolation is FetchIsolation.HIGH_WATERMARK:
            return self.high_watermark
        return self.last_stable_offset

    def _within_log(self, offset: int) -> int:
        return min(max(offset, self._log_start_offset), self.log_end_offset)

    @property
    def unflushed_messages(self) -> int:
        return self._local.unflushed_messages

    @property
    def size_bytes(self) -> int:
        return self._local.size_bytes

    @property
    def segments(self) -> list[LogSegment]:
        """A copy of the segment list, oldest first (for inspection)."""
        return self._local.segments

    @property
    def active_segment(self) -> LogSegment:
        return self._local.active_segment

    @property
    def latest_epoch(self) -> int | None:
        return self.epochs.latest_epoch

    @property
    def closed(self) -> bool:
        return self._local.closed

    @property
    def offline(self) -> bool:
        """A storage failure left the log unusable until it is reopened."""
        return self._local.offline

    def update_config(self, config: LogConfig) -> None:
        """Apply changed settings at once: the active segment rolls, indexes and
        retention by the new values (an open segment's index files keep the
        size they were preallocated with)."""
        self._local.update_config(config)

    # ----------------------------------------------------------------- append

    @storage_errors
    def append(
        self,
        records,
        leader_epoch: int,
        *,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        transaction_version: int = 0,
    ) -> AppendInfo:
        """Append a leader's batches: `records` holds one or more whole v2
        batches (the Produce request's records, already validated: CRC,
        records). Offsets are assigned from the log end offset by patching each
        batch's base offset, and partition_leader_epoch is set to
        `leader_epoch`, in place when `records` is writable (bytearray,
        writable memoryview), else in one copy. Idempotent batches are checked
        against the producer state first:

        - a retried batch returns an AppendInfo with duplicate=True and the
          original offsets, writing nothing;
        - InvalidProducerEpoch / OutOfOrderSequence / InvalidTxnState are raised.

        `origin` is who writes (Kafka's AppendOrigin): a producer (CLIENT,
        which may not write control batches: ControlBatchFromClient), or a
        coordinator (COORDINATOR: no sequence checks, transaction markers
        allowed, TransactionCoordinatorFenced for a marker from an old
        coordinator epoch; `transaction_version` 2 demands a bumped producer
        epoch on markers). A marker ending an aborted transaction adds it to
        the transaction index.

        Also raises InvalidRecords (not whole batches), RecordBatchTooLarge
        (more than a segment), LogStorageError (the disk failed; nothing of
        this append stays in the log).
        """
        with self._local.lock:
            self._local.check_usable()
            buf = _writable(records)
            batches = _split_batches(buf)
            if len(buf) > self.config.segment_bytes:
                raise RecordBatchTooLarge(len(buf), self.config.segment_bytes)
            next_offset = self.log_end_offset
            assigned = []
            markers: dict[int, TxnMarker] = {}
            for pos, h in batches:
                if h.is_control:
                    if origin is AppendOrigin.CLIENT:
                        raise ControlBatchFromClient(h.base_offset)
                    marker = _read_marker(buf[pos : pos + h.size], h)
                    if marker is not None:
                        markers[next_offset] = marker
                h = h.assigned(next_offset, leader_epoch)
                assigned.append((pos, h))
                next_offset = h.next_offset
            pending = self.producers.prepare(
                (h for _, h in assigned),
                origin=origin,
                markers=markers,
                transaction_version=transaction_version,
            )
            if isinstance(pending, Duplicate):
                return AppendInfo(
                    pending.first_offset,
                    pending.last_offset,
                    pending.timestamp,
                    pending.last_offset,
                    0,
                    0,
                    -1,
                    -1,
                    self._log_start_offset,
                    duplicate=True,
                )
            for pos, h in assigned:
                set_base_offset(buf, h.base_offset, pos)
                set_partition_leader_epoch(buf, leader_epoch, pos)
            if leader_epoch >= 0:
                # Before the data, as Kafka does: a checkpoint the disk refuses
                # fails the append while nothing of it is in the log.
                self.epochs.assign(leader_epoch, assigned[0][1].base_offset)
            info = self._append_unit(buf, assigned)
            completed = self.producers.apply(pending, info.next_offset)
            self._complete_txns(completed, self._local.active_segment)
            return info

    def append_transaction_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        *,
        commit: bool,
        coordinator_epoch: int,
        leader_epoch: int,
        transaction_version: int = 0,
        timestamp: int | None = None,
    ) -> AppendInfo:
        """WriteTxnMarkers: append the COMMIT or ABORT marker ending the
        producer's transaction in this partition (timestamp default: now).
        Raises InvalidProducerEpoch (an epoch older than the producer's, or
        with transaction_version 2 not newer), TransactionCoordinatorFenced,
        and what `append` raises."""
        batch = build_control_batch(
            commit,
            producer_id,
            producer_epoch,
            coordinator_epoch,
            self._clock() if timestamp is None else timestamp,
        )
        return self.append(
            bytearray(batch),
            leader_epoch,
            origin=AppendOrigin.COORDINATOR,
            transaction_version=transaction_version,
        )

    @storage_errors
    def append_as_follower(self, records) -> AppendInfo | None:
        """Append batches fetched from the leader, keeping their offsets and
        leader epochs. A partial batch at the end (Fetch responses may end in
        one) is ignored. CRCs are checked. Returns None when no whole batch
        was given. Raises UnexpectedAppendOffset when the first batch starts
        below the log end offset, InvalidRecords for corrupt or non-increasing
        batches, RecordBatchTooLarge for a batch larger than a segment,
        LogStorageError (batches appended before the failure stay).
        """
        with self._local.lock:
            self._local.check_usable()
            view = memoryview(records).cast("B")
            try:
                batches = list(iter_batches(view, check_crc=True, partial_tail=True))
            except DecodeError as e:
                raise InvalidRecords(str(e)) from e
            if not batches:
                return None
            leo = self.log_end_offset
            if batches[0][1].base_offset < leo:
                raise UnexpectedAppendOffset(batches[0][1].base_offset, leo)
            expected = leo
            for pos, h in batches:
                if h.base_offset < expected or h.last_offset_delta < 0:
                    raise InvalidRecords(
                        f"batch offsets {h.base_offset}..{h.last_offset} do not follow "
                        f"offset {expected - 1}",
                        pos,
                    )
                if h.size > self.config.segment_bytes:
                    raise RecordBatchTooLarge(h.size, self.config.segment_bytes)
                expected = h.next_offset
            markers = {
                h.base_offset: _read_marker(view[pos : pos + h.size], h)
                for pos, h in batches
                if h.is_control
            }
            total: AppendInfo | None = None
            for start, end, unit in self._local.segment_runs(batches):
                info = self._append_unit(view[start:end], unit)
                completed = []
                for _, h in unit:
                    if h.partition_leader_epoch >= 0:
                        self.epochs.assign(h.partition_leader_epoch, h.base_offset)
                    txn = self.producers.update_from_batch(h, markers.get(h.base_offset))
                    if txn is not None:
                        completed.append(txn)
                self._complete_txns(completed, self._local.active_segment)
                total = info if total is None else _merge(total, info)
            return total

    def _append_unit(self, data, batches: list[tuple[int, BatchHeader]]) -> AppendInfo:
        """Write batches (offsets final) into one segment, rolling first when needed."""
        first, last = batches[0][1], batches[-1][1]
        max_ts, max_ts_offset, count = -1, first.last_offset, 0
        for _, h in batches:
            if h.max_timestamp > max_ts:
                max_ts, max_ts_offset = h.max_timestamp, h.last_offset
            count += h.records_count
        rolled = self._local.maybe_roll(len(data), max_ts, first.base_offset, last.last_offset)
        if rolled is not None:
            self._snapshot_producers_at(rolled.base_offset)
        position = self._local.append(data, batches)
        return AppendInfo(
            first.base_offset,
            last.last_offset,
            max_ts,
            max_ts_offset,
            count,
            len(data),
            self._local.active_segment.base_offset,
            position,
            self._log_start_offset,
        )

    # ------------------------------------------------------------------- roll

    @storage_errors
    def roll(self) -> LogSegment:
        """Start a new segment at the log end offset now (no-op when the
        active segment is empty)."""
        with self._local.lock:
            self._local.check_usable()
            self._roll()
            return self._local.active_segment

    def _roll(self) -> None:
        rolled = self._local.roll()
        if rolled is not None:
            self._snapshot_producers_at(rolled.base_offset)

    def _snapshot_producers_at(self, segment_base: int) -> None:
        """A new segment starts at `segment_base`: snapshot the producer state
        there, as Kafka does on every roll, so a restart replays little."""
        self.producers.map_end_offset = max(self.producers.map_end_offset, segment_base)
        try:
            self.producers.take_snapshot()
        except OSError as e:
            log.warning("%s: producer snapshot at %d failed: %s", self.dir, segment_base, e)

    # ------------------------------------------------------------------- read

    @storage_errors
    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> ReadResult:
        """Whole batches from the batch holding `start_offset` on, at most
        `max_bytes` of them (but at least one batch when `min_one_batch`),
        only batches whose last offset is below `max_offset`
        (`fetch_upper_bound(...)`: the high watermark or last stable offset
        for consumers, None or the log end for followers), all from one
        segment.

        Raises OffsetOutOfRange when start_offset < log start offset or >
        log end offset. At the log end (or at/after max_offset) the result is
        empty. The result is a file range (see ReadResult)."""
        if max_bytes < 0:
            raise ValueError(f"max_bytes {max_bytes} is negative")
        with self._local.lock:
            self._local.check_usable()
            leo = self.log_end_offset
            if start_offset < self._log_start_offset or start_offset > leo:
                raise OffsetOutOfRange(start_offset, self._log_start_offset, leo)
            return self._local.read(start_offset, max_bytes, max_offset, min_one_batch)

    @storage_errors
    def collect_aborted_transactions(
        self, start_offset: int, upper_bound_offset: int
    ) -> list[AbortedTxn]:
        """The aborted transactions a read_committed fetch of [start_offset,
        upper_bound_offset) must announce: those with a marker at or after
        `start_offset` and a first offset below `upper_bound_offset` (Kafka's
        LocalLog.collectAbortedTransactions; the Fetch response lists their
        producer id and first offset)."""
        with self._local.lock:
            self._local.check_usable()
            return self._local.collect_aborted_transactions(start_offset, upper_bound_offset)

    @storage_errors
    def aborted_transactions(self, result: ReadResult) -> list[AbortedTxn]:
        """The aborted transactions overlapping what `result` (a read) holds,
        for a read_committed Fetch response (empty for an empty read)."""
        if result.size == 0:
            return []
        with self._local.lock:
            self._local.check_usable()
            upper = self._local.offset_after(result)
            return self._local.collect_aborted_transactions(result.start_offset, upper)

    # --------------------------------------------------------- offset lookups

    @storage_errors
    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets by time: the first record at or after the log start
        offset whose timestamp is >= `timestamp`, with its timestamp and its
        batch's leader epoch; None when there is none. Only the one batch
        that holds it is decoded."""
        with self._local.lock:
            self._local.check_usable()
            start = self._log_start_offset
            try:
                for segment in self._local.segments:
                    if segment.size and segment.largest_timestamp() >= timestamp:
                        for pos, h in segment.batches_by_timestamp(timestamp, start):
                            for offset, ts in _record_timestamps(segment, pos, h):
                                if ts >= timestamp and offset >= start:
                                    return TimestampAndOffset(ts, offset, _epoch_or_none(h))
                        return None
            except OSError as e:
                raise LogStorageError("offset for timestamp", self.dir, e) from e
            return None

    @storage_errors
    def max_timestamp_offset(self) -> TimestampAndOffset | None:
        """ListOffsets -3 (MAX_TIMESTAMP): the record with the largest
        timestamp (the first such), None for an empty log."""
        with self._local.lock:
            self._local.check_usable()
            best = None
            for segment in self._local.segments:
                if best is None or segment.max_timestamp > best.max_timestamp:
                    best = segment
            if best is None or best.size == 0:
                return None
            try:
                found = best.find_batch_with_max_timestamp()
                if found is None:
                    return None
                pos, h = found
                max_ts, max_offset = -1, None
                for offset, ts in _record_timestamps(best, pos, h):
                    if max_offset is None or ts > max_ts:
                        max_ts, max_offset = ts, offset
            except OSError as e:
                raise LogStorageError("max timestamp", self.dir, e) from e
            if max_offset is None:
                return None
            return TimestampAndOffset(max_ts, max_offset, _epoch_or_none(h))

    # ------------------------------------------------------------ leader epochs

    @storage_errors
    def assign_epoch_start_offset(self, epoch: int, start_offset: int | None = None) -> None:
        """Record that `epoch` starts at `start_offset` (default: the log end
        offset) -- what a new leader does before its first append."""
        with self._local.lock:
            self._local.check_usable()
            self.epochs.assign(epoch, self.log_end_offset if start_offset is None else start_offset)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset), see LeaderEpochCache."""
        with self._local.lock:
            return self.epochs.end_offset_for(epoch, self.log_end_offset)

    def epoch_entries(self) -> list[EpochEntry]:
        return self.epochs.entries()

    # ---------------------------------------------------------------- truncate

    @storage_errors
    def truncate_to(self, offset: int) -> bool:
        """Remove every batch holding an offset >= `offset` (a batch holding it
        in its middle goes whole, so the log end may land below `offset`).
        Returns False when there was nothing to remove.

        The leader-epoch entries from the log end on go even then, as Kafka's
        truncateTo drops them: a replica that became leader and lost it before
        appending keeps an entry for an epoch no batch has and the next leader
        never had; kept, a follower would send it as its last fetched epoch,
        be told it diverges where its log already ends, cut nothing, and
        fetch again forever."""
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        with self._local.lock:
            self._local.check_usable()
            if offset >= self.log_end_offset:
                self.epochs.truncate_from_end(self.log_end_offset)
                return False
            if offset < self._local.segments[0].base_offset:
                self._truncate_fully(offset)
                return True
            self._local.truncate_to(offset)
            leo = self.log_end_offset
            self._log_start_offset = min(self._log_start_offset, leo)
            self._high_watermark = min(self._high_watermark, leo)
            self.epochs.truncate_from_end(leo)
            self.producers.delete_snapshots_above(leo)
            self._rebuild_producer_state(self._clock())
            log.info("%s: truncated to offset %d", self.dir, leo)
            return True

    @storage_errors
    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every batch and restart the (empty) log at `offset`."""
        if offset < 0:
            raise ValueError(f"cannot start a log at negative offset {offset}")
        with self._local.lock:
            self._local.check_usable()
            self._truncate_fully(offset)

    def _truncate_fully(self, offset: int) -> None:
        self._local.truncate_fully_and_start_at(offset)
        self._log_start_offset = offset
        self._high_watermark = offset
        self.epochs.clear()
        self.producers.truncate_fully_and_start_at(offset)
        log.info("%s: truncated fully, restarting at offset %d", self.dir, offset)

    # ---------------------------------------------------------- delete / retain

    @storage_errors
    def delete_records_before(self, offset: int, high_watermark: int | None = None) -> int:
        """DeleteRecords: move the log start offset up to `offset` (never past
        `high_watermark`) and delete the segments that lie entirely below it;
        the log's high watermark moves up with the log start. Returns the new
        log start offset.

        `high_watermark` here and in `delete_old_segments` / `log_to_clean`
        defaults to the log end offset, not `self.high_watermark`: the broker
        still passes its partition's own."""
        with self._local.lock:
            self._local.check_usable()
            hw = self.log_end_offset if high_watermark is None else high_watermark
            if offset < 0 or offset > hw:
                raise OffsetOutOfRange(
                    offset, self._log_start_offset, hw, what="delete records before"
                )
            self._increment_log_start_offset(offset)
            start = self._log_start_offset
            self._delete_old(lambda seg, nxt: nxt is not None and nxt.base_offset <= start, hw)
            return start

    @storage_errors
    def delete_old_segments(self, high_watermark: int | None = None) -> int:
        """Retention: delete whole segments, oldest first, that are older than
        retention_ms (by their largest batch timestamp) or that keep the log
        above retention_bytes, and segments below the log start offset. Never
        a segment holding offsets at or above `high_watermark` (default: the
        log end). The active segment goes too when it qualifies (a new empty
        one is rolled first), as in Kafka. Returns the number deleted."""
        with self._local.lock:
            self._local.check_usable()
            hw = self.log_end_offset if high_watermark is None else high_watermark
            now = self._clock()
            deleted = 0
            cfg = self.config
            if cfg.delete_enabled and cfg.retention_ms >= 0:
                deleted += self._delete_old(
                    lambda seg, nxt: now - seg.largest_timestamp() > cfg.retention_ms, hw
                )
            if cfg.delete_enabled and cfg.retention_bytes >= 0:
                excess = self.size_bytes - cfg.retention_bytes
                if excess > 0:

                    def over_size(seg, nxt):
                        nonlocal excess
                        if excess - seg.size >= 0:
                            excess -= seg.size
                            return True
                        return False

                    deleted += self._delete_old(over_size, hw)
            start = self._log_start_offset
            deleted += self._delete_old(
                lambda seg, nxt: nxt is not None and nxt.base_offset <= start, hw
            )
            return deleted

    def _delete_old(self, predicate, hw: int) -> int:
        """Delete the oldest segments while `predicate(segment, next segment)`
        holds and the segment lies below `hw`; the log start moves to the
        first segment kept."""
        leo = self.log_end_offset
        segments = self._local.segments
        deletable = []
        for i, seg in enumerate(segments):
            nxt = segments[i + 1] if i + 1 < len(segments) else None
            upper = nxt.base_offset if nxt is not None else leo
            if nxt is None and seg.size == 0:
                break
            if hw >= upper and predicate(seg, nxt):
                deletable.append(seg)
            else:
                break
        if not deletable:
            return 0
        if len(deletable) == len(segments):
            self._roll()
        segments = self._local.segments
        self._increment_log_start_offset(segments[len(deletable)].base_offset)
        self._local.delete_segments(deletable)
        self.producers.delete_snapshots_below(self._local.segments[0].base_offset)
        return len(deletable)

    def _increment_log_start_offset(self, offset: int) -> None:
        if offset > self._log_start_offset:
            self._log_start_offset = offset
            # Never below the log start: the records under it are gone.
            self._set_high_watermark(max(self._high_watermark, offset))
            self.producers.on_log_start_offset_incremented(offset)
            self.epochs.truncate_from_start(offset)
            log.info("%s: log start offset is now %d", self.dir, offset)

    # ------------------------------------------------------------- compaction

    def now_ms(self) -> int:
        return self._clock()

    @storage_errors
    def log_to_clean(self, checkpoint: int | None, high_watermark: int | None = None) -> LogToClean:
        """What the cleaner may compact now, from its checkpointed first dirty
        offset, below `high_watermark` (default: the log end; see
        cleanable.py) and below the first unstable offset: as in Kafka, the
        cleaner never reaches a transaction that is not decided and
        replicated."""
        with self._local.lock:
            self._local.check_usable()
            bound = self.log_end_offset if high_watermark is None else high_watermark
            first_unstable = self.first_unstable_offset
            if first_unstable is not None:
                bound = min(bound, first_unstable)
            return log_to_clean(
                self._local.segments,
                self.config,
                checkpoint=checkpoint,
                log_start_offset=self._log_start_offset,
                high_watermark=bound,
                now_ms=self._clock(),
            )

    def active_producer_last_offsets(self) -> dict[int, int]:
        """Producer id -> offset of its last batch, for every producer the log
        tracks: compaction keeps those batches (maybe emptied)."""
        with self._local.lock:
            return {
                pid: entry.last_offset
                for pid, entry in self.producers.producers.items()
                if entry.last_offset >= 0
            }

    def replace_segments(
        self, cleaned: LogSegment, old: list[LogSegment], sizes: list[int]
    ) -> bool:
        """Swap the cleaner's `.cleaned` segment in for `old`; see
        LocalLog.replace_segments."""
        return self._local.replace_segments(cleaned, old, sizes)

    # ------------------------------------------------------------- producers

    def remove_expired_producers(self) -> list[int]:
        """Forget producers idle longer than producer_id_expiration_ms."""
        with self._local.lock:
            return self.producers.remove_expired_producers(self._clock())

    # ------------------------------------------------------------- topic id

    @storage_errors
    def assign_topic_id(self, topic_id: uuid.UUID) -> None:
        """Write partition.metadata (made durable by the next flush); raises
        InconsistentTopicId if the log already has another topic id."""
        with self._local.lock:
            self._local.check_usable()
            if self.topic_id == topic_id:
                return
            if self.topic_id is not None:
                raise InconsistentTopicId(self.topic_id, topic_id)
            try:
                write_partition_metadata(self.dir, topic_id, fsync=False)
            except OSError as e:
                raise LogStorageError("write partition metadata", self.dir, e) from e
            self.topic_id = topic_id
            self._metadata_dirty = True

    # ------------------------------------------------------------------ flush

    def flush_due(self) -> bool:
        """Whether the flush policy (flush_interval_messages/_ms) asks for a flush."""
        return self._local.flush_due()

    def message_count_flush_due(self) -> bool:
        """Whether flush.messages records are unflushed. Kafka checks this inside
        every append and fsyncs before answering; flush.ms is left to the
        periodic flusher (`flush_due`)."""
        return self._local.message_count_flush_due()

    def flush(self, offset: int | None = None) -> int:
        """fsync every segment holding offsets below `offset` (default the log
        end) that is not yet known to be on disk, the new files' directory,
        the partition metadata and the leader epoch checkpoint; then advance
        the recovery point. Blocks on the disk: run it in a worker thread.
        Returns the recovery point. A failed fsync takes the log offline
        (LogOfflineError)."""
        with self._local.flush_lock:
            with self._local.lock:
                self._local.check_usable()
                meta_dirty, self._metadata_dirty = self._metadata_dirty, False
            flushed = self._local.flush(offset)
            try:
                if meta_dirty:
                    fsync_path(os.path.join(self.dir, PARTITION_METADATA))
                    fsync_dir(self.dir)
                self.epochs.flush_checkpoint()
            except OSError as e:
                # As for the segments (LocalLog.flush): no retry after a failed fsync.
                self._local.mark_offline(e)
                raise LogOfflineError(self.dir, e) from e
            return self._local.mark_flushed(flushed)

    # ------------------------------------------------------------------ close

    def close(self) -> None:
        """Snapshot the producer state, write the final index entries, trim the
        indexes, fsync everything and close the files. The recovery point is
        then the log end offset. Blocks on the disk."""
        with self._local.flush_lock, self._local.lock:
            if self._local.closed:
                return
            if self._local.offline:
                self._local.close_quietly()
                return
            try:
                self.producers.map_end_offset = self.log_end_offset
                snapshot = self.producers.take_snapshot()
                if snapshot:
                    fsync_path(snapshot)
                self.epochs.write(fsync=True)
                if self.topic_id is not None and self._metadata_dirty:
                    fsync_path(os.path.join(self.dir, PARTITION_METADATA))
            except OSError as e:
                self._local.close_quietly()
                raise LogStorageError("close", self.dir, e) from e
            # The segments, then the directory, which makes the files above durable.
            self._local.close()

    def delete(self) -> None:
        """Close the log and remove its directory and everything in it."""
        self._local.delete()

    def __repr__(self) -> str:
        return f"UnifiedLog({self.dir!r})"


def _load_epoch_checkpoint(dir: str, path: str) -> LeaderEpochCache | None:
    """The leader epoch checkpoint, None when it is missing or unreadable (the
    log then rebuilds it from the batch headers)."""
    try:
        return LeaderEpochCache.load(path)
    except FileNotFoundError:
        return None
    except (CorruptFileError, OSError) as e:
        log.warning("%s: unreadable leader epoch checkpoint, rebuilding it: %s", dir, e)
        return None


def _record_timestamps(segment: LogSegment, pos: int, h: BatchHeader):
    data = segment.file.pread(h.size, pos)
    try:
        for record in iter_records(data):
            yield h.base_offset + record.offset_delta, record_timestamp(h, record)
    except DecodeError as e:
        raise LogStorageError(f"decode batch at {h.base_offset}", segment.log_path, e) from e


def _merge(a: AppendInfo, b: AppendInfo) -> AppendInfo:
    """Two consecutive appends as one (first's position, both's totals)."""
    newer_max = b.max_timestamp > a.max_timestamp
    return a._replace(
        last_offset=b.last_offset,
        max_timestamp=b.max_timestamp if newer_max else a.max_timestamp,
        offset_of_max_timestamp=b.offset_of_max_timestamp
        if newer_max
        else a.offset_of_max_timestamp,
        record_count=a.record_count + b.record_count,
        size=a.size + b.size,
    )


def _assign_if_newer(epochs: LeaderEpochCache, h: BatchHeader) -> None:
    epoch = h.partition_leader_epoch
    if epoch >= 0 and (epochs.latest_epoch is None or epoch > epochs.latest_epoch):
        epochs.assign(epoch, h.base_offset)


def _read_marker(batch, h: BatchHeader) -> TxnMarker | None:
    """The transaction marker a control batch holds; None for an emptied one
    (compaction removed its transaction) or another control type.
    InvalidRecords when its record does not parse."""
    try:
        for record in iter_records(batch):
            kind, coordinator_epoch = parse_control_record(record)
            if kind in (CONTROL_ABORT, CONTROL_COMMIT) and coordinator_epoch is not None:
                return TxnMarker(kind == CONTROL_COMMIT, coordinator_epoch)
            return None
    except DecodeError as e:
        raise InvalidRecords(f"control batch at offset {h.base_offset}: {e}") from e
    return None


def _replayed_marker(segment: LogSegment, pos: int, h: BatchHeader) -> TxnMarker | None:
    try:
        return _read_marker(segment.file.pread(h.size, pos), h)
    except InvalidRecords as e:
        # Recovery checked the CRC of unflushed batches; this one was trusted.
        log.warning("%s: ignoring unreadable transaction marker: %s", segment.log_path, e)
        return None


def _epoch_or_none(h: BatchHeader) -> int | None:
    return h.partition_leader_epoch if h.partition_leader_epoch >= 0 else None


def _writable(records):
    """A writable byte view of `records`, copying only when it is read-only."""
    view = memoryview(records)
    if view.readonly:
        return memoryview(bytearray(view))
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


def _split_batches(buf) -> list[tuple[int, BatchHeader]]:
    """(position, header) of the whole batches in `buf`; InvalidRecords when
    `buf` is not exactly a sequence of v2 batches."""
    end = len(buf)
    if end == 0:
        raise InvalidRecords("no record batch")
    batches = []
    pos = 0
    while pos < end:
        if end - pos < BATCH_HEADER_SIZE:
            raise InvalidRecords(f"{end - pos} trailing bytes are not a batch", pos)
        try:
            h = read_batch_header(buf, pos)
        except DecodeError as e:
            raise InvalidRecords(str(e), pos) from e
        if h.size > end - pos:
            raise InvalidRecords(f"batch of {h.size} bytes with {end - pos} left", pos)
        if h.last_offset_delta < 0:
            raise InvalidRecords(f"negative last offset delta {h.last_offset_delta}", pos)
        batches.append((pos, h))
        pos += h.size
    return batches
