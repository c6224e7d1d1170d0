"""One partition's durable commit log (Kafka's UnifiedLog, minus tiering and
transactions).

A Log owns a directory `<log dir>/<topic>-<partition>/` of segments, the
leader epoch cache and the idempotent-producer state. All offsets are Kafka
offsets; every method works on whole record batches and reads only their
61-byte headers.

Threads: one lock serializes every method, so a Log may be used from several
threads; the intended use is the broker's Trio thread for everything and a
worker thread for `flush()`. `flush()` holds the lock only to collect what to
fsync and to advance the recovery point, never while it waits for the disk,
so appends and reads never wait on an fsync. Nothing but `flush()`, `close()`
and `delete()` waits for the disk; run those three in a worker thread
(`close()` and `delete()` when nothing else uses the log any more).

Time: `clock()` (wall-clock ms, injectable) is read for segment.ms rolls of
batches without timestamps, retention.ms, flush.ms and producer expiry.
"""

from __future__ import annotations

import bisect
import functools
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable

from logstore.checkpoint import EpochEntry
from logstore.cleanable import LogToClean, log_to_clean
from logstore.config import LogConfig
from logstore.epoch_cache import LeaderEpochCache
from logstore.errors import (
    CorruptFileError,
    InconsistentTopicId,
    InvalidRecords,
    LogClosedError,
    LogError,
    LogOfflineError,
    LogStorageError,
    OffsetOutOfRange,
    RecordBatchTooLarge,
    UnexpectedAppendOffset,
)
from logstore.files import (
    DELETED_SUFFIX,
    LEADER_EPOCH_CHECKPOINT,
    PARTITION_METADATA,
    SWAP_SUFFIX,
    fsync_dir,
    fsync_path,
)
from logstore.index import INT32_MAX
from logstore.partition_metadata import read_partition_metadata, write_partition_metadata
from logstore.producer_state import Duplicate, ProducerStateManager
from logstore.recovery import load_log
from logstore.results import AppendInfo, ReadResult, TimestampAndOffset
from logstore.segment import LogSegment
from wire.errors import DecodeError
from wire.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    iter_batches,
    iter_records,
    read_batch_header,
    record_timestamp,
    set_base_offset,
    set_partition_leader_epoch,
)

