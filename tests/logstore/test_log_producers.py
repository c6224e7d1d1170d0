"""Idempotent producers through UnifiedLog.append: dedupe, gaps, fencing, restarts."""

from __future__ import annotations

import pytest

from logstore import InvalidProducerEpoch, LogConfig, OutOfOrderSequence

from .helpers import T0, FakeClock, all_offsets, batch, open_log

PID = 1234


def produce(log, seq, n=1, epoch=0, pid=PID, leader_epoch=0):
    return log.append(
        batch(n, producer_id=pid, producer_epoch=epoch, base_sequence=seq), leader_epoch
    )


def test_retried_batch_returns_original_offsets_and_writes_nothing(tmp_path):
    log = open_log(tmp_path / "t-0", clock=FakeClock())
    produce(log, 0, n=3)
    produce(log, 3, n=2)
    size = log.size_bytes
    retry = produce(log, 0, n=3)
    assert retry.duplicate
    assert (retry.first_offset, retry.last_offset) == (0, 2)
    assert retry.max_timestamp == T0
    assert log.size_bytes == size and log.log_end_offset == 5
    assert produce(log, 3, n=2).first_offset == 3
    assert all_offsets(log) == [0, 1, 2, 3, 4]


def test_sequence_gap_is_out_of_order_and_nothing_is_written(tmp_path):
    log = open_log(tmp_path / "t-0", clock=FakeClock())
    produce(log, 0, n=2)
    with pytest.raises(OutOfOrderSequence) as e:
        produce(log, 5)
    assert e.value.error_code == 45
    assert log.log_end_offset == 2
    assert produce(log, 2).first_offset == 2


def test_stale_producer_epoch_is_rejected(tmp_path):
    log = open_log(tmp_path / "t-0", clock=FakeClock())
    produce(log, 0, epoch=4)
    with pytest.raises(InvalidProducerEpoch) as e:
        produce(log, 1, epoch=3)
    assert (e.value.producer_epoch, e.value.current_epoch, e.value.error_code) == (3, 4, 47)
    assert log.log_end_offset == 1


def test_bumped_epoch_restarts_at_sequence_zero(tmp_path):
    log = open_log(tmp_path / "t-0", clock=FakeClock())
    produce(log, 0, n=5, epoch=0)
    with pytest.raises(OutOfOrderSequence):
        produce(log, 5, epoch=1)
    assert produce(log, 0, epoch=1).first_offset == 5


def test_producers_are_independent(tmp_path):
    log = open_log(tmp_path / "t-0", clock=FakeClock())
    produce(log, 0, pid=1)
    produce(log, 100, pid=2)
    produce(log, 1, pid=1)
    assert produce(log, 100, pid=2).duplicate
    assert produce(log, 0, pid=1).duplicate
    assert log.log_end_offset == 3


def test_non_idempotent_batches_are_never_deduplicated(tmp_path):
    log = open_log(tmp_path / "t-0", clock=FakeClock())
    log.append(batch(1), 0)
    assert not log.append(batch(1), 0).duplicate
    assert log.log_end_offset == 2


def test_producer_state_survives_clean_reopen(tmp_path):
    clock = FakeClock()
    cfg = LogConfig(segment_bytes=1000)
    log = open_log(tmp_path / "t-0", cfg, clock)
    for i in range(20):
        produce(log, i)
    log.close()
    reopened = open_log(tmp_path / "t-0", cfg, clock, clean_shutdown=True)
    # All five retained batches are known again, not just the last one.
    for seq in range(15, 20):
        dup = produce(reopened, seq)
        assert dup.duplicate and dup.first_offset == seq
    with pytest.raises(OutOfOrderSequence):
        produce(reopened, 22)
    assert produce(reopened, 20).first_offset == 20


def test_producer_state_survives_reopen_without_snapshots(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", clock=clock)
    for i in range(8):
        produce(log, i, epoch=2)
    log.close()
    for name in (tmp_path / "t-0").iterdir():
        if name.suffix == ".snapshot":
            name.unlink()
    reopened = open_log(tmp_path / "t-0", clock=clock, clean_shutdown=True)
    assert produce(reopened, 7, epoch=2).duplicate
    with pytest.raises(InvalidProducerEpoch):
        produce(reopened, 8, epoch=1)


def test_idle_producers_expire(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", LogConfig(producer_id_expiration_ms=1000), clock)
    produce(log, 0)
    clock.advance(1000)
    assert log.remove_expired_producers() == [PID]
    # Unknown again: any sequence is accepted.
    assert produce(log, 57).first_offset == 1


def test_rolled_segments_leave_producer_snapshots_that_retention_removes(tmp_path):
    clock = FakeClock(T0 + 10**9)
    cfg = LogConfig(segment_bytes=600, retention_ms=1000)
    log = open_log(tmp_path / "t-0", cfg, clock)
    for i in range(12):
        produce(log, i)
    snapshots = sorted(p.name for p in (tmp_path / "t-0").iterdir() if p.suffix == ".snapshot")
    bases = [s.base_offset for s in log.segments]
    assert snapshots == [f"{b:020d}.snapshot" for b in bases[1:]]
    log.delete_old_segments()
    snapshots = sorted(p.name for p in (tmp_path / "t-0").iterdir() if p.suffix == ".snapshot")
    assert all(int(s[:20]) >= log.segments[0].base_offset for s in snapshots)
    # The producer is still known after its batches are gone.
    assert produce(log, 11).duplicate
