"""Static membership (group.instance.id, KIP-345)."""

import dataclasses

from tests.coordinator.harness import (
    REBALANCE,
    SESSION,
    TEST_CONFIG,
    Harness,
    assignment,
    subscription,
)
from wire.error_codes import ErrorCode as E


def test_a_static_member_joins_without_member_id_required_and_its_id_starts_with_the_instance():
    h = Harness()
    t = h.join("g", instance="host-a")
    h.advance(3000)
    r = h.reply(t)
    assert r["error_code"] == E.NONE
    assert r["member_id"] == "host-a-uuid1"
    assert r["members"][0]["group_instance_id"] == "host-a"


def test_a_restarted_static_follower_rejoins_without_a_rebalance_and_keeps_its_assignment():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2, static=True)
    instance = h.instance_of("g", follower)
    old_assignment = h.coord.group("g").members[follower].assignment
    h.hold_writes = True
    t = h.join("g", instance=instance)  # restarted: no member id
    assert not h.answered(t)  # the new member id is persisted first
    assert h.state("g") == "Stable"
    h.complete_writes()
    r = h.reply(t)
    new_id = r["member_id"]
    assert new_id != follower and new_id.startswith(instance + "-")
    assert (r["error_code"], r["generation_id"], r["leader"]) == (E.NONE, gen, leader)
    assert h.state("g") == "Stable"
    sync = h.reply(h.sync("g", new_id, gen, instance=instance))
    assert sync["assignment"] == old_assignment
    # Nobody else noticed anything.
    assert h.hb_error("g", leader, gen, instance=h.instance_of("g", leader)) == E.NONE


def test_the_old_member_id_of_a_restarted_static_member_is_fenced():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2, static=True)
    instance = h.instance_of("g", follower)
    new_id = h.reply(h.join("g", instance=instance))["member_id"]
    assert h.hb_error("g", follower, gen, instance=instance) == E.FENCED_INSTANCE_ID
    r = h.reply(h.commit("g", {("t", 0): 1}, generation=gen, member_id=follower, instance=instance))
    assert r["topics"][0]["partitions"][0]["error_code"] == E.FENCED_INSTANCE_ID
    assert h.reply(h.sync("g", follower, gen, instance=instance))["error_code"] == (
        E.FENCED_INSTANCE_ID
    )
    assert h.hb_error("g", new_id, gen, instance=instance) == E.NONE


def test_a_duplicate_instance_fences_the_parked_requests_of_the_one_it_replaces():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2, static=True)
    instance = h.instance_of("g", follower)
    leader_instance = h.instance_of("g", leader)
    h.join("g", leader, instance=leader_instance)  # rebalance: the leader is parked
    parked = h.join("g", follower, instance=instance)
    assert h.answered(parked)  # all rejoined: generation gen + 1
    parked_sync = h.sync("g", follower, gen + 1, instance=instance)
    assert not h.answered(parked_sync)
    duplicate = h.join("g", instance=instance)  # same instance id, new process
    assert h.reply(parked_sync)["error_code"] == E.FENCED_INSTANCE_ID
    # CompletingRebalance: the leader may be assigning to the old id, so start over.
    assert h.state("g") == "PreparingRebalance"
    h.join("g", leader, instance=leader_instance)
    assert h.reply(duplicate)["generation_id"] == gen + 2


def test_a_restarted_static_leader_on_join_v9_learns_it_leads_but_skips_the_assignment():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2, static=True, version=9)
    instance = h.instance_of("g", leader)
    r = h.reply(h.join("g", instance=instance, version=9))
    new_id = r["member_id"]
    assert r["leader"] == new_id and r["skip_assignment"] is True
    assert {m["member_id"] for m in r["members"]} == {new_id, follower}
    assert h.state("g") == "Stable"


def test_a_restarted_static_leader_before_join_v9_is_told_the_old_leader_id():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2, static=True, version=8)
    instance = h.instance_of("g", leader)
    r = h.reply(h.join("g", instance=instance, version=8))
    assert r["leader"] == leader != r["member_id"]  # so it acts as a follower
    assert r["skip_assignment"] is False and r["members"] == []
    assert h.coord.group("g").leader_id == r["member_id"]


def test_a_static_member_restarting_with_a_protocol_that_changes_the_choice_rebalances():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2, static=True)
    sub = subscription("t")
    both = [("roundrobin", sub), ("range", sub)]
    # Still compatible (range is common) but now prefers roundrobin: the vote ties
    # 1-1, still range; with both members preferring roundrobin the choice changes.
    h.reply(h.join("g", instance=h.instance_of("g", follower), protocols=both))
    assert h.state("g") == "Stable"
    h.join("g", instance=h.instance_of("g", leader), protocols=both)
    assert h.state("g") == "PreparingRebalance"


def test_a_persist_failure_reverts_a_static_members_new_id():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2, static=True)
    instance = h.instance_of("g", follower)
    h.hold_writes = True
    t = h.join("g", instance=instance)
    h.complete_writes(E.NOT_LEADER_OR_FOLLOWER)
    r = h.reply(t)
    assert (r["error_code"], r["member_id"]) == (E.NOT_COORDINATOR, "")
    assert h.coord.group("g").static_members[instance] == follower
    assert h.hb_error("g", follower, gen, instance=instance) == E.NONE