log = logging.getLogger(__name__)


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _storage_errors(method):
    """Turn an OSError escaping `method` into LogStorageError (a typed error
    naming the operation and the log directory)."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except OSError as e:
            raise LogStorageError(method.__name__, self.dir, e) from e

    return wrapper


class Log:
    """Use `Log.open(dir, config, ...)`."""

    def __init__(self, dir: str, config: LogConfig, clock: Callable[[], int]):
        self.dir = dir
        self.config = config
        self._clock = clock
        self._lock = threading.RLock()
        self._flush_lock = threading.Lock()
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._log_start_offset = 0
        self._recovery_point = 0
        self._last_flush_ms = clock()
        self._dir_dirty = False
        self._metadata_dirty = False
        self._truncated_during_flush: int | None = None
        # Files changed below the recovery point (truncations) that need an fsync.
        self._extra_flush_paths: set[str] = set()
        self._closed = False
        self._offline: BaseException | None = None
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
        clean_shutdown: bool = False,
        clock: Callable[[], int] | None = None,
    ) -> Log:
        """Open (creating if needed) the log in `dir`.

        `recovery_point` and `log_start_offset` come from the log dir's
        checkpoint files, `clean_shutdown` from its `.kafka_cleanshutdown`
        marker (see logdir.py). After an unclean shutdown everything from the
        recovery point on is validated and a bad tail is cut. `clock` returns
        wall-clock milliseconds (tests pass their own).
        """
        self = cls(dir, config or LogConfig(), clock or wall_clock_ms)
        try:
            self._load(recovery_point, log_start_offset, clean_shutdown)
        except OSError as e:
            self._close_segments_quietly()
            raise LogStorageError("open log", dir, e) from e
        return self

    def _load(self, recovery_point: int, log_start_offset: int, clean_shutdown: bool) -> None:
        dir, config, now = self.dir, self.config, self._clock()
        os.makedirs(dir, exist_ok=True)
        epoch_path = os.path.join(dir, LEADER_EPOCH_CHECKPOINT)
        try:
            epochs: LeaderEpochCache | None = LeaderEpochCache.load(epoch_path)
        except FileNotFoundError:
            epochs = None
        except (CorruptFileError, OSError) as e:
            log.warning("%s: unreadable leader epoch checkpoint, rebuilding it: %s", dir, e)
            epochs = None

        def on_recovered_batch(h: BatchHeader) -> None:
            if epochs is not None:
                _assign_if_newer(epochs, h)

        loaded = load_log(
            dir,
            config,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            clean_shutdown=clean_shutdown,
            now_ms=now,
            on_recovered_batch=on_recovered_batch,
        )
        self._segments = loaded.segments
        self._bases = [s.base_offset for s in self._segments]
        self._log_start_offset = loaded.log_start_offset
        self._recovery_point = loaded.recovery_point
        leo = self.log_end_offset

        if epochs is None or loaded.reset:
            epochs = LeaderEpochCache(epoch_path)
            if not loaded.reset:
                for seg in self._segments:
                    for _, h in seg.batches():
                        _assign_if_newer(epochs, h)
            epochs.write(fsync=False)
        epochs.truncate_from_end(leo)
        epochs.truncate_from_start(self._log_start_offset)
        self.epochs = epochs

        self.producers = ProducerStateManager(dir, config.producer_id_expiration_ms)
        if loaded.reset:
            self.producers.truncate_fully_and_start_at(leo)
        else:
            self._rebuild_producer_state(now)

        try:
            self.topic_id = read_partition_metadata(dir)
        except CorruptFileError as e:
            log.warning("%s: ignoring unreadable %s: %s", dir, PARTITION_METADATA, e)
        log.info(
            "opened log %s: offsets [%d, %d), %d segments, recovery point %d",
            dir,
            self._log_start_offset,
            leo,
            len(self._segments),
            self._recovery_point,
        )

    def _rebuild_producer_state(self, now_ms: int) -> None:
        """Newest snapshot at or below the log end, then the batches after it."""
        leo = self.log_end_offset
        snap = self.producers.load_latest_snapshot(leo, now_ms)
        self.producers.delete_snapshots_below(self._segments[0].base_offset)
        start = snap if snap is not None else self._segments[0].base_offset
        for seg in self._segments[max(0, self._segment_index(start)) :]:
            found = seg.translate_offset(start)
            if found is None:
                continue
            for _, h in seg.batches(found[0]):
                self.producers.update_from_batch(h)
        self.producers.map_end_offset = leo

    # ------------------------------------------------------------- properties

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def recovery_point(self) -> int:
        """Every offset below this is known to be on disk (fsynced)."""
        return self._recovery_point

    @property
    def unflushed_messages(self) -> int:
        return self.log_end_offset - self._recovery_point

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def segments(self) -> list[LogSegment]:
        """A copy of the segment list, oldest first (for inspection)."""
        return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def latest_epoch(self) -> int | None:
        return self.epochs.latest_epoch

    @property
    def closed(self) -> bool:
        return self._closed

    def update_config(self, config: LogConfig) -> None:
        """Apply changed settings at once: the active segment rolls, indexes and
        retention by the new values (an open segment's index files keep the
        size they were preallocated with)."""
        with self._lock:
            self.config = config
            for segment in self._segments:
                segment.config = config

    @property
    def offline(self) -> bool:
        """A storage failure left the log unusable until it is reopened."""
        return self._offline is not None

    def _check_usable(self) -> None:
        if self._closed:
            raise LogClosedError(self.dir)
        if self._offline is not None:
            raise LogOfflineError(self.dir, self._offline)

    def _segment_index(self, offset: int) -> int:
        """Index of the segment whose range holds `offset` (-1 below the first)."""
        return bisect.bisect_right(self._bases, offset) - 1

    # ----------------------------------------------------------------- append

    @_storage_errors
    def append(self, records, leader_epoch: int) -> AppendInfo:
        """Append a leader's batches: `records` holds one or more whole v2
        batches (the Produce request's records, already validated: CRC,
        records). Offsets are assigned from the log end offset by patching each
        batch's base offset, and partition_leader_epoch is set to
        `leader_epoch`, in place when `records` is writable (bytearray,
        writable memoryview), else in one copy. Idempotent batches are checked
        against the producer state first:

        - a retried batch returns an AppendInfo with duplicate=True and the
          original offsets, writing nothing;
        - InvalidProducerEpoch / OutOfOrderSequence are raised.

        Also raises InvalidRecords (not whole batches), RecordBatchTooLarge
        (more than a segment), LogStorageError (the disk failed; nothing of
        this append stays in the log).
        """
        with self._lock:
            self._check_usable()
            buf = _writable(records)
            batches = _split_batches(buf)
            if len(buf) > self.config.segment_bytes:
                raise RecordBatchTooLarge(len(buf), self.config.segment_bytes)
            next_offset = self.log_end_offset
            assigned = []
            for pos, h in batches:
                h = h._replace(base_offset=next_offset, partition_leader_epoch=leader_epoch)
                assigned.append((pos, h))
                next_offset = h.next_offset
            pending = self.producers.prepare(h for _, h in assigned)
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
            self.producers.apply(pending, info.next_offset)
            return info

    @_storage_errors
    def append_as_follower(self, records) -> AppendInfo | None:
        """Append batches fetched from the leader, keeping their offsets and
        leader epochs. A partial batch at the end (Fetch responses may end in
        one) is ignored. CRCs are checked. Returns None when no whole batch
        was given. Raises UnexpectedAppendOffset when the first batch starts
        below the log end offset, InvalidRecords for corrupt or non-increasing
        batches, RecordBatchTooLarge for a batch larger than a segment,
        LogStorageError (batches appended before the failure stay).
        """
        with self._lock:
            self._check_usable()
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
            total: AppendInfo | None = None
            for start, end, unit in self._units(batches):
                info = self._append_unit(view[start:end], unit)
                for _, h in unit:
                    if h.partition_leader_epoch >= 0:
                        self.epochs.assign(h.partition_leader_epoch, h.base_offset)
                    self.producers.update_from_batch(h)
                total = info if total is None else _merge(total, info)
            return total

    def _units(self, batches):
        """Split follower batches into runs that each fit one segment."""
        limit = self.config.segment_bytes
        unit: list = []
        start = batches[0][0]
        for pos, h in batches:
            if unit and (
                pos + h.size - start > limit or h.last_offset - unit[0][1].base_offset > INT32_MAX
            ):
                yield start, pos, unit
                unit, start = [], pos
            unit.append((pos - start, h))
        yield start, start + sum(h.size for _, h in unit), unit

    def _append_unit(self, data, batches: list[tuple[int, BatchHeader]]) -> AppendInfo:
        """Write batches (offsets final) into one segment, rolling first when needed."""
        now = self._clock()
        first, last = batches[0][1], batches[-1][1]
        max_ts, max_ts_offset, count = -1, first.last_offset, 0
        for _, h in batches:
            if h.max_timestamp > max_ts:
                max_ts, max_ts_offset = h.max_timestamp, h.last_offset
            count += h.records_count
        segment = self._segments[-1]
        if segment.should_roll(len(data), max_ts, last.last_offset, now):
            segment = self._roll(first.base_offset, now)
        try:
            position = segment.append(data, batches)
        except LogOfflineError as e:
            self._offline = e
            raise
        return AppendInfo(
            first.base_offset,
            last.last_offset,
            max_ts,
            max_ts_offset,
            count,
            len(data),
            segment.base_offset,
            position,
            self._log_start_offset,
        )

    # ------------------------------------------------------------------- roll

    @_storage_errors
    def roll(self) -> LogSegment:
        """Start a new segment at the log end offset now (no-op when the
        active segment is empty)."""
        with self._lock:
            self._check_usable()
            return self._roll(None, self._clock())

    def _roll(self, expected_next_offset: int | None, now_ms: int) -> LogSegment:
        active = self._segments[-1]
        new_base = max(expected_next_offset or 0, self.log_end_offset)
        if new_base == active.base_offset and active.size == 0:
            return active
        if new_base <= active.base_offset:
            raise LogError(f"cannot roll to offset {new_base} below segment {active.base_offset}")
        segment = LogSegment.create(self.dir, new_base, self.config, now_ms)
        try:
            active.on_become_inactive()
        except LogStorageError:
            segment.delete()
            segment.close_files()
            raise
        self._segments.append(segment)
        self._bases.append(new_base)
        self._dir_dirty = True
        self.producers.map_end_offset = max(self.producers.map_end_offset, new_base)
        try:
            self.producers.take_snapshot()
        except OSError as e:
            log.warning("%s: producer snapshot at %d failed: %s", self.dir, new_base, e)
        log.info("%s: rolled a new segment at offset %d", self.dir, new_base)
        return segment

    # ------------------------------------------------------------------- read

    @_storage_errors
    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> ReadResult:
        """Whole batches from the batch holding `start_offset` on, at most
        `max_bytes` of them (but at least one batch when `min_one_batch`),
        only batches whose last offset is below `max_offset` (the high
        watermark for consumers; None for followers), all from one segment.

        Raises OffsetOutOfRange when start_offset < log start offset or >
        log end offset. At the log end (or at/after max_offset) the result is
        empty. The result is a file range (see ReadResult)."""
        if max_bytes < 0:
            raise ValueError(f"max_bytes {max_bytes} is negative")
        with self._lock:
            self._check_usable()
            leo = self.log_end_offset
            if start_offset < self._log_start_offset or start_offset > leo:
                raise OffsetOutOfRange(start_offset, self._log_start_offset, leo)
            if start_offset == leo or (max_offset is not None and start_offset >= max_offset):
                return self._empty_read(start_offset)
            i = max(0, self._segment_index(start_offset))
            try:
                while i < len(self._segments):
                    segment = self._segments[i]
                    result = self._read_segment(
                        segment, start_offset, max_bytes, max_offset, min_one_batch
                    )
                    if result is not None:
                        return result
                    i += 1
            except OSError as e:
                raise LogStorageError("read", self.dir, e) from e
            return self._empty_read(start_offset)

    def _read_segment(self, segment, start_offset, max_bytes, max_offset, min_one_batch):
        found = segment.translate_offset(start_offset)
        if found is None:
            return None
        start_pos, first = found
        limit = segment.size
        if max_offset is not None and max_offset < segment.next_offset:
            bound = segment.translate_offset(max_offset, start_pos)
            if bound is not None:
                limit = bound[0]
        if start_pos >= limit:
            return ReadResult(None, start_pos, 0, start_offset, segment.base_offset)
        if first.size > max_bytes:
            size = first.size if min_one_batch else 0
        elif start_pos + max_bytes >= limit:
            size = limit - start_pos
        else:
            end = segment.batch_boundary_at_or_below(start_pos + max_bytes, start_pos)
            size = end - start_pos
        return ReadResult(
            segment.file if size else None, start_pos, size, start_offset, segment.base_offset
        )

    def _empty_read(self, start_offset: int) -> ReadResult:
        active = self._segments[-1]
        return ReadResult(None, active.size, 0, start_offset, active.base_offset)

    # --------------------------------------------------------- offset lookups

    @_storage_errors
    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets by time: the first record at or after the log start
        offset whose timestamp is >= `timestamp`, with its timestamp and its
        batch's leader epoch; None when there is none. Only the one batch
        that holds it is decoded."""
        with self._lock:
            self._check_usable()
            start = self._log_start_offset
            try:
                for segment in self._segments:
                    if segment.size and segment.largest_timestamp() >= timestamp:
                        for pos, h in segment.batches_by_timestamp(timestamp, start):
                            for offset, ts in self._record_timestamps(segment, pos, h):
                                if ts >= timestamp and offset >= start:
                                    return TimestampAndOffset(ts, offset, _epoch_or_none(h))
                        return None
            except OSError as e:
                raise LogStorageError("offset for timestamp", self.dir, e) from e
            return None

    @_storage_errors
    def max_timestamp_offset(self) -> TimestampAndOffset | None:
        """ListOffsets -3 (MAX_TIMESTAMP): the record with the largest
        timestamp (the first such), None for an empty log."""
        with self._lock:
            self._check_usable()
            best = None
            for segment in self._segments:
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
                for offset, ts in self._record_timestamps(best, pos, h):
                    if max_offset is None or ts > max_ts:
                        max_ts, max_offset = ts, offset
            except OSError as e:
                raise LogStorageError("max timestamp", self.dir, e) from e
            if max_offset is None:
                return None
            return TimestampAndOffset(max_ts, max_offset, _epoch_or_none(h))

    def _record_timestamps(self, segment: LogSegment, pos: int, h: BatchHeader):
        data = segment.file.pread(h.size, pos)
        try:
            for record in iter_records(data):
                yield h.base_offset + record.offset_delta, record_timestamp(h, record)
        except DecodeError as e:
            raise LogStorageError(f"decode batch at {h.base_offset}", segment.log_path, e) from e

    # ------------------------------------------------------------ leader epochs

    @_storage_errors
    def assign_epoch_start_offset(self, epoch: int, start_offset: int | None = None) -> None:
        """Record that `epoch` starts at `start_offset` (default: the log end
        offset) -- what a new leader does before its first append."""
        with self._lock:
            self._check_usable()
            self.epochs.assign(epoch, self.log_end_offset if start_offset is None else start_offset)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset), see LeaderEpochCache."""
        with self._lock:
            return self.epochs.end_offset_for(epoch, self.log_end_offset)

    def epoch_entries(self) -> list[EpochEntry]:
        return self.epochs.entries()

    # ---------------------------------------------------------------- truncate

    @_storage_errors
    def truncate_to(self, offset: int) -> bool:
        """Remove every batch holding an offset >= `offset` (a batch holding it
        in its middle goes whole, so the log end may land below `offset`).
        Returns False when there was nothing to remove."""
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        with self._lock:
            self._check_usable()
            if offset >= self.log_end_offset:
                return False
            if offset < self._segments[0].base_offset:
                self._truncate_fully(offset)
                return True
            now = self._clock()
            try:
                doomed = [s for s in self._segments if s.base_offset > offset]
                self._delete_segments(doomed)
                self._segments[-1].truncate_to(offset, now)
            except LogStorageError as e:
                self._offline = e
                raise
            leo = self.log_end_offset
            self._extra_flush_paths.update(self._segments[-1].paths)
            self._after_truncation(leo)
            self._log_start_offset = min(self._log_start_offset, leo)
            self.epochs.truncate_from_end(leo)
            self.producers.delete_snapshots_above(leo)
            self._rebuild_producer_state(now)
            log.info("%s: truncated to offset %d", self.dir, leo)
            return True

    @_storage_errors
    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every batch and restart the (empty) log at `offset`."""
        if offset < 0:
            raise ValueError(f"cannot start a log at negative offset {offset}")
        with self._lock:
            self._check_usable()
            self._truncate_fully(offset)

    def _truncate_fully(self, offset: int) -> None:
        now = self._clock()
        try:
            # Unlink first (reads in flight keep their open files), then create
            # the new segment, which may have the same name as an old one.
            for s in self._segments:
                s.delete()
            segment = LogSegment.create(self.dir, offset, self.config, now)
        except LogStorageError as e:
            self._offline = e
            raise
        self._segments, self._bases = [segment], [offset]
        self._dir_dirty = True
        self._after_truncation(offset)
        self._log_start_offset = offset
        self.epochs.clear()
        self.producers.truncate_fully_and_start_at(offset)
        log.info("%s: truncated fully, restarting at offset %d", self.dir, offset)

    def _after_truncation(self, leo: int) -> None:
        self._recovery_point = min(self._recovery_point, leo)
        if self._truncated_during_flush is None or leo < self._truncated_during_flush:
            self._truncated_during_flush = leo

    # ---------------------------------------------------------- delete / retain

    @_storage_errors
    def delete_records_before(self, offset: int, high_watermark: int | None = None) -> int:
        """DeleteRecords: move the log start offset up to `offset` (never past
        the high watermark; default the log end) and delete the segments that
        lie entirely below it. Returns the new log start offset."""
        with self._lock:
            self._check_usable()
            hw = self.log_end_offset if high_watermark is None else high_watermark
            if offset < 0 or offset > hw:
                raise OffsetOutOfRange(
                    offset, self._log_start_offset, hw, what="delete records before"
                )
            self._increment_log_start_offset(offset)
            start = self._log_start_offset
            self._delete_old(lambda seg, nxt: nxt is not None and nxt.base_offset <= start, hw)
            return start

    @_storage_errors
    def delete_old_segments(self, high_watermark: int | None = None) -> int:
        """Retention: delete whole segments, oldest first, that are older than
        retention_ms (by their largest batch timestamp) or that keep the log
        above retention_bytes, and segments below the log start offset. Never
        a segment holding offsets at or above the high watermark (default: the
        log end). The active segment goes too when it qualifies (a new empty
        one is rolled first), as in Kafka. Returns the number deleted."""
        with self._lock:
            self._check_usable()
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
        leo = self.log_end_offset
        deletable = []
        for i, seg in enumerate(self._segments):
            nxt = self._segments[i + 1] if i + 1 < len(self._segments) else None
            upper = nxt.base_offset if nxt is not None else leo
            if nxt is None and seg.size == 0:
                break
            if hw >= upper and predicate(seg, nxt):
                deletable.append(seg)
            else:
                break
        if not deletable:
            return 0
        if len(deletable) == len(self._segments):
            self._roll(None, self._clock())
        self._increment_log_start_offset(self._segments[len(deletable)].base_offset)
        self._delete_segments(deletable)
        return len(deletable)

    def _increment_log_start_offset(self, offset: int) -> None:
        if offset > self._log_start_offset:
            self._log_start_offset = offset
            self.epochs.truncate_from_start(offset)
            log.info("%s: log start offset is now %d", self.dir, offset)

    def _delete_segments(self, doomed: list[LogSegment]) -> None:
        if not doomed:
            return
        for seg in doomed:
            self._segments.remove(seg)
            seg.delete()
        self._bases = [s.base_offset for s in self._segments]
        self._dir_dirty = True
        if self._segments:
            self.producers.delete_snapshots_below(self._segments[0].base_offset)

    # ------------------------------------------------------------- compaction

    def now_ms(self) -> int:
        return self._clock()

    @_storage_errors
    def log_to_clean(self, checkpoint: int | None, high_watermark: int | None = None) -> LogToClean:
        """What the cleaner may compact now, from its checkpointed first dirty
        offset (see cleanable.py)."""
        with self._lock:
            self._check_usable()
            return log_to_clean(
                self._segments,
                self.config,
                checkpoint=checkpoint,
                log_start_offset=self._log_start_offset,
                high_watermark=self.log_end_offset if high_watermark is None else high_watermark,
                now_ms=self._clock(),
            )

    def active_producer_last_offsets(self) -> dict[int, int]:
        """Producer id -> offset of its last batch, for every producer the log
        tracks: compaction keeps those batches (maybe emptied)."""
        with self._lock:
            return {
                pid: entry.last_offset
                for pid, entry in self.producers.producers.items()
                if entry.last_offset >= 0
            }

    def replace_segments(
        self, cleaned: LogSegment, old: list[LogSegment], sizes: list[int]
    ) -> bool:
        """Swap the cleaner's `.cleaned` segment in for `old` (consecutive,
        non-active segments that had `sizes` when they were read), with
        Kafka's file dance: `.cleaned` -> `.swap` (durable), old files ->
        `.deleted`, `.swap` -> final names (durable), old files unlinked.
        Reads in flight keep the old files open. False, with nothing changed,
        when `old` is no longer part of the log as it was read."""
        with self._lock:
            if self._closed or self._offline is not None:
                return False
            try:
                first = next(i for i, s in enumerate(self._segments) if s is old[0])
            except StopIteration:
                return False
            current = self._segments[first : first + len(old)]
            if (
                first + len(old) >= len(self._segments)
                or len(current) != len(old)
                or any(a is not b for a, b in zip(current, old, strict=True))
                or [s.size for s in current] != list(sizes)
            ):
                return False
            try:
                cleaned.change_suffix(SWAP_SUFFIX)
                fsync_dir(self.dir)
                for seg in old:
                    seg.change_suffix(DELETED_SUFFIX)
                cleaned.change_suffix("")
                fsync_dir(self.dir)
            except (LogStorageError, OSError) as e:
                # The files are half swapped: a reopen finishes the swap.
                self._offline = e
                raise LogOfflineError(self.dir, e) from e
            cleaned.config = self.config
            self._segments[first : first + len(old)] = [cleaned]
            self._bases = [s.base_offset for s in self._segments]
            for seg in old:
                try:
                    seg.delete()
                except LogStorageError as e:
                    log.warning("%s: %s stays behind: %s", self.dir, seg.log_path, e)
            return True

    # ------------------------------------------------------------- producers

    def remove_expired_producers(self) -> list[int]:
        """Forget producers idle longer than producer_id_expiration_ms."""
        with self._lock:
            return self.producers.remove_expired_producers(self._clock())

    # ------------------------------------------------------------- topic id

    @_storage_errors
    def assign_topic_id(self, topic_id: uuid.UUID) -> None:
        """Write partition.metadata (made durable by the next flush); raises
        InconsistentTopicId if the log already has another topic id."""
        with self._lock:
            self._check_usable()
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
        unflushed = self.unflushed_messages
        if unflushed <= 0:
            return False
        return (
            unflushed >= self.config.flush_interval_messages
            or self._clock() - self._last_flush_ms >= self.config.flush_interval_ms
        )

    def message_count_flush_due(self) -> bool:
        """Whether flush.messages records are unflushed. Kafka checks this inside
        every append and fsyncs before answering; flush.ms is left to the
        periodic flusher (`flush_due`)."""
        return self.unflushed_messages >= max(self.config.flush_interval_messages, 1)

    def flush(self, offset: int | None = None) -> int:
        """fsync every segment holding offsets below `offset` (default the log
        end) that is not yet known to be on disk, the new files' directory,
        and the leader epoch checkpoint; then advance the recovery point.
        Blocks on the disk: run it in a worker thread. Returns the recovery
        point. A failed fsync takes the log offline (LogOfflineError)."""
        with self._flush_lock:
            with self._lock:
                self._check_usable()
                leo = self.log_end_offset
                target = leo if offset is None else min(offset, leo)
                paths = []
                for i, seg in enumerate(self._segments):
                    upper = self._bases[i + 1] if i + 1 < len(self._segments) else leo
                    if upper > self._recovery_point and seg.base_offset < target:
                        paths.extend(seg.paths)
                extra, self._extra_flush_paths = self._extra_flush_paths, set()
                paths.extend(sorted(extra - set(paths)))
                dir_dirty, self._dir_dirty = self._dir_dirty, False
                meta_dirty, self._metadata_dirty = self._metadata_dirty, False
                self._truncated_during_flush = None
            try:
                for path in paths:
                    fsync_path(path)
                if meta_dirty:
                    fsync_path(os.path.join(self.dir, PARTITION_METADATA))
                if dir_dirty or meta_dirty:
                    fsync_dir(self.dir)
                self.epochs.flush_checkpoint()
            except OSError as e:
                # After a failed fsync the kernel may have dropped the dirty
                # pages: a retry could "succeed" without the data. Like Kafka
                # (which takes the log dir offline), refuse to go on.
                with self._lock:
                    self._offline = e
                raise LogOfflineError(self.dir, e) from e
            with self._lock:
                if self._truncated_during_flush is not None:
                    target = min(target, self._truncated_during_flush)
                self._recovery_point = max(self._recovery_point, min(target, self.log_end_offset))
                self._last_flush_ms = self._clock()
                return self._recovery_point

    # ------------------------------------------------------------------ close

    def close(self) -> None:
        """Snapshot the producer state, write the final index entries, trim the
        indexes, fsync everything and close the files. The recovery point is
        then the log end offset. Blocks on the disk."""
        with self._flush_lock, self._lock:
            if self._closed:
                return
            if self._offline is not None:
                self._close_segments_quietly()
                self._closed = True
                return
            leo = self.log_end_offset
            rp = self._recovery_point
            try:
                self.producers.map_end_offset = leo
                snapshot = self.producers.take_snapshot()
                paths = []
                for i, seg in enumerate(self._segments):
                    upper = self._bases[i + 1] if i + 1 < len(self._segments) else leo
                    if upper > rp or i == len(self._segments) - 1:
                        paths.extend(seg.paths)
                for seg in self._segments:
                    seg.close()
                for path in paths:
                    fsync_path(path)
                if snapshot:
                    fsync_path(snapshot)
                self.epochs.write(fsync=True)
                if self.topic_id is not None and self._metadata_dirty:
                    fsync_path(os.path.join(self.dir, PARTITION_METADATA))
                fsync_dir(self.dir)
                self._recovery_point = leo
            except OSError as e:
                self._close_segments_quietly()
                raise LogStorageError("close", self.dir, e) from e
            finally:
                self._closed = True

    def _close_segments_quietly(self) -> None:
        for seg in self._segments:
            try:
                seg.close_files()
            except OSError:
                pass

    def delete(self) -> None:
        """Close the log and remove its directory and everything in it."""
        with self._flush_lock, self._lock:
            self._close_segments_quietly()
            self._closed = True
            shutil.rmtree(self.dir, ignore_errors=True)

    def __repr__(self) -> str:
        return f"Log({self.dir!r})"


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
