"""The broker's allocator settings (broker/allocator.py), in a fresh process each.

What a user relies on: validating LZ4 batches from franz-go (frames declaring
4 MiB blocks) does not fault in a fresh 4 MiB buffer for every batch. Page
faults are counted by the kernel, not timed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# 200 validations of a 64 KiB batch's LZ4 frame with a 4 MiB block maximum;
# prints the minor page faults they took.
PROGRAM = """
import resource, sys
import lz4.frame
from broker.allocator import tune_allocator
from wire.records.compression import LZ4, decompress_scratch

if sys.argv[1] == "tuned":
    assert tune_allocator()
payload = bytes(range(65, 91)) * 2521
# Streamed, as Go's writer does (a one-shot frame shrinks its blocks to the input).
writer = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX4MB)
frame = writer.begin() + writer.compress(payload) + writer.flush()
assert frame[5] >> 4 == 7
for _ in range(20):
    decompress_scratch(LZ4, frame, 1 << 20)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(200):
    assert len(decompress_scratch(LZ4, frame, 1 << 20)) == len(payload)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def run(program: str, mode: str) -> int:
    """The number `program` prints, run in a fresh interpreter with argv[1] = mode."""
    out = subprocess.run(
        [sys.executable, "-c", program, mode],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return int(out.stdout)


def test_lz4_validation_reuses_its_frame_buffer_once_tuned():
    # With glibc's defaults the buffer goes back to the kernel after every
    # batch and comes back as fresh pages: 4,000 faults for the 200 here.
    assert run(PROGRAM, "tuned") < 200


# A Produce across many partitions holds thousands of short-lived objects until
# it is answered; prints how many young collections such bursts took.
GC_PROGRAM = """
import gc, sys
from broker.allocator import tune_garbage_collector

if sys.argv[1] == "tuned":
    tune_garbage_collector()
before = gc.get_stats()[0]["collections"]
for _ in range(20):
    held = [{"partition_index": i, "error_code": 0} for i in range(5000)]
    del held
print(gc.get_stats()[0]["collections"] - before)
"""


def test_a_burst_of_request_objects_dies_without_a_collection_once_tuned():
    # With Python's default threshold (700), each burst of 5,000 collects 7 times.
    assert run(GC_PROGRAM, "untuned") >= 100
    assert run(GC_PROGRAM, "tuned") == 0
