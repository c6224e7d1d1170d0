"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup for dynamic members."""

import dataclasses

import pytest

from coordinator.consumer_protocol import subscribed_topics
from tests.coordinator.harness import (
    REBALANCE,
    SESSION,
    TEST_CONFIG,
    Harness,
    assignment,
    subscription,
)
from wire.error_codes import ErrorCode as E

# --- MEMBER_ID_REQUIRED ------------------------------------------------------------------


def test_first_join_from_v4_gets_member_id_required_with_client_id_dash_uuid():
    h = Harness()
    r = h.reply(h.join("g", client_id="consumer-7", version=4))
    assert r["error_code"] == E.MEMBER_ID_REQUIRED
    assert r["member_id"] == "consumer-7-uuid1"
    assert r["generation_id"] == -1
    # The member then joins with that id and is admitted.
    t = h.join("g", r["member_id"], version=4)
    h.advance(3000)
    assert h.reply(t)["error_code"] == E.NONE
    assert h.reply(t)["member_id"] == "consumer-7-uuid1"


def test_member_ids_use_a_java_style_uuid_by_default():
    from coordinator import GroupCoordinator

    h = Harness()
    h.coord = GroupCoordinator(TEST_CONFIG)
    h.run(h.coord.load(h.coord.partition_for("g"), [], 0))
    member_id = h.reply(h.join("g", client_id="c"))["member_id"]
    prefix, _, uuid = member_id.partition("-")
    assert prefix == "c" and len(uuid) == 36 and uuid.count("-") == 4


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_joins_before_v4_are_admitted_without_member_id_required(version):
    h = Harness()
    t = h.join("g", version=version)
    assert not h.answered(t)
    h.advance(3000)
    r = h.reply(t)
    assert r["error_code"] == E.NONE and r["member_id"] == "client-uuid1"
    assert r["leader"] == r["member_id"]


def test_join_v0_uses_the_session_timeout_as_rebalance_timeout():
    h = Harness()
    h.join("g", version=0, session=5000, rebalance=99999)
    (member,) = h.coord.group("g").members.values()
    assert member.rebalance_timeout_ms == 5000


def test_a_pending_member_that_never_rejoins_expires_after_its_session_timeout():
    h = Harness()
    (leader,), gen = h.form_group("g", 1)
    pending = h.join_new_member("g")
    assert pending in h.coord.group("g").pending_members
    h.advance(SESSION)
    assert pending not in h.coord.group("g").pending_members
    assert h.reply(h.join("g", pending))["error_code"] == E.UNKNOWN_MEMBER_ID


def test_a_pending_member_holds_back_the_join_phase_until_it_rejoins_or_expires():
    h = Harness()
    (leader,), gen = h.form_group("g", 1)
    t = h.join("g", leader)  # the leader rejoins: rebalance; it is the only member
    assert h.answered(t)  # everyone known has joined: completes at once
    h.sync("g", leader, gen + 1, {leader: b""})
    pending = h.join_new_member("g")
    t = h.join("g", leader)
    assert not h.answered(t)  # waits for the pending member
    t2 = h.join("g", pending)
    assert h.reply(t)["generation_id"] == gen + 2
    assert h.reply(t2)["generation_id"] == gen + 2


# --- three members ------------------------------------------------------------------------


def test_three_members_leader_gets_all_metadata_and_each_sync_returns_its_assignment():
    h = Harness()
    topics = {0: ("a",), 1: ("b",), 2: ("a", "c")}
    ids = [h.join_new_member("g", topics=topics[i]) for i in range(3)]
    tokens = [h.join("g", mid, topics=topics[i]) for i, mid in enumerate(ids)]
    h.advance_until(lambda: all(h.answered(t) for t in tokens))
    replies = {mid: h.reply(t) for mid, t in zip(ids, tokens, strict=True)}
    leader = replies[ids[0]]["leader"]
    assert leader == ids[0]  # the first member to join leads
    for mid, r in replies.items():
        assert r["error_code"] == E.NONE
        assert r["generation_id"] == 1
        assert r["protocol_name"] == "range"
        assert r["protocol_type"] == "consumer"
        assert r["leader"] == leader
        assert r["member_id"] == mid
    metadata = {m["member_id"]: m["metadata"] for m in replies[leader]["members"]}
    assert set(metadata) == set(ids)
    assert {mid: subscribed_topics(md) for mid, md in metadata.items()} == {
        ids[i]: frozenset(topics[i]) for i in range(3)
    }
    assert all(replies[m]["members"] == [] for m in ids[1:])

    plan = {ids[0]: assignment(a=[0]), ids[1]: assignment(b=[0]), ids[2]: assignment(c=[0])}
    follower_syncs = [h.sync("g", m, 1) for m in ids[1:]]
    assert not any(h.answered(t) for t in follower_syncs)  # parked until the leader syncs
    leader_sync = h.sync("g", leader, 1, plan)
    for mid, t in zip(ids, [leader_sync, *follower_syncs], strict=True):
        r = h.reply(t)
        assert r["error_code"] == E.NONE
        assert r["assignment"] == plan[mid]
        assert (r["protocol_type"], r["protocol_name"]) == ("consumer", "range")
    # A SyncGroup once Stable returns the stored assignment again.
    assert h.reply(h.sync("g", ids[2], 1))["assignment"] == plan[ids[2]]


