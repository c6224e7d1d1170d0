"""A classic group and its members: bookkeeping only, no requests, no timers.

The rules are Kafka's ClassicGroup/ClassicGroupMember (group-coordinator
module, 4.x). Parked JoinGroup/SyncGroup requests are `Waiter`s (the caller's
opaque token and the request's version); the coordinator turns them into
replies. Members are kept in insertion order, which decides who becomes the
next leader when the leader goes (Kafka takes the first of a HashMap).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from coordinator.consumer_protocol import PROTOCOL_TYPE, subscribed_topics
from coordinator.state import Event, GroupState, allows, next_state
from wire.error_codes import ErrorCode
from wire.errors import DecodeError

Protocols = list[tuple[str, bytes]]


class Waiter(NamedTuple):
    """A parked request: the caller's token and the request's api version."""

    token: Any
    version: int


@dataclass(eq=False, slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols  # (name, metadata) in the member's order of preference
    assignment: bytes = b""
    join_waiter: Waiter | None = None
    sync_waiter: Waiter | None = None
    # Added in the current join phase: its heartbeat is never "satisfied" by
    # waiting, so a new member whose JoinGroup hangs can still be expired.
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    def has_satisfied_heartbeat(self) -> bool:
        """A member parked in JoinGroup or SyncGroup does not need to heartbeat."""
        if self.is_new:
            return False
        return self.awaiting_join or self.awaiting_sync

    def metadata(self, protocol: str | None) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise ValueError(f"member {self.member_id} does not support protocol {protocol!r}")

    def matches(self, protocols: Protocols) -> bool:
        """Same protocols, same order, same metadata (Kafka compares the collections)."""
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    @property
    def protocol_names(self) -> set[str]:
        return {name for name, _ in self.protocols}


@dataclass(eq=False)
class Group:
    group_id: str
    partition: int
    state_timestamp: int | None  # ms of the last transition; None if unknown (old records)
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState = GroupState.DEAD
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_members: set[str] = field(default_factory=set)  # got MEMBER_ID_REQUIRED
    pending_sync: set[str] = field(default_factory=set)  # joined, SyncGroup not seen yet
    num_awaiting_join: int = 0
    # Set when a member joins during the first rebalance: extends the initial delay.
    new_member_added: bool = False
    subscribed_topics: frozenset[str] | None = None
    _protocol_counts: dict[str, int] = field(default_factory=dict)

    # --- state ---------------------------------------------------------------

    def transition(self, event: Event, now_ms: int) -> None:
        new = next_state(self.group_id, self.state, event)
        self.previous_state = self.state
        self.state = new
        self.state_timestamp = now_ms

    @property
    def can_rebalance(self) -> bool:
        return allows(self.state, Event.PREPARE_REBALANCE)

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    @property
    def is_empty_state(self) -> bool:
        return self.state is GroupState.EMPTY

    @property
    def is_simple(self) -> bool:
        """A group used only for offsets (Kafka's "simple" group)."""
        return self.protocol_type is None and self.is_empty_state and not self.pending_members

    @property
    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == PROTOCOL_TYPE

    # --- membership ----------------------------------------------------------

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    def add(self, member: Member, waiter: Waiter | None = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise AssertionError(
                    f"static member {member.group_instance_id} is already in {self.group_id}"
                )
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type:
            raise AssertionError("the group and member's protocol type must be the same")
        if not self.supports_protocols(member.protocol_type, member.protocol_names):
            raise AssertionError("none of the member's protocols can be supported")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._count_protocols(member, +1)
        member.join_waiter = waiter
        if waiter is not None:
            self.num_awaiting_join += 1
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        """Drop a member (or a pending member id). Parked requests are the caller's."""
        member = self.members.pop(member_id, None)
        if member is not None:
            self._count_protocols(member, -1)
            if member.awaiting_join:
                self.num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync.discard(member_id)
        return member

    def take_join_waiter(self, member: Member) -> Waiter | None:
        waiter = member.join_waiter
        if waiter is not None:
            member.join_waiter = None
            self.num_awaiting_join -= 1
        return waiter

    @staticmethod
    def take_sync_waiter(member: Member) -> Waiter | None:
        waiter = member.sync_waiter
        member.sync_waiter = None
        return waiter

    def update_member(
        self,
        member: Member,
        protocols: Protocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        waiter: Waiter | None,
    ) -> Waiter | None:
        """New protocols/timeouts and a new parked JoinGroup (or none); returns
        the JoinGroup this one supersedes, if the member was already parked."""
        self._count_protocols(member, -1)
        member.protocols = protocols
        self._count_protocols(member, +1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        superseded = member.join_waiter
        if waiter is not None and superseded is None:
            self.num_awaiting_join += 1
        elif waiter is None and superseded is not None:
            self.num_awaiting_join -= 1
        member.join_waiter = waiter
        return superseded

    def replace_static_member(
        self, instance_id: str, old_id: str, new_id: str
    ) -> tuple[Member, Waiter | None, Waiter | None]:
        """Give a static member a new member id, keeping everything else.

        Returns the new member and the old member's parked JoinGroup and
        SyncGroup, which the caller fences (FENCED_INSTANCE_ID).
        """
        old = self.members.pop(old_id)
        fenced_join = self.take_join_waiter(old)
        fenced_sync = self.take_sync_waiter(old)
        new = Member(
            member_id=new_id,
            group_instance_id=old.group_instance_id,
            client_id=old.client_id,
            client_host=old.client_host,
            rebalance_timeout_ms=old.rebalance_timeout_ms,
            session_timeout_ms=old.session_timeout_ms,
            protocol_type=old.protocol_type,
            protocols=old.protocols,
            assignment=old.assignment,
        )
        self.members[new_id] = new
        if self.is_leader(old_id):
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        return new, fenced_join, fenced_sync

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def member_error(self, member_id: str, instance_id: str | None) -> ErrorCode | None:
        """Kafka's validateMember: None when valid, else UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.awaiting_join]

    @property
    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, or pick a member that did; False if none did."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # --- protocols -----------------------------------------------------------

    def _count_protocols(self, member: Member, delta: int) -> None:
        for name, _ in member.protocols:
            self._protocol_counts[name] = self._protocol_counts.get(name, 0) + delta

    def supports_protocols(self, protocol_type: str, names: set[str]) -> bool:
        if self.is_empty_state:
            return bool(protocol_type) and bool(names)
        n = len(self.members)
        return self.protocol_type == protocol_type and any(
            self._protocol_counts.get(name, 0) == n for name in names
        )

    def select_protocol(self) -> str:
        """The protocol every member supports that most members prefer."""
        if not self.members:
            raise AssertionError("cannot select a protocol for an empty group")
        n = len(self.members)
        candidates = {name for name, count in self._protocol_counts.items() if count == n}
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=votes.__getitem__)

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        if self.protocol_type != PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in self.members.values():
                topics |= subscribed_topics(member.metadata(self.protocol_name))
        except DecodeError:
            return None
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Unknown subscriptions count as subscribed only for consumer groups."""
        if self.subscribed_topics is None:
            return self.uses_consumer_protocol
        return topic in self.subscribed_topics

    # --- generations -----------------------------------------------------------

    def init_next_generation(self, now_ms: int) -> None:
        self.generation += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition(Event.JOIN_COMPLETE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition(Event.ALL_MEMBERS_GONE, now_ms)
        self.pending_sync.clear()

    def join_response_members(self) -> list[dict]:
        """The members and their metadata for the chosen protocol (the leader's JoinGroup)."""
        return [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "metadata": m.metadata(self.protocol_name),
            }
            for m in self.members.values()
        ]

    def assignments(self) -> dict[str, bytes]:
        return {m.member_id: m.assignment for m in self.members.values()}
