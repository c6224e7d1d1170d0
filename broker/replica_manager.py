"""The partitions this broker hosts, their logs, and the duties that keep them.

Start: for each log dir, note whether the last stop was clean, read the
recovery-point and log-start checkpoints, open every hosted partition's log
(recovering from the recovery point after an unclean stop), then remove the
clean-shutdown marker. Partition directories of topics the cluster no longer
has (deleted while this broker was down) are removed.

While running: retention every `log.retention.check.interval.ms`, flushes the
flush policy asks for every `log.flush.scheduler.interval.ms`, checkpoints
every `log.flush.offset.checkpoint.interval.ms`. Disk work runs in worker
threads so the event loop keeps serving.

Stop: close every log (index trim, producer snapshot, fsync), write the
checkpoints, then the clean-shutdown marker.
"""

from __future__ import annotations

import logging
import os
import shutil
from typing import TYPE_CHECKING

import trio

from broker.cluster import TopicInfo
from broker.partition import Partition
from logstore import CleanerCandidate, LogCleaner, LogConfig, LogError, UnifiedLog  # noqa: F401
from logstore.logdir import (
    had_clean_shutdown,
    list_partitions,
    partition_path,
    read_log_start_offsets,
    read_recovery_points,
    remove_clean_shutdown_marker,
    write_clean_shutdown_marker,
    write_high_watermarks,
    write_log_start_offsets,
    write_recovery_points,
)

if TYPE_CHECKING:
    from broker.server import Broker

log = logging.getLogger("gregor.replicas")


