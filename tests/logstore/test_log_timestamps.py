"""ListOffsets lookups: by timestamp (via the time index) and max timestamp."""

from __future__ import annotations

from logstore import LogConfig

from .helpers import T0, FakeClock, batch, open_log

CFG = LogConfig(segment_bytes=1500, index_interval_bytes=150)


def stamped_log(path):
    """Batches of 3 records; batch i has records at T0 + 10*i + (0, 3, 6)."""
    log = open_log(path, CFG, FakeClock(T0 + 10**6))
    for i in range(40):
        base = T0 + 10 * i
        log.append(batch(3, timestamps=[base, base + 3, base + 6], value_size=40), i % 3)
    return log


def test_offset_for_timestamp_finds_the_first_record_at_or_after_it(tmp_path):
    log = stamped_log(tmp_path / "t-0")
    assert len(log.segments) > 3
    for i in (0, 7, 21, 39):
        base = T0 + 10 * i
        assert log.offset_for_timestamp(base) == (base, 3 * i, i % 3)
        # Inside a batch: the matching record, not the batch's first offset.
        assert log.offset_for_timestamp(base + 1) == (base + 3, 3 * i + 1, i % 3)
        assert log.offset_for_timestamp(base + 6) == (base + 6, 3 * i + 2, i % 3)
        # Between batches: the first record of the next batch.
        if i < 39:
            assert log.offset_for_timestamp(base + 7).offset == 3 * i + 3


def test_offset_for_timestamp_before_everything_and_after_everything(tmp_path):
    log = stamped_log(tmp_path / "t-0")
    assert log.offset_for_timestamp(0).offset == 0
    assert log.offset_for_timestamp(T0 + 10 * 39 + 7) is None


def test_offset_for_timestamp_with_out_of_order_timestamps(tmp_path):
    log = open_log(tmp_path / "t-0", LogConfig(index_interval_bytes=0), FakeClock())
    for ts in [T0 + 50, T0 + 10, T0 + 70, T0 + 20, T0 + 90]:
        log.append(batch(1, timestamp=ts), 0)
    # The first offset whose timestamp is >= target, in offset order.
    assert log.offset_for_timestamp(T0 + 15).offset == 0
    assert log.offset_for_timestamp(T0 + 60).offset == 2
    assert log.offset_for_timestamp(T0 + 80).offset == 4


def test_offset_for_timestamp_skips_records_below_the_log_start(tmp_path):
    log = stamped_log(tmp_path / "t-0")
    log.delete_records_before(3 * 20 + 2)
    base = T0 + 10 * 20
    assert log.offset_for_timestamp(base) == (base + 6, 62, 20 % 3)
    assert log.offset_for_timestamp(0).offset == 62


def test_offset_for_timestamp_works_on_compressed_batches(tmp_path):
    log = open_log(tmp_path / "t-0", clock=FakeClock())
    for codec in range(5):
        log.append(
            batch(4, timestamps=[T0 + codec * 10 + k for k in range(4)], compression=codec), 0
        )
    assert log.offset_for_timestamp(T0 + 32) == (T0 + 32, 14, 0)


def test_max_timestamp_lookup_returns_the_first_record_with_the_largest_timestamp(tmp_path):
    log = open_log(tmp_path / "t-0", CFG, FakeClock())
    for i in range(30):
        log.append(batch(2, timestamps=[T0 + i, T0 + i], value_size=40), 1)
    log.append(batch(3, timestamps=[T0 + 5, T0 + 999, T0 + 999]), 2)
    for i in range(20):
        log.append(batch(2, timestamps=[T0 + i, T0 + i], value_size=40), 3)
    assert len(log.segments) > 2
    assert log.max_timestamp_offset() == (T0 + 999, 61, 2)


def test_max_timestamp_of_an_empty_log_is_none(tmp_path):
    assert open_log(tmp_path / "t-0").max_timestamp_offset() is None
    assert open_log(tmp_path / "u-0").offset_for_timestamp(0) is None


def test_timestamp_lookups_survive_a_restart(tmp_path):
    log = stamped_log(tmp_path / "t-0")
    expected = [log.offset_for_timestamp(T0 + t) for t in (0, 55, 201, 389)]
    expected_max = log.max_timestamp_offset()
    log.close()
    for clean in (True, False):
        reopened = open_log(tmp_path / "t-0", CFG, clean_shutdown=clean)
        assert [reopened.offset_for_timestamp(T0 + t) for t in (0, 55, 201, 389)] == expected
        assert reopened.max_timestamp_offset() == expected_max
        reopened.close()
