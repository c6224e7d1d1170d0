"""What every coordinator over an internal topic needs, without I/O.

A coordinator (groups over `__consumer_offsets`, later transactions over
`__transaction_state`) is a state machine whose state is a compacted topic:
it serves the partitions of that topic this broker leads, rebuilds their
state from the log when it starts leading one, writes records and answers
only once they are durable, and runs timers. Kafka splits the same way:
CoordinatorRuntime does loading, writes and timers, and a CoordinatorShard
holds one coordinator's state and rules. Here one `CoordinatorRuntime`
serves every partition of one topic, and the coordinator is its shard for
all of them (the partition is passed to each hook).

Loading: `begin_loading` (LOADING: requests for the partition get
COORDINATOR_LOAD_IN_PROGRESS), `replay` (records, in log order, into the
shard), `finish_loading` (ACTIVE: the shard's `on_loaded`), `unload` (the
partition is forgotten: the shard's `on_unloaded`, then the writes still in
flight fail with NOT_COORDINATOR). A partition not known here is
NOT_COORDINATOR (`status_error`).

Writes: `persist` makes a `Persist` action with a fresh write id; the shard
attaches continuations to it (`then`, or `after_all` for several), and
`persisted(write_id, ...)` runs them, in the order they were attached, once
the driver reports the write's outcome. A write's continuations run once.

Timers: `schedule(key, deadline, fire)` (a key's new deadline replaces its
old one), `cancel_timer`, and `tick(now_ms)`, which runs `fire(now_ms)` for
the timers due, in deadline order (see `coordinator.timers`).

Everything returns actions (`coordinator.actions`); time is passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from coordinator.actions import Action, Persist, Record
from coordinator.timers import Timers
from wire.error_codes import ErrorCode

NONE = ErrorCode.NONE

# The records of one partition's log: (key, value) pairs, value None for a tombstone.
LogRecords = Iterable[tuple[bytes, bytes | None]]
# Run when a write completes: (error, now_ms) -> actions.
Continuation = Callable[[ErrorCode, int], list[Action]]
# Run when a timer fires: (now_ms) -> actions.
TimerCallback = Callable[[int], list[Action]]


class PartitionState(Enum):
    LOADING = "loading"
    ACTIVE = "active"


class CoordinatorShard(Protocol):
    """The state machine a `CoordinatorRuntime` runs (Kafka's CoordinatorShard)."""

    def replay_records(self, partition: int, records: LogRecords, now_ms: int) -> None:
        """Apply records of `partition`, in log order, while it loads."""

    def on_loaded(self, partition: int, now_ms: int) -> list[Action]:
        """`partition` is replayed and now served: start what its state needs
        (session timers, a rebalance...)."""

    def on_unloaded(self, partition: int, now_ms: int) -> list[Action]:
        """`partition` is no longer served: forget its state and answer the
        requests it parked (its writes in flight are failed afterwards)."""


@dataclass(slots=True)
class _Write:
    partition: int
    continuations: list[Continuation] = field(default_factory=list)


class CoordinatorRuntime:
    def __init__(self, shard: CoordinatorShard):
        self._shard = shard
        self._partitions: dict[int, PartitionState] = {}
        self._writes: dict[int, _Write] = {}
        self._next_write_id = 1
        self._timers = Timers()
        self._timer_callbacks: dict[Hashable, TimerCallback] = {}

    # --- partitions -------------------------------------------------------------

    def partition_state(self, partition: int) -> PartitionState | None:
        return self._partitions.get(partition)

    def is_active(self, partition: int) -> bool:
        return self._partitions.get(partition) is PartitionState.ACTIVE

    def any_loading(self) -> bool:
        return any(s is PartitionState.LOADING for s in self._partitions.values())

    def has_partitions(self) -> bool:
        return bool(self._partitions)

    def status_error(self, partition: int) -> ErrorCode | None:
        """Why a request for `partition` cannot be served here, or None."""
        state = self._partitions.get(partition)
        if state is None:
            return ErrorCode.NOT_COORDINATOR
        if state is PartitionState.LOADING:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return None

    def begin_loading(self, partition: int) -> None:
        """This broker now leads `partition`; LOAD_IN_PROGRESS until finish_loading."""
        if partition in self._partitions:
            raise ValueError(
                f"partition {partition} is already {self._partitions[partition].value}"
            )
        self._partitions[partition] = PartitionState.LOADING

    def replay(self, partition: int, records: LogRecords, now_ms: int) -> None:
        """Hand records of the loading `partition` to the shard, in log order."""
        self._require_loading(partition)
        self._shard.replay_records(partition, records, now_ms)

    def finish_loading(self, partition: int, now_ms: int) -> list[Action]:
        """`partition` is replayed: serve it (the shard's on_loaded)."""
        self._require_loading(partition)
        self._partitions[partition] = PartitionState.ACTIVE
        return self._shard.on_loaded(partition, now_ms)

    def load(self, partition: int, records: LogRecords, now_ms: int) -> list[Action]:
        """begin_loading + replay + finish_loading."""
        self.begin_loading(partition)
        self.replay(partition, records, now_ms)
        return self.finish_loading(partition, now_ms)

    def unload(self, partition: int, now_ms: int) -> list[Action]:
        """This broker no longer leads `partition`: the shard forgets it, then
        its writes still in flight fail with NOT_COORDINATOR (a later
        `persisted` for one of them is ignored). Unknown partitions: nothing."""
        if self._partitions.pop(partition, None) is None:
            return []
        actions = self._shard.on_unloaded(partition, now_ms)
        for write_id in [w for w, write in self._writes.items() if write.partition == partition]:
            actions += self.persisted(write_id, now_ms, ErrorCode.NOT_COORDINATOR)
        return actions

    def _require_loading(self, partition: int) -> None:
        if self._partitions.get(partition) is not PartitionState.LOADING:
            raise ValueError(f"partition {partition} is not loading")

    # --- writes -----------------------------------------------------------------

    def persist(
        self,
        partition: int,
        records: Sequence[tuple[bytes, bytes | None]],
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> Persist:
        """A write of `records` to `partition`, as one batch (transactional when
        a producer is given); the caller emits it."""
        write_id = self._next_write_id
        self._next_write_id += 1
        self._writes[write_id] = _Write(partition)
        return Persist(
            write_id,
            partition,
            tuple(Record(k, v) for k, v in records),
            producer_id,
            producer_epoch,
        )

    def then(self, persist: Persist, continuation: Continuation) -> None:
        """Run `continuation(error, now_ms)` when `persist` completes."""
        self._writes[persist.write_id].continuations.append(continuation)

    def after_all(
        self, persists: list[Persist], done: Callable[[dict[int, ErrorCode], int], list[Action]]
    ) -> None:
        """Run `done(errors by partition, now_ms)` once every one of `persists`
        completed; a partition is in `errors` only if its write failed."""
        left = [len(persists)]
        errors: dict[int, ErrorCode] = {}

        def on_one(partition: int) -> Continuation:
            def continuation(error: ErrorCode, now_ms: int) -> list[Action]:
                if error != NONE:
                    errors[partition] = error
                left[0] -= 1
                return done(errors, now_ms) if left[0] == 0 else []

            return continuation

        for p in persists:
            self.then(p, on_one(p.partition))

    def persisted(self, write_id: int, now_ms: int, error: int = NONE) -> list[Action]:
        """Report how the Persist `write_id` ended: NONE once its records are
        durable (as acks=all would need), else the append's error code."""
        write = self._writes.pop(write_id, None)
        if write is None:
            return []
        err = ErrorCode(error)
        actions: list[Action] = []
        for continuation in write.continuations:
            actions += continuation(err, now_ms)
        return actions

    # --- timers -----------------------------------------------------------------

    def schedule(self, key: Hashable, deadline_ms: int, fire: TimerCallback) -> None:
        """Run `fire(now_ms)` at the first tick at or after `deadline_ms`,
        instead of what `key` was scheduled for before."""
        self._timers.schedule(key, deadline_ms)
        self._timer_callbacks[key] = fire

    def cancel_timer(self, key: Hashable) -> None:
        self._timers.cancel(key)
        self._timer_callbacks.pop(key, None)

    def has_timer(self, key: Hashable) -> bool:
        return key in self._timers

    def next_deadline(self) -> int | None:
        """When `tick` has something to do (ms), or None."""
        return self._timers.next_deadline()

    def tick(self, now_ms: int) -> list[Action]:
        """Fire the timers due at `now_ms`, earliest first."""
        actions: list[Action] = []
        due = self._timers.take_due(now_ms)
        try:
            for entry in due:
                if not self._timers.claim(entry):
                    continue  # cancelled or rescheduled by an earlier one
                actions += self._timer_callbacks.pop(entry[2])(now_ms)
        finally:
            self._timers.restore(due)  # unfired ones, if a callback raised
        return actions
