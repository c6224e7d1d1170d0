"""The states of a classic group and the events that move it, as one table.

    Empty ──PREPARE_REBALANCE──► PreparingRebalance ──JOIN_COMPLETE──► CompletingRebalance
      ▲                            │      ▲      ▲                        │        │
      └──────ALL_MEMBERS_GONE──────┘      │      └───PREPARE_REBALANCE────┘        │
                                          │                          ASSIGNMENT_STORED
                                          └──PREPARE_REBALANCE── Stable ◄──────────┘
    any state ──REMOVE──► Dead

Kafka keeps the same graph as "valid previous states" per state
(ClassicGroupState); here it is keyed by event, as h11 keys its connection
states, so a missing entry is a bug in the coordinator (IllegalTransition),
never a silent move. What each state means to requests:

- Empty: no members (a group used only for offsets, or one whose members all
  left). JoinGroup from a new member starts the first rebalance, which waits
  group.initial.rebalance.delay.ms for more members. Offsets expire here.
- PreparingRebalance: JoinGroups are parked until every known member has
  rejoined or the rebalance timeout passes. Heartbeats and SyncGroups get
  REBALANCE_IN_PROGRESS; commits from the previous generation are accepted.
- CompletingRebalance: the join phase produced a generation and a leader; the
  coordinator waits for the leader's SyncGroup with the assignment. Followers'
  SyncGroups are parked; commits get REBALANCE_IN_PROGRESS.
- Stable: the assignment is persisted and handed out; heartbeats answer NONE,
  a rejoining leader or a member with changed metadata starts a rebalance.
- Dead: deleted, expired or unloaded; the group object is gone from the
  coordinator right after.
"""

from __future__ import annotations

from enum import Enum


class GroupState(Enum):
    """A classic group's state; the value is Kafka's spelling (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def lower(self) -> str:
        """The lower-case name ListGroups' states filter is matched against."""
        return self.value.lower()


class Event(Enum):
    # A member joins an Empty group, leaves, fails, or changes its metadata, or the
    # leader rejoins a Stable group, or the leader's assignment could not be stored.
    PREPARE_REBALANCE = "prepare_rebalance"
    # The join phase ended with members: new generation, wait for the assignment.
    JOIN_COMPLETE = "join_complete"
    # The join phase ended with no members left.
    ALL_MEMBERS_GONE = "all_members_gone"
    # The leader's assignment was persisted.
    ASSIGNMENT_STORED = "assignment_stored"
    # DeleteGroups, offset expiry of an empty group, or the partition was unloaded.
    REMOVE = "remove"


S, E = GroupState, Event

TRANSITIONS: dict[tuple[GroupState, Event], GroupState] = {
    (S.EMPTY, E.PREPARE_REBALANCE): S.PREPARING_REBALANCE,
    (S.STABLE, E.PREPARE_REBALANCE): S.PREPARING_REBALANCE,
    (S.COMPLETING_REBALANCE, E.PREPARE_REBALANCE): S.PREPARING_REBALANCE,
    (S.PREPARING_REBALANCE, E.JOIN_COMPLETE): S.COMPLETING_REBALANCE,
    (S.PREPARING_REBALANCE, E.ALL_MEMBERS_GONE): S.EMPTY,
    (S.COMPLETING_REBALANCE, E.ASSIGNMENT_STORED): S.STABLE,
    (S.EMPTY, E.REMOVE): S.DEAD,
    (S.PREPARING_REBALANCE, E.REMOVE): S.DEAD,
    (S.COMPLETING_REBALANCE, E.REMOVE): S.DEAD,
    (S.STABLE, E.REMOVE): S.DEAD,
    (S.DEAD, E.REMOVE): S.DEAD,
}

del S, E


class IllegalTransition(Exception):
    """The coordinator tried a move the table does not allow (a local bug)."""

    def __init__(self, group_id: str, state: GroupState, event: Event):
        super().__init__(
            f"group {group_id!r}: no transition for {event.name} in state {state.value}"
        )
        self.group_id = group_id
        self.state = state
        self.event = event


def next_state(group_id: str, state: GroupState, event: Event) -> GroupState:
    try:
        return TRANSITIONS[state, event]
    except KeyError:
        raise IllegalTransition(group_id, state, event) from None


def allows(state: GroupState, event: Event) -> bool:
    return (state, event) in TRANSITIONS
