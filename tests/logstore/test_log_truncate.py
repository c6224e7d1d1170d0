"""Truncation (followers cutting a divergent tail) and the leader epoch cache."""

from __future__ import annotations

import os

import pytest

from logstore import LogConfig
from wire.records import iter_batches

from .helpers import FakeClock, all_offsets, batch, open_log, read_all

SMALL = LogConfig(segment_bytes=1200, index_interval_bytes=200)


def epoch_log(path, config=SMALL):
    """Offsets 0-9 in epoch 1, 10-19 in epoch 3, 20-29 in epoch 4 (batches of 2)."""
    log = open_log(path, config)
    for epoch in (1, 3, 4):
        for _ in range(5):
            log.append(batch(2, value_size=60), epoch)
    return log


def test_truncate_to_removes_later_batches_and_segments(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    assert len(log.segments) > 2
    assert log.truncate_to(12)
    assert log.log_end_offset == 12
    assert all_offsets(log) == list(range(12))
    assert all(s.base_offset <= 12 for s in log.segments)
    names = {n for n in os.listdir(tmp_path / "t-0") if n.endswith(".log")}
    assert names == {f"{s.base_offset:020d}.log" for s in log.segments}
    assert log.append(batch(1), 5).first_offset == 12


def test_truncate_with_nothing_to_cut_drops_an_epoch_without_batches(tmp_path):
    """A replica that led in epoch 5 and lost it before appending: its cache
    has epoch 5 at the log end, which the new leader never had. Truncating to
    where the log ends removes no batch but drops that entry (as Kafka's
    truncateTo), so the follower's last fetched epoch is 4 again."""
    log = epoch_log(tmp_path / "t-0")
    log.epochs.assign(5, log.log_end_offset)
    assert log.epochs.latest_epoch == 5
    assert not log.truncate_to(30)
    assert log.log_end_offset == 30
    assert log.epochs.latest_epoch == 4


def test_truncate_inside_a_batch_removes_the_whole_batch(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    log.truncate_to(13)
    assert log.log_end_offset == 12


def test_truncate_at_or_beyond_the_end_does_nothing(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    assert not log.truncate_to(30)
    assert not log.truncate_to(99)
    assert log.log_end_offset == 30
    with pytest.raises(ValueError):
        log.truncate_to(-1)


def test_truncate_to_truncates_the_epoch_cache(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    assert log.epoch_entries() == [(1, 0), (3, 10), (4, 20)]
    log.truncate_to(20)
    assert log.epoch_entries() == [(1, 0), (3, 10)]
    assert log.end_offset_for_epoch(3) == (3, 20)
    log.truncate_to(10)
    assert log.epoch_entries() == [(1, 0)]
    assert log.end_offset_for_epoch(3) == (-1, -1)
    assert log.end_offset_for_epoch(1) == (1, 10)
    log.close()
    reopened = open_log(tmp_path / "t-0", SMALL, clean_shutdown=True)
    assert reopened.epoch_entries() == [(1, 0)]


def test_follower_finds_divergence_with_offset_for_leader_epoch(tmp_path):
    # Old leader wrote epoch 4 data the new leader (epoch 5) never had.
    old = epoch_log(tmp_path / "old-0")
    new = open_log(tmp_path / "new-0", SMALL)
    new.append_as_follower(old.read(0, 1 << 20, max_offset=20).read_bytes())
    while new.log_end_offset < 20:
        new.append_as_follower(old.read(new.log_end_offset, 1 << 20, max_offset=20).read_bytes())
    new.assign_epoch_start_offset(5)
    new.append(batch(3), 5)
    epoch, end = new.end_offset_for_epoch(old.latest_epoch)
    assert (epoch, end) == (3, 20)
    old.truncate_to(end)
    old.append_as_follower(new.read(end, 1 << 20).read_bytes())
    assert read_all(old) == read_all(new)
    assert old.epoch_entries() == [(1, 0), (3, 10), (5, 20)]


def test_truncate_below_the_first_segment_empties_the_log(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    log.delete_records_before(14)
    base = log.segments[0].base_offset
    assert log.truncate_to(base - 1)
    assert (log.log_start_offset, log.log_end_offset) == (base - 1, base - 1)
    assert log.epoch_entries() == []


def test_truncate_fully_and_start_at(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset) == (500, 500)
    assert [s.base_offset for s in log.segments] == [500]
    assert sorted(os.listdir(tmp_path / "t-0")) == [
        "00000000000000000500.index",
        "00000000000000000500.log",
        "00000000000000000500.timeindex",
        "leader-epoch-checkpoint",
    ]
    assert log.epoch_entries() == []
    assert log.append(batch(2), 6).first_offset == 500
    assert log.epoch_entries() == [(6, 500)]


def test_truncate_fully_at_the_current_base_offset(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(batch(3), 0)
    log.truncate_fully_and_start_at(0)
    assert log.log_end_offset == 0
    assert log.read(0, 100).size == 0
    assert log.append(batch(1), 0).first_offset == 0


def test_truncate_rebuilds_producer_state(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", SMALL, clock)
    for i in range(20):
        log.append(batch(1, value_size=80, producer_id=3, producer_epoch=0, base_sequence=i), 0)
    log.truncate_to(12)
    assert log.producers.entry(3).last_seq == 11
    assert (
        log.append(batch(1, producer_id=3, producer_epoch=0, base_sequence=12), 0).first_offset
        == 12
    )
    dup = log.append(batch(1, producer_id=3, producer_epoch=0, base_sequence=10), 0)
    assert dup.duplicate and dup.first_offset == 10


def test_truncated_log_restarts_with_the_truncated_content(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    log.truncate_to(16)
    log.append(batch(1), 9)
    data = read_all(log)
    log.close()
    reopened = open_log(tmp_path / "t-0", SMALL, recovery_point=0)
    assert read_all(reopened) == data
    assert reopened.epoch_entries() == [(1, 0), (3, 10), (9, 16)]


def test_a_read_after_truncation_finds_the_batch_appended_at_the_cut(tmp_path):
    """A segment remembers where its last batches went, so that a reader at
    the tail skips the index; a truncation forgets them, so a read finds the
    batch appended after the cut, not one that was cut."""
    log = epoch_log(tmp_path / "t-0")
    before = read_all(log, 26)
    assert [h.base_offset for _, h in iter_batches(before)] == [26, 28]
    log.truncate_to(24)
    log.append(batch(3, value_size=10), 5)
    for start in (24, 26):
        [(_, h)] = list(iter_batches(read_all(log, start)))
        assert (h.base_offset, h.last_offset, h.partition_leader_epoch) == (24, 26, 5)
