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

from coordinator import responses as R
from coordinator.actions import Action, Reply
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
from coordinator.responses import append_error_to_response_error
from coordinator.runtime import CoordinatorRuntime, PartitionState
from coordinator.state import GroupState
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

log = logging.getLogger(__name__)

E = ErrorCode
NONE = ErrorCode.NONE
S = GroupState


_GROUP_TYPES = {"classic", "consumer", "share", "streams"}


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
            ApiKey.DESCRIBE_GROUPS: self.describe_groups,
            ApiKey.LIST_GROUPS: self.list_groups,
            ApiKey.DELETE_GROUPS: self.delete_groups,
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

    # =========================================================================
    # DescribeGroups / ListGroups / DeleteGroups
    # =========================================================================

    def describe_groups(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        described = []
        for group_id in req.groups:
            status = self._membership.status_error(group_id)
            if status is not None:
                described.append(R.described_group(group_id, status))
                continue
            group = self._membership.group(group_id)
            if group is None or group.state is S.DEAD:
                # v6 (Kafka 4.3) says why; older versions only show the state.
                if ctx.api_version >= 6:
                    described.append(
                        R.described_group(
                            group_id,
                            E.GROUP_ID_NOT_FOUND,
                            state=S.DEAD.value,
                            message=f"Group {group_id} not found.",
                        )
                    )
                else:
                    described.append(R.described_group(group_id, state=S.DEAD.value))
                continue
            stable = group.state is S.STABLE
            members = [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    # Member metadata only once the group is Stable, as in Kafka.
                    "member_metadata": m.metadata(group.protocol_name) if stable else b"",
                    "member_assignment": m.assignment,
                }
                for m in group.members.values()
            ]
            described.append(
                R.described_group(
                    group_id,
                    state=group.state.value,
                    protocol_type=group.protocol_type or "",
                    protocol_data=(group.protocol_name or "") if stable else "",
                    members=members,
                )
            )
        return [Reply(ctx.token, R.describe_groups(described))]

    def list_groups(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        if self._runtime.any_loading():
            return [Reply(ctx.token, R.list_groups(E.COORDINATOR_LOAD_IN_PROGRESS))]
        states = {s.strip().lower() for s in req.states_filter}
        types = {t.lower() if t.lower() in _GROUP_TYPES else "unknown" for t in req.types_filter}
        if types and "classic" not in types:
            return [Reply(ctx.token, R.list_groups())]
        listed = [
            {
                "group_id": g.group_id,
                "protocol_type": g.protocol_type or "",
                "group_state": g.state.value,
                "group_type": "classic",
            }
            for g in self._membership.groups()
            if (not states or g.state.lower in states) and self._runtime.is_active(g.partition)
        ]
        return [Reply(ctx.token, R.list_groups(groups=listed))]

    def delete_groups(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        token = ctx.token
        results: list[list] = []
        records_by_partition: dict[int, list] = {}
        removed_by_partition: dict[int, list] = {}
        groups_by_partition: dict[int, list] = {}
        deleted: dict[str, int] = {}  # group id -> partition
        for group_id in req.groups_names:
            status = self._membership.status_error(group_id)
            if status is not None:
                results.append([group_id, status])
                continue
            group = self._membership.group(group_id)
            if group is None or group.state is S.DEAD:
                results.append([group_id, E.GROUP_ID_NOT_FOUND])
                continue
            if group.state is not S.EMPTY:
                results.append([group_id, E.NON_EMPTY_GROUP])
                continue
            records = records_by_partition.setdefault(group.partition, [])
            tps = self._offsets.known_partitions(group_id)
            removed_by_partition.setdefault(group.partition, []).extend(
                self._offsets.tombstone_offsets(group_id, tps, records)
            )
            groups_by_partition.setdefault(group.partition, []).append(
                self._membership.remove_empty_group(group, records, now_ms)
            )
            deleted[group_id] = group.partition
            results.append([group_id, NONE])
        if not records_by_partition:
            return [Reply(token, R.delete_groups([(g, e) for g, e in results]))]
        persists = []
        for partition, records in records_by_partition.items():
            persist = self._runtime.persist(partition, records)
            self._offsets.mark_tombstones(
                persist,
                removed_by_partition.get(partition, []),
                groups_by_partition.get(partition, []),
            )
            persists.append(persist)
        log.info("deleted groups %s", ", ".join(deleted))

        def done(errors: dict[int, ErrorCode], _now: int) -> list[Action]:
            out = []
            for group_id, err in results:
                if group_id in deleted and deleted[group_id] in errors:
                    err = append_error_to_response_error(errors[deleted[group_id]])
                out.append((group_id, err))
            return [Reply(token, R.delete_groups(out))]

        self._runtime.after_all(persists, done)
        return list(persists)

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
