"""Early writeback: every WRITEBACK_BYTES appended to a segment are handed to
the kernel to start writing, once, from a thread, without touching the data."""

from __future__ import annotations

import os

import pytest

from logstore import LogConfig, writeback

from .helpers import all_offsets, batch, open_log

MIB = 1 << 20


@pytest.fixture
def requests(monkeypatch):
    """The writeback requests segments make, as (offset, length), in order."""
    made: list[tuple[int, int]] = []
    monkeypatch.setattr(writeback, "start_writeback", lambda fd, off, n: made.append((off, n)))
    return made


def _append_mib(log, mib: int) -> None:
    for _ in range(mib):
        log.append(batch(64, value_size=16 * 1024 - 40), 0)


def test_every_8_mib_appended_is_handed_to_writeback_once(tmp_path, requests):
    log = open_log(tmp_path / "t-0")
    _append_mib(log, 20)
    size = log.segments[-1].size
    assert len(requests) == 2
    # Contiguous from the start of the file, none shorter than the threshold,
    # and what is left (under 8 MiB) waits for more.
    assert requests[0][0] == 0
    assert requests[1][0] == sum(requests[0])
    assert all(n >= writeback.WRITEBACK_BYTES for _, n in requests)
    assert 0 < size - sum(requests[1]) < writeback.WRITEBACK_BYTES


def test_a_new_segment_starts_its_own_count(tmp_path, requests):
    log = open_log(tmp_path / "t-0", LogConfig(segment_bytes=6 * MIB))
    _append_mib(log, 13)
    # Segments of 6 MiB never reach 8 MiB each.
    assert len(log.segments) == 3
    assert requests == []


def test_after_a_truncation_writeback_resumes_from_the_cut(tmp_path, requests):
    log = open_log(tmp_path / "t-0")
    _append_mib(log, 9)
    assert len(requests) == 1 and requests[0][0] == 0
    cut = log.log_end_offset // 3
    log.truncate_to(cut)
    position = log.segments[-1].size
    assert position < sum(requests[0])
    _append_mib(log, 9)
    assert len(requests) == 2
    assert requests[1][0] == position


def test_the_thread_starts_writeback_on_a_duplicate_and_closes_it(tmp_path):
    if not writeback.available:
        pytest.fail("sync_file_range is not available: Gregor's broker runs on Linux")
    path = tmp_path / "data"
    data = os.urandom(3 * MIB)
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    os.pwrite(fd, data, 0)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        writeback.start_writeback(fd, 0, len(data))
    # The file may close at once: the thread has its own descriptors.
    os.close(fd)
    assert writeback.wait_idle(30)
    assert len(os.listdir("/proc/self/fd")) == before - 1
    assert path.read_bytes() == data


def test_records_read_back_unchanged_after_writeback(tmp_path):
    log = open_log(tmp_path / "t-0")
    _append_mib(log, 17)
    assert writeback.wait_idle(30)
    assert all_offsets(log) == list(range(log.log_end_offset))


def test_a_forked_child_starts_writeback_with_a_thread_of_its_own(tmp_path):
    if not writeback.available:
        pytest.fail("sync_file_range is not available: Gregor's broker runs on Linux")
    path = tmp_path / "data"
    path.write_bytes(b"x" * MIB)
    fd = os.open(path, os.O_RDWR)
    writeback.start_writeback(fd, 0, MIB)  # the parent's thread runs
    assert writeback.wait_idle(30)
    pid = os.fork()
    if pid == 0:  # the child: its requests must be served, not queued forever
        writeback.start_writeback(fd, 0, MIB)
        os._exit(0 if writeback.wait_idle(30) else 1)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
