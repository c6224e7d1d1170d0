"""The C allocator's settings for a broker process (glibc's malloc).

Validating a produced LZ4 batch decompresses it, and the LZ4 frame decoder
allocates a buffer of the frame's declared block maximum for every frame:
4 MiB for franz-go's (Go's lz4 writer), however small the batch. With
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
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

# mallopt(3) parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 32 << 20  # glibc's own upper limit for the adjusted threshold
TRIM_THRESHOLD = 64 << 20


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