def test_members_missing_from_the_leaders_assignment_get_an_empty_one():
    h = Harness()
    a = h.join_new_member("g")
    b = h.join_new_member("g")
    ta, _tb = h.join("g", a), h.join("g", b)
    h.advance_until(lambda: h.answered(ta))
    sb = h.sync("g", b, 1)
    h.sync("g", a, 1, {a: b"mine"})
    assert h.reply(sb)["assignment"] == b""


def test_the_leaders_sync_is_answered_only_once_the_assignment_is_persisted():
    h = Harness()
    a = h.join_new_member("g")
    h.join("g", a)
    h.advance(3000)
    h.hold_writes = True
    t = h.sync("g", a, 1, {a: b"x"})
    assert not h.answered(t)
    (persist,) = h.held
    assert persist.partition == h.coord.partition_for("g")
    h.complete_writes()
    assert h.reply(t)["assignment"] == b"x"


def test_a_failed_assignment_write_fails_the_syncs_and_rebalances():
    h = Harness()
    a = h.join_new_member("g")
    b = h.join_new_member("g")
    ta, _tb = h.join("g", a), h.join("g", b)
    h.advance_until(lambda: h.answered(ta))
    h.hold_writes = True
    sb = h.sync("g", b, 1)
    sa = h.sync("g", a, 1, {a: b"x", b: b"y"})
    h.complete_writes(E.NOT_LEADER_OR_FOLLOWER)
    assert h.reply(sa)["error_code"] == E.NOT_COORDINATOR
    assert h.reply(sb)["error_code"] == E.NOT_COORDINATOR
    assert h.reply(sb)["assignment"] == b""
    assert h.state("g") == "PreparingRebalance"


# --- protocols ---------------------------------------------------------------------------------


def test_the_chosen_protocol_is_supported_by_every_member():
    h = Harness()
    sub = subscription("t")
    a = h.join_new_member("g")
    b = h.join_new_member("g")
    ta = h.join("g", a, protocols=[("range", sub), ("roundrobin", sub)])
    tb = h.join("g", b, protocols=[("roundrobin", sub), ("sticky", sub)])
    h.advance_until(lambda: h.answered(ta))
    assert h.reply(ta)["protocol_name"] == "roundrobin"
    assert h.reply(tb)["protocol_name"] == "roundrobin"


