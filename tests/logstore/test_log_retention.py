"""Retention by time and size, DeleteRecords, and reads racing deletion."""

from __future__ import annotations

import os

import pytest

from logstore import LogConfig, OffsetOutOfRange

from .helpers import T0, FakeClock, all_offsets, batch, offsets_of, open_log

MINUTE = 60_000


def filled(path, config, clock, n=30, step_ms=MINUTE):
    """n single-record batches of ~150 bytes, one per `step_ms` of timestamp."""
    log = open_log(path, config, clock)
    for i in range(n):
        log.append(batch(1, value_size=80, timestamp=T0 + i * step_ms), 0)
    return log


def test_retention_by_time_deletes_whole_old_segments(tmp_path):
    clock = FakeClock(T0 + 30 * MINUTE)
    cfg = LogConfig(segment_bytes=1000, retention_ms=10 * MINUTE)
    log = filled(tmp_path / "t-0", cfg, clock)
    before = [(s.base_offset, s.max_timestamp) for s in log.segments]
    deleted = log.delete_old_segments()
    kept = [(s.base_offset, s.max_timestamp) for s in log.segments]
    assert deleted == len(before) - len(kept) > 0
    # Exactly the segments whose newest batch is more than retention_ms old went.
    assert [b for b in before if clock.now - b[1] > cfg.retention_ms] == before[:deleted]
    assert log.log_start_offset == kept[0][0]
    assert all_offsets(log) == list(range(kept[0][0], 30))
    names = {n for n in os.listdir(tmp_path / "t-0") if n.endswith((".log", ".index"))}
    assert all(f"{b:020d}.log" not in names for b, _ in before[:deleted])


def test_retention_by_time_keeps_reads_at_the_head_working(tmp_path):
    clock = FakeClock(T0 + 30 * MINUTE)
    log = filled(tmp_path / "t-0", LogConfig(segment_bytes=1000, retention_ms=5 * MINUTE), clock)
    log.delete_old_segments()
    start = log.log_start_offset
    assert offsets_of(log.read(start, 1 << 20).read_bytes())[0][0] == start
    with pytest.raises(OffsetOutOfRange) as e:
        log.read(start - 1, 100)
    assert e.value.log_start_offset == start
    assert log.append(batch(1), 0).first_offset == 30


def test_retention_deletes_the_active_segment_too_by_rolling_first(tmp_path):
    clock = FakeClock(T0 + 10_000 * MINUTE)
    log = filled(tmp_path / "t-0", LogConfig(segment_bytes=1000, retention_ms=MINUTE), clock)
    log.delete_old_segments()
    assert [s.base_offset for s in log.segments] == [30]
    assert (log.log_start_offset, log.log_end_offset) == (30, 30)
    assert log.read(30, 100).size == 0
    assert log.delete_old_segments() == 0  # an empty active segment stays


def test_retention_stops_at_the_high_watermark(tmp_path):
    clock = FakeClock(T0 + 10_000 * MINUTE)
    log = filled(tmp_path / "t-0", LogConfig(segment_bytes=1000, retention_ms=MINUTE), clock)
    bases = [s.base_offset for s in log.segments]
    log.delete_old_segments(high_watermark=bases[2])
    assert log.segments[0].base_offset == bases[2]


def test_retention_by_size_keeps_the_log_under_retention_bytes(tmp_path):
    clock = FakeClock()
    cfg = LogConfig(segment_bytes=1000, retention_bytes=2500, retention_ms=-1)
    log = filled(tmp_path / "t-0", cfg, clock)
    sizes = [s.size for s in log.segments]
    total = sum(sizes)
    log.delete_old_segments()
    kept = [s.size for s in log.segments]
    assert len(kept) < len(sizes)
    assert sum(kept) + sum(sizes[: len(sizes) - len(kept)]) == total
    # Kafka's rule: delete oldest segments while the log stays at or above
    # retention_bytes without them; it may end above by less than a segment.
    assert 0 <= sum(kept) - 2500 < kept[0]


def test_retention_is_off_for_compacted_topics_and_unlimited_settings(tmp_path):
    clock = FakeClock(T0 + 10_000 * MINUTE)
    compact = LogConfig(segment_bytes=1000, retention_ms=MINUTE, cleanup_policy="compact")
    assert filled(tmp_path / "a-0", compact, clock).delete_old_segments() == 0
    unlimited = LogConfig(segment_bytes=1000, retention_ms=-1, retention_bytes=-1)
    assert filled(tmp_path / "b-0", unlimited, clock).delete_old_segments() == 0


def test_delete_records_before_moves_log_start_and_deletes_whole_segments(tmp_path):
    log = filled(tmp_path / "t-0", LogConfig(segment_bytes=1000), FakeClock())
    bases = [s.base_offset for s in log.segments]
    target = bases[2] + 1
    assert log.delete_records_before(target) == target
    assert log.log_start_offset == target
    # The segment holding the new start stays; those entirely below go.
    assert log.segments[0].base_offset == bases[2]
    with pytest.raises(OffsetOutOfRange):
        log.read(target - 1, 100)
    # Reading at the new start returns the batch holding it.
    assert offsets_of(log.read(target, 1).read_bytes()) == [(target, target)]
    assert log.delete_records_before(3) == target  # never moves back


