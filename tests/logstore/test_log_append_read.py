"""Appending batches and reading them back as file ranges."""

from __future__ import annotations

import os
import socket

import pytest

from logstore import (
    InvalidRecords,
    LogConfig,
    OffsetOutOfRange,
    RecordBatchTooLarge,
    UnexpectedAppendOffset,
)
from logstore.index import OffsetIndex
from wire.records import iter_batches, validate_batch

from .helpers import T0, FakeClock, all_offsets, batch, offsets_of, open_log, read_all


def test_append_assigns_offsets_from_the_log_end(tmp_path):
    log = open_log(tmp_path / "t-0")
    first = log.append(batch(3), leader_epoch=0)
    second = log.append(batch(2), leader_epoch=0)
    assert (first.first_offset, first.last_offset) == (0, 2)
    assert (second.first_offset, second.last_offset) == (3, 4)
    assert log.log_end_offset == 5 and log.log_start_offset == 0
    assert first.position == 0 and second.position == first.size
    assert second.segment_base_offset == 0 and second.record_count == 2


def test_append_patches_base_offset_and_leader_epoch_in_place_and_keeps_crc_valid(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(batch(4), leader_epoch=0)
    data = batch(2)
    log.append(data, leader_epoch=7)
    h = validate_batch(data)
    assert (h.base_offset, h.partition_leader_epoch) == (4, 7)
    stored = log.read(4, 1000).read_bytes()
    assert stored == bytes(data)


def test_read_only_input_is_copied_and_left_untouched(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(batch(1), 0)
    data = bytes(batch(1))
    info = log.append(data, 0)
    assert info.first_offset == 1
    assert validate_batch(data).base_offset == 0


def test_several_batches_in_one_append_get_consecutive_offsets(tmp_path):
    log = open_log(tmp_path / "t-0")
    data = batch(2) + batch(3) + batch(1)
    info = log.append(data, 0)
    assert (info.first_offset, info.last_offset, info.record_count) == (0, 5, 6)
    assert offsets_of(read_all(log)) == [(0, 1), (2, 4), (5, 5)]


def test_round_trip_is_byte_exact(tmp_path):
    log = open_log(tmp_path / "t-0")
    written = []
    for i in range(20):
        data = batch(1 + i % 4, value_size=i * 7, compression=i % 5)
        log.append(data, 2)
        written.append(bytes(data))
    assert read_all(log) == b"".join(written)


def test_read_starts_at_the_batch_holding_the_offset(tmp_path):
    log = open_log(tmp_path / "t-0")
    for _ in range(5):
        log.append(batch(10), 0)
    result = log.read(27, 1 << 20)
    assert offsets_of(result.read_bytes())[0] == (20, 29)
    assert result.start_offset == 27


def test_read_returns_whole_batches_within_max_bytes(tmp_path):
    log = open_log(tmp_path / "t-0")
    sizes = []
    for _ in range(10):
        sizes.append(log.append(batch(1, value_size=100), 0).size)
    result = log.read(0, sizes[0] * 3 + sizes[0] // 2)
    assert result.size == sizes[0] * 3
    assert offsets_of(result.read_bytes()) == [(0, 0), (1, 1), (2, 2)]


def test_read_returns_one_oversized_batch_only_with_min_one_batch(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(batch(1, value_size=5000), 0)
    assert log.read(0, 100).size > 5000
    empty = log.read(0, 100, min_one_batch=False)
    assert empty.size == 0 and empty.read_bytes() == b""


def test_read_stops_before_max_offset(tmp_path):
    log = open_log(tmp_path / "t-0")
    for _ in range(4):
        log.append(batch(5), 0)
    assert offsets_of(log.read(0, 1 << 20, max_offset=10).read_bytes()) == [(0, 4), (5, 9)]
    # A high watermark inside a batch excludes that batch.
    assert offsets_of(log.read(0, 1 << 20, max_offset=12).read_bytes()) == [(0, 4), (5, 9)]
    assert log.read(10, 1 << 20, max_offset=10).size == 0
    assert log.read(11, 1 << 20, max_offset=12).size == 0


def test_read_at_log_end_is_empty_and_beyond_is_out_of_range(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(batch(3), 0)
    assert log.read(3, 100).size == 0
    with pytest.raises(OffsetOutOfRange) as e:
        log.read(4, 100)
    assert (e.value.offset, e.value.log_start_offset, e.value.log_end_offset) == (4, 0, 3)
    with pytest.raises(OffsetOutOfRange):
        log.read(-1, 100)


def test_read_result_is_a_file_range_for_sendfile(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(batch(3, value_size=50), 0)
    log.append(batch(2, value_size=50), 0)
    result = log.read(3, 1 << 20)
    a, b = socket.socketpair()
    with a, b:
        sent = os.sendfile(a.fileno(), result.fd, result.position, result.size)
        assert sent == result.size
        assert b.recv(1 << 16) == result.read_bytes()
    assert offsets_of(result.read_bytes()) == [(3, 4)]


def test_append_rejects_bytes_that_are_not_whole_batches(tmp_path):
    log = open_log(tmp_path / "t-0")
    with pytest.raises(InvalidRecords):
        log.append(bytearray(), 0)
    with pytest.raises(InvalidRecords) as e:
        log.append(batch(1) + b"\x00" * 10, 0)
    assert e.value.position is not None
    with pytest.raises(InvalidRecords):
        log.append(batch(1)[:-3], 0)
    assert log.log_end_offset == 0


def test_append_larger_than_a_segment_is_rejected(tmp_path):
    log = open_log(tmp_path / "t-0", LogConfig(segment_bytes=1000))
    with pytest.raises(RecordBatchTooLarge) as e:
        log.append(batch(1, value_size=2000), 0)
    assert e.value.segment_bytes == 1000 and e.value.size > 2000


def test_roll_by_size_keeps_segments_under_segment_bytes(tmp_path):
    log = open_log(tmp_path / "t-0", LogConfig(segment_bytes=1000))
    for _ in range(30):
        log.append(batch(1, value_size=100), 0)
    segments = log.segments
    assert len(segments) > 3
    assert all(s.size <= 1000 for s in segments)
    bases = [s.base_offset for s in segments]
    assert bases == sorted(bases) and bases[0] == 0
    names = sorted(n for n in os.listdir(tmp_path / "t-0") if n.endswith(".log"))
    assert names == [f"{b:020d}.log" for b in bases]
    assert all_offsets(log) == list(range(30))


def test_rolled_segment_indexes_are_trimmed_and_active_ones_preallocated(tmp_path):
    cfg = LogConfig(segment_bytes=2000, index_interval_bytes=100, segment_index_bytes=4096)
    log = open_log(tmp_path / "t-0", cfg)
    for _ in range(30):
        log.append(batch(1, value_size=100), 0)
    first, active = log.segments[0], log.segments[-1]
    assert os.path.getsize(first.index_path) == 8 * first.offset_index.entries > 0
    assert os.path.getsize(first.time_index_path) == 12 * first.time_index.entries > 0
    assert os.path.getsize(active.index_path) == 4096
    assert os.path.getsize(active.time_index_path) == 4096 - 4096 % 12
    # The rolled segment's last time index entry is its largest timestamp.
    assert first.time_index.last_entry.timestamp == first.max_timestamp


def test_roll_by_time_uses_the_first_batch_timestamp(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", LogConfig(segment_ms=60_000), clock)
    log.append(batch(1, timestamp=T0), 0)
    log.append(batch(1, timestamp=T0 + 60_000), 0)  # exactly segment.ms: no roll
    assert len(log.segments) == 1
    info = log.append(batch(1, timestamp=T0 + 60_001), 0)
    assert len(log.segments) == 2 and info.segment_base_offset == 2
    # Wall-clock time does not matter while batches carry timestamps.
    clock.advance(10 * 60_000)
    log.append(batch(1, timestamp=T0 + 60_002), 0)
    assert len(log.segments) == 2


def test_roll_by_time_falls_back_to_wall_clock_without_timestamps(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", LogConfig(segment_ms=1000), clock)
    log.append(batch(1, timestamp=-1), 0)
    clock.advance(999)
    log.append(batch(1, timestamp=-1), 0)
    assert len(log.segments) == 1
    clock.advance(2)
    log.append(batch(1, timestamp=-1), 0)
    assert len(log.segments) == 2


def test_sparse_index_lookups_after_many_appends(tmp_path):
    cfg = LogConfig(index_interval_bytes=4096)
    log = open_log(tmp_path / "t-0", cfg)
    sizes = {}
    largest = 0
    for i in range(2000):
        n = 1 + i % 5
        info = log.append(batch(n, value_size=(i * 37) % 300), 0)
        sizes[info.first_offset] = (info.last_offset, info.position)
        largest = max(largest, info.size)
    segment = log.active_segment
    index = segment.offset_index
    # One entry per index_interval_bytes of batches (plus at most one batch).
    assert segment.size // (4096 + largest) - 1 <= index.entries <= segment.size // 4096
    # Entries map a batch's last offset to that batch's position.
    positions = {last: pos for last, pos in sizes.values()}
    for n in range(index.entries):
        entry = index.entry(n)
        assert positions[entry.offset] == entry.position
    # Every offset reads back the batch that holds it.
    for first, (last, pos) in list(sizes.items())[::7]:
        for offset in (first, last):
            result = log.read(offset, 1)
            assert result.position == pos
            assert offsets_of(result.read_bytes()) == [(first, last)]


def test_time_index_entries_track_the_largest_timestamp(tmp_path):
    log = open_log(tmp_path / "t-0", LogConfig(index_interval_bytes=0))
    stamps = [T0 + 5, T0 + 3, T0 + 9, T0 + 9, T0 + 12]
    for ts in stamps:
        log.append(batch(1, timestamp=ts), 0)
    ti = log.active_segment.time_index
    assert [ti.entry(n) for n in range(ti.entries)] == [(T0 + 5, 0), (T0 + 9, 2), (T0 + 12, 4)]


def test_follower_append_keeps_the_leaders_offsets_and_epochs(tmp_path):
    leader = open_log(tmp_path / "leader-0")
    for epoch in (0, 0, 3, 3, 5):
        leader.append(batch(2), epoch)
    follower = open_log(tmp_path / "follower-0")
    fetched = leader.read(0, 1 << 20).read_bytes()
    info = follower.append_as_follower(fetched + fetched[:30])  # ends in a partial batch
    assert (info.first_offset, info.last_offset) == (0, 9)
    assert read_all(follower) == fetched
    assert follower.epoch_entries() == [(0, 0), (3, 4), (5, 8)]
    assert follower.append_as_follower(b"") is None


def test_follower_append_below_log_end_or_out_of_order_is_rejected(tmp_path):
    leader = open_log(tmp_path / "leader-0")
    leader.append(batch(2), 0)
    leader.append(batch(2), 0)
    follower = open_log(tmp_path / "follower-0")
    data = leader.read(0, 1 << 20).read_bytes()
    follower.append_as_follower(data)
    with pytest.raises(UnexpectedAppendOffset) as e:
        follower.append_as_follower(data)
    assert (e.value.first_offset, e.value.log_end_offset) == (0, 4)
    swapped = bytearray(batch(1, base_offset=10)) + batch(1, base_offset=8)
    with pytest.raises(InvalidRecords):
        follower.append_as_follower(swapped)
    assert follower.log_end_offset == 4


def test_follower_append_rejects_a_bad_crc(tmp_path):
    follower = open_log(tmp_path / "follower-0")
    data = batch(3)
    data[-1] ^= 0xFF
    with pytest.raises(InvalidRecords, match="CRC"):
        follower.append_as_follower(data)


def test_follower_append_with_offset_gap_rolls_where_offsets_overflow_a_segment(tmp_path):
    follower = open_log(tmp_path / "follower-0")
    follower.append_as_follower(batch(1, base_offset=0))
    far = 5 + 2**31
    info = follower.append_as_follower(batch(1, base_offset=far))
    assert info.segment_base_offset == far
    assert [s.base_offset for s in follower.segments] == [0, far]
    assert follower.log_end_offset == far + 1
    assert offsets_of(follower.read(1, 1 << 20).read_bytes()) == [(far, far)]


def test_follower_append_larger_than_a_segment_is_split_over_segments(tmp_path):
    cfg = LogConfig(segment_bytes=1000)
    leader = open_log(tmp_path / "leader-0", cfg)
    for _ in range(12):
        leader.append(batch(1, value_size=200), 0)
    data = read_all(leader)
    follower = open_log(tmp_path / "follower-0", cfg)
    info = follower.append_as_follower(data)
    assert (info.first_offset, info.last_offset, info.size) == (0, 11, len(data))
    assert len(follower.segments) > 1
    assert read_all(follower) == data


def test_index_interval_zero_indexes_every_batch_but_the_first(tmp_path):
    log = open_log(tmp_path / "t-0", LogConfig(index_interval_bytes=0))
    for _ in range(5):
        log.append(batch(1), 0)
    index: OffsetIndex = log.active_segment.offset_index
    assert [index.entry(n).offset for n in range(index.entries)] == [1, 2, 3, 4]


def test_stored_bytes_are_exactly_the_batches(tmp_path):
    log = open_log(tmp_path / "t-0")
    data = batch(3) + batch(4)
    log.append(data, 0)
    with open(log.active_segment.log_path, "rb") as f:
        on_disk = f.read()
    assert on_disk == bytes(data)
    assert [h.base_offset for _, h in iter_batches(on_disk)] == [0, 3]


def test_changed_segment_bytes_applies_to_the_active_segment_at_once(tmp_path):
    log = open_log(tmp_path / "t-0", LogConfig(segment_bytes=1_000_000), FakeClock())
    log.append(batch(1, value_size=500), 0)
    log.update_config(LogConfig(segment_bytes=600))
    log.append(batch(1, value_size=500), 0)
    assert len(log.segments) == 2
