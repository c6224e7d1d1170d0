"""Every benchmark run starts from the same page cache: written back and empty.

A produce run leaves a gigabyte of dirty pages and fills memory with file
pages. The next run, on either broker, then pays for the kernel writing that
back and reclaiming pages before it can cache its own writes: on the
project's 2-core machine (24 GiB), franz-go's 1 GiB produce took 2.3–2.5 s
with memory free and 4.3–5.2 s once the page cache held 19 GiB, on both
brokers, the broker's system time going from 0.7–1.2 s to 2.5–3.9 s. Which
broker met which state depended on what ran before it. `settle()` before
every run and every broker start puts each in the same state: `sync`, then
the clean pages dropped (`/proc/sys/vm/drop_caches`, which needs root; the
data a consume run reads is written after the settle, so it is still
cached when read).
"""

from __future__ import annotations

import os

DROP_CACHES = "/proc/sys/vm/drop_caches"


def settle() -> bool:
    """Write every dirty page back, then drop the page cache (1: clean file
    pages only) when allowed. Returns whether it was dropped."""
    os.sync()
    try:
        with open(DROP_CACHES, "w") as f:
            f.write("1")
    except OSError:
        return False
    return True


def note(dropped: bool, every_run: bool) -> str:
    """What settling did, for the results' description of the run."""
    what = "written back and dropped" if dropped else "written back (dropping it needs root)"
    when = "every run and broker start" if every_run else "every broker start"
    return f"{what} before {when} (bench/pagecache.py)"
