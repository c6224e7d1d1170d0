"""Which part of a compacted log the cleaner may rewrite, and whether it should
(Kafka's LogCleanerManager.cleanableOffsets and LogToClean).

The cleaner's progress is the "first dirty offset": everything below it was
compacted by an earlier cleaning. The cleanable section ends at the "first
uncleanable offset", the lowest of

- the active segment's base offset (the active segment is never cleaned),
- the high watermark (Kafka: the last stable offset),
- the base offset of the first dirty segment holding a batch newer than
  min.compaction.lag.ms,

snapped down to a segment boundary. A log is cleaned when its dirty ratio
(dirty bytes / clean + dirty bytes, whole segments as Kafka counts them) is
above min.cleanable.dirty.ratio, or when a dirty segment's first batch is
older than max.compaction.lag.ms; when no log qualifies, a log whose
tombstones' delete horizon has passed is cleaned to drop them.

Pure functions over a segment list; the UnifiedLog calls them under its lock.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from logstore.config import LONG_MAX, LogConfig
from logstore.segment import LogSegment

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LogToClean:
    first_dirty_offset: int
    first_uncleanable_offset: int
    # Bytes of the segments below the first dirty offset.
    clean_bytes: int
    # Bytes of the segments from the first dirty offset to the first uncleanable one.
    cleanable_bytes: int
    # How long past max.compaction.lag.ms the oldest dirty batch is (0: not past).
    max_compaction_delay_ms: int
    # The non-active segments the cleaning may rewrite, with their sizes then
    # (.log bytes; offset and time index bytes, as Kafka groups them).
    segments: tuple[LogSegment, ...]
    sizes: tuple[int, ...]
    index_sizes: tuple[tuple[int, int], ...] = ()

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def needs_compaction_now(self) -> bool:
        return self.max_compaction_delay_ms > 0

    def should_clean(self, config: LogConfig) -> bool:
        """Kafka's rule: forced by max.compaction.lag.ms with something to
        clean, or a dirty ratio above (not at) min.cleanable.dirty.ratio."""
        return (
            self.needs_compaction_now and self.cleanable_bytes > 0
        ) or self.cleanable_ratio > config.min_cleanable_dirty_ratio


def first_dirty_offset(checkpoint: int | None, log_start_offset: int, log_end_offset: int) -> int:
    """The checkpointed progress, or the log start when there is none or it is
    outside the log (the log was truncated or its start moved past it)."""
    if checkpoint is None or checkpoint < log_start_offset:
        return log_start_offset
    if checkpoint > log_end_offset:
        log.warning(
            "cleaner checkpoint %d is beyond the log end %d; cleaning from the log start %d",
            checkpoint,
            log_end_offset,
            log_start_offset,
        )
        return log_start_offset
    return checkpoint


def log_to_clean(
    segments: Sequence[LogSegment],
    config: LogConfig,
    *,
    checkpoint: int | None,
    log_start_offset: int,
    high_watermark: int,
    now_ms: int,
) -> LogToClean:
    active = segments[-1]
    log_end = active.next_offset
    first_dirty = first_dirty_offset(checkpoint, log_start_offset, log_end)
    non_active = list(segments[:-1])
    # The non-active segments from the one holding the first dirty offset on.
    dirty = [s for i, s in enumerate(non_active) if segments[i + 1].base_offset > first_dirty]

    uncleanable = min(active.base_offset, max(high_watermark, log_start_offset))
    if config.min_compaction_lag_ms > 0:
        for s in dirty:
            if s.largest_timestamp() > now_ms - config.min_compaction_lag_ms:
                uncleanable = min(uncleanable, s.base_offset)
                break
    # Snap down to the base of the segment holding it.
    first_uncleanable = active.base_offset
    for s in reversed(segments):
        if s.base_offset <= uncleanable:
            first_uncleanable = s.base_offset
            break

    clean_bytes = sum(s.size for s in segments if s.base_offset < first_dirty)
    cleanable = [
        s
        for i, s in enumerate(segments)
        if s.base_offset < first_uncleanable
        and (i + 1 < len(segments) and segments[i + 1].base_offset > first_dirty)
    ]
    cleanable_bytes = sum(s.size for s in cleanable)

    delay = 0
    if config.max_compaction_lag_ms < LONG_MAX:
        firsts = [t for t in (s.rolling_timestamp() for s in dirty) if t is not None and t > 0]
        if firsts:
            clean_until = now_ms - max(config.max_compaction_lag_ms, 0)
            earliest = min(firsts)
            if earliest < clean_until:
                delay = clean_until - earliest

    rewritable = tuple(s for s in non_active if s.base_offset < first_uncleanable)
    return LogToClean(
        first_dirty_offset=first_dirty,
        first_uncleanable_offset=first_uncleanable,
        clean_bytes=clean_bytes,
        cleanable_bytes=cleanable_bytes,
        max_compaction_delay_ms=delay,
        segments=rewritable,
        sizes=tuple(s.size for s in rewritable),
        index_sizes=tuple(
            (s.offset_index.entries * 8, s.time_index.entries * 12) for s in rewritable
        ),
    )
