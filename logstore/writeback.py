"""Early writeback: the kernel is asked to start writing a segment's appended
bytes once `WRITEBACK_BYTES` of them have piled up.

Why: appends go to the page cache, and the kernel starts writing dirty pages
back only when they reach its background threshold (10% of memory: gigabytes
here). From then on, writeback and the broker's appends to the same files
contend, and a `pwrite` on the event loop sometimes waited 7-42 ms (strace of
a broker under 210,000 records/s: 11 of 200,152 writes over 5 ms, all once
writeback began). Every connection waits with it. Kafka's appends wait on
its I/O threads while its network threads go on; Gregor's event loop is both.
Asked early and in small pieces, writeback keeps up and the appends do not
wait: franz-go's end-to-end p99 at half of peak went from 70-85 ms to 6 ms.

`sync_file_range(SYNC_FILE_RANGE_WRITE)` only starts the writes: it neither
waits for them nor makes anything durable (a flush still fsyncs). It runs
on a thread of its own, since it can wait for the device's queue. The
thread works on a duplicate of the segment's descriptor, so a segment closed
meanwhile cannot leave it a number that names another file. Where the call
does not exist (not Linux), nothing is done.
"""

from __future__ import annotations

import ctypes
import logging
import os
import queue
import threading

log = logging.getLogger("gregor.logstore")

# Bytes appended to a segment since its last writeback request that make the
# next one: at 200 MB/s into one segment, some 25 requests a second.
WRITEBACK_BYTES = 8 << 20

_SYNC_FILE_RANGE_WRITE = 2


def _sync_file_range():
    try:
        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


class _Writeback:
    """One thread starting writeback, fed by a queue of (fd, offset, length)."""

    def __init__(self):
        self._call = _sync_file_range()
        self._reset()
        # A child forked from a process whose thread ran has no such thread.
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._requests: queue.SimpleQueue[tuple[int, int, int]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        # Requests taken and not yet done, for `wait_idle` (tests).
        self._pending = 0
        self._idle = threading.Condition(self._lock)

    @property
    def available(self) -> bool:
        return self._call is not None

    def start(self, fd: int, offset: int, length: int) -> None:
        """Have the kernel start writing [offset, offset + length) of `fd`.
        Returns at once; the file may be closed right after."""
        if self._call is None or length <= 0:
            return
        try:
            dup = os.dup(fd)
        except OSError:
            return  # out of descriptors: only a hint is lost
        with self._lock:
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="gregor-writeback", daemon=True
                )
                self._thread.start()
        self._requests.put((dup, offset, length))

    def wait_idle(self, timeout: float) -> bool:
        """Whether every request so far was done within `timeout` seconds."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def _run(self) -> None:
        call = self._call
        assert call is not None
        while True:
            fd, offset, length = self._requests.get()
            try:
                if call(fd, offset, length, _SYNC_FILE_RANGE_WRITE) != 0:
                    log.debug("sync_file_range: %s", os.strerror(ctypes.get_errno()))
            finally:
                os.close(fd)
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()


_writeback = _Writeback()
start_writeback = _writeback.start
wait_idle = _writeback.wait_idle
available = _writeback.available
