"""Sparse offset and time indexes of a segment, in Kafka's file formats.

`.index` (OffsetIndex): 8-byte entries, big-endian
    int32 relative offset (offset - segment base offset), int32 file position
mapping the last offset of a batch to the position where that batch starts.

`.timeindex` (TimeIndex): 12-byte entries, big-endian
    int64 timestamp, int32 relative offset
the largest timestamp seen so far in the segment and the last offset of the
batch that carried it; entries are added only when the timestamp grows.

Both are sparse (an entry every `index_interval_bytes` of batches, see
segment.py) and derived: the log is the truth and an index that looks wrong
is rebuilt. The active segment's index files are preallocated to
`segment_index_bytes` (rounded down to whole entries) and trimmed to their
entries when the segment rolls or the log closes, as Kafka does, so the
number of entries of a closed index is its length / entry size.

The index code runs over an `IndexStore`: `FileStore` maps the file into
memory for lookups, `MemoryStore` keeps the bytes in a bytearray so the
search logic is testable without files. Entries are written with `pwrite`
rather than through the mapping: on a full disk a write into a sparse
preallocated file then fails with ENOSPC instead of killing the process
with SIGBUS (Linux keeps the mapping and the page cache coherent).

New entries wait in a small tail in memory (lookups read it) and go to the
file in one `pwrite` once they fill `TAIL_BYTES`, or when the index is
written out: by a flush before its fsync, and when it is trimmed, resized or
the segment rolls or closes. An append then costs no system call: across
1,000 partitions two `pwrite`s per batch (offset and time entry) were a
seventh of the event loop's time. The disk blocks the tail will be written
to are taken ahead (`posix_fallocate`, `RESERVE_BYTES` at a time), so a full
disk still fails the append whose entry needs a block, as when every entry
was written at once, and never the later write of the tail (a roll, a
close). What a kill -9 loses of a tail belongs to a segment past the
recovery point, whose indexes recovery rebuilds anyway.
"""

from __future__ import annotations

import errno
import mmap
import os
import struct
from typing import NamedTuple, Protocol

from logstore.errors import CorruptIndexError

INT32_MAX = 2**31 - 1
NO_TIMESTAMP = -1

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")

# Unwritten entries an index holds before it writes them (a page), and how
# far ahead of its written entries it has the disk's blocks reserved.
TAIL_BYTES = 4096
RESERVE_BYTES = 4 * TAIL_BYTES


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


# --- stores -------------------------------------------------------------------------


class IndexStore(Protocol):
    @property
    def path(self) -> str | None: ...

    @property
    def capacity(self) -> int: ...

    def view(self): ...

    def write(self, pos: int, data: bytes) -> None: ...

    def reserve(self, pos: int, nbytes: int) -> int: ...

    def resize(self, nbytes: int) -> None: ...

    def close(self) -> None: ...


class MemoryStore:
    """An index store in memory (tests, and anything that needs no file)."""

    path = None

    def __init__(self, capacity: int = 0, data: bytes = b""):
        self._buf = bytearray(data) + bytearray(max(0, capacity - len(data)))

    @property
    def capacity(self) -> int:
        return len(self._buf)

    def view(self):
        return self._buf

    def write(self, pos: int, data: bytes) -> None:
        self._buf[pos : pos + len(data)] = data

    def reserve(self, pos: int, nbytes: int) -> int:
        return min(pos + nbytes, len(self._buf))

    def resize(self, nbytes: int) -> None:
        if nbytes < len(self._buf):
            del self._buf[nbytes:]
        else:
            self._buf.extend(bytearray(nbytes - len(self._buf)))

    def close(self) -> None:
        pass


