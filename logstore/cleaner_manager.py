"""The log cleaner across a broker's logs (Kafka's LogCleanerManager and one
cleaner thread's loop body).

`LogCleaner.clean_filthiest(candidates)` picks, among the logs with
cleanup.policy containing "compact", the one whose cleanable section has the
highest dirty ratio among those that qualify (see cleanable.py), cleans it
(cleaner.py) and records its new first dirty offset in the log dir's
`cleaner-offset-checkpoint`. It blocks on the disk: the broker runs it in a
worker thread, one log at a time, as often as log.cleaner.backoff.ms says.

A log whose cleaning fails (unreadable records, a storage error) is marked
uncleanable and skipped from then on, as Kafka does.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from logstore.cleaner import DEFAULT_MAX_MAP_ENTRIES, CleanResult, clean_log
from logstore.errors import CorruptFileError, LogError
from logstore.logdir import read_cleaner_offsets, write_cleaner_offsets
from wire.errors import DecodeError, EncodeError

if TYPE_CHECKING:
    from logstore.unified_log import UnifiedLog

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class CleanerCandidate(NamedTuple):
    topic_partition: TopicPartition
    log: UnifiedLog
    # The log dir holding the partition (where its checkpoint entry lives).
    log_dir: str
    # The cleaner stays below it (None: the log end).
    high_watermark: int | None = None


class Cleaned(NamedTuple):
    topic_partition: TopicPartition
    result: CleanResult


class LogCleaner:
    def __init__(self, max_map_entries: int = DEFAULT_MAX_MAP_ENTRIES):
        self.max_map_entries = max_map_entries
        self._checkpoints: dict[str, dict[TopicPartition, int]] = {}
        self.uncleanable: set[tuple[str, TopicPartition]] = set()
        # The UnifiedLog each partition had when last seen: a partition deleted and
        # created again (a new UnifiedLog) must not inherit the old one's progress.
        self._seen: dict[tuple[str, TopicPartition], UnifiedLog] = {}

    def checkpoints(self, log_dir: str) -> dict[TopicPartition, int]:
        """The first dirty offsets of `log_dir`'s partitions (read once)."""
        if log_dir not in self._checkpoints:
            try:
                self._checkpoints[log_dir] = read_cleaner_offsets(log_dir)
            except (CorruptFileError, OSError) as e:
                log.warning(
                    "%s: unreadable cleaner checkpoint, cleaning from scratch: %s", log_dir, e
                )
                self._checkpoints[log_dir] = {}
        return self._checkpoints[log_dir]

    def clean_filthiest(self, candidates: Iterable[CleanerCandidate]) -> Cleaned | None:
        """Clean the log that needs it most; None when none does."""
        candidates = list(candidates)
        plans = []
        for c in candidates:
            plog = c.log
            if (
                not plog.config.compact_enabled
                or plog.closed
                or plog.offline
                or (c.log_dir, c.topic_partition) in self.uncleanable
            ):
                continue
            offsets = self.checkpoints(c.log_dir)
            seen = self._seen.get((c.log_dir, c.topic_partition))
            if seen is not None and seen is not plog:
                offsets.pop(c.topic_partition, None)
                self.uncleanable.discard((c.log_dir, c.topic_partition))
            self._seen[(c.log_dir, c.topic_partition)] = plog
            checkpoint = offsets.get(c.topic_partition)
            try:
                plan = plog.log_to_clean(checkpoint, c.high_watermark)
            except LogError as e:
                log.warning("%s: cannot plan its cleaning: %s", plog.dir, e)
                continue
            if plan.total_bytes > 0:
                plans.append((c, plan))
        eligible = [(c, p) for c, p in plans if p.should_clean(c.log.config)]
        if not eligible:
            # Nothing dirty enough: drop tombstones whose delete horizon passed.
            eligible = [
                (c, p) for c, p in plans if 0 <= c.log.latest_delete_horizon <= c.log.now_ms()
            ]
        if not eligible:
            return None
        chosen, plan = max(eligible, key=lambda cp: cp[1].cleanable_ratio)
        try:
            result = clean_log(chosen.log, plan, max_map_entries=self.max_map_entries)
        except (LogError, OSError, DecodeError, EncodeError) as e:
            log.error(
                "cleaning %s failed, it will not be cleaned again until restart: %s",
                chosen.log.dir,
                e,
            )
            self.uncleanable.add((chosen.log_dir, chosen.topic_partition))
            return None
        if result.end_offset is not None:
            self._checkpoint(chosen, result.end_offset, candidates)
        return Cleaned(chosen.topic_partition, result)

    def _checkpoint(self, chosen: CleanerCandidate, offset: int, candidates) -> None:
        offsets = self.checkpoints(chosen.log_dir)
        offsets[chosen.topic_partition] = offset
        present = {c.topic_partition for c in candidates if c.log_dir == chosen.log_dir}
        for tp in [tp for tp in offsets if tp not in present]:
            del offsets[tp]
        try:
            write_cleaner_offsets(chosen.log_dir, offsets)
        except OSError as e:
            # The next cleaning starts lower; nothing is lost.
            log.warning("%s: cannot write the cleaner checkpoint: %s", chosen.log_dir, e)
