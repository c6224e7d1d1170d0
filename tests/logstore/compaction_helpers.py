"""Keyed batches, record views and cleaner runs for the compaction tests."""

from __future__ import annotations

from logstore import CleanerCandidate, LogCleaner, LogConfig, UnifiedLog
from wire.records import RecordInput, build_batch, iter_batches, iter_records, record_timestamp

from .helpers import T0, read_all

TP = ("compacted", 0)


def compact_config(**changes) -> LogConfig:
    base = LogConfig(
        cleanup_policy="compact",
        segment_bytes=600,
        index_interval_bytes=100,
        min_cleanable_dirty_ratio=0.0,
    )
    return base.replace(**changes)


def kv_batch(
    pairs,
    *,
    timestamp: int = T0,
    compression: int = 0,
    producer_id=-1,
    producer_epoch=-1,
    base_sequence=-1,
) -> bytearray:
    """One batch of (key, value) records; None keys/values stay None."""
    records = [
        RecordInput(
            None if k is None else k.encode(),
            None if v is None else v.encode(),
            timestamp=timestamp,
        )
        for k, v in pairs
    ]
    return bytearray(
        build_batch(
            records,
            compression=compression,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
        )
    )


def records_of(log: UnifiedLog) -> list[tuple[int, str | None, str | None]]:
    """(offset, key, value) of every record, in log order."""
    out = []
    data = read_all(log)
    for pos, h in iter_batches(data):
        for r in iter_records(data, pos):
            out.append(
                (
                    h.base_offset + r.offset_delta,
                    None if r.key is None else r.key.decode(),
                    None if r.value is None else r.value.decode(),
                )
            )
    return out


def timestamps_of(log: UnifiedLog) -> dict[int, int]:
    data = read_all(log)
    return {
        h.base_offset + r.offset_delta: record_timestamp(h, r)
        for pos, h in iter_batches(data)
        for r in iter_records(data, pos)
    }


def latest_per_key(records) -> dict:
    latest = {}
    for offset, key, value in records:
        if key is not None:
            latest[key] = (offset, value)
    return latest


def clean(log: UnifiedLog, log_dir, cleaner: LogCleaner | None = None, high_watermark=None):
    """One cleaner pass over `log` alone; the Cleaned result or None."""
    cleaner = cleaner or LogCleaner()
    return cleaner.clean_filthiest([CleanerCandidate(TP, log, str(log_dir), high_watermark)])
