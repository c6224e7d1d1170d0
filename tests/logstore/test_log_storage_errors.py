"""Real disk-full conditions: the append fails with LogStorageError and the log
stays consistent (no partial batch left behind).

Two real sources of such errors, no mocks:
- RLIMIT_FSIZE makes the kernel refuse writes past a file size (EFBIG, with
  a partial write first when a write crosses the limit); any user can set it.
- A tiny tmpfs gives a genuine ENOSPC; mounting needs root (CAP_SYS_ADMIN).
"""

from __future__ import annotations

import errno
import os
import resource
import shutil
import subprocess
from contextlib import contextmanager

import pytest

from logstore import LogConfig, LogStorageError

from .helpers import FakeClock, all_offsets, batch, open_log, read_all


@contextmanager
def file_size_limit(nbytes: int):
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def fill_until_failure(log, value_size=1000, limit=10_000):
    """Append until LogStorageError; returns (the error, offsets acknowledged)."""
    acked = []
    for _ in range(limit):
        try:
            info = log.append(batch(1, value_size=value_size), 0)
        except LogStorageError as e:
            return e, acked
        acked.append(info.first_offset)
    raise AssertionError("the disk never filled up")


def test_write_past_the_file_size_limit_fails_cleanly(tmp_path):
    cfg = LogConfig(segment_bytes=1 << 20, segment_index_bytes=4096)
    log = open_log(tmp_path / "t-0", cfg, FakeClock())
    with file_size_limit(20_000):
        error, acked = fill_until_failure(log)
        assert error.errno == errno.EFBIG
        assert error.path == log.active_segment.log_path
        # The batch that crossed the limit was partly written, then cut away.
        assert os.path.getsize(log.active_segment.log_path) == log.active_segment.size
        assert log.log_end_offset == len(acked) and all_offsets(log) == acked
        # Later appends fail the same way and leave the log as it is.
        with pytest.raises(LogStorageError):
            log.append(batch(1, value_size=1000), 0)
        assert log.log_end_offset == len(acked)
    # Space again: the log carries on where it stopped.
    assert log.append(batch(1), 0).first_offset == len(acked)
    data = read_all(log)
    reopened = open_log(tmp_path / "t-0", cfg, FakeClock(), recovery_point=0)
    assert read_all(reopened) == data


def test_failed_roll_keeps_the_active_segment(tmp_path):
    cfg = LogConfig(segment_bytes=3000, segment_index_bytes=64 * 1024)
    log = open_log(tmp_path / "t-0", cfg, FakeClock())
    with file_size_limit(32 * 1024):
        # Preallocating the next segment's index (64 KiB) is refused.
        error, acked = fill_until_failure(log)
        assert error.errno == errno.EFBIG and error.operation == "create segment"
        assert len(log.segments) == 1
        assert sorted(os.listdir(tmp_path / "t-0"))[:3] == [
            "00000000000000000000.index",
            "00000000000000000000.log",
            "00000000000000000000.timeindex",
        ]
        assert not any(n.startswith(f"{len(acked):020d}") for n in os.listdir(tmp_path / "t-0"))
        assert all_offsets(log) == acked
    info = log.append(batch(1, value_size=1000), 0)
    assert info.segment_base_offset == len(acked) and len(log.segments) == 2


@contextmanager
def tiny_tmpfs(path, size="96k"):
    if os.geteuid() != 0:
        pytest.skip(
            "SKIPPED LOUDLY: the ENOSPC test mounts a tmpfs and needs root; "
            "the EFBIG tests above cover the same code path"
        )
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", os.fspath(path)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"SKIPPED LOUDLY: cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", os.fspath(path)], check=False)


def test_full_disk_append_raises_storage_error_and_leaves_log_consistent(tmp_path):
    with tiny_tmpfs(tmp_path / "disk") as disk:
        ballast = disk / "ballast"
        ballast.write_bytes(b"\xaa" * 16 * 1024)
        cfg = LogConfig(segment_bytes=1 << 20, segment_index_bytes=4096, index_interval_bytes=2000)
        log = open_log(disk / "t-0", cfg, FakeClock())
        error, acked = fill_until_failure(log, value_size=700)
        assert error.errno == errno.ENOSPC
        assert error.error_code == 56  # KAFKA_STORAGE_ERROR
        assert os.path.getsize(log.active_segment.log_path) == log.active_segment.size
        assert all_offsets(log) == acked
        assert log.read(acked[-1], 1 << 20).read_bytes()
        ballast.unlink()
        assert log.append(batch(1, value_size=700), 0).first_offset == len(acked)
        data = read_all(log)
        log.close()
        reopened = open_log(disk / "t-0", cfg, FakeClock(), recovery_point=0)
        assert read_all(reopened) == data
        reopened.close()
        shutil.rmtree(disk / "t-0")


