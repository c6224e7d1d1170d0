"""Offset and time indexes over an in-memory store and over real files."""

from __future__ import annotations

import errno
import os
import struct

import pytest

from logstore.errors import CorruptIndexError
from logstore.index import (
    TAIL_BYTES,
    FileStore,
    MemoryStore,
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
)


def offset_index(base=100, entries=(), capacity=80) -> OffsetIndex:
    idx = OffsetIndex(MemoryStore(capacity), base, entries=0)
    for offset, position in entries:
        idx.append(offset, position)
    return idx


def test_empty_offset_index_lookup_returns_base_offset_at_position_zero():
    idx = offset_index()
    assert idx.lookup(12345) == OffsetPosition(100, 0)
    assert idx.last_offset == 100


def test_offset_index_lookup_finds_largest_entry_at_or_below_target():
    idx = offset_index(entries=[(110, 400), (120, 900), (135, 1500)])
    assert idx.lookup(99) == (100, 0)
    assert idx.lookup(109) == (100, 0)
    assert idx.lookup(110) == (110, 400)
    assert idx.lookup(119) == (110, 400)
    assert idx.lookup(120) == (120, 900)
    assert idx.lookup(10**9) == (135, 1500)
    assert idx.lookup_position(899) == (110, 400)
    assert idx.lookup_position(900) == (120, 900)
    assert idx.lookup_position(10) == (100, 0)


def test_offset_index_entries_are_big_endian_relative_offset_and_position():
    store = MemoryStore(16)
    idx = OffsetIndex(store, 1000, entries=0)
    idx.append(1007, 4242)
    idx.write_out()
    assert bytes(store.view()[:8]) == struct.pack(">ii", 7, 4242)


class CountingStore(MemoryStore):
    """A memory store that counts its writes and can be made to fail them."""

    def __init__(self, capacity: int):
        super().__init__(capacity)
        self.writes = 0
        self.failing: OSError | None = None

    def write(self, pos: int, data: bytes) -> None:
        if self.failing is not None:
            raise self.failing
        self.writes += 1
        super().write(pos, data)


def test_new_entries_are_read_from_memory_and_written_a_page_at_a_time():
    per_page = TAIL_BYTES // OffsetIndex.ENTRY_SIZE
    store = CountingStore(4 * TAIL_BYTES)
    idx = OffsetIndex(store, 0, entries=0)
    for n in range(per_page - 1):
        idx.append(10 * (n + 1), 100 * (n + 1))
    # Not written yet, and every lookup sees them.
    assert store.writes == 0 and idx.unwritten_entries == per_page - 1
    assert idx.lookup(25) == (20, 200) and idx.lookup_position(250) == (20, 200)
    idx.append(10 * per_page, 100 * per_page)
    assert store.writes == 1 and idx.unwritten_entries == 0
    assert bytes(store.view()[:8]) == struct.pack(">ii", 10, 100)
    # Written and unwritten entries are searched as one index.
    idx.append(10 * per_page + 10, 100 * per_page + 100)
    assert idx.lookup(10 * per_page + 5) == (10 * per_page, 100 * per_page)
    assert idx.lookup(10**9) == (10 * per_page + 10, 100 * per_page + 100)
    assert idx.lookup(15) == (10, 100)


def test_truncation_reaches_into_written_and_unwritten_entries():
    per_page = TAIL_BYTES // OffsetIndex.ENTRY_SIZE
    store = CountingStore(4 * TAIL_BYTES)
    idx = OffsetIndex(store, 0, entries=0)
    for n in range(per_page + 3):
        idx.append(n + 1, 10 * (n + 1))
    idx.truncate_to(per_page + 2)  # drops one unwritten entry
    assert idx.entries == per_page + 1 and idx.last_offset == per_page + 1
    idx.truncate_to(5)  # into the written ones: the tail goes too
    assert idx.entries == 4 and idx.unwritten_entries == 0 and idx.last_offset == 4
    idx.append(7, 700)
    idx.trim()
    assert bytes(store.view()) == b"".join(
        struct.pack(">ii", o, p) for o, p in ((1, 10), (2, 20), (3, 30), (4, 40), (7, 700))
    )


def test_a_failed_write_keeps_the_entries_for_the_next():
    """A full disk refuses the page write inside an append (the segment then
    undoes that append); the entries stay readable and are written later."""
    time_entries = TAIL_BYTES // TimeIndex.ENTRY_SIZE + 1
    store = CountingStore(4 * TAIL_BYTES)
    idx = TimeIndex(store, 0, entries=0)
    store.failing = OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(OSError):
        for n in range(time_entries):
            idx.maybe_append(1000 + n, n)
    written = idx.entries
    assert idx.unwritten_entries == written and idx.lookup(1001) == (1001, 1)
    store.failing = None
    idx.write_out()
    assert idx.unwritten_entries == 0 and store.writes == 1
    assert TimeIndex(MemoryStore(data=bytes(store.view()[: written * 12])), 0).lookup(1001) == (
        1001,
        1,
    )


