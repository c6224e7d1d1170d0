"""Runs the group coordinator (`coordinator/`) inside the broker.

The coordinator is a pure state machine: requests and time go in, actions
come out (`coordinator.actions`). This module is its driver, the only place
that gives it I/O:

- `request()` hands a decoded group request to the coordinator and waits for
  the Reply carrying its token, which may come later (a JoinGroup parked
  until the join phase ends, a commit until its records are written);
- a Persist appends its records as one batch to the leader of the
  `__consumer_offsets` partition and reports the outcome once the high
  watermark covers them (acks=all), in the order the Persists came;
- one timer task calls `tick()` at `next_deadline()`;
- leadership of `__consumer_offsets` partitions follows the metadata (this is
  a metadata publisher, after the replica manager): a partition this broker
  now leads is replayed (COORDINATOR_LOAD_IN_PROGRESS until done), one it no
  longer leads is forgotten, and a deleted topic's offsets are tombstoned.

`__consumer_offsets` is created when the first FindCoordinator for a group
arrives, as Kafka does, with `offsets.topic.*` settings and
cleanup.policy=compact. Time is wall-clock milliseconds: commit timestamps go
into the log and are compared by later processes.
"""

from __future__ import annotations

import collections
import itertools
import logging
import time
from typing import TYPE_CHECKING, Any

import trio

from broker.config import BrokerConfig
from broker.metadata.delta import MetadataDelta
from broker.metadata.image import MetadataImage, TopicImage
from broker.metadata.publisher import MetadataCache
from broker.partition import PartitionError
from broker.replica_manager import ReplicaManager
from broker.request_context import RequestContext as BrokerRequestContext
from broker.topics import TopicError, TopicManager
from coordinator import (
    CoordinatorConfig,
    GroupCoordinator,
    Persist,
    Reply,
    RequestContext,
)
from logstore import LogError
from wire.error_codes import ErrorCode
from wire.errors import DecodeError
from wire.records import RecordInput, build_batch, iter_batches, iter_records

if TYPE_CHECKING:
    from broker.partition import Partition

log = logging.getLogger("gregor.groups")

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"
# How much of a partition's log one read brings in while loading.
_LOAD_READ_BYTES = 4 * 1024 * 1024
# Records replayed between yields to the event loop while loading.
_LOAD_SLICE = 5000

_COORDINATOR_KEYS = (
    "group.min.session.timeout.ms",
    "group.max.session.timeout.ms",
    "group.initial.rebalance.delay.ms",
    "group.max.size",
    "offsets.topic.num.partitions",
    "offsets.retention.minutes",
    "offsets.retention.check.interval.ms",
    "offset.metadata.max.bytes",
)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def coordinator_config(config, offsets_partitions: int | None) -> CoordinatorConfig:
    """The coordinator's settings; the partition count of an existing
    __consumer_offsets wins over the configured one, as in Kafka, so a changed
    setting cannot move groups to other partitions."""
    props = {k: config[k] for k in _COORDINATOR_KEYS}
    if offsets_partitions:
        props["offsets.topic.num.partitions"] = offsets_partitions
    return CoordinatorConfig.from_properties(props)


