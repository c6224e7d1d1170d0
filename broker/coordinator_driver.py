"""Runs a sans-I/O coordinator over its internal topic inside the broker.

A coordinator (`coordinator/`) is a state machine: requests and time go in,
actions come out (`coordinator.actions`). This is its driver, the only place
that gives it I/O:

- `request()` hands a decoded request to the coordinator and waits for the
  Reply carrying its token, which may come later (after its records are
  written);
- a Persist appends its records as one batch to the leader of the topic's
  partition and reports the outcome once the high watermark covers them
  (acks=all), in the order the Persists came;
- one timer task calls `tick()` at `next_deadline()`;
- leadership of the topic's partitions follows the metadata (a metadata
  publisher, after the replica manager): a partition this broker now leads
  is replayed (COORDINATOR_LOAD_IN_PROGRESS until done), one it no longer
  leads is forgotten.

A subclass names the topic and may handle actions of its own
(`_other_action`) and read the log its own way while loading
(`_read_chunk`). Time is wall-clock milliseconds: the records' timestamps
are compared by later processes.
"""

from __future__ import annotations

import collections
import itertools
import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

import trio

from broker.config import BrokerConfig
from broker.metadata.image import MetadataImage
from broker.metadata.publisher import MetadataCache
from broker.partition import PartitionError
from broker.replica_manager import ReplicaManager
from broker.request_context import RequestContext as BrokerRequestContext
from coordinator import Persist, Reply, RequestContext
from logstore import AppendOrigin, LogError
from wire.error_codes import ErrorCode
from wire.errors import DecodeError
from wire.records import RecordInput, build_batch, iter_batches, iter_records

if TYPE_CHECKING:
    from broker.partition import Partition

# How much of a partition's log one read brings in while loading, by default
# (Kafka's offsets.load.buffer.size; transaction.state.log.load.buffer.size
# sets the transaction coordinator's).
LOAD_READ_BYTES = 5 * 1024 * 1024
# Records replayed between yields to the event loop while loading.
LOAD_SLICE = 5000


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class DrivenCoordinator(Protocol):
    def partition_state(self, partition: int) -> Any: ...
    def replay(self, partition: int, records, now_ms: int) -> None: ...
    def finish_loading(self, partition: int, now_ms: int) -> list: ...
    def unload(self, partition: int, now_ms: int) -> list: ...
    def persisted(self, write_id: int, now_ms: int, error: int = 0) -> list: ...
    def next_deadline(self) -> int | None: ...
    def tick(self, now_ms: int) -> list: ...


