"""Building record batches and opening logs for the logstore tests."""

from __future__ import annotations

import os

from logstore import LogConfig, UnifiedLog
from logstore.log_validator import TopicLimits
from wire.records import RecordInput, build_batch, iter_batches

# A fixed "now" (2024-01-01T00:00:00Z): batch timestamps are near it and the
# tests' clocks start there, so nothing depends on the machine's clock.
T0 = 1_704_067_200_000


class FakeClock:
    """Wall-clock milliseconds that only move when a test says so."""

    def __init__(self, now: int = T0):
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def batch(
    n: int = 1,
    *,
    timestamp: int = T0,
    value_size: int = 10,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
    timestamps: list[int] | None = None,
    compression: int = 0,
    is_transactional: bool = False,
) -> bytearray:
    """A v2 batch of `n` records (values of `value_size` bytes)."""
    ts = timestamps or [timestamp] * n
    records = [
        RecordInput(f"k{i}".encode(), bytes([65 + i % 26]) * value_size, timestamp=ts[i])
        for i in range(n)
    ]
    return bytearray(
        build_batch(
            records,
            base_offset=base_offset,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            partition_leader_epoch=partition_leader_epoch,
            compression=compression,
            is_transactional=is_transactional,
        )
    )


def offsets_of(data) -> list[tuple[int, int]]:
    """(base offset, last offset) of each batch in `data`."""
    return [(h.base_offset, h.last_offset) for _, h in iter_batches(data)]


def read_all(log: UnifiedLog, start: int | None = None, max_offset: int | None = None) -> bytes:
    """Every batch from `start` (default the log start) to the end."""
    offset = log.log_start_offset if start is None else start
    out = bytearray()
    while offset < log.log_end_offset:
        result = log.read(offset, 1 << 20, max_offset=max_offset)
        if result.size == 0:
            break
        data = result.read_bytes()
        out += data
        offset = list(iter_batches(data))[-1][1].next_offset
    return bytes(out)


def all_offsets(log: UnifiedLog) -> list[int]:
    """Every offset stored in the log, in order."""
    out = []
    for base, last in offsets_of(read_all(log)):
        out.extend(range(base, last + 1))
    return out


def open_log(
    path, config: LogConfig | None = None, clock: FakeClock | None = None, **kw
) -> UnifiedLog:
    return UnifiedLog.open(os.fspath(path), config or LogConfig(), clock=clock or FakeClock(), **kw)


# Validation limits that refuse nothing but control batches and malformed input:
# no size or timestamp bound, CreateTime, not compacted.
OPEN_LIMITS = TopicLimits(
    max_message_bytes=1 << 20,
    log_append_time=False,
    compacted=False,
    timestamp_before_max_ms=2**63 - 1,
    timestamp_after_max_ms=2**63 - 1,
    segment_bytes=1 << 30,
)
