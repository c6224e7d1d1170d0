"""One segment: a `.log` file of whole record batches plus its two indexes.

The `.log` file is record batches exactly as on the wire, one after another,
nothing else (Kafka's FileRecords). The segment's base offset (its file name)
is <= every offset in it and > every offset of the previous segment.

Index entries are added per batch, as Kafka's LogSegment does: before
appending a batch, if more than `index_interval_bytes` were appended since the
last entry, the offset index gets (batch last offset, batch position) and the
time index (max timestamp so far, offset of that timestamp's batch). The first
batch of a segment is never indexed.

Only headers are read (61 bytes per batch, in chunks); records are never
decoded here. Appends write the caller's bytes once with pwrite, and every
`WRITEBACK_BYTES` have the kernel start writing them to disk (writeback.py).

Not thread-safe: the owning LocalLog serializes calls.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator

from logstore import writeback
from logstore.config import LogConfig
from logstore.errors import CorruptIndexError, LogOfflineError, LogStorageError
from logstore.files import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    file_name,
    unlink_quietly,
)
from logstore.index import (
    INT32_MAX,
    NO_TIMESTAMP,
    FileStore,
    OffsetIndex,
    TimeIndex,
    TimestampOffset,
)
from logstore.transaction_index import AbortedTxn, TransactionIndex
from wire.errors import DecodeError
from wire.records import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    batch_size_at,
    read_batch_header,
    validate_batch,
)

log = logging.getLogger(__name__)

SCAN_CHUNK = 32 * 1024
RECOVERY_CHUNK = 1024 * 1024


class SegmentFile:
    """The open `.log` file. Read results keep a reference to it, so a
    segment deleted by retention while a read of it is in flight keeps its
    (unlinked) file open until the last reference is gone."""

    __slots__ = ("path", "fd")

    def __init__(self, path: str, fd: int):
        self.path = path
        self.fd = fd

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    @property
    def closed(self) -> bool:
        return self.fd < 0

    def pread(self, size: int, position: int) -> bytes:
        """Exactly `size` bytes at `position`, or fewer at the end of the file."""
        chunks = []
        while size > 0:
            chunk = os.pread(self.fd, size, position)
            if not chunk:
                break
            chunks.append(chunk)
            size -= len(chunk)
            position += len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


# How many of the last appended batches a segment finds without reading
# (LogSegment._recent).
_RECENT_BATCHES = 8


class LogSegment:
    def __init__(
        self,
        dir: str,
        base_offset: int,
        config: LogConfig,
        file: SegmentFile,
        size: int,
        created_ms: int,
        suffix: str = "",
    ):
        self.dir = dir
        self.base_offset = base_offset
        # "" for a segment of the log; ".cleaned" / ".swap" while the cleaner
        # builds and swaps in a replacement, ".deleted" for one it replaced.
        self.suffix = suffix
        self.config = config
        self.file = file
        self.size = size
        self.created_ms = created_ms
        self.roll_jitter_ms = config.random_segment_jitter()
        self._offset_index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        self._max_timestamp: TimestampOffset | None = None  # None: not loaded yet
        self._rolling_timestamp: int | None = None  # first batch's max timestamp
        self._next_offset: int | None = None  # None: not computed yet
        self.bytes_since_last_index_entry = 0
        self.txn_index = TransactionIndex(self.txn_index_path, base_offset)
        # (file position, *header fields) of the last batches appended, by
        # base offset: a consumer or follower at the tail fetches from the
        # first batch appended since its last fetch, found here without the
        # index lookup and header read of translate_offset. Plain tuples of
        # ints, which the garbage collector stops tracking: a BatchHeader
        # kept here for a while, across a thousand partitions, made every
        # collection walk them (9% of producing to 1,000 partitions).
        self._recent: dict[int, tuple[int, ...]] = {}
        # Where the bytes not yet handed to early writeback start (writeback.py).
        self._writeback_from = size

    # --- files --------------------------------------------------------------------

    @property
    def log_path(self) -> str:
        return os.path.join(self.dir, file_name(self.base_offset, LOG_SUFFIX) + self.suffix)

    @property
    def index_path(self) -> str:
        return os.path.join(self.dir, file_name(self.base_offset, INDEX_SUFFIX) + self.suffix)

    @property
    def time_index_path(self) -> str:
        return os.path.join(self.dir, file_name(self.base_offset, TIME_INDEX_SUFFIX) + self.suffix)

    @property
    def txn_index_path(self) -> str:
        return os.path.join(self.dir, file_name(self.base_offset, TXN_INDEX_SUFFIX) + self.suffix)

    @property
    def paths(self) -> tuple[str, str, str, str]:
        """Every file of the segment; the transaction index may not exist."""
        return self.log_path, self.index_path, self.time_index_path, self.txn_index_path

    @property
    def max_index_bytes(self) -> int:
        return self.config.segment_index_bytes

    @classmethod
    def create(
        cls, dir: str, base_offset: int, config: LogConfig, now_ms: int, suffix: str = ""
    ) -> LogSegment:
        """A new, empty, active segment (stale files with its name are replaced).
        With a `suffix` (".cleaned") its files are not (yet) part of the log."""
        path = os.path.join(dir, file_name(base_offset, LOG_SUFFIX) + suffix)
        unlink_quietly(os.path.join(dir, file_name(base_offset, TXN_INDEX_SUFFIX) + suffix))
        fd = _open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
        seg = cls(dir, base_offset, config, SegmentFile(path, fd), 0, now_ms, suffix)
        try:
            seg._offset_index = OffsetIndex(
                FileStore(seg.index_path, preallocate=_round(config.segment_index_bytes, 8)),
                base_offset,
                entries=0,
            )
            seg._time_index = TimeIndex(
                FileStore(seg.time_index_path, preallocate=_round(config.segment_index_bytes, 12)),
                base_offset,
                entries=0,
            )
        except OSError as e:
            seg.close_files()
            for p in seg.paths:
                unlink_quietly(p)
            raise LogStorageError("create segment", path, e) from e
        seg._max_timestamp = TimestampOffset(NO_TIMESTAMP, base_offset)
        seg._next_offset = base_offset
        return seg

    @classmethod
    def open(cls, dir: str, base_offset: int, config: LogConfig, now_ms: int) -> LogSegment:
        """An existing segment; its indexes are opened on first use."""
        path = os.path.join(dir, file_name(base_offset, LOG_SUFFIX))
        fd = _open(path, os.O_RDWR)
        size = os.fstat(fd).st_size
        return cls(dir, base_offset, config, SegmentFile(path, fd), size, now_ms)

    def change_suffix(self, new_suffix: str) -> None:
        """Rename the segment's files from the current suffix to `new_suffix`
        (Kafka's changeFileSuffixes). Open files and index mappings stay valid.
        The indexes are renamed before the log: the `.log` file is what
        recovery looks at."""
        old_paths = (self.index_path, self.time_index_path, self.log_path)
        old_suffix, self.suffix = self.suffix, new_suffix
        new_paths = (self.index_path, self.time_index_path, self.log_path)
        try:
            for old, new in zip(old_paths, new_paths, strict=True):
                if os.path.exists(old):
                    os.replace(old, new)
            # After the `.log`: a crash between leaves `<base>.txnindex.swap`
            # beside a finished swap (recovery renames it), never a new
            # `<base>.txnindex` that completing an old `.log.swap` would delete.
            self.txn_index.rename(self.txn_index_path)
        except OSError as e:
            self.suffix = old_suffix
            raise LogStorageError("rename segment", old_paths[-1], e) from e
        self.file.path = self.log_path
        for index, path in ((self._offset_index, new_paths[0]), (self._time_index, new_paths[1])):
            store = index._store if index is not None else None
            if isinstance(store, FileStore):
                store.path = path  # only named in messages; the descriptor stays

    def indexes_exist(self) -> bool:
        return os.path.exists(self.index_path) and os.path.exists(self.time_index_path)

    # --- indexes ------------------------------------------------------------------

    @property
    def offset_index(self) -> OffsetIndex:
        if self._offset_index is None:
            self._load_indexes()
        assert self._offset_index is not None
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        if self._time_index is None:
            self._load_indexes()
        assert self._time_index is not None
        return self._time_index

    def _load_indexes(self) -> None:
        """Open the closed (trimmed) index files of this segment; rebuild them
        from the log when missing or implausible."""
        try:
            if not self.indexes_exist():
                raise CorruptIndexError(self.index_path, "index file missing")
            self._offset_index = OffsetIndex(FileStore(self.index_path), self.base_offset)
            self._time_index = TimeIndex(FileStore(self.time_index_path), self.base_offset)
            self._check_indexes()
        except CorruptIndexError as e:
            log.warning("rebuilding the indexes of %s: %s", self.log_path, e)
            self._close_indexes(trim=False)
            self.recover()
        except OSError as e:
            self._close_indexes(trim=False)
            raise LogStorageError("open index", self.index_path, e) from e

    def _check_indexes(self) -> None:
        oi, ti = self._offset_index, self._time_index
        assert oi is not None and ti is not None
        oi.sanity_check(self.size)
        if oi.entries:
            # The last entry must name the last offset of the batch it points at.
            last = oi.entry(oi.entries - 1)
            h = self._header_at(last.position)
            if h is None or h.last_offset != last.offset:
                raise CorruptIndexError(
                    oi.path or "", f"last entry {last} does not point at a batch ending there"
                )
        if ti.entries:
            # Time entries name batch last offsets, all below the segment's end.
            ti.sanity_check(self.next_offset - 1)

    def _header_at(self, position: int) -> BatchHeader | None:
        try:
            return read_batch_header(self.file.pread(BATCH_HEADER_SIZE, position))
        except DecodeError:
            return None

    def write_out_indexes(self) -> None:
        """Write the indexes' unwritten entries to their files (before an fsync)."""
        for index in (self._offset_index, self._time_index):
            if index is not None:
                index.write_out()

    def make_active(self) -> None:
        """Re-extend the indexes to the preallocated size (this segment takes
        appends again)."""
        try:
            self.offset_index.resize(self.max_index_bytes)
            self.time_index.resize(self.max_index_bytes)
        except OSError as e:
            raise LogStorageError("resize index", self.index_path, e) from e

    def _close_indexes(self, *, trim: bool) -> None:
        for index in (self._offset_index, self._time_index):
            if index is not None:
                try:
                    if trim:
                        index.trim()
                finally:
                    index.close()
        self._offset_index = None
        self._time_index = None

    # --- state --------------------------------------------------------------------

    @property
    def next_offset(self) -> int:
        """The offset after the last batch of this segment (its base offset when
        empty). Computed once from the last index entry onwards."""
        if self._next_offset is None:
            nxt = self.base_offset
            start = self.offset_index.lookup(self.offset_index.last_offset).position
            for _, h in self.batches(start):
                nxt = h.next_offset
            self._next_offset = nxt
        return self._next_offset

    @property
    def max_timestamp_and_offset(self) -> TimestampOffset:
        """Largest batch max timestamp and the last offset of its batch
        ((-1, base) when the segment has no timestamps)."""
        if self._max_timestamp is None:
            self._max_timestamp = self.time_index.last_entry
        return self._max_timestamp

    @property
    def max_timestamp(self) -> int:
        return self.max_timestamp_and_offset.timestamp

    def largest_timestamp(self) -> int:
        """The timestamp retention uses: the max batch timestamp, or the file's
        modification time when no batch has one."""
        ts = self.max_timestamp
        if ts >= 0:
            return ts
        return self.last_modified_ms()

    def last_modified_ms(self) -> int:
        try:
            return os.stat(self.log_path).st_mtime_ns // 1_000_000
        except FileNotFoundError:
            return 0

    def rolling_timestamp(self) -> int | None:
        """The first batch's max timestamp (None when empty)."""
        if self._rolling_timestamp is None and self.size > 0:
            h = self._header_at(0)
            self._rolling_timestamp = h.max_timestamp if h is not None else NO_TIMESTAMP
        return self._rolling_timestamp

    def time_waited_for_roll(self, now_ms: int, max_timestamp_in_append: int) -> int:
        """Kafka's rule: the append's max timestamp minus the first batch's,
        or wall-clock time since creation when batches carry no timestamp."""
        ts = self.rolling_timestamp()
        if ts is not None and ts >= 0:
            return max_timestamp_in_append - ts
        return now_ms - self.created_ms

    def should_roll(
        self, append_size: int, max_timestamp: int, last_offset: int, now_ms: int
    ) -> bool:
        reached_roll_ms = (
            self.time_waited_for_roll(now_ms, max_timestamp)
            > self.config.segment_ms - self.roll_jitter_ms
        )
        return (
            self.size > self.config.segment_bytes - append_size
            or (self.size > 0 and reached_roll_ms)
            or self.offset_index.is_full
            or self.time_index.is_full
            or not self.offset_index.can_append_offset(last_offset)
        )

    # --- append -------------------------------------------------------------------

    def append(self, data, batches: list[tuple[int, BatchHeader]]) -> int:
        """Write `data` (whole batches, offsets final) at the end of the file
        and index them. `batches` are (position in data, header). Returns the
        file position of the first batch. On an OSError nothing stays written
        (the file is cut back) and LogStorageError is raised."""
        position = self.size
        last = batches[-1][1]
        if not self.offset_index.can_append_offset(last.last_offset):
            raise ValueError(f"offset {last.last_offset} does not fit segment {self.base_offset}")
        oi, ti = self.offset_index, self.time_index
        saved = (oi.entries, ti.entries, self._max_timestamp, self.bytes_since_last_index_entry)
        # Which index file failed, when not the log: a path costs two joins,
        # so it is looked up only on failure.
        failing = "log"
        try:
            _pwrite_all(self.file.fd, data, position)
            max_ts = self.max_timestamp_and_offset
            since = self.bytes_since_last_index_entry
            for rel, h in batches:
                if h.max_timestamp > max_ts.timestamp:
                    max_ts = TimestampOffset(h.max_timestamp, h.last_offset)
                if since > self.config.index_interval_bytes:
                    if not oi.is_full:
                        failing = "offset"
                        oi.append(h.last_offset, position + rel)
                    if not ti.is_full:
                        failing = "time"
                        ti.maybe_append(max_ts.timestamp, max_ts.offset)
                    since = 0
                since += h.size
        except OSError as e:
            self._undo_append(position, saved)
            paths = {"log": self.log_path, "offset": self.index_path, "time": self.time_index_path}
            raise LogStorageError("append", paths[failing], e) from e
        if position == 0:
            self._rolling_timestamp = batches[0][1].max_timestamp
        self._max_timestamp = max_ts
        self.bytes_since_last_index_entry = since
        self.size = position + len(data)
        self._next_offset = last.next_offset
        if self.size - self._writeback_from >= writeback.WRITEBACK_BYTES:
            writeback.start_writeback(
                self.file.fd, self._writeback_from, self.size - self._writeback_from
            )
            self._writeback_from = self.size
        recent = self._recent
        for rel, h in batches:
            recent[h.base_offset] = (position + rel, *h)
        while len(recent) > _RECENT_BATCHES:
            del recent[next(iter(recent))]
        return position

    def _undo_append(self, position: int, saved) -> None:
        oi_entries, ti_entries, max_ts, since = saved
        self.offset_index.truncate_to_entries(oi_entries)
        self.time_index.truncate_to_entries(ti_entries)
        self._max_timestamp = max_ts
        self.bytes_since_last_index_entry = since
        try:
            os.ftruncate(self.file.fd, position)
        except OSError as e:
            # The file may now end in a partial batch: only a reopen (which
            # recovers the tail) can make the log consistent again.
            raise LogOfflineError(self.dir, e) from e

    def update_txn_index(self, txn: AbortedTxn) -> None:
        """Record a transaction aborted by a marker in this segment."""
        self.txn_index.append(txn)

    def collect_aborted_txns(
        self, fetch_offset: int, upper_bound_offset: int
    ) -> tuple[list[AbortedTxn], bool]:
        return self.txn_index.collect_aborted(fetch_offset, upper_bound_offset)

    # --- reads --------------------------------------------------------------------

    def batches(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """(file position, header) of the batches starting in [start, end),
        reading headers in chunks. Raises LogStorageError on a header that
        does not parse (the file changed under us)."""
        end = self.size if end is None else min(end, self.size)
        pos = start
        buf = b""
        buf_pos = start
        while pos < end:
            off = pos - buf_pos
            if off + BATCH_HEADER_SIZE > len(buf):
                buf = self.file.pread(max(SCAN_CHUNK, BATCH_HEADER_SIZE), pos)
                buf_pos, off = pos, 0
            try:
                h = read_batch_header(buf, off)
            except DecodeError as e:
                raise LogStorageError(f"read batch header at {pos}", self.log_path, e) from e
            yield pos, h
            pos += h.size

    def translate_offset(
        self, offset: int, start_position: int = 0
    ) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >=
        `offset` (the batch holding it, or the next one), None if none."""
        recent = self._recent.get(offset)
        if recent is not None and recent[0] >= start_position:
            return recent[0], BatchHeader._make(recent[1:])
        start = max(self.offset_index.lookup(offset).position, start_position)
        for pos, h in self.batches(start):
            if h.last_offset >= offset:
                return pos, h
        return None

    def batch_boundary_at_or_below(self, position: int, start: int) -> int:
        """The largest batch boundary <= position, scanning from `start` (a
        batch boundary <= position) with the index's help."""
        hint = self.offset_index.lookup_position(position).position
        pos = max(start, hint)
        for p, h in self.batches(pos):
            if p + h.size > position:
                return p
        return self.size

    def batches_by_timestamp(
        self, timestamp: int, starting_offset: int
    ) -> Iterator[tuple[int, BatchHeader]]:
        """The batches, in order, that may hold the first record with a
        timestamp >= timestamp at or after starting_offset: max timestamp >=
        timestamp, last offset >= starting_offset. The time index says where
        to start (the caller looks at the records inside)."""
        entry = self.time_index.lookup(timestamp)
        start = self.offset_index.lookup(max(entry.offset, starting_offset)).position
        for pos, h in self.batches(start):
            if h.max_timestamp >= timestamp and h.last_offset >= starting_offset:
                yield pos, h

    def find_batch_with_max_timestamp(self) -> tuple[int, BatchHeader] | None:
        ts, offset = self.max_timestamp_and_offset
        start = self.offset_index.lookup(offset).position
        for pos, h in self.batches(start):
            if h.max_timestamp == ts:
                return pos, h
        return None

    # --- recovery -----------------------------------------------------------------

    def recover(
        self,
        on_batch: Callable[[BatchHeader], None] | None = None,
        max_offset_exclusive: int | None = None,
    ) -> int:
        """Validate every batch (CRC, sizes, offsets increasing and inside the
        segment), rebuild both indexes, and cut the file at the first batch
        that fails. `on_batch` sees each valid header in order. Returns the
        number of bytes cut off."""
        try:
            self._close_indexes(trim=False)
            self._offset_index = OffsetIndex(
                FileStore(self.index_path, preallocate=_round(self.max_index_bytes, 8)),
                self.base_offset,
                entries=0,
            )
            self._time_index = TimeIndex(
                FileStore(self.time_index_path, preallocate=_round(self.max_index_bytes, 12)),
                self.base_offset,
                entries=0,
            )
            return self._recover(on_batch, max_offset_exclusive)
        except OSError as e:
            raise LogStorageError("recover segment", self.log_path, e) from e

    def _recover(self, on_batch, max_offset_exclusive) -> int:
        oi, ti = self.offset_index, self.time_index
        file_size = os.fstat(self.file.fd).st_size
        valid = 0
        last_index_entry = 0
        max_ts = TimestampOffset(NO_TIMESTAMP, self.base_offset)
        next_offset = self.base_offset
        first_ts: int | None = None
        buf = b""
        buf_pos = 0
        problem = None
        while valid < file_size:
            off = valid - buf_pos
            if off + LOG_OVERHEAD > len(buf):
                buf = self.file.pread(min(RECOVERY_CHUNK, file_size - valid), valid)
                buf_pos, off = valid, 0
            size = batch_size_at(buf, off)
            if size is None:
                problem = f"{file_size - valid} trailing bytes"
                break
            if size < BATCH_HEADER_SIZE or size > file_size - valid:
                problem = f"batch length {size - LOG_OVERHEAD} at position {valid}"
                break
            if off + size > len(buf):
                buf = self.file.pread(max(size, min(RECOVERY_CHUNK, file_size - valid)), valid)
                buf_pos, off = valid, 0
            try:
                h = validate_batch(buf, off)
            except DecodeError as e:
                problem = f"{e} (position {valid})"
                break
            if (
                h.last_offset_delta < 0
                or h.base_offset < next_offset
                or h.last_offset - self.base_offset > INT32_MAX
                or (max_offset_exclusive is not None and h.last_offset >= max_offset_exclusive)
            ):
                problem = (
                    f"batch offsets {h.base_offset}..{h.last_offset} at position {valid} "
                    f"do not follow offset {next_offset - 1}"
                )
                break
            if h.max_timestamp > max_ts.timestamp:
                max_ts = TimestampOffset(h.max_timestamp, h.last_offset)
            if first_ts is None:
                first_ts = h.max_timestamp
            if valid - last_index_entry > self.config.index_interval_bytes:
                if not oi.is_full:
                    oi.append(h.last_offset, valid)
                if not ti.is_full:
                    ti.maybe_append(max_ts.timestamp, max_ts.offset)
                last_index_entry = valid
            valid += size
            next_offset = h.next_offset
            if on_batch is not None:
                on_batch(h)
        truncated = file_size - valid
        if truncated:
            log.warning(
                "truncating %d bytes of %s at position %d: %s",
                truncated,
                self.log_path,
                valid,
                problem,
            )
            os.ftruncate(self.file.fd, valid)
        self.size = valid
        self._writeback_from = min(self._writeback_from, valid)
        self._next_offset = next_offset
        self._recent.clear()
        self._max_timestamp = max_ts
        self._rolling_timestamp = first_ts
        self.bytes_since_last_index_entry = valid - last_index_entry
        # As a closed segment does: the last time index entry is the maximum.
        ti.maybe_append(max_ts.timestamp, max_ts.offset, skip_full_check=True)
        oi.trim()
        ti.trim()
        return truncated

    # --- truncation ---------------------------------------------------------------

    def truncate_to(self, offset: int, now_ms: int) -> int:
        """Remove the batches holding offsets >= offset. A batch holding
        `offset` in its middle goes entirely. Returns bytes removed; the
        segment becomes active (indexes preallocated again)."""
        found = self.translate_offset(offset)
        cut_offset = found[1].base_offset if found is not None else offset
        self._recent.clear()
        oi, ti = self.offset_index, self.time_index
        oi.truncate_to(cut_offset)
        ti.truncate_to(cut_offset)
        self.txn_index.truncate_to(cut_offset)
        self.make_active()
        removed = 0
        if found is not None:
            position = found[0]
            removed = self.size - position
            try:
                os.ftruncate(self.file.fd, position)
            except OSError as e:
                raise LogStorageError("truncate", self.log_path, e) from e
            self.size = position
            self._writeback_from = min(self._writeback_from, position)
            self._next_offset = cut_offset
        self.bytes_since_last_index_entry = 0
        if self.size == 0:
            self.created_ms = now_ms
            self._rolling_timestamp = None
            self._next_offset = self.base_offset
        self._max_timestamp = self._read_largest_timestamp()
        return removed

    def _read_largest_timestamp(self) -> TimestampOffset:
        best = self.time_index.last_entry
        start = self.offset_index.lookup(best.offset).position
        for _, h in self.batches(start):
            if h.max_timestamp > best.timestamp:
                best = TimestampOffset(h.max_timestamp, h.last_offset)
        return best

    # --- roll, close, delete ------------------------------------------------------

    def on_become_inactive(self) -> None:
        """The segment rolled: write the final time index entry (the segment's
        max timestamp) and trim both indexes to their entries."""
        try:
            ts = self.max_timestamp_and_offset
            self.time_index.maybe_append(ts.timestamp, ts.offset, skip_full_check=True)
            self.offset_index.trim()
            self.time_index.trim()
        except OSError as e:
            raise LogStorageError("trim indexes", self.index_path, e) from e

    def close(self) -> None:
        """Final time index entry, trimmed indexes, file closed."""
        try:
            if self._time_index is not None and self._max_timestamp is not None:
                ts = self._max_timestamp
                self._time_index.maybe_append(ts.timestamp, ts.offset, skip_full_check=True)
            self._close_indexes(trim=True)
        finally:
            self.file.close()

    def close_files(self) -> None:
        """Close without writing anything (after a storage failure)."""
        try:
            self._close_indexes(trim=False)
        finally:
            self.file.close()

    def delete(self) -> None:
        """Remove the segment's files. The `.log` stays open for reads that
        still hold it; its descriptor closes when they let go."""
        try:
            self._close_indexes(trim=False)
        except OSError:
            pass
        for path in self.paths:
            try:
                unlink_quietly(path)
            except OSError as e:
                raise LogStorageError("delete segment", path, e) from e
        self.txn_index.delete()

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size})"


def _round(nbytes: int, entry_size: int) -> int:
    return nbytes - nbytes % entry_size


def _open(path: str, flags: int) -> int:
    try:
        return os.open(path, flags, 0o644)
    except OSError as e:
        raise LogStorageError("open segment", path, e) from e


def _pwrite_all(fd: int, data, position: int) -> None:
    view = memoryview(data).cast("B")
    while view:
        n = os.pwrite(fd, view, position)
        view = view[n:]
        position += n