class GroupRuntime:
    def __init__(
        self,
        node_id: int,
        config: BrokerConfig,
        metadata: MetadataCache,
        replicas: ReplicaManager,
        topics: TopicManager,
    ):
        self.node_id = node_id
        self.config = config
        self.metadata = metadata
        self.replicas = replicas
        self.topics = topics
        existing = metadata.image.topic(OFFSETS_TOPIC)
        self.coordinator = GroupCoordinator(
            coordinator_config(config, None if existing is None else len(existing.partitions))
        )
        # (At start the image has no topics yet: the first one published corrects this.)
        self._tokens = itertools.count(1)
        # token -> [event, response]; the Reply for the token fills it in.
        self._waiting: dict[int, list] = {}
        # Persists waiting for an fsync or the high watermark, per partition, in
        # order: (write id, offset the high watermark must reach, deadline,
        # whether flush.messages asks for an fsync first).
        self._unconfirmed: dict[int, collections.deque] = {}
        self._timer_changed = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._loading: set[int] = set()

    # --- lifecycle ------------------------------------------------------------

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """The timer loop; loads the partitions this broker leads first."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._follow(self.metadata.image)
            task_status.started()
            await self._run_timers()

    def shutdown(self) -> None:
        """Give up every partition: parked requests are answered NOT_COORDINATOR
        (as Kafka does when the coordinator unloads at shutdown)."""
        for index in range(self.coordinator.config.offsets_topic_num_partitions):
            self.unload(index)

    # --- the offsets topic ------------------------------------------------------

    async def ensure_topic(self, name: str) -> TopicImage | None:
        """The internal topic `name`, created (as Kafka does at the first
        FindCoordinator) when it does not exist yet; None when it cannot be
        created (too few brokers for its replication factor, a full disk)."""
        topic = self.metadata.image.topic(name)
        if topic is not None:
            return topic
        config = self.config
        if name == OFFSETS_TOPIC:
            partitions = self.coordinator.config.offsets_topic_num_partitions
            replication = config["offsets.topic.replication.factor"]
            configs = {
                "cleanup.policy": "compact",
                "compression.type": "producer",
                "segment.bytes": str(config["offsets.topic.segment.bytes"]),
            }
        else:
            partitions = config["transaction.state.log.num.partitions"]
            replication = config["transaction.state.log.replication.factor"]
            configs = {
                "cleanup.policy": "compact",
                "compression.type": "uncompressed",
                "min.insync.replicas": str(config["transaction.state.log.min.isr"]),
                "segment.bytes": str(config["transaction.state.log.segment.bytes"]),
            }
        try:
            topic = await self.topics.create(name, partitions, replication, configs=configs)
        except TopicError as e:
            if e.code == ErrorCode.TOPIC_ALREADY_EXISTS:
                return self.metadata.image.topic(name)
            log.warning("cannot create %s: %s", name, e.message)
            return None
        log.info("created %s with %d partitions", name, partitions)
        return topic

    # --- following the metadata --------------------------------------------------------

    async def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        offsets = image.topic(OFFSETS_TOPIC)
        if offsets is not None and (
            len(offsets.partitions) != self.coordinator.config.offsets_topic_num_partitions
        ):
            # The existing topic's partition count wins over the setting, as in
            # Kafka, so a changed setting cannot move groups to other partitions.
            self.coordinator.config = coordinator_config(self.config, len(offsets.partitions))
        deleted = [t for t in delta.deleted_topics if t.name != OFFSETS_TOPIC]
        if deleted:
            tps = [(t.name, index) for t in deleted for index in t.partitions]
            self._execute(self.coordinator.partitions_deleted(tps, now_ms()))
        self._follow(image)

    def _follow(self, image: MetadataImage) -> None:
        """Load the __consumer_offsets partitions this broker leads, unload the others."""
        if self._nursery is None:
            return
        topic = image.topic(OFFSETS_TOPIC)
        led = set()
        if topic is not None:
            for index, reg in sorted(topic.partitions.items()):
                partition = self.replicas.get(OFFSETS_TOPIC, index)
                if reg.leader == self.node_id and partition is not None and partition.is_leader:
                    led.add(index)
                    self.load(index)
        for index in range(self.coordinator.config.offsets_topic_num_partitions):
            if index not in led and (
                self.coordinator.partition_state(index) is not None or index in self._loading
            ):
                self.unload(index)

    def load(self, index: int) -> None:
        """This broker leads __consumer_offsets-`index`: replay it, then serve its groups."""
        if self.coordinator.partition_state(index) is not None or index in self._loading:
            return
        self.coordinator.begin_loading(index)
        self._loading.add(index)
        assert self._nursery is not None  # _follow loads only once run() has set it
        self._nursery.start_soon(self._load, index)

    async def _load(self, index: int) -> None:
        started = time.monotonic()
        partition = self.replicas.get(OFFSETS_TOPIC, index)
        count = 0
        try:
            if partition is not None:
                offset = partition.log_start_offset
                while True:
                    # To the log end, not the high watermark: a new leader's log
                    # is the partition's truth, but its high watermark catches up
                    # only as followers fetch again (Kafka's loader reads to the
                    # log end too). Stopping at it would miss acknowledged commits.
                    end = partition.log_end_offset
                    if offset >= end:
                        break
                    chunk, next_offset = await trio.to_thread.run_sync(
                        _read_records, partition, offset, end
                    )
                    if next_offset <= offset:
                        break
                    # A chunk may hold no records (control batches, or the
                    # emptied batches the cleaner keeps for producers): go on.
                    offset = next_offset
                    for i in range(0, len(chunk), _LOAD_SLICE):
                        if index not in self._loading:
                            return  # unloaded meanwhile
                        self.coordinator.replay(index, chunk[i : i + _LOAD_SLICE], now_ms())
                        await trio.sleep(0)
                    count += len(chunk)
        except (LogError, OSError, DecodeError) as e:
            # Kafka keeps the partition unloaded (clients retry elsewhere or
            # later); serving it with part of its state would lose commits.
            log.error("loading %s-%d failed after %d records: %s", OFFSETS_TOPIC, index, count, e)
            self._loading.discard(index)
            self._execute(self.coordinator.unload(index, now_ms()))
            return
        if index not in self._loading:
            return  # unloaded meanwhile
        self._loading.discard(index)
        self._execute(self.coordinator.finish_loading(index, now_ms()))
        if count:
            log.info(
                "loaded %s-%d: %d records in %.0f ms",
                OFFSETS_TOPIC,
                index,
                count,
                (time.monotonic() - started) * 1000,
            )

    def unload(self, index: int) -> None:
        """This broker no longer leads __consumer_offsets-`index`."""
        self._loading.discard(index)
        self._execute(self.coordinator.unload(index, now_ms()))
        self._unconfirmed.pop(index, None)

    # --- requests ---------------------------------------------------------------

    async def request(self, api_key: int, ctx: BrokerRequestContext, body) -> dict:
        """Hand a group request to the coordinator; its response, when it comes."""
        token = next(self._tokens)
        slot: list[Any] = [trio.Event(), None]
        self._waiting[token] = slot
        rctx = RequestContext(token, ctx.api_version, ctx.client_id or "", "/" + ctx.client_host)
        try:
            self._execute(self.coordinator.handle(api_key, rctx, body, now_ms()))
            await slot[0].wait()
            return slot[1]
        finally:
            self._waiting.pop(token, None)

    # --- actions ----------------------------------------------------------------

    def _execute(self, actions) -> None:
        """Carry out actions in order, and those they lead to."""
        queue = collections.deque(actions)
        while queue:
            action = queue.popleft()
            if isinstance(action, Reply):
                slot = self._waiting.get(action.token)
                if slot is not None:
                    slot[1] = action.response
                    slot[0].set()
            elif isinstance(action, Persist):
                queue.extend(self._persist(action))
        self._timer_changed.set()

    def _persist(self, action: Persist) -> list:
        partition = self.replicas.get(OFFSETS_TOPIC, action.partition)
        if partition is None or not partition.is_leader:
            return self.coordinator.persisted(
                action.write_id, now_ms(), ErrorCode.NOT_LEADER_OR_FOLLOWER
            )
        timestamp = now_ms()
        batch = build_batch(
            [RecordInput(r.key, r.value, (), timestamp) for r in action.records],
            compression=self.config["offsets.topic.compression.codec"],
        )
        try:
            # acks=all, as Kafka's coordinators write: min.insync.replicas applies.
            info = partition.append_as_leader(bytearray(batch), required_acks=-1)
        except PartitionError as e:
            return self.coordinator.persisted(action.write_id, now_ms(), e.code)
        except LogError as e:
            log.warning("writing to %r failed: %s", partition, e)
            return self.coordinator.persisted(action.write_id, now_ms(), e.error_code)
        pending = self._unconfirmed.get(action.partition)
        # flush.messages: as for a client's produce, Kafka fsyncs inside the
        # append that reaches the count, before the commit is answered.
        flush = partition.log.message_count_flush_due()
        if not pending and not flush:
            refused = partition.replication_error(info.next_offset)
            if refused is not None:
                return self.coordinator.persisted(action.write_id, now_ms(), refused)
        # Wait for the fsync and the in-sync replicas, in write order for this partition.
        deadline = trio.current_time() + self.config["offsets.commit.timeout.ms"] / 1000
        if pending is None:
            pending = self._unconfirmed[action.partition] = collections.deque()
        pending.append((action.write_id, info.next_offset, deadline, flush))
        if len(pending) == 1:
            # Only loaded partitions persist, and loading needs run()'s nursery.
            assert self._nursery is not None
            self._nursery.start_soon(self._confirm_writes, action.partition, partition)
        return []

    async def _confirm_writes(self, index: int, partition: Partition) -> None:
        """Answer one partition's pending writes in write order, each once it is
        fsynced (when flush.messages asks) and covered by the high watermark."""
        pending = self._unconfirmed.get(index)
        while pending:
            write_id, offset, deadline, flush = pending[0]
            error = ErrorCode.NONE
            if flush:
                try:
                    await partition.flush_if_message_count_due()
                except LogError as e:
                    log.warning("flushing %r after a group write failed: %s", partition, e)
                    error = ErrorCode(e.error_code)
            if not error:
                with trio.move_on_at(deadline):
                    while partition.replication_error(offset) is None:
                        await partition.wait_for_change()
                found = partition.replication_error(offset)
                error = ErrorCode.REQUEST_TIMED_OUT if found is None else found
            pending.popleft()
            self._execute(self.coordinator.persisted(write_id, now_ms(), error))
        self._unconfirmed.pop(index, None)

    async def _run_timers(self) -> None:
        while True:
            deadline = self.coordinator.next_deadline()
            self._timer_changed = trio.Event()
            if deadline is None:
                await self._timer_changed.wait()
                continue
            delay = (deadline - now_ms()) / 1000
            if delay > 0:
                with trio.move_on_after(delay):
                    await self._timer_changed.wait()
                continue
            self._execute(self.coordinator.tick(now_ms()))


def _read_records(partition: Partition, offset: int, end: int) -> tuple[list, int]:
    """Blocking: the (key, value) pairs of the data batches from `offset`
    below `end`, about _LOAD_READ_BYTES of them, and the offset after them."""
    result = partition.log.read(offset, _LOAD_READ_BYTES, end, True)
    data = result.read_bytes()
    records: list[tuple[bytes | None, bytes | None]] = []
    for pos, header in iter_batches(data):
        offset = header.next_offset
        if header.is_control:
            continue
        records.extend((r.key, r.value) for r in iter_records(data, pos))
    return records, offset