def test_a_member_sharing_no_protocol_with_the_group_is_inconsistent():
    h = Harness()
    a = h.join_new_member("g")
    h.join("g", a, protocols=[("range", b"")])
    r = h.reply(h.join("g", protocols=[("sticky", b"")]))
    assert r["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
    assert r["member_id"] == ""


def test_a_member_with_another_protocol_type_is_inconsistent():
    h = Harness()
    a = h.join_new_member("g")
    h.join("g", a)
    r = h.reply(h.join("g", protocol_type="connect"))
    assert r["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL


def test_the_first_member_needs_a_protocol_type_and_protocols():
    h = Harness()
    assert h.reply(h.join("g", protocol_type=""))["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.reply(h.join("g2", protocols=[]))["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL


def test_sync_with_another_protocol_name_is_inconsistent():
    h = Harness()
    (leader,), gen = h.form_group("g", 1)
    r = h.reply(h.sync("g", leader, gen, version=5, protocol_name="roundrobin"))
    assert r["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
    r = h.reply(h.sync("g", leader, gen, version=5, protocol_type="consumer"))
    assert r["error_code"] == E.NONE and r["protocol_name"] == "range"


# --- request validation --------------------------------------------------------------------------


@pytest.mark.parametrize("session", [TEST_CONFIG.group_min_session_timeout_ms - 1, 600_001])
def test_session_timeouts_outside_the_broker_bounds_are_invalid(session):
    h = Harness()
    r = h.reply(h.join("g", session=session))
    assert r["error_code"] == E.INVALID_SESSION_TIMEOUT
    assert h.coord.group("g") is None


def test_an_empty_group_id_is_invalid_for_group_membership_apis():
    h = Harness()
    assert h.reply(h.join(""))["error_code"] == E.INVALID_GROUP_ID
    assert h.reply(h.sync("", "m", 1))["error_code"] == E.INVALID_GROUP_ID
    assert h.hb_error("", "m", 1) == E.INVALID_GROUP_ID
    assert h.reply(h.leave("", "m"))["error_code"] == E.INVALID_GROUP_ID


def test_joining_an_unknown_group_with_a_member_id_is_unknown_member():
    h = Harness()
    r = h.reply(h.join("nope", "someone"))
    assert r["error_code"] == E.UNKNOWN_MEMBER_ID
    assert r["member_id"] == "someone"


def test_sync_errors_unknown_member_wrong_generation_and_rebalance_in_progress():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    assert h.reply(h.sync("nope", leader, gen))["error_code"] == E.UNKNOWN_MEMBER_ID
    assert h.reply(h.sync("g", "ghost", gen))["error_code"] == E.UNKNOWN_MEMBER_ID
    assert h.reply(h.sync("g", follower, gen + 1))["error_code"] == E.ILLEGAL_GENERATION
    h.join("g", leader)
    assert h.reply(h.sync("g", follower, gen))["error_code"] == E.REBALANCE_IN_PROGRESS


def test_heartbeat_answers_by_state_and_checks_member_and_generation():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    assert h.hb_error("g", follower, gen) == E.NONE
    assert h.hb_error("g", follower, gen - 1) == E.ILLEGAL_GENERATION
    assert h.hb_error("g", "ghost", gen) == E.UNKNOWN_MEMBER_ID
    assert h.hb_error("nope", follower, gen) == E.UNKNOWN_MEMBER_ID
    h.join("g", leader)
    assert h.hb_error("g", follower, gen) == E.REBALANCE_IN_PROGRESS


def test_heartbeats_are_answered_none_while_completing_the_rebalance():
    h = Harness()
    a = h.join_new_member("g")
    h.join("g", a)
    h.advance(3000)
    assert h.state("g") == "CompletingRebalance"
    assert h.hb_error("g", a, 1) == E.NONE


# --- rejoining (eager and cooperative clients) ------------------------------------------------------


def test_a_follower_rejoining_stable_with_unchanged_metadata_gets_the_current_generation():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    r = h.reply(h.join("g", follower))
    assert r["error_code"] == E.NONE
    assert (r["generation_id"], r["leader"], r["members"]) == (gen, leader, [])
    assert h.state("g") == "Stable"


def test_a_member_rejoining_stable_with_new_metadata_starts_a_rebalance_everyone_rejoins():
    # A cooperative-sticky consumer rejoins after revoking partitions: same
    # protocol, changed metadata (its owned partitions).
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    t_f = h.join("g", follower, topics=("t", "u"))
    assert not h.answered(t_f)
    assert h.state("g") == "PreparingRebalance"
    assert h.hb_error("g", leader, gen) == E.REBALANCE_IN_PROGRESS
    # The leader's commit of the old generation is still accepted meanwhile.
    commit = h.commit("g", {("t", 0): 5}, generation=gen, member_id=leader)
    assert h.commit_errors(commit) == {("t", 0): E.NONE}
    t_l = h.join("g", leader)
    for t in (t_f, t_l):
        assert h.reply(t)["generation_id"] == gen + 1
    assert len(h.reply(t_l)["members"]) == 2


def test_a_member_rejoining_while_completing_with_the_same_metadata_gets_the_same_answer():
    h = Harness()
    a = h.join_new_member("g")
    b = h.join_new_member("g")
    ta, _tb = h.join("g", a), h.join("g", b)
    h.advance_until(lambda: h.answered(ta))
    again = h.reply(h.join("g", a))
    assert again["generation_id"] == 1 and len(again["members"]) == 2  # a leads
    assert h.state("g") == "CompletingRebalance"


def test_a_second_join_while_parked_supersedes_the_first():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    first = h.join("g", follower)  # same metadata while Stable: answered at once
    assert h.answered(first)
    t1 = h.join("g", leader)
    t2 = h.join("g", leader)
    assert h.reply(t1)["error_code"] == E.REBALANCE_IN_PROGRESS
    assert not h.answered(t2)


# --- leaving ------------------------------------------------------------------------------------------


def test_a_member_leaving_triggers_a_rebalance_for_the_others():
    h = Harness()
    (leader, f1, f2), gen = h.form_group("g", 3)
    r = h.reply(h.leave("g", f1, version=0))
    assert r["error_code"] == E.NONE and r["members"] == []
    assert h.hb_error("g", leader, gen) == E.REBALANCE_IN_PROGRESS
    tl, _t2 = h.join("g", leader), h.join("g", f2)
    assert h.reply(tl)["generation_id"] == gen + 1
    assert {m["member_id"] for m in h.reply(tl)["members"]} == {leader, f2}


def test_leave_v3_removes_a_batch_with_errors_per_member():
    h = Harness()
    (leader, f1, f2), gen = h.form_group("g", 3)
    r = h.reply(h.leave("g", f1, "ghost", (f2, "not-its-instance")))
    assert r["error_code"] == E.NONE
    assert [(m["member_id"], m["error_code"]) for m in r["members"]] == [
        (f1, E.NONE),
        ("ghost", E.UNKNOWN_MEMBER_ID),
        (f2, E.UNKNOWN_MEMBER_ID),  # the instance id does not exist
    ]
    assert set(h.coord.group("g").members) == {leader, f2}


def test_leave_v0_to_v2_fold_the_member_error_into_the_top_level_error():
    h = Harness()
    (leader,), gen = h.form_group("g", 1)
    assert h.reply(h.leave("g", "ghost", version=1))["error_code"] == E.UNKNOWN_MEMBER_ID
    assert h.reply(h.leave("nope", "ghost", version=2))["error_code"] == E.UNKNOWN_MEMBER_ID


def test_leaving_an_unknown_group_reports_every_member_unknown():
    h = Harness()
    r = h.reply(h.leave("nope", "a", "b"))
    assert r["error_code"] == E.NONE
    assert [m["error_code"] for m in r["members"]] == [E.UNKNOWN_MEMBER_ID] * 2


def test_the_last_member_leaving_empties_the_group_and_the_answer_waits_for_the_write():
    h = Harness()
    (leader,), gen = h.form_group("g", 1)
    h.hold_writes = True
    t = h.leave("g", leader)
    assert not h.answered(t)
    assert h.state("g") == "Empty"
    h.complete_writes()
    assert h.reply(t)["members"][0]["error_code"] == E.NONE


def test_a_pending_member_can_leave():
    h = Harness()
    pending = h.join_new_member("g")
    r = h.reply(h.leave("g", pending))
    assert r["members"][0]["error_code"] == E.NONE
    assert not h.coord.group("g").pending_members


# --- timeouts -------------------------------------------------------------------------------------------


def test_a_member_that_misses_its_session_timeout_is_removed():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    h.advance(SESSION - 1)
    assert h.hb_error("g", leader, gen) == E.NONE
    assert follower in h.coord.group("g").members
    h.advance(1)
    # The follower never heartbeated: it is gone, and the group rebalances.
    assert follower not in h.coord.group("g").members
    assert h.hb_error("g", follower, gen) == E.UNKNOWN_MEMBER_ID
    assert h.hb_error("g", leader, gen) == E.REBALANCE_IN_PROGRESS
    t = h.join("g", leader)
    assert h.reply(t)["generation_id"] == gen + 1
    assert [m["member_id"] for m in h.reply(t)["members"]] == [leader]


def test_a_heartbeat_just_in_time_keeps_the_member():
    h = Harness()
    (leader,), gen = h.form_group("g", 1)
    h.advance(SESSION - 1)
    assert h.hb_error("g", leader, gen) == E.NONE
    h.advance(SESSION - 1)
    assert h.state("g") == "Stable"
    h.advance(1)
    assert h.state("g") == "Empty"


def test_members_that_do_not_rejoin_within_the_rebalance_timeout_are_dropped():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    t = h.join("g", leader, rebalance=20_000)
    # The follower keeps heartbeating but never rejoins.
    for _ in range(REBALANCE // 5000 - 1):
        h.advance(5000)
        assert h.hb_error("g", follower, gen) == E.REBALANCE_IN_PROGRESS
    assert not h.answered(t)
    h.advance(5000)  # the group's rebalance timeout (the largest of its members') passes
    r = h.reply(t)
    assert r["generation_id"] == gen + 1
    assert [m["member_id"] for m in r["members"]] == [leader]
    assert h.hb_error("g", follower, gen) == E.UNKNOWN_MEMBER_ID


def test_if_the_leader_does_not_rejoin_another_member_leads():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    t = h.join("g", follower, topics=("other",))
    h.advance(REBALANCE)
    r = h.reply(t)
    assert r["leader"] == follower and r["members"][0]["member_id"] == follower


def test_a_new_members_parked_join_times_out_after_the_new_member_join_timeout():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    h.coord.config = dataclasses.replace(TEST_CONFIG, new_member_join_timeout_ms=5000)
    h.join("g", leader)
    newcomer = h.join_new_member("g")
    t = h.join("g", newcomer)
    h.advance(4999)
    assert not h.answered(t)
    h.advance(1)
    r = h.reply(t)
    assert (r["error_code"], r["member_id"]) == (E.UNKNOWN_MEMBER_ID, "")
    assert newcomer not in h.coord.group("g").members


# --- group.initial.rebalance.delay.ms ---------------------------------------------------------------------


def test_the_first_rebalance_waits_for_the_initial_delay():
    h = Harness()
    a = h.join_new_member("g")
    t = h.join("g", a)
    h.advance(2999)
    assert not h.answered(t)
    h.advance(1)
    assert h.reply(t)["generation_id"] == 1


def test_each_member_joining_during_the_delay_extends_it_by_the_delay_up_to_the_rebalance_timeout():
    # Kafka's InitialDelayedJoin: delay 3 s, rebalance timeout 10 s. Timer steps
    # (delay, remaining): (3, 7) -> (3, 4) -> (3, 1) -> (1, 0): it fires at 3, 6,
    # 9 and 10 s while members keep arriving, and the join phase ends at 10 s.
    h = Harness()
    tokens = []
    for at in (0, 1000, 4000, 7000, 9500):
        h.advance(at - h.now)
        mid = h.join_new_member("g", rebalance=10_000)
        tokens.append(h.join("g", mid, rebalance=10_000))
    h.advance(9999 - h.now)
    assert not any(h.answered(t) for t in tokens)
    h.advance(1)
    assert all(h.reply(t)["generation_id"] == 1 for t in tokens)
    assert len(h.reply(tokens[0])["members"]) == 5


def test_without_new_members_the_delay_is_not_extended():
    h = Harness()
    a = h.join_new_member("g", rebalance=10_000)
    b = h.join_new_member("g", rebalance=10_000)
    ta = h.join("g", a, rebalance=10_000)
    h.advance(1000)
    tb = h.join("g", b, rebalance=10_000)  # joins during the first delay
    h.advance(2000)  # 3 s: extended once, to 6 s
    assert not h.answered(ta)
    h.advance(3000)  # 6 s: nobody new since: done
    assert h.answered(ta) and h.answered(tb)


def test_a_rebalance_of_a_non_empty_group_completes_as_soon_as_everyone_rejoined():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    tl = h.join("g", leader)
    assert not h.answered(tl)
    tf = h.join("g", follower)
    assert h.answered(tl) and h.answered(tf)


# --- group.max.size -------------------------------------------------------------------------------------------


def test_group_max_size_turns_away_extra_members_during_a_rebalance():
    h = Harness(dataclasses.replace(TEST_CONFIG, group_max_size=2))
    a, b, c = (h.join_new_member("g") for _ in range(3))
    ta, _tb = h.join("g", a), h.join("g", b)
    r = h.reply(h.join("g", c))
    assert (r["error_code"], r["member_id"]) == (E.GROUP_MAX_SIZE_REACHED, "")
    h.advance_until(lambda: h.answered(ta))
    assert len(h.reply(ta)["members"]) == 2


def test_group_max_size_turns_away_new_members_of_a_stable_group_but_not_existing_ones():
    h = Harness(dataclasses.replace(TEST_CONFIG, group_max_size=2))
    (leader, follower), gen = h.form_group("g", 2)
    assert h.reply(h.join("g"))["error_code"] == E.GROUP_MAX_SIZE_REACHED
    assert h.reply(h.join("g", follower))["error_code"] == E.NONE
