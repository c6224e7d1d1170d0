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
from dataclasses import dataclass

from coordinator import responses as R
from coordinator.actions import Action, Persist, Reply
from coordinator.config import CoordinatorConfig
from coordinator.group import Group, Member
from coordinator.membership import GroupSnapshot, Membership
from coordinator.records import (
    GroupMetadataRecord,
    OffsetCommitRecord,
    decode_record,
    encode_offset_commit,
    encode_offset_tombstone,
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

# The timer key of the offsets retention check.
_EXPIRE = "expire"


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int  # -1: none
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None  # only commits with an explicit retention


def _utf16_len(s: str) -> int:
    """Java's String.length()."""
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


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
        # Committed (durable) offsets, by group, as Kafka keeps them: apart from the
        # group objects, so replaying a group's metadata does not touch them.
        self._offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        # Offset commits appended but not yet reported durable: count per partition.
        self._pending_commits: dict[str, dict[tuple[str, int], int]] = {}
        # (group, topic, partition) -> write id of the latest tombstone emitted for it;
        # a commit written before that tombstone must not resurrect the offset.
        self._tombstoned: dict[tuple[str, str, int], int] = {}
        # The value a commit made durable just before a pending tombstone of the
        # same partition: what the log holds if that tombstone fails.
        self._shadowed: dict[tuple[str, str, int], OffsetAndMetadata] = {}

    @property
    def config(self) -> CoordinatorConfig:
        return self._config

    @config.setter
    def config(self, config: CoordinatorConfig) -> None:
        """New settings apply to every part from the next request or timer on."""
        self._config = config
        self._membership.config = config

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
        if not self._runtime.has_timer((_EXPIRE,)):
            self._schedule_expiry(now_ms)
        return actions

    def on_unloaded(self, partition: int, now_ms: int) -> list[Action]:
        actions = self._membership.on_unloaded(partition, now_ms)
        for gid in [g for g in self._offsets if self.partition_for(g) == partition]:
            del self._offsets[gid]
        for gid in [g for g in self._pending_commits if self.partition_for(g) == partition]:
            del self._pending_commits[gid]
        for key in [k for k in self._tombstoned if self.partition_for(k[0]) == partition]:
            del self._tombstoned[key]
        for key in [k for k in self._shadowed if self.partition_for(k[0]) == partition]:
            del self._shadowed[key]
        if not self._runtime.has_partitions():
            self._runtime.cancel_timer((_EXPIRE,))
        return actions

    def partitions_deleted(self, tps: Iterable[tuple[str, int]], now_ms: int) -> list[Action]:
        """Topic partitions were deleted: every group forgets its offsets for them
        (Kafka's onPartitionsDeleted), so a topic created again under the same
        name is not read from an old position. The groups themselves stay; an
        Empty one without offsets goes at the next retention check."""
        deleted = set(tps)
        records_by_partition: dict[int, list] = {}
        removed_by_partition: dict[int, list] = {}
        for group in self._membership.groups():
            if not self._runtime.is_active(group.partition):
                continue
            group_id = group.group_id
            known = list(self._offsets.get(group_id, {})) + [
                tp
                for tp in self._pending_commits.get(group_id, {})
                if tp not in self._offsets.get(group_id, {})
            ]
            gone = [tp for tp in known if tp in deleted]
            if not gone:
                continue
            records = records_by_partition.setdefault(group.partition, [])
            removed_by_partition.setdefault(group.partition, []).extend(
                self._tombstone_offsets(group_id, gone, records)
            )
        actions: list[Action] = []
        for partition, records in records_by_partition.items():
            persist = self._runtime.persist(partition, records)
            self._mark_tombstones(persist, removed_by_partition[partition])
            actions.append(persist)
        return actions

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
            ApiKey.OFFSET_COMMIT: self.offset_commit,
            ApiKey.OFFSET_FETCH: self.offset_fetch,
            ApiKey.DESCRIBE_GROUPS: self.describe_groups,
            ApiKey.LIST_GROUPS: self.list_groups,
            ApiKey.DELETE_GROUPS: self.delete_groups,
            ApiKey.OFFSET_DELETE: self.offset_delete,
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

    def _schedule_expiry(self, now_ms: int) -> None:
        """The next offsets retention check."""
        self._runtime.schedule(
            (_EXPIRE,),
            now_ms + self.config.offsets_retention_check_interval_ms,
            self._cleanup_group_metadata,
        )

    # =========================================================================
    # OffsetCommit / OffsetFetch / OffsetDelete
    # =========================================================================

    def _validate_offset_commit(
        self, group: Group, member_id: str, instance_id: str | None, generation: int
    ) -> ErrorCode | None:
        if group.state is S.DEAD:
            return E.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and group.state is S.EMPTY:
            # Admin tools and consumers without group management (assign()).
            return None
        if generation >= 0 or member_id != "" or instance_id is not None:
            err = group.member_error(member_id, instance_id)
            if err is not None:
                return err
            if generation != group.generation:
                return E.ILLEGAL_GENERATION
        elif group.state is not S.EMPTY:
            # Without member id and generation, only an empty group takes commits.
            return E.UNKNOWN_MEMBER_ID
        if group.state is S.COMPLETING_REBALANCE:
            # A member of the new generation that has not synced yet.
            return E.REBALANCE_IN_PROGRESS
        return None

    def offset_commit(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        v = ctx.api_version
        token = ctx.token

        def all_error(code: ErrorCode) -> list[Action]:
            return [
                Reply(
                    token,
                    R.offset_commit(
                        (t.name, [(p.partition_index, code) for p in t.partitions])
                        for t in req.topics
                    ),
                )
            ]

        group_id = req.group_id
        status = self._membership.status_error(group_id)
        if status is not None:
            return all_error(status)
        generation = req.generation_id_or_member_epoch
        member_id = req.member_id
        instance_id = req.group_instance_id
        group = self._membership.group(group_id)
        if group is None:
            if generation >= 0:
                # From v9 Kafka says the group does not exist; before, the
                # generation is wrong.
                return all_error(E.GROUP_ID_NOT_FOUND if v >= 9 else E.ILLEGAL_GENERATION)
            log.info("creating simple group %s via a manual offset commit", group_id)
            group = self._membership.create_group(group_id, now_ms)
        err = self._validate_offset_commit(group, member_id, instance_id, generation)
        if err is not None:
            return all_error(err)
        if group.state in (S.STABLE, S.PREPARING_REBALANCE):
            # A commit keeps the member's session alive.
            self._membership.schedule_heartbeat(group, group.members[member_id], now_ms)

        retention = req.retention_time_ms
        expire_ts = None if retention == -1 else now_ms + retention
        max_metadata = self.config.offset_metadata_max_bytes
        results: list[tuple[str, list[list]]] = []
        staged: list[tuple[tuple[str, int], OffsetAndMetadata]] = []
        records = []
        for topic in req.topics:
            parts: list[list] = []
            results.append((topic.name, parts))
            for p in topic.partitions:
                metadata = p.committed_metadata
                if metadata is not None and _utf16_len(metadata) > max_metadata:
                    parts.append([p.partition_index, E.OFFSET_METADATA_TOO_LARGE])
                    continue
                parts.append([p.partition_index, NONE])
                oam = OffsetAndMetadata(
                    offset=p.committed_offset,
                    leader_epoch=p.committed_leader_epoch,
                    metadata=metadata or "",
                    commit_timestamp_ms=now_ms if p.commit_timestamp == -1 else p.commit_timestamp,
                    expire_timestamp_ms=expire_ts,
                )
                staged.append(((topic.name, p.partition_index), oam))
                records.append(
                    encode_offset_commit(
                        OffsetCommitRecord(
                            group_id,
                            topic.name,
                            p.partition_index,
                            offset=oam.offset,
                            leader_epoch=oam.leader_epoch,
                            metadata=oam.metadata,
                            commit_timestamp=oam.commit_timestamp_ms,
                            expire_timestamp=-1 if expire_ts is None else expire_ts,
                        )
                    )
                )

        def reply(error: ErrorCode = NONE) -> Reply:
            return Reply(
                token,
                R.offset_commit(
                    (name, [(pi, error if e == NONE else e) for pi, e in parts])
                    for name, parts in results
                ),
            )

        if not records:
            return [reply()]
        persist = self._runtime.persist(group.partition, records)
        pending = self._pending_commits.setdefault(group_id, {})
        for tp, _ in staged:
            pending[tp] = pending.get(tp, 0) + 1
        write_id = persist.write_id
        partition = group.partition

        def done(error: ErrorCode, done_ms: int) -> list[Action]:
            counts = self._pending_commits.get(group_id)
            for tp, _ in staged:
                if counts is not None and tp in counts:
                    counts[tp] -= 1
                    if counts[tp] <= 0:
                        del counts[tp]
            if counts is not None and not counts:
                self._pending_commits.pop(group_id, None)
            if error != NONE:
                return [reply(append_error_to_response_error(error))]
            if self._runtime.is_active(partition):
                for (topic, part), oam in staged:
                    key = (group_id, topic, part)
                    if self._tombstoned.get(key, 0) > write_id:
                        # A later tombstone (DeleteGroups, OffsetDelete, expiry)
                        # wins, unless it fails.
                        self._shadowed[key] = oam
                        continue
                    if self._membership.group(group_id) is None:
                        self._membership.create_group(group_id, done_ms)
                    self._offsets.setdefault(group_id, {})[(topic, part)] = oam
            return [reply()]

        self._runtime.then(persist, done)
        return [persist]

    def offset_fetch(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        v = ctx.api_version
        if v >= 8:
            wanted = [(g.group_id, g.topics) for g in req.groups]
        else:
            wanted = [(req.group_id, req.topics)]
        # require_stable: UNSTABLE_OFFSET_COMMIT is only for pending transactional
        # offsets, which this coordinator does not have.
        groups = [self._fetch_group(gid, topics) for gid, topics in wanted]
        return [Reply(ctx.token, R.offset_fetch(v, groups))]

    def _fetch_group(self, group_id: str, topics) -> dict:
        status = self._membership.status_error(group_id)
        if status is not None:
            # The requested partitions come along so that versions without a
            # top-level error (v0-1) can carry it per partition.
            echoed = [
                {
                    "name": t.name,
                    "partitions": [R.fetched_partition(p) for p in t.partition_indexes],
                }
                for t in topics or ()
            ]
            return R.fetched_group(group_id, echoed, error=status)
        group = self._membership.group(group_id)
        offsets = {} if group is None else self._offsets.get(group_id, {})
        if topics is None:
            by_topic: dict[str, list[dict]] = {}
            for (topic, part), oam in offsets.items():
                by_topic.setdefault(topic, []).append(
                    R.fetched_partition(part, oam.offset, oam.leader_epoch, oam.metadata)
                )
            return R.fetched_group(
                group_id, [{"name": t, "partitions": ps} for t, ps in by_topic.items()]
            )
        out = []
        for topic in topics:
            parts = []
            for part in topic.partition_indexes:
                oam = offsets.get((topic.name, part))
                if oam is None:
                    parts.append(R.fetched_partition(part))
                else:
                    parts.append(
                        R.fetched_partition(part, oam.offset, oam.leader_epoch, oam.metadata)
                    )
            out.append({"name": topic.name, "partitions": parts})
        return R.fetched_group(group_id, out)

    def _has_offset(self, group_id: str, topic: str, part: int) -> bool:
        return (topic, part) in self._offsets.get(group_id, {}) or (
            (topic, part) in self._pending_commits.get(group_id, {})
        )

    def _tombstone_offsets(
        self, group_id: str, tps: list[tuple[str, int]], records: list
    ) -> list[_Removed]:
        """Forget offsets now and add their tombstones; returns what was removed."""
        offsets = self._offsets.get(group_id, {})
        removed = []
        for topic, part in tps:
            old = offsets.pop((topic, part), None)
            records.append(encode_offset_tombstone(group_id, topic, part))
            removed.append(((group_id, topic, part), old))
        if not offsets:
            self._offsets.pop(group_id, None)
        return removed

    def _mark_tombstones(
        self, persist: Persist, removed: list[_Removed], groups: list[GroupSnapshot] = ()
    ) -> None:
        """Tombstones are applied when emitted; if their write fails, what they
        removed comes back (Kafka reverts to the log on a failed append)."""
        write_id = persist.write_id
        partition = persist.partition
        for key, _ in removed:
            self._tombstoned[key] = write_id

        def done(error: ErrorCode, done_ms: int) -> list[Action]:
            # Writes of a partition complete in order: every commit emitted
            # before this tombstone is settled now.
            revert = error != NONE and self._runtime.is_active(partition)
            if revert:
                for snap in groups:
                    self._membership.restore_group(snap, done_ms)
            for key, old in removed:
                if self._tombstoned.get(key) != write_id:
                    continue  # a later tombstone of the same offset decides
                del self._tombstoned[key]
                value = self._shadowed.pop(key, None) or old
                if revert and value is not None:
                    group_id, topic, part = key
                    if self._membership.group(group_id) is None:
                        self._membership.create_group(group_id, done_ms)
                    self._offsets.setdefault(group_id, {}).setdefault((topic, part), value)
            return []

        self._runtime.then(persist, done)

    def offset_delete(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        token = ctx.token

        def error(code: ErrorCode) -> list[Action]:
            return [Reply(token, R.offset_delete(code))]

        group_id = req.group_id
        if not group_id:
            return error(E.INVALID_GROUP_ID)
        status = self._membership.status_error(group_id)
        if status is not None:
            return error(status)
        group = self._membership.group(group_id)
        if group is None or group.state is S.DEAD:
            return error(E.GROUP_ID_NOT_FOUND)
        if (
            group.state in (S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE)
            and not group.uses_consumer_protocol
        ):
            return error(E.NON_EMPTY_GROUP)

        results = []
        to_delete: list[tuple[str, int]] = []
        for topic in req.topics:
            if group.is_subscribed_to_topic(topic.name):
                results.append(
                    (
                        topic.name,
                        [
                            (p.partition_index, E.GROUP_SUBSCRIBED_TO_TOPIC)
                            for p in topic.partitions
                        ],
                    )
                )
                continue
            results.append((topic.name, [(p.partition_index, NONE) for p in topic.partitions]))
            for p in topic.partitions:
                if self._has_offset(group_id, topic.name, p.partition_index):
                    to_delete.append((topic.name, p.partition_index))
        if not to_delete:
            return [Reply(token, R.offset_delete(topics=results))]
        records: list = []
        removed = self._tombstone_offsets(group_id, to_delete, records)
        persist = self._runtime.persist(group.partition, records)
        self._mark_tombstones(persist, removed)

        def done(error: ErrorCode, _now: int) -> list[Action]:
            if error != NONE:
                return [Reply(token, R.offset_delete(append_error_to_response_error(error)))]
            return [Reply(token, R.offset_delete(topics=results))]

        self._runtime.then(persist, done)
        return [persist]

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
            tps = list(self._offsets.get(group_id, {})) + [
                tp
                for tp in self._pending_commits.get(group_id, {})
                if tp not in self._offsets.get(group_id, {})
            ]
            removed_by_partition.setdefault(group.partition, []).extend(
                self._tombstone_offsets(group_id, tps, records)
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
            self._mark_tombstones(
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
    # Offset retention (Kafka's cleanupGroupMetadata)
    # =========================================================================

    def _expiration_base(self, group: Group) -> Callable[[OffsetAndMetadata], int] | None:
        if group.protocol_type is not None:
            if group.state is S.EMPTY:
                # Members all gone: retention counts from when the group emptied
                # (from each commit if that time is unknown).
                ts = group.state_timestamp
                return (lambda o: o.commit_timestamp_ms) if ts is None else (lambda o: ts)
            if (
                group.uses_consumer_protocol
                and group.subscribed_topics is not None
                and (group.state is S.STABLE)
            ):
                # Stable consumers: offsets of topics nobody subscribes to anymore.
                return lambda o: o.commit_timestamp_ms
            return None
        # A simple group (offsets only): from each commit.
        return lambda o: o.commit_timestamp_ms

    def _cleanup_expired_offsets(self, group: Group, records: list, now_ms: int) -> tuple:
        """Tombstone the group's expired offsets; (all expired?, what was removed)."""
        group_id = group.group_id
        offsets = self._offsets.get(group_id, {})
        pending = self._pending_commits.get(group_id, {})
        if not offsets:
            return not pending, []
        base = self._expiration_base(group)
        if base is None:
            return False, []
        retention = self.config.offsets_retention_ms
        all_expired = not pending
        expired = []
        for (topic, part), oam in offsets.items():
            if group.is_subscribed_to_topic(topic) or (topic, part) in pending:
                all_expired = False
                continue
            if oam.expire_timestamp_ms is not None:
                is_expired = now_ms >= oam.expire_timestamp_ms
            else:
                is_expired = now_ms - base(oam) >= retention
            if is_expired:
                expired.append((topic, part))
            else:
                all_expired = False
        if expired:
            log.info("group %s: %d offsets expired", group_id, len(expired))
        return all_expired, self._tombstone_offsets(group_id, expired, records) if expired else []

    def _cleanup_group_metadata(self, now_ms: int) -> list[Action]:
        self._schedule_expiry(now_ms)
        records_by_partition: dict[int, list] = {}
        removed_by_partition: dict[int, list] = {}
        groups_by_partition: dict[int, list] = {}
        for group in self._membership.groups():
            if not self._runtime.is_active(group.partition):
                continue
            records = records_by_partition.setdefault(group.partition, [])
            all_expired, removed = self._cleanup_expired_offsets(group, records, now_ms)
            removed_by_partition.setdefault(group.partition, []).extend(removed)
            if all_expired and group.state is S.EMPTY:
                # Empty and without offsets: the group is gone.
                log.info("group %s is empty and has no offsets: deleting it", group.group_id)
                groups_by_partition.setdefault(group.partition, []).append(
                    self._membership.remove_empty_group(group, records, now_ms)
                )
        actions: list[Action] = []
        for partition, records in records_by_partition.items():
            if records:
                persist = self._runtime.persist(partition, records)
                self._mark_tombstones(
                    persist,
                    removed_by_partition.get(partition, []),
                    groups_by_partition.get(partition, []),
                )
                actions.append(persist)
        return actions

    # =========================================================================
    # Replay (load)
    # =========================================================================

    def _replay_offset(self, rec: OffsetCommitRecord, now_ms: int) -> None:
        gid = rec.group
        key = (rec.topic, rec.partition)
        if rec.is_tombstone:
            offsets = self._offsets.get(gid)
            if offsets is not None:
                offsets.pop(key, None)
                if not offsets:
                    del self._offsets[gid]
            return
        if self._membership.group(gid) is None:
            # Offsets without membership: a simple group.
            self._membership.create_group(gid, now_ms)
        self._offsets.setdefault(gid, {})[key] = OffsetAndMetadata(
            offset=rec.offset,
            leader_epoch=rec.leader_epoch,
            metadata=rec.metadata,
            commit_timestamp_ms=rec.commit_timestamp,
            expire_timestamp_ms=None if rec.expire_timestamp == -1 else rec.expire_timestamp,
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
        return dict(self._offsets.get(group_id, {}))


# ((group, topic, partition), the committed value removed or None)
_Removed = tuple[tuple[str, str, int], "OffsetAndMetadata | None"]
