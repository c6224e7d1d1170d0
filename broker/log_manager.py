"""The log directories of this broker and the logs in them (Kafka's LogManager).

Start (`load`): for each log dir, note whether the last stop was clean and
read the recovery-point, log-start and high-watermark checkpoints, and list
the partition directories found. Logs are opened when the metadata says this
broker hosts them (`open_log`), each from its checkpointed positions; after
the first metadata image `finish_startup` removes the directories of topics
the cluster no longer has (deleted while this broker was down), removes the
clean-shutdown markers and writes fresh checkpoints.

While running: retention every `log.retention.check.interval.ms`, the flushes
the flush policy asks for every `log.flush.scheduler.interval.ms`, the
recovery-point checkpoint every `log.flush.offset.checkpoint.interval.ms`, the
log-start one every `log.flush.start.offset.checkpoint.interval.ms`, the
high-watermark one every `replica.high.watermark.checkpoint.interval.ms`
(Kafka's three settings), and the log cleaner. Every
disk wait runs in a worker thread so the event loop keeps serving; the
blocking methods say so and are called through `trio.to_thread`.

Stop (`close_all`): close every log (index trim, producer snapshot, fsync),
write the checkpoints, then the clean-shutdown marker of each healthy dir.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import trio

from logstore import CleanerCandidate, LogCleaner, LogConfig, LogError, UnifiedLog
from logstore.logdir import (
    had_clean_shutdown,
    list_partitions,
    partition_path,
    read_high_watermarks,
    read_log_start_offsets,
    read_recovery_points,
    remove_clean_shutdown_marker,
    write_clean_shutdown_marker,
    write_high_watermarks,
    write_log_start_offsets,
    write_recovery_points,
)

log = logging.getLogger("gregor.logs")

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class LogDuties:
    """How often the background duties run (ms), and the cleaner's settings."""

    retention_check_interval_ms: int
    flush_scheduler_interval_ms: int
    checkpoint_interval_ms: int
    cleaner_enable: bool
    cleaner_backoff_ms: int
    log_start_checkpoint_interval_ms: int = 60_000
    high_watermark_checkpoint_interval_ms: int = 5_000


# Kafka's three offset checkpoints of a log dir: how each is written, and
# the log's value it holds.
_CHECKPOINTS = {
    "recovery point": (write_recovery_points, "recovery_point"),
    "log start": (write_log_start_offsets, "log_start_offset"),
    "high watermark": (write_high_watermarks, "high_watermark"),
}


