"""Settings of one partition's log, with Kafka's names and defaults.

Field names are Kafka's topic-level config names in snake case
(`segment.bytes` -> `segment_bytes`). `from_topic_config` reads topic-level
properties, `from_broker_config` the broker-wide `log.*` defaults; keys that
are not log-storage settings are ignored (the broker validates key names).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from dataclasses import dataclass

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1

_DAY_MS = 24 * 60 * 60 * 1000


@dataclass(frozen=True)
class LogConfig:
    # Roll a new segment when the active one would exceed this many bytes.
    segment_bytes: int = 1024 * 1024 * 1024
    # ... or when its first batch is older than this (batch timestamps).
    segment_ms: int = 7 * _DAY_MS
    # Random jitter subtracted from segment_ms, fixed per segment.
    segment_jitter_ms: int = 0
    # Preallocated size of the active segment's .index and .timeindex.
    segment_index_bytes: int = 10 * 1024 * 1024
    # Bytes of batches between two sparse index entries.
    index_interval_bytes: int = 4096
    # Delete whole segments whose newest timestamp is older than this (-1: never).
    retention_ms: int = 7 * _DAY_MS
    # Delete oldest segments while the log is larger than this (-1: never).
    retention_bytes: int = -1
    # fsync after this many unflushed messages / this long since the last flush.
    flush_interval_messages: int = LONG_MAX
    flush_interval_ms: int = LONG_MAX
    # "delete", "compact" or "compact,delete": retention only runs with delete.
    cleanup_policy: str = "delete"
    # Idle producers are forgotten after this long (Kafka's producer.id.expiration.ms).
    producer_id_expiration_ms: int = _DAY_MS
    # Compaction: a log is cleaned when dirty bytes / cleanable bytes exceed this ...
    min_cleanable_dirty_ratio: float = 0.5
    # ... and only records at least this old are cleaned ...
    min_compaction_lag_ms: int = 0
    # ... unless a dirty record is older than this, which forces a cleaning.
    max_compaction_lag_ms: int = LONG_MAX
    # Tombstones stay this long after the cleaning that first kept them.
    delete_retention_ms: int = _DAY_MS

    def __post_init__(self) -> None:
        if not 61 <= self.segment_bytes <= INT_MAX:
            raise ValueError(f"segment_bytes {self.segment_bytes} must be in [61, {INT_MAX}]")
        if self.segment_ms < 1:
            raise ValueError(f"segment_ms {self.segment_ms} must be positive")
        if self.segment_jitter_ms < 0:
            raise ValueError(f"segment_jitter_ms {self.segment_jitter_ms} must be >= 0")
        if not 24 <= self.segment_index_bytes <= INT_MAX:
            # Two time index entries at least: the last slot is kept for the roll entry.
            raise ValueError(
                f"segment_index_bytes {self.segment_index_bytes} must be in [24, {INT_MAX}]"
            )
        if self.index_interval_bytes < 0:
            raise ValueError(f"index_interval_bytes {self.index_interval_bytes} must be >= 0")
        if self.flush_interval_messages < 1 or self.flush_interval_ms < 0:
            raise ValueError("flush intervals must be positive")
        policies = {p.strip() for p in self.cleanup_policy.split(",") if p.strip()}
        if not policies or not policies <= {"delete", "compact"}:
            raise ValueError(f"cleanup_policy {self.cleanup_policy!r} is not delete/compact")
        if not 0 <= self.min_cleanable_dirty_ratio <= 1:
            raise ValueError(
                f"min_cleanable_dirty_ratio {self.min_cleanable_dirty_ratio} must be in [0, 1]"
            )
        if self.min_compaction_lag_ms < 0 or self.max_compaction_lag_ms < 1:
            raise ValueError("compaction lags must be positive")
        if self.delete_retention_ms < 0:
            raise ValueError(f"delete_retention_ms {self.delete_retention_ms} must be >= 0")

    @property
    def delete_enabled(self) -> bool:
        return "delete" in {p.strip() for p in self.cleanup_policy.split(",")}

    @property
    def compact_enabled(self) -> bool:
        return "compact" in {p.strip() for p in self.cleanup_policy.split(",")}

    def random_segment_jitter(self) -> int:
        """Kafka's per-segment roll jitter: 0 unless segment_jitter_ms is set."""
        if self.segment_jitter_ms == 0:
            return 0
        return random.randrange(min(self.segment_jitter_ms, self.segment_ms))

    def replace(self, **changes) -> LogConfig:
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_topic_config(
        cls, props: Mapping[str, str | int], defaults: LogConfig | None = None
    ) -> LogConfig:
        """Topic-level properties (`segment.bytes`, `retention.ms`, ...) over `defaults`."""
        base = defaults or cls()
        changes = {}
        for key, field in _TOPIC_KEYS.items():
            if key in props:
                changes[field] = _convert(field, props[key])
        return dataclasses.replace(base, **changes)

    @classmethod
    def from_broker_config(cls, props: Mapping[str, str | int]) -> LogConfig:
        """Broker-wide defaults (`log.segment.bytes`, `log.retention.hours`, ...).

        As in Kafka, `log.retention.ms` wins over `.minutes` over `.hours`, and
        `log.roll.ms` over `log.roll.hours`.
        """
        changes = {}
        for key, field in _BROKER_KEYS.items():
            if key in props:
                changes[field] = _convert(field, props[key])
        for keys, field in _BROKER_TIME_KEYS:
            for key, scale in keys:
                if key in props:
                    value = int(props[key])
                    changes[field] = value * scale if value >= 0 else -1
                    break
        return cls(**changes)


_TOPIC_KEYS = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "segment.jitter.ms": "segment_jitter_ms",
    "segment.index.bytes": "segment_index_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "flush.messages": "flush_interval_messages",
    "flush.ms": "flush_interval_ms",
    "cleanup.policy": "cleanup_policy",
    "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
    "delete.retention.ms": "delete_retention_ms",
}

_BROKER_KEYS = {
    "log.segment.bytes": "segment_bytes",
    "log.index.size.max.bytes": "segment_index_bytes",
    "log.index.interval.bytes": "index_interval_bytes",
    "log.retention.bytes": "retention_bytes",
    "log.flush.interval.messages": "flush_interval_messages",
    "log.flush.interval.ms": "flush_interval_ms",
    "log.cleanup.policy": "cleanup_policy",
    "producer.id.expiration.ms": "producer_id_expiration_ms",
    "log.cleaner.min.cleanable.ratio": "min_cleanable_dirty_ratio",
    "log.cleaner.min.compaction.lag.ms": "min_compaction_lag_ms",
    "log.cleaner.max.compaction.lag.ms": "max_compaction_lag_ms",
    "log.cleaner.delete.retention.ms": "delete_retention_ms",
}

_HOUR_MS = 60 * 60 * 1000
_BROKER_TIME_KEYS = [
    (
        [
            ("log.retention.ms", 1),
            ("log.retention.minutes", 60_000),
            ("log.retention.hours", _HOUR_MS),
        ],
        "retention_ms",
    ),
    ([("log.roll.ms", 1), ("log.roll.hours", _HOUR_MS)], "segment_ms"),
    ([("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", _HOUR_MS)], "segment_jitter_ms"),
]


def _convert(field: str, value):
    if field == "cleanup_policy":
        return str(value)
    if field == "min_cleanable_dirty_ratio":
        return float(value)
    return int(value)
