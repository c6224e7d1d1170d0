"""Classic groups and their members: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

`Membership` holds every group this coordinator serves (Kafka's
GroupMetadataManager for classic groups): it runs the rebalance protocol
(the join phase, with its initial delay for a new group; the sync phase,
waiting for the leader's assignment), static members (a restart with the
same instance id keeps the assignment without a rebalance) and member
sessions. It owns the groups' timers (session, join and sync timeouts) on
the coordinator runtime, and writes the group metadata records.

Group metadata (generations, members) changes at once and, as in Kafka, is
not undone when its write fails: a failed assignment write fails the
SyncGroups and rebalances, a failed static rejoin keeps the old member id,
and a failed "now empty" record is only logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from coordinator import responses as R
from coordinator.actions import Action, Persist, Reply
from coordinator.config import CoordinatorConfig
from coordinator.group import Group, Member, Waiter
from coordinator.hashing import coordinator_partition
from coordinator.records import (
    GroupMetadataRecord,
    MemberMetadataRecord,
    encode_group_metadata,
    encode_group_tombstone,
)
from coordinator.request_context import RequestContext
from coordinator.responses import append_error_to_response_error
from coordinator.runtime import CoordinatorRuntime
from coordinator.state import Event, GroupState
from wire.error_codes import ErrorCode

log = logging.getLogger(__name__)

E = ErrorCode
NONE = ErrorCode.NONE
S = GroupState

# Timer keys: (kind, group id, member id) for a member's session (or a new
# member's join timeout), (kind, group id) for the end of the join phase (or
# an initial-delay step) and for dropping members that have not synced.
_HEARTBEAT = "heartbeat"
_JOIN = "join"
_SYNC = "sync"


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """An Empty group being deleted: enough to bring it back if the tombstone fails."""

    group_id: str
    generation: int
    protocol_type: str | None
    state_timestamp: int | None


class Membership:
    """The groups of the partitions this coordinator serves, and their members."""

    def __init__(
        self, config: CoordinatorConfig, runtime: CoordinatorRuntime, new_uuid: Callable[[], str]
    ):
        self.config = config
        self._runtime = runtime
        self._new_uuid = new_uuid
        self._groups: dict[str, Group] = {}

    # --- the groups -----------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return coordinator_partition(group_id, self.config.offsets_topic_num_partitions)

    def status_error(self, group_id: str) -> ErrorCode | None:
        """NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS for the group's partition, or None."""
        return self._runtime.status_error(self.partition_for(group_id))

    def group(self, group_id: str) -> Group | None:
        return self._groups.get(group_id)

    def groups(self) -> list[Group]:
        return list(self._groups.values())

    def add_group(self, group: Group) -> None:
        """A group rebuilt from the log (replaces none: forget the old one first)."""
        self._groups[group.group_id] = group

    def create_group(self, group_id: str, now_ms: int) -> Group:
        group = Group(group_id, self.partition_for(group_id), state_timestamp=now_ms)
        self._groups[group_id] = group
        return group

    def forget_group(self, group: Group) -> None:
        """Drop a (Dead) group and its timers."""
        gid = group.group_id
        if self._groups.get(gid) is group:
            del self._groups[gid]
        for mid in list(group.members) + list(group.pending_members):
            self._runtime.cancel_timer((_HEARTBEAT, gid, mid))
        self._runtime.cancel_timer((_JOIN, gid))
        self._runtime.cancel_timer((_SYNC, gid))

    def remove_empty_group(self, group: Group, records: list, now_ms: int) -> GroupSnapshot:
        """Delete an Empty group now and add its tombstone."""
        snapshot = GroupSnapshot(
            group.group_id,
            group.generation,
            group.protocol_type,
            group.state_timestamp,
        )
        records.append(encode_group_tombstone(group.group_id))
        group.transition(Event.REMOVE, now_ms)
        self.forget_group(group)
        return snapshot

    def restore_group(self, snap: GroupSnapshot, now_ms: int) -> None:
        current = self._groups.get(snap.group_id)
        # Keep a group that came back to life meanwhile; replace a mere offsets
        # holder created by a commit after the deletion.
        if current is not None and not (current.is_simple and current.generation == 0):
            return
        group = Group(
            snap.group_id,
            self.partition_for(snap.group_id),
            state_timestamp=snap.state_timestamp,
            generation=snap.generation,
            protocol_type=snap.protocol_type,
        )
        group.subscribed_topics = group.compute_subscribed_topics()
        self._groups[snap.group_id] = group

    # --- loading and unloading ------------------------------------------------

    def on_loaded(self, partition: int, now_ms: int) -> list[Action]:
        """The loaded groups' members must heartbeat from now; a group over
        group.max.size rebalances."""
        actions: list[Action] = []
        for group in list(self._groups.values()):
            if group.partition != partition:
                continue
            for member in group.members.values():
                self.schedule_heartbeat(group, member, now_ms)
            if len(group.members) > self.config.group_max_size:
                log.info("group %s is over capacity after loading; rebalancing", group.group_id)
                actions += self._prepare_rebalance(group, now_ms)
        return actions

    def on_unloaded(self, partition: int, now_ms: int) -> list[Action]:
        """The partition's groups go Dead and are forgotten; their parked
        requests are answered NOT_COORDINATOR."""
        actions: list[Action] = []
        for group in [g for g in self._groups.values() if g.partition == partition]:
            for member in group.members.values():
                waiter = group.take_join_waiter(member)
                if waiter is not None:
                    actions.append(self._join_error(waiter, E.NOT_COORDINATOR, member.member_id))
                waiter = group.take_sync_waiter(member)
                if waiter is not None:
                    actions.append(Reply(waiter.token, R.sync_group(E.NOT_COORDINATOR)))
            group.transition(Event.REMOVE, now_ms)
            self.forget_group(group)
        return actions

    # =========================================================================
    # JoinGroup
    # =========================================================================

    def join_group(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        v = ctx.api_version
        token = ctx.token

        def error(code: ErrorCode, member_id: str = req.member_id) -> list[Action]:
            return [Reply(token, R.join_group(v, code, member_id=member_id))]

        group_id = req.group_id
        if not group_id:
            return error(E.INVALID_GROUP_ID)
        cfg = self.config
        session_timeout = req.session_timeout_ms
        if not (
            cfg.group_min_session_timeout_ms <= session_timeout <= cfg.group_max_session_timeout_ms
        ):
            return error(E.INVALID_SESSION_TIMEOUT)
        status = self.status_error(group_id)
        if status is not None:
            return error(status)

        is_unknown_member = req.member_id == ""
        group = self._groups.get(group_id)
        is_new_group = group is None
        if group is None:
            if not is_unknown_member:
                return error(E.UNKNOWN_MEMBER_ID)
            group = self.create_group(group_id, now_ms)

        join = _Join(
            waiter=Waiter(token, v),
            member_id=req.member_id,
            instance_id=req.group_instance_id,
            client_id=ctx.client_id,
            client_host=ctx.client_host,
            # JoinGroup v0 has no rebalance timeout: Kafka uses the session timeout.
            rebalance_timeout_ms=session_timeout if v == 0 else req.rebalance_timeout_ms,
            session_timeout_ms=session_timeout,
            protocol_type=req.protocol_type,
            protocols=[(p.name, bytes(p.metadata)) for p in req.protocols],
        )
        if not self._accept_joining_member(group, join.member_id):
            actions = self._drop_member(group, join.member_id)
            actions.append(Reply(token, R.join_group(v, E.GROUP_MAX_SIZE_REACHED)))
        elif is_unknown_member:
            actions = self._join_new_member(group, join, now_ms)
        else:
            actions = self._join_existing_member(group, join, now_ms)

        if is_new_group and not any(isinstance(a, Persist) for a in actions):
            # Kafka writes an empty group record so the new group is in the log.
            actions.append(
                self._runtime.persist(group.partition, [self._empty_group_metadata_record(group)])
            )
        return actions

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        max_size = self.config.group_max_size
        if group.state in (S.EMPTY, S.DEAD):
            return True
        if group.state is S.PREPARING_REBALANCE:
            # Counting members already parked (not the group size, which may
            # exceed a lowered max) lets the last to rejoin be the ones left out.
            member = group.members.get(member_id)
            return (member is not None and member.awaiting_join) or (
                group.num_awaiting_join < max_size
            )
        return member_id in group.members or len(group.members) < max_size

    def _join_new_member(self, group: Group, join: _Join, now_ms: int) -> list[Action]:
        if group.state is S.DEAD:
            return [self._join_error(join.waiter, E.COORDINATOR_NOT_AVAILABLE)]
        if not group.supports_protocols(join.protocol_type, join.protocol_names):
            return [self._join_error(join.waiter, E.INCONSISTENT_GROUP_PROTOCOL)]
        prefix = join.instance_id if join.instance_id is not None else join.client_id
        new_member_id = f"{prefix}-{self._new_uuid()}"
        if join.instance_id is not None:
            existing = group.static_member_id(join.instance_id)
            if existing is not None:
                log.info(
                    "static member %s of group %s rejoins with a new member id",
                    join.instance_id,
                    group.group_id,
                )
                return self._update_static_member(group, join, existing, new_member_id, now_ms)
            return self._add_member_and_rebalance(group, join, new_member_id, now_ms)
        if join.waiter.version >= 4:
            # From v4 a new member first gets its id, then joins with it.
            group.pending_members.add(new_member_id)
            self._schedule_member_expiry(
                group.group_id, new_member_id, now_ms + join.session_timeout_ms
            )
            return [self._join_error(join.waiter, E.MEMBER_ID_REQUIRED, new_member_id)]
        return self._add_member_and_rebalance(group, join, new_member_id, now_ms)

    def _join_existing_member(self, group: Group, join: _Join, now_ms: int) -> list[Action]:
        member_id = join.member_id
        if group.state is S.DEAD:
            return [self._join_error(join.waiter, E.COORDINATOR_NOT_AVAILABLE, member_id)]
        if not group.supports_protocols(join.protocol_type, join.protocol_names):
            return [self._join_error(join.waiter, E.INCONSISTENT_GROUP_PROTOCOL, member_id)]
        if member_id in group.pending_members:
            if join.instance_id is not None:
                # Kafka: IllegalStateException (a pending member is never static).
                return [self._join_error(join.waiter, E.UNKNOWN_SERVER_ERROR, member_id)]
            return self._add_member_and_rebalance(group, join, member_id, now_ms)
        err = group.member_error(member_id, join.instance_id)
        if err is not None:
            return [self._join_error(join.waiter, err, member_id)]
        member = group.members[member_id]
        if group.state is S.PREPARING_REBALANCE:
            return self._update_member_and_rebalance(group, member, join, now_ms)
        if group.state is S.COMPLETING_REBALANCE:
            if member.matches(join.protocols):
                # Same metadata (it missed the JoinGroup answer): answer again.
                return [self._join_success(group, member, join.waiter)]
            return self._update_member_and_rebalance(group, member, join, now_ms)
        if group.state is S.STABLE:
            if group.is_leader(member_id) or not member.matches(join.protocols):
                # The leader rejoining forces a rebalance (e.g. topic metadata
                # changed); so does a follower whose metadata changed.
                return self._update_member_and_rebalance(group, member, join, now_ms)
            # A follower with unchanged metadata gets the current generation.
            return [
                Reply(
                    join.waiter.token,
                    R.join_group(
                        join.waiter.version,
                        member_id=member_id,
                        generation_id=group.generation,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=group.leader_id or "",
                    ),
                )
            ]
        log.warning("member %s rejoins group %s in state Empty", member_id, group.group_id)
        return [self._join_error(join.waiter, E.UNKNOWN_MEMBER_ID, member_id)]

    def _add_member_and_rebalance(
        self, group: Group, join: _Join, member_id: str, now_ms: int
    ) -> list[Action]:
        member = Member(
            member_id=member_id,
            group_instance_id=join.instance_id,
            client_id=join.client_id,
            client_host=join.client_host,
            rebalance_timeout_ms=join.rebalance_timeout_ms,
            session_timeout_ms=join.session_timeout_ms,
            protocol_type=join.protocol_type,
            protocols=join.protocols,
            is_new=True,
        )
        if group.state is S.PREPARING_REBALANCE and group.previous_state is S.EMPTY:
            group.new_member_added = True
        group.add(member, join.waiter)
        # A new member cannot heartbeat while its JoinGroup is parked; bound the
        # wait instead, so a client that went away does not stay forever.
        self.schedule_heartbeat(group, member, now_ms, self.config.new_member_join_timeout_ms)
        return self._maybe_prepare_rebalance_or_complete_join(group, now_ms)

    def _update_member_and_rebalance(
        self, group: Group, member: Member, join: _Join, now_ms: int
    ) -> list[Action]:
        superseded = group.update_member(
            member, join.protocols, join.rebalance_timeout_ms, join.session_timeout_ms, join.waiter
        )
        actions: list[Action] = []
        if superseded is not None:
            # Kafka drops the older parked JoinGroup unanswered; answer it so the
            # broker never holds it forever.
            actions.append(self._join_error(superseded, E.REBALANCE_IN_PROGRESS, member.member_id))
        return actions + self._maybe_prepare_rebalance_or_complete_join(group, now_ms)

    def _update_static_member(
        self, group: Group, join: _Join, old_id: str, new_id: str, now_ms: int
    ) -> list[Action]:
        """A static member restarted (new member id, same instance id)."""
        instance_id = join.instance_id
        assert instance_id is not None  # only a static member's join comes here
        current_leader = group.leader_id
        member, fenced_join, fenced_sync = group.replace_static_member(instance_id, old_id, new_id)
        actions: list[Action] = []
        # Whoever still waits with the old member id is fenced.
        if fenced_join is not None:
            actions.append(self._join_error(fenced_join, E.FENCED_INSTANCE_ID, old_id))
        if fenced_sync is not None:
            actions.append(Reply(fenced_sync.token, R.sync_group(E.FENCED_INSTANCE_ID)))
        self._runtime.cancel_timer((_HEARTBEAT, group.group_id, old_id))
        self.schedule_heartbeat(group, member, now_ms)
        old_protocols = member.protocols
        old_rebalance_timeout = member.rebalance_timeout_ms
        old_session_timeout = member.session_timeout_ms
        group.update_member(
            member, join.protocols, join.rebalance_timeout_ms, join.session_timeout_ms, join.waiter
        )

        if group.state is S.STABLE:
            if group.protocol_name != group.select_protocol():
                return actions + self._maybe_prepare_rebalance_or_complete_join(group, now_ms)
            # The protocol stays: no rebalance. Persist the new member id, then
            # answer with the current generation (the member keeps its assignment).
            persist = self._runtime.persist(
                group.partition, [self._group_metadata_record(group, group.assignments())]
            )
            waiter = join.waiter

            def done(error: ErrorCode, done_ms: int) -> list[Action]:
                if error != NONE:
                    return self._revert_static_member(
                        group,
                        member,
                        instance_id,
                        old_id,
                        (old_protocols, old_rebalance_timeout, old_session_timeout),
                        waiter,
                        current_leader,
                        append_error_to_response_error(error),
                        done_ms,
                    )
                if member.join_waiter is not waiter or group.state not in (
                    S.STABLE,
                    S.COMPLETING_REBALANCE,
                ):
                    return []  # superseded, or a rebalance will answer it
                group.take_join_waiter(member)
                if waiter.version >= 9:
                    # The leader learns it leads, but skips the assignment.
                    is_leader = group.is_leader(new_id)
                    body = R.join_group(
                        waiter.version,
                        member_id=new_id,
                        generation_id=group.generation,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=group.leader_id or "",
                        skip_assignment=is_leader,
                        members=group.join_response_members() if is_leader else [],
                    )
                else:
                    # Older clients are told the old leader id, so a restarted
                    # leader does not run an assignment the Stable group would ignore.
                    body = R.join_group(
                        waiter.version,
                        member_id=new_id,
                        generation_id=group.generation,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=current_leader or "",
                    )
                return [Reply(waiter.token, body)]

            self._runtime.then(persist, done)
            actions.append(persist)
            return actions
        if group.state is S.COMPLETING_REBALANCE:
            # The leader may be assigning to the old member id: start over.
            return actions + self._prepare_rebalance(group, now_ms)
        return actions + self._maybe_complete_join_phase(group, now_ms)

    def _revert_static_member(
        self,
        group: Group,
        member: Member,
        instance_id: str,
        old_id: str,
        old: tuple,
        waiter: Waiter,
        current_leader: str | None,
        error: ErrorCode,
        now_ms: int,
    ) -> list[Action]:
        """The new member id could not be persisted: go back to the old one."""
        reply = Reply(
            waiter.token,
            R.join_group(
                waiter.version,
                error,
                generation_id=group.generation,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=current_leader or "",
            ),
        )
        if member.join_waiter is not waiter:
            # Already answered: fenced by a newer restart, superseded by a newer
            # JoinGroup, answered by a rebalance, or the partition was unloaded.
            return []
        protocols, rebalance_timeout, session_timeout = old
        group.update_member(member, protocols, rebalance_timeout, session_timeout, None)
        old_member, _, _ = group.replace_static_member(instance_id, member.member_id, old_id)
        self._runtime.cancel_timer((_HEARTBEAT, group.group_id, member.member_id))
        self.schedule_heartbeat(group, old_member, now_ms)
        return [reply]

    # =========================================================================
    # SyncGroup
    # =========================================================================

    def sync_group(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        token = ctx.token

        def error(code: ErrorCode) -> list[Action]:
            return [Reply(token, R.sync_group(code))]

        group_id = req.group_id
        if not group_id:
            return error(E.INVALID_GROUP_ID)
        status = self.status_error(group_id)
        if status is E.COORDINATOR_LOAD_IN_PROGRESS:
            # The rebalance in progress is lost with the load; REBALANCE_IN_PROGRESS
            # makes the member rejoin (older clients do not expect LOAD_IN_PROGRESS).
            return error(E.REBALANCE_IN_PROGRESS)
        if status is not None:
            return error(status)
        group = self._groups.get(group_id)
        if group is None or group.state is S.EMPTY:
            return error(E.UNKNOWN_MEMBER_ID)
        if group.state is S.DEAD:
            return error(E.COORDINATOR_NOT_AVAILABLE)
        member_id = req.member_id
        err = group.member_error(member_id, req.group_instance_id)
        if err is not None:
            return error(err)
        if req.generation_id != group.generation:
            return error(E.ILLEGAL_GENERATION)
        if _inconsistent(req.protocol_type, group.protocol_type) or _inconsistent(
            req.protocol_name, group.protocol_name
        ):
            return error(E.INCONSISTENT_GROUP_PROTOCOL)
        if group.state is S.PREPARING_REBALANCE:
            return error(E.REBALANCE_IN_PROGRESS)
        member = group.members[member_id]
        if group.state is S.STABLE:
            self._remove_pending_sync_member(group, member_id)
            return [
                Reply(
                    token,
                    R.sync_group(
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        assignment=member.assignment,
                    ),
                )
            ]

        # CompletingRebalance: park until the leader's assignment is stored.
        actions: list[Action] = []
        superseded = member.sync_waiter
        if superseded is not None:
            actions.append(Reply(superseded.token, R.sync_group(E.REBALANCE_IN_PROGRESS)))
        member.sync_waiter = Waiter(token, ctx.api_version)
        self._remove_pending_sync_member(group, member_id)
        if not group.is_leader(member_id):
            return actions

        assignment = {a.member_id: bytes(a.assignment) for a in req.assignments}
        for mid in group.members:
            assignment.setdefault(mid, b"")
        generation = group.generation
        log.info(
            "assignment received from leader %s of group %s for generation %d",
            member_id,
            group_id,
            generation,
        )
        persist = self._runtime.persist(
            group.partition, [self._group_metadata_record(group, assignment)]
        )

        def done(error: ErrorCode, done_ms: int) -> list[Action]:
            # Another member may have started a rebalance meanwhile: then do nothing.
            if group.state is not S.COMPLETING_REBALANCE or group.generation != generation:
                return []
            if self._groups.get(group_id) is not group:
                return []
            if error != NONE:
                out = self._reset_and_propagate_assignment_error(
                    group, append_error_to_response_error(error), done_ms
                )
                return out + self._maybe_prepare_rebalance_or_complete_join(group, done_ms)
            out = self._set_and_propagate_assignment(group, assignment, done_ms)
            group.transition(Event.ASSIGNMENT_STORED, done_ms)
            return out

        self._runtime.then(persist, done)
        actions.append(persist)
        return actions

    # =========================================================================
    # Heartbeat
    # =========================================================================

    def heartbeat(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        def answer(code: ErrorCode) -> list[Action]:
            return [Reply(ctx.token, R.heartbeat(code))]

        group_id = req.group_id
        if not group_id:
            return answer(E.INVALID_GROUP_ID)
        status = self.status_error(group_id)
        if status is E.COORDINATOR_LOAD_IN_PROGRESS:
            return answer(NONE)  # Kafka answers blindly while loading
        if status is not None:
            return answer(status)
        group = self._groups.get(group_id)
        if group is None:
            return answer(E.UNKNOWN_MEMBER_ID)
        if group.state is S.DEAD:
            return answer(E.COORDINATOR_NOT_AVAILABLE)
        err = group.member_error(req.member_id, req.group_instance_id)
        if err is not None:
            return answer(err)
        if req.generation_id != group.generation:
            return answer(E.ILLEGAL_GENERATION)
        if group.state is S.EMPTY:
            return answer(E.UNKNOWN_MEMBER_ID)
        self.schedule_heartbeat(group, group.members[req.member_id], now_ms)
        if group.state is S.PREPARING_REBALANCE:
            return answer(E.REBALANCE_IN_PROGRESS)
        return answer(NONE)

    # =========================================================================
    # LeaveGroup
    # =========================================================================

    def leave_group(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        v = ctx.api_version
        token = ctx.token
        if v >= 3:
            leaving = [(m.member_id, m.group_instance_id) for m in req.members]
        else:
            leaving = [(req.member_id, None)]

        def error(code: ErrorCode) -> list[Action]:
            return [Reply(token, R.leave_group(v, code))]

        group_id = req.group_id
        if not group_id:
            return error(E.INVALID_GROUP_ID)
        status = self.status_error(group_id)
        if status is not None:
            return error(status)
        group = self._groups.get(group_id)
        if group is None:
            return [
                Reply(
                    token,
                    R.leave_group(
                        v, members=[R.leave_member(m, i, E.UNKNOWN_MEMBER_ID) for m, i in leaving]
                    ),
                )
            ]
        if group.state is S.DEAD:
            return error(E.COORDINATOR_NOT_AVAILABLE)

        actions: list[Action] = []
        results: list[dict] = []
        removed_any = False
        for member_id, instance_id in leaving:
            if member_id == "":
                # Admin tools remove static members by instance id alone.
                current = group.static_member_id(instance_id)
                if current is not None:
                    actions += self._drop_member(group, current)
                    results.append(R.leave_member(member_id, instance_id))
                    removed_any = True
                else:
                    results.append(R.leave_member(member_id, instance_id, E.UNKNOWN_MEMBER_ID))
            elif member_id in group.pending_members:
                group.remove(member_id)
                self._runtime.cancel_timer((_HEARTBEAT, group_id, member_id))
                results.append(R.leave_member(member_id, instance_id))
                removed_any = True
            else:
                err = group.member_error(member_id, instance_id)
                if err is None:
                    actions += self._drop_member(group, member_id)
                    results.append(R.leave_member(member_id, instance_id))
                    removed_any = True
                else:
                    results.append(R.leave_member(member_id, instance_id, err))

        if removed_any:
            if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
                actions += self._maybe_prepare_rebalance_or_complete_join(group, now_ms)
            elif group.state is S.PREPARING_REBALANCE:
                actions += self._maybe_complete_join_phase(group, now_ms)

        persists = [a for a in actions if isinstance(a, Persist)]
        if not persists:
            actions.append(Reply(token, R.leave_group(v, members=results)))
            return actions

        # The group emptied and its new generation is being written: as in
        # Kafka, the answer waits for that write.
        def done(errors: dict[int, ErrorCode], _now: int) -> list[Action]:
            if errors:
                code = append_error_to_response_error(next(iter(errors.values())))
                return [Reply(token, R.leave_group(v, code))]
            return [Reply(token, R.leave_group(v, members=results))]

        self._runtime.after_all(persists, done)
        return actions

    # =========================================================================
    # Shared steps: timers, replies, records
    # =========================================================================

    def schedule_heartbeat(
        self, group: Group, member: Member, now_ms: int, timeout_ms: int | None = None
    ) -> None:
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        self._schedule_member_expiry(group.group_id, member.member_id, now_ms + timeout)

    def _schedule_member_expiry(self, group_id: str, member_id: str, deadline: int) -> None:
        """The member (or pending member) goes at `deadline` unless it heartbeats."""
        self._runtime.schedule(
            (_HEARTBEAT, group_id, member_id),
            deadline,
            lambda now_ms: self._expire_heartbeat(group_id, member_id, now_ms),
        )

    def _schedule_join_end(self, group_id: str, deadline: int) -> None:
        """The join phase ends at `deadline` with whoever rejoined."""
        self._runtime.schedule(
            (_JOIN, group_id), deadline, lambda now_ms: self._on_join_timeout(group_id, now_ms)
        )

    def _schedule_initial_delay_end(
        self, group_id: str, deadline: int, delay: int, remaining: int
    ) -> None:
        """A new group's join phase ends at `deadline`, unless members joined meanwhile."""
        self._runtime.schedule(
            (_JOIN, group_id),
            deadline,
            lambda now_ms: self._on_initial_delay_end(group_id, delay, remaining, now_ms),
        )

    def _schedule_sync_expiry(self, group_id: str, deadline: int, generation: int) -> None:
        """Members of `generation` that have not synced by `deadline` are dropped."""
        self._runtime.schedule(
            (_SYNC, group_id),
            deadline,
            lambda now_ms: self._expire_pending_sync(group_id, generation, now_ms),
        )

    @staticmethod
    def _join_error(waiter: Waiter, error: ErrorCode, member_id: str = "") -> Reply:
        return Reply(waiter.token, R.join_group(waiter.version, error, member_id=member_id))

    def _join_success(self, group: Group, member: Member, waiter: Waiter) -> Reply:
        leader = group.is_leader(member.member_id)
        return Reply(
            waiter.token,
            R.join_group(
                waiter.version,
                member_id=member.member_id,
                generation_id=group.generation,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=group.leader_id or "",
                members=group.join_response_members() if leader else [],
            ),
        )

    def _drop_member(
        self, group: Group, member_id: str, join_error: ErrorCode = E.UNKNOWN_MEMBER_ID
    ) -> list[Action]:
        """Remove a member and answer whatever it has parked.

        Kafka answers a parked JoinGroup with UNKNOWN_MEMBER_ID and leaves a
        parked SyncGroup unanswered; here it gets UNKNOWN_MEMBER_ID too, so the
        broker never holds a request forever.
        """
        actions: list[Action] = []
        member = group.members.get(member_id)
        if member is not None:
            waiter = group.take_join_waiter(member)
            if waiter is not None:
                actions.append(self._join_error(waiter, join_error))
            waiter = group.take_sync_waiter(member)
            if waiter is not None:
                actions.append(Reply(waiter.token, R.sync_group(E.UNKNOWN_MEMBER_ID)))
        group.remove(member_id)
        self._runtime.cancel_timer((_HEARTBEAT, group.group_id, member_id))
        return actions

    def _group_metadata_record(self, group: Group, assignment: dict[str, bytes]):
        members = tuple(
            MemberMetadataRecord(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata(group.protocol_name),
                assignment=assignment[m.member_id],
            )
            for m in group.members.values()
        )
        return encode_group_metadata(
            GroupMetadataRecord(
                group.group_id,
                protocol_type=group.protocol_type or "",
                generation=group.generation,
                protocol=group.protocol_name,
                leader=group.leader_id,
                current_state_timestamp=-1
                if group.state_timestamp is None
                else group.state_timestamp,
                members=members,
            )
        )

    def _empty_group_metadata_record(self, group: Group):
        """What Kafka writes when a JoinGroup creates a group and writes nothing else."""
        return encode_group_metadata(
            GroupMetadataRecord(
                group.group_id,
                protocol_type="",
                generation=0,
                current_state_timestamp=-1
                if group.state_timestamp is None
                else group.state_timestamp,
            )
        )

    # =========================================================================
    # The rebalance machinery (Kafka's prepareRebalance & co)
    # =========================================================================

    def _maybe_prepare_rebalance_or_complete_join(self, group: Group, now_ms: int) -> list[Action]:
        if group.can_rebalance:
            return self._prepare_rebalance(group, now_ms)
        return self._maybe_complete_join_phase(group, now_ms)

    def _prepare_rebalance(self, group: Group, now_ms: int) -> list[Action]:
        actions: list[Action] = []
        if group.state is S.COMPLETING_REBALANCE:
            # Members parked in SyncGroup must rejoin.
            actions += self._reset_and_propagate_assignment_error(
                group, E.REBALANCE_IN_PROGRESS, now_ms
            )
        self._remove_sync_expiration(group)
        initial = group.state is S.EMPTY
        if initial:
            # A new group waits group.initial.rebalance.delay.ms for more members.
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms - delay, 0)
            self._schedule_initial_delay_end(group.group_id, now_ms + delay, delay, remaining)
        group.transition(Event.PREPARE_REBALANCE, now_ms)
        log.info(
            "preparing to rebalance group %s with old generation %d",
            group.group_id,
            group.generation,
        )
        if not initial:
            actions += self._maybe_complete_join_else_schedule(group, now_ms)
        return actions

    def _maybe_complete_join_else_schedule(self, group: Group, now_ms: int) -> list[Action]:
        if group.has_all_members_joined:
            return self._complete_join(group, now_ms)
        self._schedule_join_end(group.group_id, now_ms + group.rebalance_timeout_ms)
        return []

    def _maybe_complete_join_phase(self, group: Group, now_ms: int) -> list[Action]:
        if group.state is not S.PREPARING_REBALANCE:
            return []
        if group.previous_state is S.EMPTY:
            return []  # the first rebalance always waits for its delay
        if not group.has_all_members_joined:
            return []
        return self._complete_join(group, now_ms)

    def _on_join_timeout(self, group_id: str, now_ms: int) -> list[Action]:
        group = self._groups.get(group_id)
        if group is None:
            return []
        return self._complete_join(group, now_ms)

    def _on_initial_delay_end(
        self, group_id: str, delay: int, remaining: int, now_ms: int
    ) -> list[Action]:
        group = self._groups.get(group_id)
        if group is None:
            return []
        if group.new_member_added and remaining != 0:
            # Someone joined during the delay: wait once more, at most
            # group.initial.rebalance.delay.ms, within the rebalance timeout.
            group.new_member_added = False
            new_delay = min(self.config.group_initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self._schedule_initial_delay_end(group_id, now_ms + new_delay, new_delay, new_remaining)
            return []
        return self._complete_join(group, now_ms)

    def _complete_join(self, group: Group, now_ms: int) -> list[Action]:
        """End the join phase: drop dynamic members that did not rejoin, start
        the next generation, answer every parked JoinGroup."""
        self._runtime.cancel_timer((_JOIN, group.group_id))
        if group.state is not S.PREPARING_REBALANCE:
            return []
        actions: list[Action] = []
        for member in group.not_yet_rejoined():
            if not member.is_static:
                actions += self._drop_member(group, member.member_id)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait another rebalance timeout for the session
            # timeouts to clear out the silent members.
            log.warning("group %s could not complete rebalance: no member rejoined", group.group_id)
            self._schedule_join_end(group.group_id, now_ms + group.rebalance_timeout_ms)
            return actions
        group.init_next_generation(now_ms)
        # init_next_generation moved group.state on; mypy keeps the narrowing
        # to PREPARING_REBALANCE from the check above.
        if group.state is S.EMPTY:  # type: ignore[comparison-overlap]
            log.info("group %s with generation %d is now empty", group.group_id, group.generation)
            actions.append(
                self._runtime.persist(group.partition, [self._group_metadata_record(group, {})])
            )
            return actions
        log.info(
            "stabilized group %s generation %d with %d members",
            group.group_id,
            group.generation,
            len(group.members),
        )
        for member in group.members.values():
            waiter = group.take_join_waiter(member)
            if waiter is not None:
                actions.append(self._join_success(group, member, waiter))
            self.schedule_heartbeat(group, member, now_ms)
            member.is_new = False
            group.pending_sync.add(member.member_id)
        self._schedule_sync_expiry(
            group.group_id, now_ms + group.rebalance_timeout_ms, group.generation
        )
        return actions

    def _remove_sync_expiration(self, group: Group) -> None:
        group.pending_sync.clear()
        self._runtime.cancel_timer((_SYNC, group.group_id))

    def _remove_pending_sync_member(self, group: Group, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if group.state in (S.DEAD, S.EMPTY, S.PREPARING_REBALANCE) or not group.pending_sync:
            self._runtime.cancel_timer((_SYNC, group.group_id))

    def _expire_pending_sync(self, group_id: str, generation: int, now_ms: int) -> list[Action]:
        group = self._groups.get(group_id)
        if group is None or generation != group.generation:
            return []
        if group.state not in (S.COMPLETING_REBALANCE, S.STABLE) or not group.pending_sync:
            return []
        actions: list[Action] = []
        missing = sorted(group.pending_sync)
        for member_id in missing:
            actions += self._drop_member(group, member_id)
        log.info("group %s removed members that did not sync: %s", group_id, missing)
        return actions + self._prepare_rebalance(group, now_ms)

    def _reset_and_propagate_assignment_error(
        self, group: Group, error: ErrorCode, now_ms: int
    ) -> list[Action]:
        for member in group.members.values():
            member.assignment = b""
        return self._propagate_assignment(group, error, now_ms)

    def _set_and_propagate_assignment(
        self, group: Group, assignment: dict[str, bytes], now_ms: int
    ) -> list[Action]:
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, b"")
        return self._propagate_assignment(group, NONE, now_ms)

    def _propagate_assignment(self, group: Group, error: ErrorCode, now_ms: int) -> list[Action]:
        ok = error == NONE
        actions: list[Action] = []
        for member in group.members.values():
            waiter = group.take_sync_waiter(member)
            if waiter is None:
                continue
            actions.append(
                Reply(
                    waiter.token,
                    R.sync_group(
                        error,
                        protocol_type=group.protocol_type if ok else None,
                        protocol_name=group.protocol_name if ok else None,
                        assignment=member.assignment,
                    ),
                )
            )
            # The session restarts once the member has its assignment.
            self.schedule_heartbeat(group, member, now_ms)
        return actions

    def _expire_heartbeat(self, group_id: str, member_id: str, now_ms: int) -> list[Action]:
        group = self._groups.get(group_id)
        if group is None or group.state is S.DEAD:
            return []
        if member_id in group.pending_members:
            log.info("pending member %s of group %s timed out", member_id, group_id)
            group.remove(member_id)
            if group.state is S.PREPARING_REBALANCE and group.has_all_members_joined:
                return self._complete_join(group, now_ms)
            return []
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return []
        log.info("member %s of group %s failed (session timeout); removing it", member_id, group_id)
        return self._remove_member_and_update_group(group, member, now_ms)

    def _remove_member_and_update_group(
        self, group: Group, member: Member, now_ms: int
    ) -> list[Action]:
        actions = self._drop_member(group, member.member_id)
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            actions += self._maybe_prepare_rebalance_or_complete_join(group, now_ms)
        elif group.state is S.PREPARING_REBALANCE and group.has_all_members_joined:
            actions += self._complete_join(group, now_ms)
        return actions


@dataclass(frozen=True, slots=True)
class _Join:
    """A JoinGroup request, normalized across versions."""

    waiter: Waiter
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]

    @property
    def protocol_names(self) -> set[str]:
        return {name for name, _ in self.protocols}


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current