class LogManager:
    def __init__(self, log_dirs: list[str], duties: LogDuties):
        self.log_dirs = [str(d) for d in log_dirs]
        self.duties = duties
        self.logs: dict[TopicPartition, UnifiedLog] = {}
        self._dir_of: dict[TopicPartition, str] = {}
        # How many logs each dir holds (of _dir_of), where a new log goes.
        self._logs_per_dir: Counter[str] = Counter()
        self._offline_dirs: set[str] = set()
        # What `load` found on disk, used when a log is opened.
        self._found: dict[TopicPartition, str] = {}
        self._recovery: dict[TopicPartition, int] = {}
        self._starts: dict[TopicPartition, int] = {}
        self._high_watermarks: dict[TopicPartition, int] = {}
        self._clean: dict[str, bool] = {}
        self._cleaner = LogCleaner()
        self._duties_scope = trio.CancelScope()
        self._duties_done = trio.Event()
        self._duties_started = False
        # Called (on the event loop) with a partition whose log start moved.
        self.on_log_start_moved: Callable[[TopicPartition], None] = lambda tp: None

    # --- start ------------------------------------------------------------------

    def load(self) -> None:
        """Blocking: read each dir's checkpoints and list its partitions."""
        for d in self.log_dirs:
            os.makedirs(d, exist_ok=True)
            self._clean[d] = had_clean_shutdown(d)
            self._recovery.update(read_recovery_points(d))
            self._starts.update(read_log_start_offsets(d))
            self._high_watermarks.update(read_high_watermarks(d))
            for tp in list_partitions(d):
                self._found[tp] = d

    def finish_startup(self, hosted: set[TopicPartition]) -> None:
        """Blocking: after the first metadata image was applied. Directories of
        partitions this broker no longer hosts go; the markers are removed and
        fresh checkpoints written."""
        for tp, d in self._found.items():
            if tp not in hosted and tp not in self.logs:
                log.info("removing %s: its topic no longer exists", partition_path(d, *tp))
                shutil.rmtree(partition_path(d, *tp), ignore_errors=True)
        self._found.clear()
        for d in self.log_dirs:
            remove_clean_shutdown_marker(d)
        self.write_checkpoints()

    # --- logs --------------------------------------------------------------------

    def get(self, tp: TopicPartition) -> UnifiedLog | None:
        return self.logs.get(tp)

    def dir_of(self, tp: TopicPartition) -> str | None:
        return self._dir_of.get(tp)

    @property
    def offline_dirs(self) -> frozenset[str]:
        """Dirs a log could not be closed in (no clean-shutdown marker for them)."""
        return frozenset(self._offline_dirs)

    def open_log(self, tp: TopicPartition, topic_id, config: LogConfig) -> UnifiedLog:
        """Blocking: the log of `tp`, opened where it is on disk (recovered from
        its recovery point after an unclean stop) or created in the online dir
        holding the fewest logs. A dir that cannot take a new log (a full
        disk) is skipped for the next. LogError/OSError when none can."""
        existing = self.logs.get(tp)
        if existing is not None:
            return existing
        found = self._found.get(tp)
        candidates = [found] if found is not None else self._dirs_by_load()
        error: Exception | None = None
        for d in candidates:
            try:
                plog = UnifiedLog.open(
                    partition_path(d, *tp),
                    config,
                    recovery_point=self._recovery.get(tp, 0),
                    log_start_offset=self._starts.get(tp, 0),
                    high_watermark=self._high_watermarks.get(tp, 0),
                    clean_shutdown=self._clean.get(d, False),
                )
                plog.assign_topic_id(topic_id)
            except (LogError, OSError) as e:
                log.warning("cannot open the log of %s-%d in %s: %s", *tp, d, e)
                error = e
                if found is None:
                    shutil.rmtree(partition_path(d, *tp), ignore_errors=True)
                continue
            self.logs[tp] = plog
            self._dir_of[tp] = d
            self._logs_per_dir[d] += 1
            return plog
        assert error is not None
        raise error

    def _dirs_by_load(self) -> list[str]:
        online = [d for d in self.log_dirs if d not in self._offline_dirs]
        return sorted(online, key=lambda d: (self._logs_per_dir[d], self.log_dirs.index(d)))

    def delete_log(self, tp: TopicPartition) -> None:
        """Blocking: close and remove the log of `tp` (files and directory)."""
        plog = self.logs.pop(tp, None)
        d = self._dir_of.pop(tp, None)
        if d is not None:
            self._logs_per_dir[d] -= 1
        if plog is None:
            return
        try:
            plog.delete()
        except (LogError, OSError) as e:
            log.warning("deleting %r: %s", plog, e)

    def close_all(self) -> None:
        """Blocking: close every log and write the checkpoints and markers.

        A log dir in which a log could not be closed cleanly gets no
        clean-shutdown marker, so the next start recovers it."""
        for tp, plog in list(self.logs.items()):
            if plog.offline:
                self._offline_dirs.add(self._dir_of[tp])
            try:
                plog.close()
            except (LogError, OSError) as e:
                log.error("closing %r: %s", plog, e)
                self._offline_dirs.add(self._dir_of[tp])
        self.write_checkpoints()
        for d in self.log_dirs:
            if d in self._offline_dirs:
                continue
            try:
                write_clean_shutdown_marker(d)
            except OSError as e:
                log.error(
                    "%s: cannot write the clean-shutdown marker (next start recovers): %s", d, e
                )

    def write_checkpoints(self, kinds: tuple[str, ...] = tuple(_CHECKPOINTS)) -> None:
        """Blocking: the checkpoints of `kinds` (of _CHECKPOINTS; all by default) per dir."""
        by_dir: dict[str, list[tuple[TopicPartition, UnifiedLog]]] = {d: [] for d in self.log_dirs}
        for tp, plog in list(self.logs.items()):
            by_dir[self._dir_of[tp]].append((tp, plog))
        for d, entries in by_dir.items():
            if d in self._offline_dirs:
                continue
            try:
                for kind in kinds:
                    write, field = _CHECKPOINTS[kind]
                    write(d, {tp: getattr(p, field) for tp, p in entries})
            except OSError as e:
                log.error("writing checkpoints in %s: %s", d, e)

    # --- background duties ----------------------------------------------------------

    def start_background(self, nursery: trio.Nursery) -> None:
        self._duties_started = True
        nursery.start_soon(self._run_duties)

    async def _run_duties(self) -> None:
        d = self.duties
        with self._duties_scope:
            async with trio.open_nursery() as duties:
                duties.start_soon(self._every, d.retention_check_interval_ms, self._retention)
                duties.start_soon(self._every, d.flush_scheduler_interval_ms, self._flush_due)
                for interval_ms, kind in (
                    (d.checkpoint_interval_ms, "recovery point"),
                    (d.log_start_checkpoint_interval_ms, "log start"),
                    (d.high_watermark_checkpoint_interval_ms, "high watermark"),
                ):
                    duties.start_soon(self._every, interval_ms, partial(self._checkpoint, kind))
                if d.cleaner_enable:
                    duties.start_soon(self._run_cleaner)
        self._duties_done.set()

    async def stop_background(self) -> None:
        """Stop the duties and wait for one that is running (in a worker
        thread) to finish, so none acts on a log being closed."""
        self._duties_scope.cancel()
        if self._duties_started:
            await self._duties_done.wait()

    async def _every(self, interval_ms: int, duty) -> None:
        interval = max(interval_ms, 10) / 1000
        while True:
            await trio.sleep(interval)
            try:
                await duty()
            except Exception:
                log.exception("background duty %r failed", duty)

    def _was_removed(self, tp: TopicPartition, plog: UnifiedLog) -> bool:
        """Deleted (its log closed) while a duty was going through the logs."""
        return self.logs.get(tp) is not plog

    async def _retention(self) -> None:
        for tp, plog in list(self.logs.items()):
            try:
                deleted = await trio.to_thread.run_sync(
                    plog.delete_old_segments, plog.high_watermark
                )
                plog.remove_expired_producers()
            except (LogError, OSError) as e:
                # One failing log must not stop retention of the others.
                if not self._was_removed(tp, plog):
                    log.warning("retention of %r failed: %s", plog, e)
                continue
            if deleted:
                self.on_log_start_moved(tp)

    async def _flush_due(self) -> None:
        for tp, plog in list(self.logs.items()):
            try:
                if plog.flush_due():
                    await trio.to_thread.run_sync(plog.flush)
            except (LogError, OSError) as e:
                # One failing log must not stop the others from being flushed.
                if not self._was_removed(tp, plog):
                    log.warning("flushing %r failed: %s", plog, e)

    async def _checkpoint(self, kind: str) -> None:
        await trio.to_thread.run_sync(self.write_checkpoints, (kind,))

    async def _run_cleaner(self) -> None:
        """Kafka's log cleaner thread: compact the compacted log that needs it
        most (logstore.cleaner_manager), in a worker thread, one log at a
        time; again at once after a cleaning, else after log.cleaner.backoff.ms.
        The log's lock is taken only to plan and to swap segments in."""
        backoff = max(self.duties.cleaner_backoff_ms, 10) / 1000
        while True:
            candidates = [
                CleanerCandidate(tp, plog, self._dir_of[tp], plog.high_watermark)
                for tp, plog in list(self.logs.items())
                if self._dir_of.get(tp) not in self._offline_dirs
            ]
            progressed = False
            try:
                cleaned = await trio.to_thread.run_sync(self._cleaner.clean_filthiest, candidates)
                progressed = cleaned is not None and cleaned.result.end_offset is not None
            except Exception:
                log.exception("log cleaner failed")
            await trio.sleep(0 if progressed else backoff)


def log_dir_size(path: str) -> int:
    """Blocking: bytes under `path`."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total