class CoordinatorDriver:
    topic: str = ""
    log = logging.getLogger("gregor.coordinator")

    def __init__(
        self,
        node_id: int,
        config: BrokerConfig,
        metadata: MetadataCache,
        replicas: ReplicaManager,
        coordinator: DrivenCoordinator,
        *,
        compression: int,
        commit_timeout_ms: int,
        load_buffer_bytes: int = LOAD_READ_BYTES,
    ):
        self.node_id = node_id
        self.config = config
        self.metadata = metadata
        self.replicas = replicas
        self.coordinator = coordinator
        self.compression = compression
        self.commit_timeout_ms = commit_timeout_ms
        self.load_buffer_bytes = load_buffer_bytes
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

    def num_partitions(self) -> int:
        topic = self.metadata.image.topic(self.topic)
        return 0 if topic is None else len(topic.partitions)

    def served_partitions(self) -> list[int]:
        return sorted(
            i
            for i in range(max(self.num_partitions(), 1 + max(self._loading, default=-1)))
            if self.coordinator.partition_state(i) is not None or i in self._loading
        )

    def shutdown(self) -> None:
        """Give up every partition: parked requests are answered NOT_COORDINATOR
        (as Kafka does when the coordinator unloads at shutdown)."""
        for index in self.served_partitions():
            self.unload(index)

    # --- following the metadata ----------------------------------------------------

    def _follow(self, image: MetadataImage) -> None:
        """Load the partitions of the topic this broker leads, unload the others."""
        if self._nursery is None:
            return
        topic = image.topic(self.topic)
        led = set()
        if topic is not None:
            for index, reg in sorted(topic.partitions.items()):
                partition = self.replicas.get(self.topic, index)
                if reg.leader == self.node_id and partition is not None and partition.is_leader:
                    led.add(index)
                    self.load(index, partition)
        for index in self.served_partitions():
            if index not in led:
                self.unload(index)

    def _begin_loading(self, index: int, partition: Partition) -> None:
        self.coordinator.begin_loading(index)  # type: ignore[attr-defined]

    def load(self, index: int, partition: Partition) -> None:
        """This broker leads partition `index`: replay it, then serve it."""
        if self.coordinator.partition_state(index) is not None or index in self._loading:
            return
        self._begin_loading(index, partition)
        self._loading.add(index)
        assert self._nursery is not None  # _follow loads only once run() has set it
        self._nursery.start_soon(self._load, index)

    async def _load(self, index: int) -> None:
        started = time.monotonic()
        partition = self.replicas.get(self.topic, index)
        count = 0
        try:
            if partition is not None:
                offset = partition.log_start_offset
                while True:
                    # To the log end, not the high watermark: a new leader's log
                    # is the partition's truth, but its high watermark catches up
                    # only as followers fetch again (Kafka's loader reads to the
                    # log end too). Stopping at it would miss acknowledged writes.
                    end = partition.log_end_offset
                    if offset >= end:
                        break
                    chunk, next_offset = await trio.to_thread.run_sync(
                        self._read_chunk, partition, offset, end
                    )
                    if next_offset <= offset:
                        break
                    # A chunk may hold no records (control batches, or the
                    # emptied batches the cleaner keeps for producers): go on.
                    offset = next_offset
                    for i in range(0, len(chunk), LOAD_SLICE):
                        if index not in self._loading:
                            return  # unloaded meanwhile
                        self.coordinator.replay(index, chunk[i : i + LOAD_SLICE], now_ms())
                        await trio.sleep(0)
                    count += len(chunk)
        except (LogError, OSError, DecodeError) as e:
            # Kafka keeps the partition unloaded (clients retry elsewhere or
            # later); serving it with part of its state would lose writes.
            self.log.error("loading %s-%d failed after %d records: %s", self.topic, index, count, e)
            self._loading.discard(index)
            self._execute(self.coordinator.unload(index, now_ms()))
            return
        if index not in self._loading:
            return  # unloaded meanwhile
        self._loading.discard(index)
        self._execute(self.coordinator.finish_loading(index, now_ms()))
        if count:
            self.log.info(
                "loaded %s-%d: %d records in %.0f ms",
                self.topic,
                index,
                count,
                (time.monotonic() - started) * 1000,
            )

    def _read_chunk(self, partition: Partition, offset: int, end: int) -> tuple[list, int]:
        """Blocking: the (key, value) pairs of the data batches from `offset`
        below `end`, about load_buffer_bytes of them, and the offset after them."""
        result = partition.log.read(offset, self.load_buffer_bytes, end, True)
        data = result.read_bytes()
        records: list[tuple[bytes | None, bytes | None]] = []
        for pos, header in iter_batches(data):
            offset = header.next_offset
            if header.is_control:
                continue
            records.extend((r.key, r.value) for r in iter_records(data, pos))
        return records, offset

    def unload(self, index: int) -> None:
        """This broker no longer leads partition `index`."""
        self._loading.discard(index)
        self._execute(self.coordinator.unload(index, now_ms()))
        self._unconfirmed.pop(index, None)

    # --- requests ---------------------------------------------------------------

    async def call(self, ctx: BrokerRequestContext, handle) -> dict:
        """`handle(coordinator request context, now_ms)` gives the actions for
        a request; its response, when the Reply with its token comes."""
        return await self.ask(ctx.api_version, handle, ctx.client_id or "", "/" + ctx.client_host)

    async def ask(self, api_version: int, handle, client_id: str = "", client_host: str = ""):
        """`call` for the broker's own questions (a partition leader asking
        the transaction coordinator it hosts), as a request of `api_version`."""
        token = next(self._tokens)
        slot: list[Any] = [trio.Event(), None]
        self._waiting[token] = slot
        rctx = RequestContext(token, api_version, client_id, client_host)
        try:
            self._execute(handle(rctx, now_ms()))
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
            else:
                self._other_action(action)
        self._timer_changed.set()

    def _other_action(self, action) -> None:
        raise TypeError(f"{type(self).__name__} cannot carry out {action!r}")

    def _build_batch(self, action: Persist, timestamp: int) -> bytes:
        return build_batch(
            [RecordInput(r.key, r.value, (), timestamp) for r in action.records],
            compression=self.compression,
        )

    def _append_origin(self, action: Persist) -> AppendOrigin:
        return AppendOrigin.CLIENT

    def _persist(self, action: Persist) -> list:
        partition = self.replicas.get(self.topic, action.partition)
        if partition is None or not partition.is_leader:
            return self.coordinator.persisted(
                action.write_id, now_ms(), ErrorCode.NOT_LEADER_OR_FOLLOWER
            )
        batch = self._build_batch(action, now_ms())
        try:
            # acks=all, as Kafka's coordinators write: min.insync.replicas applies.
            info = partition.append_as_leader(
                bytearray(batch), required_acks=-1, origin=self._append_origin(action)
            )
        except PartitionError as e:
            return self.coordinator.persisted(action.write_id, now_ms(), e.code)
        except LogError as e:
            self.log.warning("writing to %r failed: %s", partition, e)
            return self.coordinator.persisted(action.write_id, now_ms(), e.error_code)
        pending = self._unconfirmed.get(action.partition)
        # flush.messages: as for a client's produce, Kafka fsyncs inside the
        # append that reaches the count, before the write is answered.
        flush = partition.log.message_count_flush_due()
        if not pending and not flush:
            refused = partition.replication_error(info.next_offset)
            if refused is not None:
                return self.coordinator.persisted(action.write_id, now_ms(), refused)
        # Wait for the fsync and the in-sync replicas, in write order for this partition.
        deadline = trio.current_time() + self.commit_timeout_ms / 1000
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
                    self.log.warning("flushing %r after a write failed: %s", partition, e)
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
