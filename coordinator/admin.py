"""DescribeGroups, ListGroups and DeleteGroups: looking at groups and removing them.

`GroupAdmin` answers the admin requests over the groups of `Membership` and
the offsets of `Offsets`. DeleteGroups removes an Empty group and its
offsets at once and writes their tombstones; if that write fails, both come
back (see `Offsets.mark_tombstones`). Groups of partitions not led here, or
still loading, are answered per group with NOT_COORDINATOR /
COORDINATOR_LOAD_IN_PROGRESS; ListGroups waits for every partition to load.
"""

from __future__ import annotations

import logging

from coordinator import responses as R
from coordinator.actions import Action, Reply
from coordinator.membership import Membership
from coordinator.offsets import Offsets
from coordinator.request_context import RequestContext
from coordinator.responses import append_error_to_response_error
from coordinator.runtime import CoordinatorRuntime
from coordinator.state import GroupState
from wire.error_codes import ErrorCode

log = logging.getLogger(__name__)

E = ErrorCode
NONE = ErrorCode.NONE
S = GroupState

_GROUP_TYPES = {"classic", "consumer", "share", "streams"}


class GroupAdmin:
    """The admin requests over the groups and offsets this coordinator serves."""

    def __init__(self, runtime: CoordinatorRuntime, membership: Membership, offsets: Offsets):
        self._runtime = runtime
        self._membership = membership
        self._offsets = offsets

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
