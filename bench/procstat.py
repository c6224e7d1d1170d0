"""What a broker process uses, read from /proc: resident memory and CPU time.

CPU is the process's user + system time (every thread: Kafka's network, I/O and
GC threads; Gregor's event loop and its worker threads), and for Gregor also
the time of the one thread that runs the Trio event loop, which is what bounds
it first. Linux only, as the project's machine.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_SECONDS = 0.02


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise ProcessLookupError(pid)


def cpu_seconds(pid: int, tid: int | None = None) -> float:
    """User + system CPU seconds of a process, or of one of its threads."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    stat = Path(path).read_text()
    # Fields after the command name, which may itself hold spaces and parentheses.
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


@dataclass
class Usage:
    """A broker's use of the machine over one measured interval."""

    seconds: float
    cpu_seconds: float
    loop_cpu_seconds: float | None  # the event-loop thread alone (Gregor only)
    peak_rss: int

    @property
    def cpu_percent(self) -> float:
        return 100 * self.cpu_seconds / self.seconds

    @property
    def loop_busy_percent(self) -> float | None:
        if self.loop_cpu_seconds is None:
            return None
        return 100 * self.loop_cpu_seconds / self.seconds


class Meter:
    """Measures a process over a `with` block: CPU time, and its peak RSS sampled
    every 20 ms (a reading after the load would miss the peak)."""

    def __init__(self, pid: int, loop_tid: int | None = None):
        self.pid = pid
        self.loop_tid = loop_tid
        self.usage: Usage | None = None
        self._peak = 0
        self._done = threading.Event()

    def _cpu(self) -> tuple[float, float | None]:
        loop = cpu_seconds(self.pid, self.loop_tid) if self.loop_tid is not None else None
        return cpu_seconds(self.pid), loop

    def _sample(self) -> None:
        while not self._done.wait(SAMPLE_SECONDS):
            try:
                self._peak = max(self._peak, rss_bytes(self.pid))
            except (OSError, ProcessLookupError):
                return  # the process ended (killed on purpose by the recovery workload)

    @property
    def peak_rss(self) -> int:
        """The largest RSS seen so far."""
        return self._peak

    def start(self) -> Meter:
        self._peak = rss_bytes(self.pid)
        self._t0 = time.monotonic()
        self._cpu0 = self._cpu()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def stop(self, measure_cpu: bool = True) -> Usage | None:
        """End sampling; measure_cpu=False when the process may be gone."""
        self._done.set()
        self._thread.join()
        if measure_cpu:
            seconds = time.monotonic() - self._t0
            cpu, loop = self._cpu()
            loop_delta = None if loop is None or self._cpu0[1] is None else loop - self._cpu0[1]
            self.usage = Usage(seconds, cpu - self._cpu0[0], loop_delta, self._peak)
        return self.usage

    def __enter__(self) -> Meter:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
