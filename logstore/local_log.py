"""The segments of one partition directory (Kafka's LocalLog).

A LocalLog holds the ordered segments of `<log dir>/<topic>-<partition>/` and
what is purely about them: finding the segment of an offset, appending
batches whose offsets are already final to the active segment, rolling
(segment.bytes, segment.ms, a full index), reading whole batches up to a
given offset, truncating, deleting segments, swapping in cleaned segments,
the recovery point and the fsyncs behind it, deleting the directory. It knows
nothing of the log start offset, leader epochs, producers or the high
watermark: the UnifiedLog (unified_log.py) keeps those and drives this class,
as Kafka's UnifiedLog drives its LocalLog.

Threads: `lock` (re-entrant) serializes every method; the UnifiedLog holds it
around its own steps, so a step and the segment changes it makes are one
change to other threads. `flush_lock` lets one flush or close run at a time;
take it before `lock`. `flush()` holds `lock` only to collect what to fsync,
never while it waits for the disk.
"""

from __future__ import annotations

import bisect
import logging
import shutil
import threading
from collections.abc import Callable

from logstore.config import LogConfig
from logstore.errors import (
    LogClosedError,
    LogError,
    LogOfflineError,
    LogStorageError,
    OffsetOutOfRange,
    storage_errors,
)
from logstore.files import DELETED_SUFFIX, SWAP_SUFFIX, fsync_dir, fsync_path
from logstore.index import INT32_MAX
from logstore.results import ReadResult
from logstore.segment import LogSegment
from logstore.transaction_index import AbortedTxn
from wire.records import BatchHeader

log = logging.getLogger(__name__)


