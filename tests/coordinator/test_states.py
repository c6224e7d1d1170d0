"""The group state table, and every transition driven through real requests."""

import pytest

from coordinator.group import Group
from coordinator.state import TRANSITIONS, Event, GroupState, IllegalTransition, next_state
from tests.coordinator.harness import REBALANCE, SESSION, Harness
from wire.error_codes import ErrorCode as E

S = GroupState


def test_state_names_are_spelled_as_kafka_spells_them():
    assert [s.value for s in S] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]


def test_the_table_is_kafkas_graph_of_valid_previous_states():
    # ClassicGroupState: PreparingRebalance <- {Stable, CompletingRebalance, Empty},
    # CompletingRebalance <- {PreparingRebalance}, Stable <- {CompletingRebalance},
    # Empty <- {PreparingRebalance}, Dead <- everything.
    previous: dict[GroupState, set[GroupState]] = {}
    for (before, _), after in TRANSITIONS.items():
        previous.setdefault(after, set()).add(before)
    assert previous == {
        S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
        S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
        S.STABLE: {S.COMPLETING_REBALANCE},
        S.EMPTY: {S.PREPARING_REBALANCE},
        S.DEAD: set(S),
    }


@pytest.mark.parametrize("state", list(S))
@pytest.mark.parametrize("event", list(Event))
def test_a_move_missing_from_the_table_raises(state, event):
    if (state, event) in TRANSITIONS:
        assert next_state("g", state, event) is TRANSITIONS[state, event]
    else:
        with pytest.raises(IllegalTransition):
            next_state("g", state, event)


def test_a_group_refuses_an_illegal_transition_and_keeps_its_state():
    group = Group("g", 0, state_timestamp=0)
    with pytest.raises(IllegalTransition):
        group.transition(Event.ASSIGNMENT_STORED, 5)
    assert group.state is S.EMPTY and group.state_timestamp == 0


def test_transitions_record_the_previous_state_and_the_time():
    group = Group("g", 0, state_timestamp=0)
    group.transition(Event.PREPARE_REBALANCE, 42)
    assert (group.previous_state, group.state, group.state_timestamp) == (
        S.EMPTY,
        S.PREPARING_REBALANCE,
        42,
    )


# --- driven through the coordinator ---------------------------------------------------


def test_empty_to_preparing_when_the_first_member_joins():
    h = Harness()
    mid = h.join_new_member("g")
    assert h.state("g") == "Empty"  # a pending member id is not yet a member
    h.join("g", mid)
    assert h.state("g") == "PreparingRebalance"


def test_preparing_to_completing_when_the_join_phase_ends_then_stable_after_the_leaders_sync():
    h = Harness()
    mid = h.join_new_member("g")
    t = h.join("g", mid)
    h.advance(3000)
    assert h.reply(t)["generation_id"] == 1
    assert h.state("g") == "CompletingRebalance"
    h.hold_writes = True
    t = h.sync("g", mid, 1, {mid: b"x"})
    assert h.state("g") == "CompletingRebalance"  # until the assignment is durable
    assert not h.answered(t)
    h.complete_writes()
    assert h.state("g") == "Stable"
    assert h.reply(t)["assignment"] == b"x"


def test_stable_to_preparing_when_the_leader_rejoins():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    h.join("g", leader)
    assert h.state("g") == "PreparingRebalance"
    assert h.hb_error("g", follower, gen) == E.REBALANCE_IN_PROGRESS


def test_stable_to_preparing_when_a_member_leaves():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    assert h.reply(h.leave("g", follower))["members"][0]["error_code"] == E.NONE
    assert h.state("g") == "PreparingRebalance"


def test_completing_to_preparing_when_a_new_member_joins_and_parked_syncs_are_told_to_rejoin():
    h = Harness()
    m1 = h.join_new_member("g")
    m2 = h.join_new_member("g")
    t1, _t2 = h.join("g", m1), h.join("g", m2)
    h.advance_until(lambda: h.answered(t1))
    leader = h.reply(t1)["leader"]
    follower = m2 if leader == m1 else m1
    sync = h.sync("g", follower, 1)  # parked: the leader has not synced
    assert not h.answered(sync)
    m3 = h.join_new_member("g")
    h.join("g", m3)
    assert h.state("g") == "PreparingRebalance"
    assert h.reply(sync)["error_code"] == E.REBALANCE_IN_PROGRESS


def test_completing_to_preparing_when_a_member_does_not_sync_within_the_rebalance_timeout():
    h = Harness()
    m1 = h.join_new_member("g")
    m2 = h.join_new_member("g")
    t1, _t2 = h.join("g", m1), h.join("g", m2)
    h.advance_until(lambda: h.answered(t1))
    leader = h.reply(t1)["leader"]
    follower = m2 if leader == m1 else m1
    sync = h.sync("g", follower, 1)  # parked; the leader never sends its assignment
    for _ in range(REBALANCE // 5000 - 1):
        h.advance(5000)
        assert h.hb_error("g", leader, 1) == E.NONE
    assert h.state("g") == "CompletingRebalance"
    h.advance(5000)
    assert h.state("g") == "PreparingRebalance"
    assert leader not in h.coord.group("g").members
    assert h.reply(sync)["error_code"] == E.REBALANCE_IN_PROGRESS


def test_preparing_to_empty_when_every_member_leaves():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    t = h.leave("g", leader, follower)
    assert h.reply(t)["members"] == [
        {"member_id": leader, "group_instance_id": None, "error_code": 0},
        {"member_id": follower, "group_instance_id": None, "error_code": 0},
    ]
    assert h.state("g") == "Empty"
    assert h.coord.group("g").generation == gen + 1


def test_preparing_to_empty_when_every_member_times_out():
    h = Harness()
    (leader,), gen = h.form_group("g", 1)
    h.advance(SESSION)
    assert h.state("g") == "Empty"


def test_empty_to_dead_on_delete():
    h = Harness()
    h.run([])
    h.reply(h.commit("g", {("t", 0): 1}))
    assert h.state("g") == "Empty"
    assert h.delete_groups("g") == {"g": E.NONE}
    assert h.state("g") == "Dead"  # unknown groups describe as Dead
    assert h.coord.group("g") is None


@pytest.mark.parametrize("target", ["PreparingRebalance", "CompletingRebalance", "Stable"])
def test_any_state_to_dead_when_the_partition_is_unloaded(target):
    h = Harness()
    mid = h.join_new_member("g")
    t = h.join("g", mid)
    if target != "PreparingRebalance":
        h.advance(3000)
    if target == "Stable":
        h.sync("g", mid, 1, {mid: b""})
    group = h.coord.group("g")
    assert group.state.value == target
    h.run(h.coord.unload(h.coord.partition_for("g"), h.now))
    assert group.state is S.DEAD
    assert h.coord.group("g") is None
    if target == "PreparingRebalance":
        assert h.reply(t)["error_code"] == E.NOT_COORDINATOR


def test_a_rejoining_member_in_empty_state_is_unknown():
    h = Harness()
    h.reply(h.commit("g", {("t", 0): 1}))
    r = h.reply(h.join("g", "ghost"))
    assert r["error_code"] == E.UNKNOWN_MEMBER_ID


def test_sync_and_heartbeat_in_empty_state_are_unknown_member():
    h = Harness()
    h.reply(h.commit("g", {("t", 0): 1}))
    assert h.reply(h.sync("g", "ghost", 0))["error_code"] == E.UNKNOWN_MEMBER_ID
    assert h.hb_error("g", "ghost", 0) == E.UNKNOWN_MEMBER_ID
