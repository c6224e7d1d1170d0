"""The classic consumer-group coordinator, without I/O.

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

State and the log: offset commits take effect once their write is reported
durable; tombstones (DeleteGroups, OffsetDelete, expiry) take effect at once
and are undone if their write fails. Group metadata (generations, members)
changes at once and, as in Kafka, is not undone when its write fails: a failed
assignment write fails the SyncGroups and rebalances, a failed static rejoin
keeps the old member id, and a failed "now empty" record is only logged.

The rules follow Kafka 4.x's GroupMetadataManager/OffsetMetadataManager for
classic groups (and the 3.x GroupCoordinator where the two agree); comments
name the deliberate differences.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable

from coordinator.actions import Action
from coordinator.admin import GroupAdmin
from coordinator.config import CoordinatorConfig
from coordinator.group import Group, Member
from coordinator.membership import Membership
from coordinator.offsets import OffsetAndMetadata, Offsets
from coordinator.records import (
    GroupMetadataRecord,
    OffsetCommitRecord,
    decode_record,
)
from coordinator.request_context import RequestContext
from coordinator.runtime import CoordinatorRuntime, PartitionState
from coordinator.state import GroupState
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

log = logging.getLogger(__name__)

E = ErrorCode
NONE = ErrorCode.NONE
S = GroupState


class GroupCoordinator:
    def __init__(
        self,
        config: CoordinatorConfig | None = None,
        *,
        new_uuid: Callable[[], str] | None = None,
    ):
        self._config = config or CoordinatorConfig()
        # Loading, writes and timers; this coordinator is its shard.
        self._runtime = CoordinatorRuntime(self)
        self._membership = Membership(
            self.config, self._runtime, new_uuid or (lambda: str(uuid.uuid4()))
        )
        self._offsets = Offsets(self.config, self._runtime, self._membership)
        self._admin = GroupAdmin(self._runtime, self._membership, self._offsets)

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
    # Partitions, loading, timers, persistence (the runtime's, for the broker)
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

    # --- the runtime's shard hooks ------------------------------------------------

    def replay_records(self, partition: int, records: Iterable, now_ms: int) -> None:
        for key, value in records:
            rec = decode_record(key, value)
            if isinstance(rec, OffsetCommitRecord):
                self._replay_offset(rec, now_ms)
            elif isinstance(rec, GroupMetadataRecord):
                self._replay_group(rec, now_ms)

    def on_loaded(self, partition: int, now_ms: int) -> list[Action]:
        actions = self._membership.on_loaded(partition, now_ms)
        self._offsets.on_loaded(partition, now_ms)
        return actions

    def on_unloaded(self, partition: int, now_ms: int) -> list[Action]:
        actions = self._membership.on_unloaded(partition, now_ms)
        self._offsets.on_unloaded(partition, now_ms)
        return actions

    def partitions_deleted(self, tps: Iterable[tuple[str, int]], now_ms: int) -> list[Action]:
        """Topic partitions were deleted: every group forgets its offsets for them
        (Kafka's onPartitionsDeleted), so a topic created again under the same
        name is not read from an old position. The groups themselves stay; an
        Empty one without offsets goes at the next retention check."""
        return self._offsets.partitions_deleted(tps, now_ms)

    # =========================================================================
    # Generic entry point
    # =========================================================================

    def handle(self, api_key: int, ctx: RequestContext, request, now_ms: int) -> list[Action]:
        """Dispatch a group API request by key."""
        handler = {
            ApiKey.JOIN_GROUP: self._membership.join_group,
            ApiKey.SYNC_GROUP: self._membership.sync_group,
            ApiKey.HEARTBEAT: self._membership.heartbeat,
            ApiKey.LEAVE_GROUP: self._membership.leave_group,
            ApiKey.OFFSET_COMMIT: self._offsets.offset_commit,
            ApiKey.OFFSET_FETCH: self._offsets.offset_fetch,
            ApiKey.DESCRIBE_GROUPS: self._admin.describe_groups,
            ApiKey.LIST_GROUPS: self._admin.list_groups,
            ApiKey.DELETE_GROUPS: self._admin.delete_groups,
            ApiKey.OFFSET_DELETE: self._offsets.offset_delete,
        }.get(ApiKey(api_key))
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

    def describe_groups(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        return self._admin.describe_groups(ctx, req, now_ms)

    def list_groups(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        return self._admin.list_groups(ctx, req, now_ms)

    def delete_groups(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        return self._admin.delete_groups(ctx, req, now_ms)

    # =========================================================================
    # Replay (load)
    # =========================================================================

    def _replay_offset(self, rec: OffsetCommitRecord, now_ms: int) -> None:
        gid = rec.group
        key = (rec.topic, rec.partition)
        if rec.is_tombstone:
            self._offsets.remove_committed(gid, key)
            return
        if self._membership.group(gid) is None:
            # Offsets without membership: a simple group.
            self._membership.create_group(gid, now_ms)
        self._offsets.set_committed(
            gid,
            key,
            OffsetAndMetadata(
                offset=rec.offset,
                leader_epoch=rec.leader_epoch,
                metadata=rec.metadata,
                commit_timestamp_ms=rec.commit_timestamp,
                expire_timestamp_ms=None if rec.expire_timestamp == -1 else rec.expire_timestamp,
            ),
        )

    def _replay_group(self, rec: GroupMetadataRecord, now_ms: int) -> None:
        old = self._membership.group(rec.group)
        if old is not None:
            self._membership.forget_group(old)
        if rec.tombstone:
            return
        group = Group(
            rec.group,
            self.partition_for(rec.group),
            state_timestamp=None
            if rec.current_state_timestamp == -1
            else rec.current_state_timestamp,
            state=S.STABLE if rec.members else S.EMPTY,
            generation=rec.generation,
            protocol_type=rec.protocol_type or None,
            protocol_name=rec.protocol,
            leader_id=rec.leader,
        )
        for m in rec.members:
            group.add(
                Member(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    # Records older than v1 have no rebalance timeout.
                    rebalance_timeout_ms=m.session_timeout
                    if m.rebalance_timeout == -1
                    else m.rebalance_timeout,
                    session_timeout_ms=m.session_timeout,
                    protocol_type=rec.protocol_type,
                    protocols=[(rec.protocol or "", m.subscription)],
                    assignment=m.assignment,
                )
            )
        group.subscribed_topics = group.compute_subscribed_topics()
        self._membership.add_group(group)

    # =========================================================================
    # Introspection (tests, metrics, the broker's ListGroups across brokers)
    # =========================================================================

    def group(self, group_id: str) -> Group | None:
        return self._membership.group(group_id)

    def groups(self) -> list[Group]:
        return self._membership.groups()

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], OffsetAndMetadata]:
        return self._offsets.committed_offsets(group_id)