class ReplicaManager:
    def __init__(self, broker: Broker):
        self.broker = broker
        self.node_id = broker.node_id
        self.log_dirs = [str(d) for d in broker.log_dirs]
        self.partitions: dict[tuple[str, int], Partition] = {}
        # Where each partition's directory lives.
        self._dir_of: dict[tuple[str, int], str] = {}
        self._offline_dirs: set[str] = set()
        self._duties_scope = trio.CancelScope()
        self._duties_done = trio.Event()
        self._duties_started = False
        self._cleaner = LogCleaner()

    # --- lookup ---------------------------------------------------------------

    def get(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    def log_config(self, topic: TopicInfo) -> LogConfig:
        return self.broker.topic_config(topic).to_log_config()

    # --- opening and closing ---------------------------------------------------

    def open_all(self) -> None:
        cluster = self.broker.cluster
        found: dict[tuple[str, int], str] = {}
        recovery: dict[tuple[str, int], int] = {}
        starts: dict[tuple[str, int], int] = {}
        clean: dict[str, bool] = {}
        for d in self.log_dirs:
            clean[d] = had_clean_shutdown(d)
            recovery.update({k: v for k, v in read_recovery_points(d).items()})
            starts.update({k: v for k, v in read_log_start_offsets(d).items()})
            for tp in list_partitions(d):
                found[tp] = d
        for tp, d in found.items():
            topic = cluster.topic(tp[0])
            if topic is None or tp[1] not in topic.partitions:
                log.info("removing %s: its topic no longer exists", partition_path(d, *tp))
                shutil.rmtree(partition_path(d, *tp), ignore_errors=True)
        for topic in list(cluster.topics.values()):
            for info in topic.partitions.values():
                if self.node_id not in info.replicas:
                    continue
                tp = (topic.name, info.index)
                d = found.get(tp) or self._choose_dir()
                self._open(
                    topic,
                    info,
                    d,
                    recovery_point=recovery.get(tp, 0),
                    log_start_offset=starts.get(tp, 0),
                    clean_shutdown=clean.get(d, False),
                )
        for d in self.log_dirs:
            remove_clean_shutdown_marker(d)
        self.write_checkpoints()

    def _choose_dir(self) -> str:
        """The online log dir holding the fewest partitions (as Kafka picks)."""
        counts = {d: 0 for d in self.log_dirs if d not in self._offline_dirs}
        for d in self._dir_of.values():
            if d in counts:
                counts[d] += 1
        return min(counts, key=lambda d: (counts[d], self.log_dirs.index(d)))

    def _open(self, topic: TopicInfo, info, d: str, **kwargs) -> Partition:
        path = partition_path(d, topic.name, info.index)
        plog = UnifiedLog.open(path, self.log_config(topic), **kwargs)
        plog.assign_topic_id(topic.topic_id)
        partition = Partition(topic, info, plog, self.node_id)
        self.partitions[(topic.name, info.index)] = partition
        self._dir_of[(topic.name, info.index)] = d
        return partition

    def topic_created(self, topic: TopicInfo) -> None:
        """Open logs for the topic's partitions this broker hosts and lacks.

        All or nothing: when a log cannot be made (a full or failing disk) the
        ones this call made are removed again and the error is raised, so the
        caller can undo the metadata change."""
        opened = []
        try:
            for info in topic.partitions.values():
                tp = (topic.name, info.index)
                if self.node_id in info.replicas and tp not in self.partitions:
                    opened.append(self._open(topic, info, self._choose_dir()))
        except (LogError, OSError):
            for partition in opened:
                self._drop(partition)
            raise

    def _drop(self, partition: Partition) -> None:
        tp = (partition.topic, partition.index)
        self.partitions.pop(tp, None)
        self._dir_of.pop(tp, None)
        partition.notify()
        try:
            partition.log.delete()
        except (LogError, OSError) as e:
            log.warning("deleting %r: %s", partition, e)

    def topic_deleted(self, topic: TopicInfo) -> None:
        for index in topic.partitions:
            partition = self.partitions.get((topic.name, index))
            if partition is not None:
                self._drop(partition)

    def topic_config_changed(self, topic: TopicInfo) -> None:
        config = self.log_config(topic)
        for index in topic.partitions:
            partition = self.partitions.get((topic.name, index))
            if partition is not None:
                partition.log.update_config(config)

    def close_all(self) -> None:
        """Blocking: close every log and write the checkpoints and markers.

        A log dir in which a log could not be closed cleanly gets no
        clean-shutdown marker, so the next start recovers it."""
        for tp, partition in list(self.partitions.items()):
            if partition.log.offline:
                self._offline_dirs.add(self._dir_of[tp])
            try:
                partition.log.close()
            except (LogError, OSError) as e:
                log.error("closing %r: %s", partition, e)
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

    def write_checkpoints(self) -> None:
        """Blocking: recovery points, log start offsets and high watermarks per dir."""
        by_dir: dict[str, list[tuple[tuple[str, int], Partition]]] = {d: [] for d in self.log_dirs}
        for tp, partition in self.partitions.items():
            by_dir[self._dir_of[tp]].append((tp, partition))
        for d, entries in by_dir.items():
            if d in self._offline_dirs:
                continue
            try:
                write_recovery_points(d, {tp: p.log.recovery_point for tp, p in entries})
                write_log_start_offsets(d, {tp: p.log_start_offset for tp, p in entries})
                write_high_watermarks(d, {tp: p.high_watermark for tp, p in entries})
            except OSError as e:
                log.error("writing checkpoints in %s: %s", d, e)

    def dir_of(self, topic: str, index: int) -> str | None:
        return self._dir_of.get((topic, index))

    # --- background duties -----------------------------------------------------

    def start_background(self, nursery: trio.Nursery) -> None:
        self._duties_started = True
        nursery.start_soon(self._run_duties)

    async def _run_duties(self) -> None:
        config = self.broker.config
        with self._duties_scope:
            async with trio.open_nursery() as duties:
                duties.start_soon(
                    self._every, config.log_retention_check_interval_ms, self._retention
                )
                duties.start_soon(
                    self._every, config.log_flush_scheduler_interval_ms, self._flush_due
                )
                duties.start_soon(
                    self._every, config.log_flush_offset_checkpoint_interval_ms, self._checkpoint
                )
                if config.log_cleaner_enable:
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
                log.exception("background duty %s failed", duty.__name__)

    def _was_removed(self, key, partition) -> bool:
        """Deleted (its log closed) while a duty was going through the partitions."""
        return self.partitions.get(key) is not partition

    async def _retention(self) -> None:
        for key, partition in list(self.partitions.items()):
            try:
                deleted = await trio.to_thread.run_sync(
                    partition.log.delete_old_segments, partition.high_watermark
                )
                partition.log.remove_expired_producers()
            except (LogError, OSError) as e:
                # One failing log must not stop retention of the others.
                if not self._was_removed(key, partition):
                    log.warning("retention of %r failed: %s", partition, e)
                continue
            if deleted:
                partition.notify()

    async def _flush_due(self) -> None:
        for key, partition in list(self.partitions.items()):
            try:
                if partition.log.flush_due():
                    await trio.to_thread.run_sync(partition.log.flush)
            except (LogError, OSError) as e:
                # One failing log must not stop the others from being flushed.
                if not self._was_removed(key, partition):
                    log.warning("flushing %r failed: %s", partition, e)

    async def _checkpoint(self) -> None:
        await trio.to_thread.run_sync(self.write_checkpoints)

    async def _run_cleaner(self) -> None:
        """Kafka's log cleaner thread: compact the compacted log that needs it
        most (logstore.cleaner_manager), in a worker thread, one log at a
        time; again at once after a cleaning, else after log.cleaner.backoff.ms.
        The log's lock is taken only to plan and to swap segments in."""
        backoff = max(self.broker.config.log_cleaner_backoff_ms, 10) / 1000
        while True:
            candidates = [
                CleanerCandidate(tp, p.log, self._dir_of[tp], p.high_watermark)
                for tp, p in self.partitions.items()
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
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total
