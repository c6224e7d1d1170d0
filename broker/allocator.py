"""Memory settings for a broker process: glibc's malloc and Python's garbage collector.

The allocator (`tune_allocator`). Validating a produced LZ4 batch
decompresses it, and the LZ4 frame decoder allocates a buffer of the frame's
declared block maximum for every frame: 4 MiB for franz-go's (Go's lz4
writer), however small the batch. With
glibc's defaults each such buffer comes from the top of the heap and is given
back to the kernel when freed: a `brk` each way and fresh zeroed pages for
every batch (20 page faults a batch, none with the settings below;
tests/broker/test_allocator.py). Measured, LZ4 produce with franz-go went
from 191 to 254 MB/s and 4.28 to 3.00 CPU s/GiB (`bench/run.py --workloads
produce --clients franz --scale 0.5 --brokers gregor`, medians of three
alternating rounds before and after).

Setting the two thresholds by hand turns off glibc's own adjustment of them:
allocations up to `MMAP_THRESHOLD` come from the heap, and the heap keeps up
to `TRIM_THRESHOLD` of free memory at its top instead of trimming it.
Without glibc (musl, macOS) nothing is changed.

The garbage collector (`tune_garbage_collector`). A Produce across 1,000
partitions keeps a few thousand objects (a response per partition, headers)
alive until it is answered. With Python's first threshold of 700 every such
request ran several young collections, and the older generations' after
them, over objects about to die by reference count anyway: 4% of the loop in
a scratch harness producing to 1,000 partitions, 29-36 us a partition
against 29-33 us with the threshold at 10,000. What start-up made (modules,
configuration) is never garbage: frozen, full collections skip it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging

log = logging.getLogger(__name__)

# mallopt(3) parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 32 << 20  # glibc's own upper limit for the adjusted threshold
TRIM_THRESHOLD = 64 << 20

GC_YOUNG_THRESHOLD = 10_000  # Python's default is 700


def tune_allocator() -> bool:
    """Apply the thresholds; False where the C library has no mallopt."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        log.debug("no mallopt in the C library %r: allocator left as it is", name)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    applied = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    applied = mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and applied
    if not applied:
        log.warning("mallopt refused the allocator thresholds")
    return applied


def tune_garbage_collector() -> None:
    """Freeze the objects made so far and raise the young generation's
    threshold (the older generations keep theirs)."""
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)