def test_static_members_that_miss_the_join_phase_stay_in_the_group():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2, static=True)
    t = h.join("g", leader, instance=h.instance_of("g", leader))
    for _ in range(REBALANCE // 5000):
        # Alive (it heartbeats) but it does not rejoin in time.
        h.heartbeat("g", follower, gen, instance=h.instance_of("g", follower))
        h.advance(5000)
    r = h.reply(t)
    # Unlike a dynamic member, the static follower is still listed for the leader.
    assert {m["member_id"] for m in r["members"]} == {leader, follower}
    assert r["generation_id"] == gen + 1


def test_a_static_member_can_rejoin_with_its_member_id_and_instance():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2, static=True)
    r = h.reply(h.join("g", follower, instance=h.instance_of("g", follower)))
    assert (r["error_code"], r["generation_id"]) == (E.NONE, gen)
    r = h.reply(h.join("g", follower, instance="someone-else"))
    assert r["error_code"] == E.UNKNOWN_MEMBER_ID


def test_leave_by_instance_id_removes_static_members_in_a_batch():
    # What kafka-consumer-groups --delete-members / AdminClient.removeMembersFromConsumerGroup send.
    h = Harness()
    (a, b, c), gen = h.form_group("g", 3, static=True)
    ia, ib = h.instance_of("g", a), h.instance_of("g", b)
    r = h.reply(h.leave("g", ("", ia), ("", ib), ("", "no-such-instance"), (c, ia)))
    assert [(m["member_id"], m["group_instance_id"], m["error_code"]) for m in r["members"]] == [
        ("", ia, E.NONE),
        ("", ib, E.NONE),
        ("", "no-such-instance", E.UNKNOWN_MEMBER_ID),
        (c, ia, E.UNKNOWN_MEMBER_ID),  # ia is gone already
    ]
    assert set(h.coord.group("g").members) == {c}
    assert h.state("g") == "PreparingRebalance"


def test_leaving_with_the_wrong_instance_for_a_member_is_fenced():
    h = Harness()
    (a, b), gen = h.form_group("g", 2, static=True)
    r = h.reply(h.leave("g", (a, h.instance_of("g", b))))
    assert r["members"][0]["error_code"] == E.FENCED_INSTANCE_ID


def test_a_silent_static_member_is_still_removed_after_its_session_timeout():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2, static=True)
    h.advance(SESSION - 1)
    h.heartbeat("g", leader, gen, instance=h.instance_of("g", leader))
    h.advance(1)
    assert follower not in h.coord.group("g").members
    assert h.state("g") == "PreparingRebalance"


# -- a second static member joining just after the first generation formed --------------
# Two static members subscribing a few ms apart with group.initial.rebalance.delay.ms=0:
# the first may get generation 1 alone. Whichever window the second JoinGroup lands in,
# Kafka's GroupMetadataManager makes the first member rejoin at once and completes
# generation 2 as soon as both have joined: nothing waits for a session or rebalance
# timeout. These tests hold Gregor to each window.

NO_DELAY = dataclasses.replace(TEST_CONFIG, group_initial_rebalance_delay_ms=0)


def _first_generation_alone(h: Harness) -> tuple[int, str]:
    first = h.join("g", instance="first")
    h.advance(0)  # the initial delay of 0 ms ends the join phase with one member
    r = h.reply(first)
    assert (r["error_code"], r["generation_id"], r["leader"]) == (E.NONE, 1, r["member_id"])
    assert h.state("g") == "CompletingRebalance"
    return r["generation_id"], r["member_id"]


def _both_in_generation_2(h: Harness, second: int, rejoin: int) -> None:
    for token in (second, rejoin):
        r = h.reply(token)
        assert (r["error_code"], r["generation_id"]) == (E.NONE, 2), r
    assert h.state("g") == "CompletingRebalance"
    assert len(h.coord.group("g").members) == 2


def test_a_static_member_joining_before_the_leaders_assignment_makes_it_rejoin_at_once():
    h = Harness(NO_DELAY)
    gen, first = _first_generation_alone(h)
    second = h.join("g", instance="second")
    assert h.state("g") == "PreparingRebalance" and not h.answered(second)
    sync = h.reply(h.sync("g", first, gen, {first: assignment(t=[0, 1])}, instance="first"))
    assert sync["error_code"] == E.REBALANCE_IN_PROGRESS
    _both_in_generation_2(h, second, h.join("g", first, instance="first"))


def test_a_static_member_joining_while_the_assignment_is_written_fails_the_leaders_sync():
    h = Harness(NO_DELAY)
    gen, first = _first_generation_alone(h)
    h.hold_writes = True
    sync = h.sync("g", first, gen, {first: assignment(t=[0, 1])}, instance="first")
    assert not h.answered(sync)  # parked until the assignment is stored
    second = h.join("g", instance="second")
    # Answered at once, not when the write completes: the assignment is void.
    assert h.reply(sync)["error_code"] == E.REBALANCE_IN_PROGRESS
    h.complete_writes()
    assert h.state("g") == "PreparingRebalance"
    _both_in_generation_2(h, second, h.join("g", first, instance="first"))


def test_a_static_member_joining_a_stable_group_is_answered_once_the_leader_rejoins():
    h = Harness(NO_DELAY)
    gen, first = _first_generation_alone(h)
    h.reply(h.sync("g", first, gen, {first: assignment(t=[0, 1])}, instance="first"))
    assert h.state("g") == "Stable"
    second = h.join("g", instance="second")
    assert h.hb_error("g", first, gen, instance="first") == E.REBALANCE_IN_PROGRESS
    _both_in_generation_2(h, second, h.join("g", first, instance="first"))
