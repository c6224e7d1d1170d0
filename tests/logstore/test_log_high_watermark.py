"""The high watermark and last stable offset the log keeps: restored at open,
always within [log start offset, log end offset], moved by the leader only
forward, set by a follower, and carried along by DeleteRecords, retention and
truncation as Kafka's UnifiedLog carries it."""

from __future__ import annotations

import pytest

from logstore import FetchIsolation, LogConfig
from wire.records import iter_batches

from .helpers import T0, FakeClock, batch, offsets_of, open_log

MINUTE = 60_000


def ten_records(path, config=None, clock=None):
    """A log holding offsets 0..9, one record per batch."""
    log = open_log(path, config, clock)
    for i in range(10):
        log.append(batch(1, value_size=80, timestamp=T0 + i * MINUTE), 0)
    return log


def test_the_high_watermark_given_at_open_is_restored(tmp_path):
    ten_records(tmp_path / "t-0").close()
    log = open_log(tmp_path / "t-0", clean_shutdown=True, high_watermark=7)
    assert log.high_watermark == 7
    assert log.last_stable_offset == 7


def test_a_checkpointed_high_watermark_past_the_log_end_is_clamped_to_it(tmp_path):
    ten_records(tmp_path / "t-0").close()
    log = open_log(tmp_path / "t-0", clean_shutdown=True, high_watermark=50)
    assert log.high_watermark == log.log_end_offset == 10


def test_a_tail_cut_by_recovery_takes_the_high_watermark_down_with_it(tmp_path):
    path = tmp_path / "t-0"
    ten_records(path).close()
    segment = path / "00000000000000000000.log"
    batches = list(iter_batches(segment.read_bytes()))
    # A crash tore the last two batches: recovery keeps offsets 0..7.
    pos, _ = batches[8]
    with open(segment, "r+b") as f:
        f.truncate(pos + 5)
    log = open_log(path, clean_shutdown=False, recovery_point=0, high_watermark=10)
    assert log.log_end_offset == 8
    assert log.high_watermark == 8


def test_without_a_checkpoint_entry_the_high_watermark_is_the_log_start(tmp_path):
    log = ten_records(tmp_path / "t-0")
    log.delete_records_before(4)
    log.close()
    log = open_log(tmp_path / "t-0", clean_shutdown=True, log_start_offset=4)
    assert log.high_watermark == 4


def test_a_high_watermark_below_the_log_start_is_raised_to_it(tmp_path):
    log = ten_records(tmp_path / "t-0")
    log.delete_records_before(4)
    log.close()
    log = open_log(tmp_path / "t-0", clean_shutdown=True, log_start_offset=4, high_watermark=2)
    assert log.high_watermark == 4
    assert log.update_high_watermark(1) == 4
    assert log.high_watermark == 4


def test_appends_do_not_move_the_high_watermark(tmp_path):
    log = ten_records(tmp_path / "t-0")
    assert log.high_watermark == 0
    log.update_high_watermark(10)
    log.append(batch(3), 0)
    assert (log.high_watermark, log.log_end_offset) == (10, 13)


def test_a_follower_sets_the_high_watermark_within_its_own_log(tmp_path):
    log = ten_records(tmp_path / "t-0")
    assert log.update_high_watermark(6) == 6
    # The leader's high watermark may lie beyond what this replica has.
    assert log.update_high_watermark(25) == 10
    assert log.high_watermark == 10
    # A follower takes the leader's value even when it is lower.
    assert log.update_high_watermark(3) == 3


def test_a_leader_moves_the_high_watermark_only_forward(tmp_path):
    log = ten_records(tmp_path / "t-0")
    assert log.maybe_increment_high_watermark(5) is True
    assert log.maybe_increment_high_watermark(3) is False
    assert log.maybe_increment_high_watermark(5) is False
    assert log.high_watermark == 5
    assert log.maybe_increment_high_watermark(10) is True
    assert log.high_watermark == 10


def test_a_leader_cannot_move_the_high_watermark_past_the_log_end(tmp_path):
    log = ten_records(tmp_path / "t-0")
    log.maybe_increment_high_watermark(4)
    with pytest.raises(ValueError):
        log.maybe_increment_high_watermark(11)
    assert log.high_watermark == 4


def test_delete_records_past_the_high_watermark_carries_it_up(tmp_path):
    log = ten_records(tmp_path / "t-0")
    log.update_high_watermark(2)
    assert log.delete_records_before(6) == 6
    assert log.high_watermark == 6
    # A log start that stays below it leaves it alone.
    log.update_high_watermark(9)
    log.delete_records_before(7)
    assert log.high_watermark == 9


def test_retention_moving_the_log_start_past_the_high_watermark_carries_it_up(tmp_path):
    clock = FakeClock(T0 + 10 * MINUTE)
    config = LogConfig(segment_bytes=400, retention_ms=5 * MINUTE)
    log = ten_records(tmp_path / "t-0", config, clock)
    assert log.delete_old_segments() > 0
    assert log.log_start_offset > 0
    assert log.high_watermark == log.log_start_offset


def test_truncation_below_the_high_watermark_takes_it_down(tmp_path):
    log = ten_records(tmp_path / "t-0")
    log.update_high_watermark(10)
    log.truncate_to(6)
    assert (log.log_end_offset, log.high_watermark) == (6, 6)
    # Truncation above it leaves it where it is.
    log.update_high_watermark(3)
    log.truncate_to(5)
    assert log.high_watermark == 3


def test_truncating_fully_restarts_the_high_watermark_at_the_new_start(tmp_path):
    log = ten_records(tmp_path / "t-0")
    log.update_high_watermark(8)
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (100, 100, 100)


def test_consumers_read_below_the_high_watermark_and_replicas_to_the_log_end(tmp_path):
    log = ten_records(tmp_path / "t-0")
    log.maybe_increment_high_watermark(4)
    assert log.fetch_upper_bound(FetchIsolation.LOG_END) == 10
    assert log.fetch_upper_bound(FetchIsolation.HIGH_WATERMARK) == 4
    # No transactions yet: read_committed reads to the high watermark too.
    assert log.fetch_upper_bound(FetchIsolation.TXN_COMMITTED) == 4

    def offsets_read(isolation):
        result = log.read(0, 1 << 20, log.fetch_upper_bound(isolation))
        return offsets_of(result.read_bytes())

    assert offsets_read(FetchIsolation.HIGH_WATERMARK) == [(i, i) for i in range(4)]
    assert offsets_read(FetchIsolation.TXN_COMMITTED) == [(i, i) for i in range(4)]
    assert offsets_read(FetchIsolation.LOG_END) == [(i, i) for i in range(10)]
    assert log.read(4, 1 << 20, log.fetch_upper_bound(FetchIsolation.HIGH_WATERMARK)).size == 0
