"""The leader epoch cache and Kafka's OffsetForLeaderEpoch semantics."""

from __future__ import annotations

import os

import pytest

from logstore.checkpoint import read_leader_epoch_checkpoint
from logstore.epoch_cache import LeaderEpochCache


def cache(*entries) -> LeaderEpochCache:
    return LeaderEpochCache(None, entries)


def test_assign_adds_new_epochs_and_ignores_repeats_of_the_latest():
    c = cache()
    assert c.assign(2, 10)
    assert not c.assign(2, 15)
    assert c.assign(4, 20)
    assert c.entries() == [(2, 10), (4, 20)]
    assert c.latest_epoch == 4


def test_assign_removes_entries_that_would_break_monotonicity():
    c = cache((1, 0), (3, 100), (5, 200))
    c.assign(4, 150)  # a lower epoch at a later offset drops epoch 5
    assert c.entries() == [(1, 0), (3, 100), (4, 150)]
    c.assign(6, 120)  # an earlier start offset drops the entries at or after it
    assert c.entries() == [(1, 0), (3, 100), (6, 120)]


def test_assign_rejects_negative_epochs_and_offsets():
    with pytest.raises(ValueError):
        cache().assign(-1, 0)
    with pytest.raises(ValueError):
        cache().assign(0, -5)


def test_end_offset_for_epoch_follows_kafka():
    c = cache((1, 0), (3, 100), (5, 200))
    leo = 250
    assert c.end_offset_for(-1, leo) == (-1, -1)  # undefined epoch
    assert c.end_offset_for(5, leo) == (5, 250)  # the latest: log end offset
    assert c.end_offset_for(1, leo) == (1, 100)  # known: start of the next
    assert c.end_offset_for(3, leo) == (3, 200)
    assert c.end_offset_for(4, leo) == (3, 200)  # unknown, in between: floor epoch
    assert c.end_offset_for(2, leo) == (1, 100)
    assert c.end_offset_for(0, leo) == (0, 0)  # below all: the first start offset
    assert c.end_offset_for(9, leo) == (-1, -1)  # above all
    assert cache().end_offset_for(3, leo) == (-1, -1)


def test_epoch_for_offset():
    c = cache((1, 0), (3, 100), (5, 200))
    assert c.epoch_for_offset(0) == 1
    assert c.epoch_for_offset(99) == 1
    assert c.epoch_for_offset(100) == 3
    assert c.epoch_for_offset(10**6) == 5
    assert cache((2, 50)).epoch_for_offset(10) is None


def test_truncate_from_end_drops_epochs_starting_at_or_after_offset():
    c = cache((1, 0), (3, 100), (5, 200))
    c.truncate_from_end(201)
    assert c.entries() == [(1, 0), (3, 100), (5, 200)]
    c.truncate_from_end(200)
    assert c.entries() == [(1, 0), (3, 100)]
    c.truncate_from_end(50)
    assert c.entries() == [(1, 0)]


def test_truncate_from_start_moves_the_covering_epoch_to_the_new_start():
    c = cache((1, 0), (3, 100), (5, 200))
    c.truncate_from_start(150)
    assert c.entries() == [(3, 150), (5, 200)]
    c.truncate_from_start(200)
    assert c.entries() == [(5, 200)]
    c.truncate_from_start(10)
    assert c.entries() == [(5, 200)]


def test_changes_are_written_to_the_checkpoint_file(tmp_path):
    path = os.fspath(tmp_path / "leader-epoch-checkpoint")
    c = LeaderEpochCache(path)
    c.assign(0, 0)
    c.assign(2, 40)
    assert read_leader_epoch_checkpoint(path) == [(0, 0), (2, 40)]
    assert c.needs_flush
    c.flush_checkpoint()
    assert not c.needs_flush
    c.truncate_from_end(40)
    assert LeaderEpochCache.load(path).entries() == [(0, 0)]
