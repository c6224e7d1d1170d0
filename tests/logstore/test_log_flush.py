"""Flush policy, the recovery point, and flushing from another thread."""

from __future__ import annotations

import threading
import uuid

import pytest

from logstore import InconsistentTopicId, LogClosedError, LogConfig
from logstore.partition_metadata import read_partition_metadata

from .helpers import FakeClock, all_offsets, batch, open_log


def test_flush_advances_the_recovery_point_to_the_log_end(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(batch(3), 0)
    assert (log.recovery_point, log.unflushed_messages) == (0, 3)
    assert log.flush() == 3
    assert (log.recovery_point, log.unflushed_messages) == (3, 0)
    log.append(batch(2), 0)
    assert log.flush(4) == 4
    assert log.flush() == 5


def test_flush_due_by_message_count(tmp_path):
    log = open_log(tmp_path / "t-0", LogConfig(flush_interval_messages=5))
    log.append(batch(4), 0)
    assert not log.flush_due()
    log.append(batch(1), 0)
    assert log.flush_due()
    log.flush()
    assert not log.flush_due()


def test_message_count_flush_is_due_only_by_count_not_by_time(tmp_path):
    clock = FakeClock()
    log = open_log(
        tmp_path / "t-0", LogConfig(flush_interval_messages=3, flush_interval_ms=10), clock=clock
    )
    log.append(batch(2), 0)
    clock.advance(1000)
    assert log.flush_due() and not log.message_count_flush_due()
    log.append(batch(1), 0)
    assert log.message_count_flush_due()
    log.flush()
    assert not log.message_count_flush_due()


def test_flush_due_by_time(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", LogConfig(flush_interval_ms=1000), clock)
    clock.advance(5000)
    assert not log.flush_due()  # nothing to flush
    log.append(batch(1), 0)
    assert log.flush_due()
    log.flush()
    log.append(batch(1), 0)
    clock.advance(999)
    assert not log.flush_due()
    clock.advance(1)
    assert log.flush_due()


def test_default_policy_never_asks_for_a_flush(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", clock=clock)
    log.append(batch(1000), 0)
    clock.advance(10**9)
    assert not log.flush_due()


def test_truncation_pulls_the_recovery_point_back(tmp_path):
    log = open_log(tmp_path / "t-0")
    for _ in range(4):
        log.append(batch(2), 0)
    log.flush()
    log.truncate_to(4)
    assert log.recovery_point == 4
    log.truncate_fully_and_start_at(100)
    assert log.recovery_point == 4
    log.append(batch(1), 0)
    assert log.flush() == 101


def test_topic_id_is_written_and_becomes_durable_on_flush(tmp_path):
    log = open_log(tmp_path / "t-0")
    tid = uuid.uuid4()
    log.assign_topic_id(tid)
    log.assign_topic_id(tid)
    assert read_partition_metadata(str(tmp_path / "t-0")) == tid
    with pytest.raises(InconsistentTopicId):
        log.assign_topic_id(uuid.uuid4())
    log.flush()


def test_closed_log_refuses_everything(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(batch(1), 0)
    log.close()
    log.close()  # idempotent
    for call in (lambda: log.append(batch(1), 0), lambda: log.read(0, 10), log.flush):
        with pytest.raises(LogClosedError):
            call()


def test_flush_in_a_worker_thread_while_appending_rolling_and_deleting(tmp_path):
    clock = FakeClock()
    cfg = LogConfig(segment_bytes=2000, retention_bytes=6000, retention_ms=-1)
    log = open_log(tmp_path / "t-0", cfg, clock)
    stop = threading.Event()
    errors = []
    flushes = []

    def flusher():
        while not stop.is_set():
            try:
                flushes.append(log.flush())
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)
                return

    thread = threading.Thread(target=flusher)
    thread.start()
    try:
        for i in range(400):
            log.append(batch(1, value_size=100), 0)
            if i % 50 == 0:
                log.delete_old_segments()
            if i % 97 == 0:
                log.truncate_to(log.log_end_offset - 1)
            # Only this thread moves the log end; the recovery point never passes it.
            assert log.recovery_point <= log.log_end_offset
    finally:
        stop.set()
        thread.join()
    assert errors == []
    assert len(flushes) > 0
    offsets = all_offsets(log)
    assert offsets == list(range(log.log_start_offset, log.log_end_offset))
    log.close()
    assert log.recovery_point == log.log_end_offset


def test_a_flush_writes_the_index_entries_held_in_memory_before_its_fsync(tmp_path):
    """New index entries wait in memory (logstore/index.py); what a flush
    puts on disk is the whole index, as a reader of the files sees it."""
    log = open_log(tmp_path / "t-0", LogConfig(index_interval_bytes=0))
    for _ in range(4):
        log.append(batch(2), 0)
    index = log.active_segment.offset_index
    assert index.entries == 3 and index.unwritten_entries == 3  # the first batch is never indexed
    log.flush()
    assert index.unwritten_entries == 0
    with open(log.active_segment.index_path, "rb") as f:
        on_disk = f.read(3 * 8)
    assert [int.from_bytes(on_disk[i : i + 4], "big") for i in (0, 8, 16)] == [3, 5, 7]
    log.close()