def _fill_every_free_page(path) -> None:
    """Write `path` until the disk has no page left (ENOSPC)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError) as full:
            while True:
                os.write(fd, b"\xaa" * 512)
    finally:
        os.close(fd)
    assert full.value.errno == errno.ENOSPC


def test_full_disk_while_writing_an_index_entry_undoes_the_whole_append(tmp_path):
    with tiny_tmpfs(tmp_path / "disk", size="64k") as disk:
        cfg = LogConfig(segment_index_bytes=4096, index_interval_bytes=0)
        log = open_log(disk / "t-0", cfg, FakeClock())
        log.append(batch(1, value_size=500), 0)  # not indexed: the first batch never is
        _fill_every_free_page(disk / "ballast")
        # The next batch fits the log file's last page; its index entry needs a
        # page of the (sparse) index file that the disk cannot give.
        with pytest.raises(LogStorageError) as e:
            log.append(batch(1, value_size=500), 0)
        assert e.value.errno == errno.ENOSPC
        assert e.value.path == log.active_segment.index_path
        assert os.path.getsize(log.active_segment.log_path) == log.active_segment.size
        assert log.log_end_offset == 1 and log.active_segment.offset_index.entries == 0
        (disk / "ballast").unlink()
        assert log.append(batch(1, value_size=500), 0).first_offset == 1
        assert log.active_segment.offset_index.entries == 1
        log.close()
        reopened = open_log(disk / "t-0", cfg, FakeClock(), recovery_point=0)
        assert all_offsets(reopened) == [0, 1]
        reopened.close()
        shutil.rmtree(disk / "t-0")


EPOCH_TEST_CONFIG = LogConfig(segment_index_bytes=4096)


def _log_of_one_batch_on_a_full_disk(disk, records: int):
    """A log holding one batch of `records` 500-byte records under epoch 0, on a
    disk then filled to its last page."""
    log = open_log(disk / "t-0", EPOCH_TEST_CONFIG, FakeClock())
    log.append(batch(records, value_size=500), 0)
    _fill_every_free_page(disk / "ballast")
    return log


def test_a_new_leader_epoch_the_disk_cannot_checkpoint_fails_the_append_before_its_data(tmp_path):
    # As Kafka does, the epoch's start is recorded before the batch is written:
    # a producer told KAFKA_STORAGE_ERROR must find nothing of its batch in the
    # log, or its retry would be a second copy.
    with tiny_tmpfs(tmp_path / "disk", size="64k") as disk:
        log = _log_of_one_batch_on_a_full_disk(disk, records=1)
        # The batch fits the log file's last page; the checkpoint of epoch 1
        # is a new file, which needs a page the disk cannot give.
        with pytest.raises(LogStorageError) as e:
            log.append(batch(1, value_size=500), 1)
        assert e.value.errno == errno.ENOSPC
        assert log.log_end_offset == 1 and all_offsets(log) == [0]
        assert os.path.getsize(log.active_segment.log_path) == log.active_segment.size
        (disk / "ballast").unlink()
        assert log.append(batch(1, value_size=500), 1).first_offset == 1
        log.close()
        reopened = open_log(disk / "t-0", EPOCH_TEST_CONFIG, FakeClock())
        assert all_offsets(reopened) == [0, 1]
        assert [tuple(e) for e in reopened.epoch_entries()] == [(0, 0), (1, 1)]
        reopened.close()
        shutil.rmtree(disk / "t-0")


def test_a_leader_epoch_assigned_on_a_full_disk_is_written_by_the_next_append(tmp_path):
    # A restarted leader records its new epoch at the log end before any
    # append; on a full disk that stays in memory (the epoch is still
    # answered) and the first append under it writes the checkpoint.
    with tiny_tmpfs(tmp_path / "disk", size="64k") as disk:
        log = _log_of_one_batch_on_a_full_disk(disk, records=2)
        with pytest.raises(LogStorageError):
            log.assign_epoch_start_offset(2)
        assert log.end_offset_for_epoch(2) == (2, 2)
        assert log.end_offset_for_epoch(0) == (0, 2)
        with pytest.raises(LogStorageError):
            log.append(batch(1, value_size=100), 2)
        assert log.log_end_offset == 2
        (disk / "ballast").unlink()
        assert log.append(batch(1, value_size=100), 2).first_offset == 2
        checkpoint = (disk / "t-0" / "leader-epoch-checkpoint").read_text()
        assert checkpoint.split("\n") == ["0", "2", "0 0", "2 2", ""]
        log.close()
        shutil.rmtree(disk / "t-0")