def test_offset_index_refuses_non_increasing_offsets_and_overflow():
    idx = offset_index(entries=[(110, 400)])
    with pytest.raises(ValueError):
        idx.append(110, 500)
    with pytest.raises(ValueError):
        idx.append(100 + 2**31, 600)
    assert idx.can_append_offset(100 + 2**31 - 1)
    assert not idx.can_append_offset(99)


def test_offset_index_is_full_at_capacity():
    idx = offset_index(capacity=16)
    idx.append(101, 10)
    idx.append(102, 20)
    assert idx.is_full
    with pytest.raises(ValueError):
        idx.append(103, 30)


def test_offset_index_truncate_removes_entries_at_and_above_offset():
    idx = offset_index(entries=[(110, 400), (120, 900), (135, 1500)])
    idx.truncate_to(120)
    assert idx.entries == 1 and idx.last_offset == 110
    idx = offset_index(entries=[(110, 400), (120, 900), (135, 1500)])
    idx.truncate_to(121)
    assert idx.entries == 2 and idx.last_offset == 120
    idx.truncate_to(50)
    assert idx.entries == 0 and idx.last_offset == 100


def test_offset_index_trim_and_resize_keep_entries():
    idx = offset_index(entries=[(110, 400), (120, 900)], capacity=800)
    idx.trim()
    assert idx.size_bytes == 16 and idx.max_entries == 2 and idx.is_full
    idx.resize(803)
    assert idx.size_bytes == 800 and idx.lookup(125) == (120, 900)


def test_time_index_lookup_and_maybe_append_only_on_larger_timestamps():
    idx = TimeIndex(MemoryStore(120), 100, entries=0)
    assert idx.last_entry == (-1, 100)
    assert idx.lookup(5) == (-1, 100)
    assert idx.maybe_append(1000, 105)
    assert not idx.maybe_append(1000, 107)
    assert not idx.maybe_append(999, 108)
    assert idx.maybe_append(2000, 110)
    assert idx.entries == 2
    assert idx.lookup(999) == (-1, 100)
    assert idx.lookup(1500) == (1000, 105)
    assert idx.lookup(2000) == (2000, 110)
    with pytest.raises(ValueError):
        idx.maybe_append(3000, 109)


def test_time_index_keeps_last_slot_for_the_roll_entry():
    idx = TimeIndex(MemoryStore(36), 0, entries=0)
    idx.maybe_append(1, 1)
    idx.maybe_append(2, 2)
    assert idx.is_full
    with pytest.raises(ValueError):
        idx.maybe_append(3, 3)
    assert idx.maybe_append(3, 3, skip_full_check=True)
    assert idx.entries == 3


def test_time_index_truncate_by_offset():
    idx = TimeIndex(MemoryStore(120), 100, entries=0)
    for ts, off in [(10, 101), (20, 105), (30, 109)]:
        idx.maybe_append(ts, off)
    idx.truncate_to(105)
    assert idx.entries == 1 and idx.last_entry == (10, 101)


def test_sanity_check_rejects_zeros_left_in_a_preallocated_index():
    # A crash leaves the active index preallocated: entries after the real ones are zeros.
    store = MemoryStore(80)
    real = OffsetIndex(store, 0, entries=0)
    real.append(50, 4100)
    real.append(90, 8300)
    reopened = OffsetIndex(store, 0)  # as Kafka opens a file: every slot counts
    assert reopened.entries == 10
    with pytest.raises(CorruptIndexError):
        reopened.sanity_check(10_000)
    ts_store = MemoryStore(60)
    TimeIndex(ts_store, 0, entries=0).maybe_append(500, 50)
    with pytest.raises(CorruptIndexError):
        TimeIndex(ts_store, 0).sanity_check(100)


def test_sanity_check_accepts_a_trimmed_index():
    idx = offset_index(entries=[(110, 400), (120, 900)], capacity=800)
    idx.trim()
    OffsetIndex(MemoryStore(data=bytes(idx._store.view())), 100).sanity_check(1000)
    with pytest.raises(CorruptIndexError):
        OffsetIndex(MemoryStore(data=bytes(idx._store.view())), 100).sanity_check(900)


def test_file_store_preallocates_sparse_file_and_trims_to_entries(tmp_path):
    path = os.fspath(tmp_path / "00000000000000000000.index")
    idx = OffsetIndex(FileStore(path, preallocate=10 * 1024 * 1024), 0, entries=0)
    assert os.path.getsize(path) == 10 * 1024 * 1024
    idx.append(10, 4200)
    idx.append(20, 8400)
    assert idx.lookup(15) == (10, 4200)
    idx.trim()
    idx.close()
    with open(path, "rb") as f:
        assert f.read() == struct.pack(">iiii", 10, 4200, 20, 8400)
    reopened = OffsetIndex(FileStore(path), 0)
    assert reopened.entries == 2 and reopened.lookup(25) == (20, 8400)
    reopened.close()


def test_file_store_time_index_preallocation_rounds_down_to_whole_entries(tmp_path):
    path = os.fspath(tmp_path / "00000000000000000000.timeindex")
    idx = TimeIndex(FileStore(path, preallocate=10485760 - 10485760 % 12), 0, entries=0)
    assert os.path.getsize(path) == 10485756
    assert idx.max_entries == 873813
    idx.close()