class FileStore:
    """An index file, memory-mapped read-only for lookups, written with pwrite."""

    def __init__(self, path: str, *, preallocate: int | None = None):
        """Open (creating if needed) the index file at `path`. With
        `preallocate`, the file is first emptied and set to that size
        (sparse), as Kafka does for a new segment's index."""
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._mm: mmap.mmap | None = None
        try:
            if preallocate is not None:
                os.ftruncate(self._fd, 0)
                os.ftruncate(self._fd, preallocate)
            self._capacity = os.fstat(self._fd).st_size
            self._map()
        except BaseException:
            os.close(self._fd)
            raise

    def _map(self) -> None:
        self._mm = (
            mmap.mmap(self._fd, self._capacity, access=mmap.ACCESS_READ) if self._capacity else None
        )

    def _unmap(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None

    @property
    def capacity(self) -> int:
        return self._capacity

    def view(self):
        return self._mm if self._mm is not None else b""

    def write(self, pos: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.pwrite(self._fd, view, pos)
            view = view[n:]
            pos += n

    def reserve(self, pos: int, nbytes: int) -> int:
        """Have the disk give the blocks of [pos, pos + nbytes) now, within the
        file's size (a full disk fails here, not the write that comes later).
        Returns where the reserved range ends."""
        end = min(pos + nbytes, self._capacity)
        if end > pos:
            try:
                os.posix_fallocate(self._fd, pos, end - pos)
            except OSError as e:
                if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
                # A file system that cannot reserve (glibc emulates most):
                # then the tail's write meets a full disk itself.
        return end

    def resize(self, nbytes: int) -> None:
        if nbytes == self._capacity:
            return
        # Unmap first: touching a mapping beyond a shrunk file is SIGBUS.
        self._unmap()
        try:
            os.ftruncate(self._fd, nbytes)
            self._capacity = nbytes
        finally:
            self._capacity = os.fstat(self._fd).st_size
            self._map()

    def close(self) -> None:
        self._unmap()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


# --- indexes ------------------------------------------------------------------------


class _Index:
    ENTRY_SIZE = 0

    def __init__(self, store: IndexStore, base_offset: int, *, entries: int | None = None):
        """`entries` None means "the store is a closed index": every whole entry
        of its length counts (how Kafka opens an existing index file)."""
        self._store = store
        self.base_offset = base_offset
        if entries is None:
            entries = store.capacity // self.ENTRY_SIZE
        self._entries = entries
        # Entries below _written are in the store; the rest are in _tail.
        self._written = entries
        self._tail = bytearray()
        # The file's blocks are reserved up to here (none known at first).
        self._reserved_to = 0
        # Kept, not derived: every append asks whether the index is full.
        self._max_entries = store.capacity // self.ENTRY_SIZE

    @property
    def path(self) -> str | None:
        return self._store.path

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._max_entries

    @property
    def size_bytes(self) -> int:
        return self._store.capacity

    def relative(self, offset: int) -> int:
        rel = offset - self.base_offset
        if not 0 <= rel <= INT32_MAX:
            raise ValueError(
                f"offset {offset} does not fit an index of base offset {self.base_offset}"
            )
        return rel

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def _slot(self, n: int):
        """(buffer, position) of entry `n`: the store's, or the unwritten tail's."""
        if n < self._written:
            return self._store.view(), n * self.ENTRY_SIZE
        return self._tail, (n - self._written) * self.ENTRY_SIZE

    def _add(self, data: bytes) -> None:
        """One more entry, into the tail; written with the others once they
        fill TAIL_BYTES. An OSError reserving its block adds nothing; one from
        the write leaves every entry in the tail (readable, and written by the
        next write_out)."""
        pos = self._entries * self.ENTRY_SIZE
        if pos + self.ENTRY_SIZE > self._reserved_to:
            self._reserved_to = self._store.reserve(pos, RESERVE_BYTES)
        self._tail += data
        self._entries += 1
        if len(self._tail) >= TAIL_BYTES:
            self.write_out()

    def write_out(self) -> None:
        """Write the tail's entries to the store."""
        if self._tail:
            self._store.write(self._written * self.ENTRY_SIZE, bytes(self._tail))
            self._written = self._entries
            self._tail.clear()

    @property
    def unwritten_entries(self) -> int:
        return self._entries - self._written

    def resize(self, nbytes: int) -> None:
        """Set the file to `nbytes` rounded down to whole entries (never below
        the entries in use)."""
        nbytes = max(nbytes - nbytes % self.ENTRY_SIZE, self._entries * self.ENTRY_SIZE)
        self.write_out()
        self._resize_store(nbytes)

    def trim(self) -> None:
        """Cut the preallocated tail: the file becomes exactly its entries."""
        self.write_out()
        self._resize_store(self._entries * self.ENTRY_SIZE)

    def _resize_store(self, nbytes: int) -> None:
        try:
            self._store.resize(nbytes)
        finally:
            self._max_entries = self._store.capacity // self.ENTRY_SIZE
            self._reserved_to = min(self._reserved_to, self._store.capacity)

    def truncate_to_entries(self, n: int) -> None:
        n = max(0, min(n, self._entries))
        if n < self._written:
            # The file keeps the bytes past n; appends overwrite them, and
            # trim() cuts them.
            self._written = n
            self._tail.clear()
        else:
            del self._tail[(n - self._written) * self.ENTRY_SIZE :]
        self._entries = n
        self._after_truncate()

    def reset(self) -> None:
        self.truncate_to_entries(0)

    def _after_truncate(self) -> None:
        pass

    def close(self) -> None:
        """Close the store; unwritten entries are dropped (trim() or
        write_out() first to keep them)."""
        self._tail.clear()
        self._store.close()

    def _largest_lower_bound(self, key_of, target: int) -> int:
        """Slot of the largest entry whose key <= target, or -1."""
        lo, hi = 0, self._entries - 1
        if hi < 0 or key_of(0) > target:
            return -1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if key_of(mid) <= target:
                lo = mid
            else:
                hi = mid - 1
        return lo


class OffsetIndex(_Index):
    ENTRY_SIZE = _OFFSET_ENTRY.size

    def __init__(self, store: IndexStore, base_offset: int, *, entries: int | None = None):
        super().__init__(store, base_offset, entries=entries)
        self._last_offset = self._read_last_offset()

    def _read_last_offset(self) -> int:
        return self.entry(self._entries - 1).offset if self._entries else self.base_offset

    def _after_truncate(self) -> None:
        self._last_offset = self._read_last_offset()

    @property
    def is_full(self) -> bool:
        return self._entries >= self._max_entries

    @property
    def last_offset(self) -> int:
        """Offset of the last entry, or the base offset when empty."""
        return self._last_offset

    def entry(self, n: int) -> OffsetPosition:
        rel, pos = _OFFSET_ENTRY.unpack_from(*self._slot(n))
        return OffsetPosition(self.base_offset + rel, pos)

    def _rel(self, n: int) -> int:
        return _OFFSET_ENTRY.unpack_from(*self._slot(n))[0]

    def _pos(self, n: int) -> int:
        return _OFFSET_ENTRY.unpack_from(*self._slot(n))[1]

    def append(self, offset: int, position: int) -> None:
        if self.is_full:
            raise ValueError(f"offset index {self.path} is full ({self._entries} entries)")
        if self._entries and offset <= self._last_offset:
            raise ValueError(
                f"index offset {offset} is not above the last indexed offset {self._last_offset}"
            )
        data = _OFFSET_ENTRY.pack(self.relative(offset), position)
        self._last_offset = offset
        self._add(data)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The entry with the largest offset <= target (the batch to start a
        scan from), or (base offset, 0)."""
        slot = self._largest_lower_bound(self._rel, target_offset - self.base_offset)
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry(slot)

    def lookup_position(self, position: int) -> OffsetPosition:
        """The entry with the largest file position <= position, or (base, 0)."""
        slot = self._largest_lower_bound(self._pos, position)
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry(slot)

    def truncate_to(self, offset: int) -> None:
        """Remove the entries for offsets >= offset."""
        rel = offset - self.base_offset
        slot = self._largest_lower_bound(self._rel, rel)
        if slot < 0:
            n = 0
        elif self._rel(slot) == rel:
            n = slot
        else:
            n = slot + 1
        self.truncate_to_entries(n)

    def sanity_check(self, log_size: int) -> None:
        """Raise CorruptIndexError unless the index is plausible for a segment
        file of `log_size` bytes: whole entries, the first entry past position
        0 (the first batch is never indexed), the last entry after the first
        and inside the file. Zeros left in a preallocated file by a crash fail
        this. O(1): the entries in between are not read."""
        path = self.path or "<memory>"
        if self._store.capacity % self.ENTRY_SIZE:
            raise CorruptIndexError(path, f"size {self._store.capacity} is not a multiple of 8")
        if not self._entries:
            return
        first, last = self.entry(0), self.entry(self._entries - 1)
        if first.position <= 0 or last.position >= log_size:
            raise CorruptIndexError(
                path, f"entries {first} .. {last} point outside a {log_size}-byte segment"
            )
        if self._entries > 1 and (last.offset <= first.offset or last.position <= first.position):
            raise CorruptIndexError(path, f"last entry {last} does not follow first {first}")


class TimeIndex(_Index):
    ENTRY_SIZE = _TIME_ENTRY.size

    def __init__(self, store: IndexStore, base_offset: int, *, entries: int | None = None):
        super().__init__(store, base_offset, entries=entries)
        self._last_entry = self._read_last_entry()

    def _read_last_entry(self) -> TimestampOffset:
        if self._entries == 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(self._entries - 1)

    def _after_truncate(self) -> None:
        self._last_entry = self._read_last_entry()

    @property
    def is_full(self) -> bool:
        # The last slot stays free for the entry written when the segment rolls.
        return self._entries >= self._max_entries - 1

    @property
    def last_entry(self) -> TimestampOffset:
        """The last entry, or (-1, base offset) when empty."""
        return self._last_entry

    def entry(self, n: int) -> TimestampOffset:
        ts, rel = _TIME_ENTRY.unpack_from(*self._slot(n))
        return TimestampOffset(ts, self.base_offset + rel)

    def _ts(self, n: int) -> int:
        return _TIME_ENTRY.unpack_from(*self._slot(n))[0]

    def _rel(self, n: int) -> int:
        return _TIME_ENTRY.unpack_from(*self._slot(n))[1]

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> bool:
        """Add (timestamp, offset) when timestamp is above the last entry's.
        Returns whether an entry was written."""
        if timestamp <= self._last_entry.timestamp:
            return False
        if self._entries >= self._max_entries or (not skip_full_check and self.is_full):
            raise ValueError(f"time index {self.path} is full ({self._entries} entries)")
        if self._entries and offset < self._last_entry.offset:
            raise ValueError(
                f"time index offset {offset} is below the last entry's {self._last_entry.offset}"
            )
        data = _TIME_ENTRY.pack(timestamp, self.relative(offset))
        self._last_entry = TimestampOffset(timestamp, offset)
        self._add(data)
        return True

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The entry with the largest timestamp <= target, or (-1, base offset)."""
        slot = self._largest_lower_bound(self._ts, target_timestamp)
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(slot)

    def truncate_to(self, offset: int) -> None:
        """Remove the entries for offsets >= offset."""
        rel = offset - self.base_offset
        slot = self._largest_lower_bound(self._rel, rel)
        if slot < 0:
            n = 0
        elif self._rel(slot) == rel:
            n = slot
        else:
            n = slot + 1
        self.truncate_to_entries(n)

    def sanity_check(self, max_offset: int) -> None:
        """Raise CorruptIndexError unless the index is plausible for a segment
        whose last offset is `max_offset`: whole entries, the last entry's
        timestamp above the first's and its offset within the segment. O(1)."""
        path = self.path or "<memory>"
        if self._store.capacity % self.ENTRY_SIZE:
            raise CorruptIndexError(path, f"size {self._store.capacity} is not a multiple of 12")
        if not self._entries:
            return
        first, last = self.entry(0), self.entry(self._entries - 1)
        if last.offset > max_offset:
            raise CorruptIndexError(
                path, f"last entry {last} is beyond the segment's last offset {max_offset}"
            )
        if self._entries > 1 and (last.timestamp <= first.timestamp or last.offset < first.offset):
            raise CorruptIndexError(path, f"last entry {last} does not follow first {first}")
