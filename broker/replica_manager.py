"""The partition replicas this broker hosts, and the metadata changes that move them.

A metadata publisher: each change names, for this broker, the partitions it
must now lead (`make_leader`), follow (`make_follower`) or stop hosting
(`stop_replica`, deleting the log of a deleted topic). Logs are opened and
deleted by the `LogManager`, in worker threads. A log that cannot be opened
(a full or failing disk) leaves its partition offline: requests to it get
KAFKA_STORAGE_ERROR and Metadata lists the replica offline, while every other
partition keeps serving.

It routes requests to partitions and holds the parts of produce and fetch
that span several of them: acks=all waiting for the in-sync replicas
(REQUEST_TIMED_OUT at the request's timeout, as Kafka's DelayedProduce), and
the ISR changes a leader proposes, sent to the controller (AlterPartition).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

import trio

from broker.controller.api import Controller, ControllerError
from broker.log_manager import LogManager
from broker.metadata.delta import MetadataDelta, PartitionChange
from broker.metadata.image import MetadataImage, TopicImage
from broker.partition import Partition, PartitionError, TopicPartition
from broker.replica_fetcher import ReplicaFetcherManager
from broker.topic_configs import EffectiveTopicConfigs
from logstore import LogError, LogStorageError, UnifiedLog
from logstore.local_log import LocalLog
from wire.error_codes import ErrorCode

log = logging.getLogger("gregor.replicas")

# How long a leader waits before sending again an ISR change that got no answer.
ALTER_PARTITION_RETRY_S = 0.5


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class ReplicaManager:
    def __init__(
        self,
        node_id: int,
        logs: LogManager,
        topic_configs: EffectiveTopicConfigs,
        controller: Controller,
        replica_lag_time_max_ms: int,
        clock_ms: Callable[[], int] = monotonic_ms,
        fetchers: ReplicaFetcherManager | None = None,
    ):
        self.node_id = node_id
        self.logs = logs
        self.topic_configs = topic_configs
        self.controller = controller
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self._clock_ms = clock_ms
        self.fetchers = fetchers
        self.partitions: dict[TopicPartition, Partition] = {}
        # Hosted partitions whose log could not be opened.
        self.offline: set[TopicPartition] = set()
        # Bumped whenever `offline` changes (see offline_stamp).
        self._offline_changes = 0
        self.stopping = False
        self._nursery: trio.Nursery | None = None
        logs.on_log_start_moved = self._log_start_moved

    # --- lookup --------------------------------------------------------------------

    def get(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    def leader_partition(
        self, topic: TopicImage | None, index: int, current_leader_epoch: int = -1
    ) -> tuple[Partition | None, ErrorCode]:
        """(partition, error code) for a request addressed to the leader of
        `topic` partition `index`, with Kafka's errors: unknown topic or
        partition, not the leader, an offline log, fenced or unknown epoch."""
        return self.readable_partition(topic, index, current_leader_epoch, allow_follower=False)

    def readable_partition(
        self,
        topic: TopicImage | None,
        index: int,
        current_leader_epoch: int = -1,
        allow_follower: bool = False,
    ) -> tuple[Partition | None, ErrorCode]:
        """As leader_partition; with allow_follower a follower replica answers
        too (a consumer fetching from the closest replica, KIP-392)."""
        if topic is None or index not in topic.partitions:
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        tp = (topic.name, index)
        if tp in self.offline:
            return None, ErrorCode.KAFKA_STORAGE_ERROR
        partition = self.partitions.get(tp)
        if partition is None or not (partition.is_leader or allow_follower):
            return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
        if partition.offline:
            # Its log dir failed (a full disk, an I/O error): Kafka's answer for
            # every request addressed to the replica until the broker restarts.
            return None, ErrorCode.KAFKA_STORAGE_ERROR
        error = partition.check_leader_epoch(current_leader_epoch)
        return partition, error

    def offline_stamp(self) -> tuple[int, int]:
        """Changes whenever a replica of this broker goes offline or stops
        being offline: what `is_offline` answers may differ only then."""
        return LocalLog.offline_events, self._offline_changes

    def is_offline(self, tp: TopicPartition) -> bool:
        partition = self.partitions.get(tp)
        return tp in self.offline or (partition is not None and partition.offline)

    # --- following the metadata ----------------------------------------------------------

    def start(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        if self.fetchers is not None:
            self.fetchers.start(nursery)
        nursery.start_soon(self._shrink_isr_periodically)

    async def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        changes = delta.local_changes(self.node_id)
        # Stops first: a topic deleted and created again under the same name
        # must lose its old log before the new one is opened.
        for tp, delete in changes.stopped:
            await self.stop_replica(tp, delete)
        await self._open_new_replicas(changes.leaders, changes.followers)
        for change in changes.leaders:
            partition = self.partitions.get(change.tp)
            if partition is not None:
                if self.fetchers is not None:
                    self.fetchers.stop_following(change.tp)
                partition.make_leader(change.new)
        for change in changes.followers:
            partition = self.partitions.get(change.tp)
            if partition is not None:
                new_leadership = partition.make_follower(change.new)
                if self.fetchers is not None and new_leadership:
                    self.fetchers.follow(partition)
        changed_topics = set(delta.changed_topic_configs)
        if delta.changed_broker_configs:
            changed_topics = set(image.topics)
        for name in changed_topics:
            topic = image.topics.get(name)
            if topic is not None:
                self._apply_topic_config(topic)

    async def _open_new_replicas(
        self, leaders: list[PartitionChange], followers: list[PartitionChange]
    ) -> None:
        """A Partition for each replica the change gives this broker, its log
        opened (or created) in one worker-thread call for all of them: a
        thread round trip per log made a 1,000-partition topic take 0.6 s to
        create. A replica whose log cannot be opened goes offline."""
        wanted = {
            change.tp: (change, lead)
            for changes, lead in ((leaders, True), (followers, False))
            for change in changes
            if change.tp not in self.partitions and change.tp not in self.offline
        }
        if not wanted:
            return
        requests = [
            (
                tp,
                change.topic.topic_id,
                self.topic_configs.log_config(change.topic),
                change.new.leader_epoch if lead else None,
            )
            for tp, (change, lead) in wanted.items()
        ]
        opened = await trio.to_thread.run_sync(self._open_logs, requests)
        for tp, (change, _) in wanted.items():
            plog = opened[tp]
            if not isinstance(plog, UnifiedLog):
                log.error("%s-%d is offline: its log cannot be opened: %s", *tp, plog)
                self.offline.add(tp)
                self._offline_changes += 1
                continue
            self.partitions[tp] = Partition(
                tp,
                plog,
                self.node_id,
                self._clock_ms,
                min_insync_replicas=self.topic_configs.limits(change.topic).min_insync_replicas,
                replica_lag_time_max_ms=self.replica_lag_time_max_ms,
            )

    def _open_logs(self, requests) -> dict[TopicPartition, UnifiedLog | Exception]:
        """Blocking: each (tp, topic id, config, leader epoch or None) log opened,
        or the error that kept it closed. A new leader's epoch start is
        recorded here, while no request can see the log yet, so that its
        leader-epoch checkpoint is not written on the event loop (make_leader
        then finds the epoch recorded; on a failing disk it tries again and
        says so)."""
        opened: dict[TopicPartition, UnifiedLog | Exception] = {}
        for tp, topic_id, config, leader_epoch in requests:
            try:
                plog = self.logs.open_log(tp, topic_id, config)
            except (LogError, OSError) as e:
                opened[tp] = e
                continue
            if leader_epoch is not None and plog.latest_epoch != leader_epoch:
                with contextlib.suppress(LogStorageError):
                    plog.assign_epoch_start_offset(leader_epoch)
            opened[tp] = plog
        return opened

    async def stop_replica(self, tp: TopicPartition, delete: bool) -> None:
        """Stop hosting `tp`; delete its log when the topic or replica is gone."""
        if tp in self.offline:
            self.offline.discard(tp)
            self._offline_changes += 1
        if self.fetchers is not None:
            self.fetchers.stop_following(tp)
        partition = self.partitions.pop(tp, None)
        if partition is not None:
            partition.leader = -1
            partition.notify()
        if delete:
            await trio.to_thread.run_sync(self.logs.delete_log, tp)

    def _apply_topic_config(self, topic: TopicImage) -> None:
        config = self.topic_configs.log_config(topic)
        min_isr = self.topic_configs.limits(topic).min_insync_replicas
        for index in topic.partitions:
            partition = self.partitions.get((topic.name, index))
            if partition is not None:
                partition.log.update_config(config)
                partition.min_insync_replicas = min_isr
                partition.maybe_increment_high_watermark()

    def _log_start_moved(self, tp: TopicPartition) -> None:
        partition = self.partitions.get(tp)
        if partition is not None:
            partition.notify()

    # --- produce ---------------------------------------------------------------------------

    async def wait_for_replication(
        self, waits: list[tuple[Partition, int]], timeout_ms: int
    ) -> dict[TopicPartition, ErrorCode]:
        """acks=all: for each (partition, offset the append ends before), its
        answer once the high watermark covers it; REQUEST_TIMED_OUT for those
        still short at the request's timeout (Kafka's DelayedProduce)."""
        results: dict[TopicPartition, ErrorCode] = {}
        pending = []
        for partition, offset in waits:
            error = partition.replication_error(offset)
            if error is None:
                pending.append((partition, offset))
            else:
                results[partition.tp] = error
        if not pending:
            # Answered already (always so on one replica): no cancel scope.
            return results
        with trio.move_on_after(max(timeout_ms, 0) / 1000):
            for partition, offset in pending:
                while True:
                    error = partition.replication_error(offset)
                    if error is not None:
                        results[partition.tp] = error
                        break
                    await partition.wait_for_change()
        for partition, offset in waits:
            if partition.tp not in results:
                error = partition.replication_error(offset)
                results[partition.tp] = ErrorCode.REQUEST_TIMED_OUT if error is None else error
        return results

    # --- replica fetches and the ISR ------------------------------------------------------------

    def follower_fetched(
        self, partition: Partition, replica_id: int, fetch_offset: int, log_start_offset: int
    ) -> None:
        """A follower's Fetch reached `fetch_offset`: move its state, and send
        an ISR expansion to the controller when it has caught up."""
        proposal = partition.update_follower_fetch_state(replica_id, fetch_offset, log_start_offset)
        if proposal is not None:
            self._send_isr(partition, proposal)

    def _send_isr(self, partition: Partition, isr: tuple[int, ...]) -> None:
        if self._nursery is None:
            partition.isr_change_failed()
            return
        self._nursery.start_soon(
            self._alter_partition, partition, isr, partition.leader_epoch, partition.partition_epoch
        )

    async def _alter_partition(
        self, partition: Partition, isr: tuple[int, ...], leader_epoch: int, partition_epoch: int
    ) -> None:
        """Send a proposed ISR to the controller until it answers, as Kafka's
        AlterPartitionManager does. Until then the proposal stands: the high
        watermark waits for the replicas it would add (the controller may
        have taken it, and a leader elected from that ISR must hold every
        acknowledged record).

        - A refusal (fenced epoch, an ineligible replica, an unknown
          partition) ends the proposal: the controller made it at the
          partition epoch the proposal names, so none of it was taken, and
          the ISR is the one the metadata has.
        - INVALID_UPDATE_VERSION means the partition changed meanwhile,
          perhaps by this very proposal, sent before with its answer lost:
          the proposal stands until the next image, which says.
        - No answer (the controller unreachable, the connection lost with the
          write sent) is no answer: the same proposal goes again, conditional
          on the same partition epoch, until one comes or an image replaces it."""
        failures = 0
        while (
            partition.is_leader
            and partition.pending_isr == isr
            and partition.partition_epoch == partition_epoch
        ):
            try:
                await self.controller.alter_partition(
                    partition.tp, self.node_id, leader_epoch, partition_epoch, list(isr)
                )
                return
            except ControllerError as e:
                if e.code == ErrorCode.INVALID_UPDATE_VERSION:
                    log.info(
                        "%r: ISR change to %s met a newer partition epoch: waiting for it",
                        partition,
                        list(isr),
                    )
                else:
                    log.info("%r: ISR change to %s refused: %s", partition, list(isr), e.code.name)
                    partition.isr_change_failed()
                return
            except Exception:
                failures += 1
                # Once with the cause, then quietly: ZooKeeper may be away for long.
                log.log(
                    logging.WARNING if failures == 1 else logging.DEBUG,
                    "%r: ISR change to %s got no answer; sending it again",
                    partition,
                    list(isr),
                    exc_info=failures == 1,
                )
            await trio.sleep(ALTER_PARTITION_RETRY_S)

    async def _shrink_isr_periodically(self) -> None:
        """Kafka's isr-expiration task: every half replica.lag.time.max.ms,
        drop followers that stopped catching up from the ISRs this broker leads."""
        interval = max(self.replica_lag_time_max_ms // 2, 10) / 1000
        while True:
            await trio.sleep(interval)
            for partition in list(self.partitions.values()):
                proposal = partition.isr_shrink()
                if proposal is not None:
                    log.info("%r: shrinking ISR %s to %s", partition, partition.isr, proposal)
                    self._send_isr(partition, proposal)

    # --- stopping ---------------------------------------------------------------------------

    def wake_all(self) -> None:
        """Long-poll Fetches and acks=all Produces stop waiting and answer."""
        self.stopping = True
        if self.fetchers is not None:
            self.fetchers.stop_all()
        for partition in list(self.partitions.values()):
            partition.notify()


__all__ = ["PartitionError", "ReplicaManager"]