def test_delete_records_beyond_the_high_watermark_is_out_of_range(tmp_path):
    log = filled(tmp_path / "t-0", LogConfig(segment_bytes=1000), FakeClock(), n=10)
    with pytest.raises(OffsetOutOfRange) as e:
        log.delete_records_before(8, high_watermark=7)
    assert (e.value.offset, e.value.log_end_offset) == (8, 7)
    assert log.delete_records_before(10) == 10
    assert log.read(10, 100).size == 0


def test_delete_records_truncates_the_epoch_cache_from_the_start(tmp_path):
    log = open_log(tmp_path / "t-0", LogConfig(segment_bytes=1000))
    for epoch in (1, 1, 2, 2, 3):
        log.append(batch(3, value_size=100), epoch)
    log.delete_records_before(8)
    assert log.epoch_entries() == [(2, 8), (3, 12)]


def test_read_in_flight_survives_deletion_of_its_segment(tmp_path):
    clock = FakeClock(T0 + 10_000 * MINUTE)
    log = filled(tmp_path / "t-0", LogConfig(segment_bytes=1000, retention_ms=MINUTE), clock)
    result = log.read(0, 1 << 20)
    expected = result.read_bytes()
    log.delete_old_segments()
    assert not os.path.exists(os.path.join(tmp_path / "t-0", "00000000000000000000.log"))
    # The range still reads (and could still be sent with sendfile).
    assert os.pread(result.fd, result.size, result.position) == expected
    assert result.read_bytes() == expected


# -- segments whose batches carry no timestamp (-1) ----------------------------------------
# Kafka ages such a segment by its file's last-modified time (LogSegment.largestTimestamp).


def _set_mtime(log, base_offset: int, ms: int) -> None:
    (segment,) = [s for s in log.segments if s.base_offset == base_offset]
    os.utime(segment.log_path, ns=(ms * 1_000_000, ms * 1_000_000))


def test_a_segment_without_timestamps_is_aged_by_its_file_time(tmp_path):
    now = T0 + 30 * MINUTE
    cfg = LogConfig(segment_bytes=1000, retention_ms=10 * MINUTE)
    log = open_log(tmp_path / "t-0", cfg, FakeClock(now))
    for _ in range(30):
        log.append(batch(1, value_size=80, timestamp=-1), 0)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 3 and all(s.max_timestamp == -1 for s in log.segments)
    for base in bases:
        _set_mtime(log, base, now - MINUTE)  # recent: kept
    _set_mtime(log, bases[0], now - 11 * MINUTE)
    _set_mtime(log, bases[1], now - 20 * MINUTE)
    assert log.delete_old_segments() == 2
    assert log.log_start_offset == bases[2]
    assert all_offsets(log) == list(range(bases[2], 30))


def test_an_active_segment_without_timestamps_stays_while_its_file_is_recent(tmp_path):
    # The shape of the reported loss: ten records with no timestamp in the
    # active segment, retention checked a moment later.
    now = T0
    log = open_log(tmp_path / "t-0", LogConfig(retention_ms=7 * 24 * 60 * MINUTE), FakeClock(now))
    for _ in range(10):
        log.append(batch(1, value_size=6000, timestamp=-1), 0)
    _set_mtime(log, 0, now)
    assert log.delete_old_segments() == 0
    assert (log.log_start_offset, log.log_end_offset) == (0, 10)


def test_a_timestamp_in_a_segment_decides_its_age_over_its_file_time(tmp_path):
    now = T0 + 30 * MINUTE
    cfg = LogConfig(segment_bytes=1000, retention_ms=10 * MINUTE)
    log = open_log(tmp_path / "t-0", cfg, FakeClock(now))
    # Segment one: records without timestamps around one 20 minutes old.
    log.append(batch(3, value_size=80, timestamps=[-1, now - 20 * MINUTE, -1]), 0)
    log.append(batch(1, value_size=80, timestamp=-1), 0)
    log.roll()
    # Segment two: a recent timestamp among records without one.
    log.append(batch(2, value_size=80, timestamps=[-1, now - MINUTE]), 0)
    log.roll()
    first, second = [s.base_offset for s in log.segments[:2]]
    _set_mtime(log, first, now)  # the file is new, its timestamp old: deleted
    _set_mtime(log, second, now - 60 * MINUTE)  # the file is old, its timestamp new: kept
    assert [s.max_timestamp for s in log.segments[:2]] == [now - 20 * MINUTE, now - MINUTE]
    assert log.delete_old_segments() == 1
    assert log.log_start_offset == second


def test_log_append_time_segments_are_aged_by_their_append_time(tmp_path):
    from wire.records import set_log_append_time

    now = T0 + 30 * MINUTE
    cfg = LogConfig(segment_bytes=1000, retention_ms=10 * MINUTE)
    log = open_log(tmp_path / "t-0", cfg, FakeClock(now))
    for append_time in (now - 20 * MINUTE, now - 15 * MINUTE, now - MINUTE):
        b = batch(1, value_size=80, timestamp=-1)
        set_log_append_time(b, append_time)
        log.append(b, 0)
        log.roll()
    for s in log.segments:
        _set_mtime(log, s.base_offset, now)
    assert log.delete_old_segments() == 2
    assert log.log_start_offset == 2