class LocalLog:
    """The segments of one partition; `segments` is non-empty, oldest first,
    and the last one is the active segment."""

    def __init__(
        self,
        dir: str,
        config: LogConfig,
        segments: list[LogSegment],
        recovery_point: int,
        clock: Callable[[], int],
    ):
        self.dir = dir
        self.config = config
        self._clock = clock
        self.lock = threading.RLock()
        self.flush_lock = threading.RLock()
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._recovery_point = recovery_point
        self._last_flush_ms = clock()
        # New or removed files whose directory entry needs an fsync.
        self._dir_dirty = False
        # The lowest log end a truncation left while a flush waited on the disk.
        self._truncated_during_flush: int | None = None
        # Files changed below the recovery point (truncations) that need an fsync.
        self._extra_flush_paths: set[str] = set()
        self._closed = False
        self._offline: BaseException | None = None

    # ------------------------------------------------------------- properties

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
        """A copy of the segment list, oldest first."""
        return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def offline(self) -> bool:
        """A storage failure left the log unusable until it is reopened."""
        return self._offline is not None

    def mark_offline(self, cause: BaseException) -> None:
        """A failure that could not be undone: refuse every later call."""
        with self.lock:
            self._went_offline(cause)

    # How many logs of this process went offline: what describes the logs
    # (Metadata's offline replicas) and caches it is stale once it changes.
    offline_events = 0

    def _went_offline(self, cause: BaseException) -> None:
        if self._offline is None:
            LocalLog.offline_events += 1
        self._offline = cause

    def check_usable(self) -> None:
        if self._closed:
            raise LogClosedError(self.dir)
        if self._offline is not None:
            raise LogOfflineError(self.dir, self._offline)

    def update_config(self, config: LogConfig) -> None:
        """The active segment rolls, and indexes grow, by the new values at
        once (an open segment's index files keep the size they were
        preallocated with)."""
        with self.lock:
            self.config = config
            for segment in self._segments:
                segment.config = config

    def segments_from(self, offset: int) -> list[LogSegment]:
        """The segments from the one whose range holds `offset` on (all of them
        when `offset` lies below the first)."""
        with self.lock:
            i = bisect.bisect_right(self._bases, offset) - 1
            return self._segments[max(0, i) :]

    # ------------------------------------------------------------ append, roll

    def maybe_roll(
        self, size: int, max_timestamp: int, first_offset: int, last_offset: int
    ) -> LogSegment | None:
        """Roll before appending `size` bytes of batches with offsets
        `first_offset`..`last_offset` and largest timestamp `max_timestamp`
        when the active segment cannot take them (segment.bytes, segment.ms,
        a full index, offsets beyond int32 of its base). Returns the new
        segment, None when the active one takes them."""
        with self.lock:
            now = self._clock()
            if self._segments[-1].should_roll(size, max_timestamp, last_offset, now):
                return self._roll(first_offset, now)
            return None

    @storage_errors
    def roll(self, expected_next_offset: int | None = None) -> LogSegment | None:
        """Start a new active segment at the log end offset (or at
        `expected_next_offset` when that is higher). Returns it, or None when
        the active segment is empty and already starts there."""
        with self.lock:
            self.check_usable()
            return self._roll(expected_next_offset, self._clock())

    def _roll(self, expected_next_offset: int | None, now_ms: int) -> LogSegment | None:
        active = self._segments[-1]
        new_base = max(expected_next_offset or 0, self.log_end_offset)
        if new_base == active.base_offset and active.size == 0:
            return None
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
        log.info("%s: rolled a new segment at offset %d", self.dir, new_base)
        return segment

    def append(self, data, batches: list[tuple[int, BatchHeader]]) -> int:
        """Write `data`, whole batches whose offsets are final ((position in
        `data`, header) in `batches`), at the end of the active segment, which
        must take them (`maybe_roll` first). Returns the position of the
        first. A failed write is undone (LogStorageError); one that cannot be
        undone takes the log offline (LogOfflineError)."""
        with self.lock:
            try:
                return self._segments[-1].append(data, batches)
            except LogOfflineError as e:
                self._went_offline(e)
                raise

    def segment_runs(self, batches: list[tuple[int, BatchHeader]]):
        """Split batches at positions in one buffer into runs that each fit
        one segment (segment.bytes, offsets within int32 of the run's base):
        (start, end, [(position in the run, header), ...]) for each run."""
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

    # ------------------------------------------------------------------- read

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> ReadResult:
        """Whole batches from the batch holding `start_offset` on, at most
        `max_bytes` of them (but at least one batch when `min_one_batch`),
        only batches whose last offset is below `max_offset` (None: up to the
        log end), all from one segment. OffsetOutOfRange when start_offset
        lies below the first segment or beyond the log end."""
        if max_bytes < 0:
            raise ValueError(f"max_bytes {max_bytes} is negative")
        with self.lock:
            self.check_usable()
            leo = self.log_end_offset
            if start_offset < self._bases[0] or start_offset > leo:
                raise OffsetOutOfRange(start_offset, self._bases[0], leo)
            if start_offset == leo or (max_offset is not None and start_offset >= max_offset):
                return self._empty_read(start_offset)
            try:
                for segment in self.segments_from(start_offset):
                    result = self._read_segment(
                        segment, start_offset, max_bytes, max_offset, min_one_batch
                    )
                    if result is not None:
                        return result
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

    def collect_aborted_transactions(
        self, start_offset: int, upper_bound_offset: int
    ) -> list[AbortedTxn]:
        """The aborted transactions overlapping [start_offset,
        upper_bound_offset), from the transaction indexes of the segment
        holding `start_offset` and the later ones, until an entry's LSO shows
        that no later one can overlap (Kafka's LocalLog.collectAbortedTransactions)."""
        with self.lock:
            found: list[AbortedTxn] = []
            for segment in self.segments_from(start_offset):
                txns, complete = segment.collect_aborted_txns(start_offset, upper_bound_offset)
                found.extend(txns)
                if complete:
                    break
            return found

    def offset_after(self, result: ReadResult) -> int:
        """The offset after the batches of a read: the next batch's base
        offset, or the next segment's base, or the log end."""
        with self.lock:
            i = bisect.bisect_left(self._bases, result.segment_base_offset)
            if i == len(self._bases) or self._bases[i] != result.segment_base_offset:
                return self.log_end_offset  # the segment is gone: an upper bound
            for _, h in self._segments[i].batches(result.position + result.size):
                return h.base_offset
            return self._bases[i + 1] if i + 1 < len(self._bases) else self.log_end_offset

    def _empty_read(self, start_offset: int) -> ReadResult:
        active = self._segments[-1]
        return ReadResult(None, active.size, 0, start_offset, active.base_offset)

    # --------------------------------------------------------------- truncate

    @storage_errors
    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset >= `offset`, which must lie in
        [first segment's base, log end): later segments go, the one holding
        it is cut at the batch that holds it. A failure takes the log
        offline."""
        with self.lock:
            self.check_usable()
            if not self._bases[0] <= offset < self.log_end_offset:
                raise ValueError(
                    f"truncate to {offset} outside [{self._bases[0]}, {self.log_end_offset})"
                )
            try:
                self.delete_segments([s for s in self._segments if s.base_offset > offset])
                self._segments[-1].truncate_to(offset, self._clock())
            except LogStorageError as e:
                self._went_offline(e)
                raise
            self._extra_flush_paths.update(self._segments[-1].paths)
            self._after_truncation(self.log_end_offset)

    @storage_errors
    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and start again with an empty one at `offset`.
        A failure takes the log offline."""
        with self.lock:
            self.check_usable()
            try:
                # Unlink first (reads in flight keep their open files), then
                # create the new segment, which may have an old one's name.
                for s in self._segments:
                    s.delete()
                segment = LogSegment.create(self.dir, offset, self.config, self._clock())
            except LogStorageError as e:
                self._went_offline(e)
                raise
            self._segments, self._bases = [segment], [offset]
            self._dir_dirty = True
            self._after_truncation(offset)

    def _after_truncation(self, leo: int) -> None:
        self._recovery_point = min(self._recovery_point, leo)
        if self._truncated_during_flush is None or leo < self._truncated_during_flush:
            self._truncated_during_flush = leo

    # ----------------------------------------------------------------- delete

    def delete_segments(self, doomed: list[LogSegment]) -> None:
        """Remove `doomed` from the log and unlink their files (reads in
        flight keep theirs open). The caller keeps at least one segment."""
        if not doomed:
            return
        with self.lock:
            for seg in doomed:
                self._segments.remove(seg)
                seg.delete()
            self._bases = [s.base_offset for s in self._segments]
            self._dir_dirty = True

    def replace_segments(
        self, cleaned: LogSegment, old: list[LogSegment], sizes: list[int]
    ) -> bool:
        """Swap the cleaner's `.cleaned` segment in for `old` (consecutive,
        non-active segments that had `sizes` when they were read), with
        Kafka's file dance: `.cleaned` -> `.swap` (durable), old files ->
        `.deleted`, `.swap` -> final names (durable), old files unlinked.
        Reads in flight keep the old files open. False, with nothing changed,
        when `old` is no longer part of the log as it was read."""
        with self.lock:
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
                self._went_offline(e)
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
        """Whether flush.messages records are unflushed."""
        return self.unflushed_messages >= max(self.config.flush_interval_messages, 1)

    def flush(self, offset: int | None = None) -> int:
        """fsync every segment holding offsets below `offset` (default the log
        end) that is not yet known to be on disk, files truncations changed,
        and the directory when files came or went. Returns the offset below
        which the segments are now on disk, for `mark_flushed`; hold
        `flush_lock` across both. Blocks on the disk. A failed fsync takes
        the log offline (LogOfflineError)."""
        with self.flush_lock:
            with self.lock:
                self.check_usable()
                leo = self.log_end_offset
                target = leo if offset is None else min(offset, leo)
                paths: list[str] = []
                try:
                    for i, seg in enumerate(self._segments):
                        upper = self._bases[i + 1] if i + 1 < len(self._segments) else leo
                        if upper > self._recovery_point and seg.base_offset < target:
                            seg.write_out_indexes()
                            paths.extend(seg.paths)
                except OSError as e:
                    self._went_offline(e)
                    raise LogOfflineError(self.dir, e) from e
                extra, self._extra_flush_paths = self._extra_flush_paths, set()
                paths.extend(sorted(extra - set(paths)))
                dir_dirty, self._dir_dirty = self._dir_dirty, False
                self._truncated_during_flush = None
            try:
                for path in paths:
                    fsync_path(path)
                if dir_dirty:
                    fsync_dir(self.dir)
            except OSError as e:
                # After a failed fsync the kernel may have dropped the dirty
                # pages: a retry could "succeed" without the data. Like Kafka
                # (which takes the log dir offline), refuse to go on.
                self.mark_offline(e)
                raise LogOfflineError(self.dir, e) from e
            return target

    def mark_flushed(self, offset: int) -> int:
        """Advance the recovery point to `offset` (from `flush`), or only to
        where a truncation since that flush began left the log. Returns the
        recovery point."""
        with self.lock:
            if self._truncated_during_flush is not None:
                offset = min(offset, self._truncated_during_flush)
            self._recovery_point = max(self._recovery_point, min(offset, self.log_end_offset))
            self._last_flush_ms = self._clock()
            return self._recovery_point

    # ------------------------------------------------------------ close, delete

    def close(self) -> None:
        """Write the final index entries, trim the indexes, fsync the segments
        not yet on disk (and the active one) and the directory, and close the
        files. The recovery point is then the log end offset. Blocks on the
        disk. Raises LogStorageError; the log is closed either way."""
        with self.flush_lock, self.lock:
            if self._closed:
                return
            leo = self.log_end_offset
            rp = self._recovery_point
            try:
                paths: list[str] = []
                for i, seg in enumerate(self._segments):
                    upper = self._bases[i + 1] if i + 1 < len(self._segments) else leo
                    if upper > rp or i == len(self._segments) - 1:
                        paths.extend(seg.paths)
                for seg in self._segments:
                    seg.close()
                for path in paths:
                    fsync_path(path)
                fsync_dir(self.dir)
                self._recovery_point = leo
            except OSError as e:
                self.close_quietly()
                raise LogStorageError("close", self.dir, e) from e
            finally:
                self._closed = True

    def close_quietly(self) -> None:
        """Close every file without writing anything (after a failure)."""
        with self.lock:
            for seg in self._segments:
                try:
                    seg.close_files()
                except OSError:
                    pass
            self._closed = True

    def delete(self) -> None:
        """Close the files and remove the directory and everything in it."""
        with self.flush_lock, self.lock:
            self.close_quietly()
            shutil.rmtree(self.dir, ignore_errors=True)

    def __repr__(self) -> str:
        return f"LocalLog({self.dir!r})"
