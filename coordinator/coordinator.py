"""The classic consumer-group coordinator, without I/O: the façade the broker drives.

One `GroupCoordinator` serves every group of the broker: it knows which
`__consumer_offsets` partitions this broker leads (`begin_loading` /
`finish_loading` / `unload`) and answers NOT_COORDINATOR for groups of other
partitions and COORDINATOR_LOAD_IN_PROGRESS for groups of partitions still
loading. Requests come in as decoded request bodies with a `RequestContext`
(the caller's opaque token, the api version, client id and host) and the time;
timers advance only through `tick(now_ms)`. Every call returns actions (see
`coordinator.actions`): replies to send, records to append. Nothing here reads
the clock, sleeps or touches a socket.

`now_ms` is wall-clock time in ms since the epoch, not a monotonic clock:
commit timestamps and state timestamps go into the log and are compared with
the clock of a later process (offsets retention).

The work is done by parts split as Kafka splits its group coordinator:

- `runtime.CoordinatorRuntime`: loading states, writes and their
  confirmation, timers (Kafka's CoordinatorRuntime); this class is its shard;
- `membership.Membership`: the groups, JoinGroup, SyncGroup, Heartbeat,
  LeaveGroup (GroupMetadataManager, classic groups);
- `offsets.Offsets`: OffsetCommit, OffsetFetch, OffsetDelete, offset expiry
  (OffsetMetadataManager);
- `admin.GroupAdmin`: DescribeGroups, ListGroups, DeleteGroups;
- `replay`: groups and offsets rebuilt from the log while loading.

The rules follow Kafka 4.x's GroupMetadataManager/OffsetMetadataManager for
classic groups (and the 3.x GroupCoordinator where the two agree); comments
name the deliberate differences.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

from coordinator.actions import Action
from coordinator.admin import GroupAdmin
from coordinator.config import CoordinatorConfig
from coordinator.group import Group
from coordinator.membership import Membership
from coordinator.offsets import OffsetAndMetadata, Offsets
from coordinator.replay import replay_records
from coordinator.request_context import RequestContext
from coordinator.runtime import CoordinatorRuntime, PartitionState
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

NONE = ErrorCode.NONE


class GroupCoordinator:
    def __init__(
        self,
        config: CoordinatorConfig | None = None,
        *,
        new_uuid: Callable[[], str] | None = None,
    ):
        self._config = config or CoordinatorConfig()
        self._runtime = CoordinatorRuntime(self)
        self._membership = Membership(
            self._config, self._runtime, new_uuid or (lambda: str(uuid.uuid4()))
        )
        self._offsets = Offsets(self._config, self._runtime, self._membership)
        self._admin = GroupAdmin(self._runtime, self._membership, self._offsets)
        self._handlers = {
            ApiKey.JOIN_GROUP: self._membership.join_group,
            ApiKey.SYNC_GROUP: self._membership.sync_group,
            ApiKey.HEARTBEAT: self._membership.heartbeat,
            ApiKey.LEAVE_GROUP: self._membership.leave_group,
            ApiKey.OFFSET_COMMIT: self._offsets.offset_commit,
            ApiKey.TXN_OFFSET_COMMIT: self._offsets.txn_offset_commit,
            ApiKey.OFFSET_FETCH: self._offsets.offset_fetch,
            ApiKey.OFFSET_DELETE: self._offsets.offset_delete,
            ApiKey.DESCRIBE_GROUPS: self._admin.describe_groups,
            ApiKey.LIST_GROUPS: self._admin.list_groups,
            ApiKey.DELETE_GROUPS: self._admin.delete_groups,
        }

    @property
    def config(self) -> CoordinatorConfig:
        return self._config

    @config.setter
    def config(self, config: CoordinatorConfig) -> None:
        """New settings apply to every part from the next request or timer on."""
        self._config = config
        self._membership.config = config
        self._offsets.config = config

    # =========================================================================
    # Partitions, loading, timers, writes (the runtime's, for the broker)
    # =========================================================================

    def partition_for(self, group_id: str) -> int:
        return self._membership.partition_for(group_id)

    def partition_state(self, partition: int) -> PartitionState | None:
        return self._runtime.partition_state(partition)

    def begin_loading(self, partition: int) -> None:
        """This broker now leads `partition`; answer LOAD_IN_PROGRESS until finish_loading."""
        self._runtime.begin_loading(partition)

    def replay(self, partition: int, records: Iterable, now_ms: int) -> None:
        """Apply `__consumer_offsets` records of `partition` in log order.

        `records` yields (key, value) pairs (value None for a tombstone), from
        non-transactional batches. Record types other than offset commits and
        classic group metadata are skipped; a malformed record raises
        `RecordDecodeError`.
        """
        self._runtime.replay(partition, records, now_ms)

    def finish_loading(self, partition: int, now_ms: int) -> list[Action]:
        """The partition is replayed: serve its groups (Kafka's onLoaded)."""
        return self._runtime.finish_loading(partition, now_ms)

    def load(self, partition: int, records: Iterable, now_ms: int) -> list[Action]:
        """begin_loading + replay + finish_loading."""
        return self._runtime.load(partition, records, now_ms)

    def unload(self, partition: int, now_ms: int) -> list[Action]:
        """This broker no longer leads `partition`: forget its groups (they go
        Dead) and answer their parked requests, and the requests waiting for
        its writes, NOT_COORDINATOR."""
        return self._runtime.unload(partition, now_ms)

    def next_deadline(self) -> int | None:
        """When `tick` has something to do (ms), or None."""
        return self._runtime.next_deadline()

    def tick(self, now_ms: int) -> list[Action]:
        """Fire the timers due at `now_ms`."""
        return self._runtime.tick(now_ms)

    def persisted(self, write_id: int, now_ms: int, error: int = NONE) -> list[Action]:
        """Report how the Persist `write_id` ended: NONE once its records are
        durable (as acks=all would need), else the append's error code."""
        return self._runtime.persisted(write_id, now_ms, error)

    # --- CoordinatorShard: called by the runtime, not by the broker ---------------

    def replay_records(self, partition: int, records: Iterable, now_ms: int) -> None:
        replay_records(partition, records, self._membership, self._offsets, now_ms)

    def on_loaded(self, partition: int, now_ms: int) -> list[Action]:
        actions = self._membership.on_loaded(partition, now_ms)
        self._offsets.on_loaded(partition, now_ms)
        return actions

    def on_unloaded(self, partition: int, now_ms: int) -> list[Action]:
        actions = self._membership.on_unloaded(partition, now_ms)
        self._offsets.on_unloaded(partition, now_ms)
        return actions

    # =========================================================================
    # Requests, and news from the rest of the broker
    # =========================================================================

    def handle(self, api_key: int, ctx: RequestContext, request, now_ms: int) -> list[Action]:
        """Dispatch a group API request by key."""
        handler = self._handlers.get(ApiKey(api_key))
        if handler is None:
            raise ValueError(f"api key {api_key} is not a group API")
        return handler(ctx, request, now_ms)

    def join_group(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        return self._membership.join_group(ctx, req, now_ms)

    def sync_group(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        return self._membership.sync_group(ctx, req, now_ms)

    def heartbeat(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        return self._membership.heartbeat(ctx, req, now_ms)

    def leave_group(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        return self._membership.leave_group(ctx, req, now_ms)

    def offset_commit(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        return self._offsets.offset_commit(ctx, req, now_ms)

    def offset_fetch(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        return self._offsets.offset_fetch(ctx, req, now_ms)

    def offset_delete(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        return self._offsets.offset_delete(ctx, req, now_ms)

    def txn_offset_commit(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        return self._offsets.txn_offset_commit(ctx, req, now_ms)

    def complete_transaction(
        self, partition: int, producer_id: int, commit: bool, now_ms: int
    ) -> list[Action]:
        """The COMMIT (or ABORT) marker of `producer_id` is written to
        `partition`: its pending offsets there become committed (or go)."""
        if self._runtime.is_active(partition):
            self._offsets.end_transaction(partition, producer_id, commit, now_ms)
        return []

    def describe_groups(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        return self._admin.describe_groups(ctx, req, now_ms)

    def list_groups(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        return self._admin.list_groups(ctx, req, now_ms)

    def delete_groups(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        return self._admin.delete_groups(ctx, req, now_ms)

    def partitions_deleted(self, tps: Iterable[tuple[str, int]], now_ms: int) -> list[Action]:
        """Topic partitions were deleted: every group forgets its offsets for them
        (Kafka's onPartitionsDeleted), so a topic created again under the same
        name is not read from an old position. The groups themselves stay; an
        Empty one without offsets goes at the next retention check."""
        return self._offsets.partitions_deleted(tps, now_ms)

    # =========================================================================
    # Introspection (tests, metrics, the broker's ListGroups across brokers)
    # =========================================================================

    def group(self, group_id: str) -> Group | None:
        return self._membership.group(group_id)

    def groups(self) -> list[Group]:
        return self._membership.groups()

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], OffsetAndMetadata]:
        return self._offsets.committed_offsets(group_id)
