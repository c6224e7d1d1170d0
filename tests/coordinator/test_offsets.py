"""OffsetCommit, OffsetFetch, OffsetDelete and offsets retention."""

import dataclasses

import pytest

from coordinator.records import OffsetCommitRecord, decode_record
from tests.coordinator.harness import TEST_CONFIG, Harness
from wire.error_codes import ErrorCode as E

DAY = 24 * 60 * 60 * 1000
CHECK = TEST_CONFIG.offsets_retention_check_interval_ms


def records_of(h: Harness, group: str):
    return [decode_record(r.key, r.value) for r in h.log.get(h.coord.partition_for(group), [])]


# --- commits and generations -----------------------------------------------------------------------


def test_a_member_of_the_current_generation_commits_and_fetches_its_offsets():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    t = h.commit("g", {("t", 0): 10, ("t", 1): 20}, generation=gen, member_id=follower,
                 metadata="hello")  # fmt: skip
    assert h.commit_errors(t) == {("t", 0): E.NONE, ("t", 1): E.NONE}
    assert h.fetched("g", {"t": [0, 1, 2]}) == {
        ("t", 0): (10, "hello", E.NONE),
        ("t", 1): (20, "hello", E.NONE),
        ("t", 2): (-1, "", E.NONE),
    }


def test_a_commit_with_a_stale_generation_is_an_illegal_generation():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    t = h.commit("g", {("t", 0): 1}, generation=gen - 1, member_id=follower)
    assert h.commit_errors(t) == {("t", 0): E.ILLEGAL_GENERATION}
    assert h.fetched("g", {"t": [0]})[("t", 0)][0] == -1


def test_a_commit_from_an_unknown_member_is_rejected():
    h = Harness()
    (leader,), gen = h.form_group("g", 1)
    t = h.commit("g", {("t", 0): 1}, generation=gen, member_id="ghost")
    assert h.commit_errors(t) == {("t", 0): E.UNKNOWN_MEMBER_ID}


def test_a_commit_while_completing_the_rebalance_is_told_to_rejoin():
    h = Harness()
    a = h.join_new_member("g")
    h.join("g", a)
    h.advance(3000)
    assert h.commit_errors(h.commit("g", {("t", 0): 1}, generation=1, member_id=a)) == {
        ("t", 0): E.REBALANCE_IN_PROGRESS
    }


def test_a_commit_without_membership_to_an_active_group_is_unknown_member():
    h = Harness()
    h.form_group("g", 1)
    assert h.commit_errors(h.commit("g", {("t", 0): 1})) == {("t", 0): E.UNKNOWN_MEMBER_ID}


def test_a_commit_keeps_the_members_session_alive():
    h = Harness()
    (leader,), gen = h.form_group("g", 1)
    h.advance(9000)
    h.commit("g", {("t", 0): 1}, generation=gen, member_id=leader)
    h.advance(9000)
    assert h.state("g") == "Stable"


def test_commits_from_a_non_member_create_an_empty_group_and_work():
    # What admin tools (kafka-consumer-groups --reset-offsets) and consumers that
    # assign() partitions themselves, like Spark's, send: generation -1, no member id.
    h = Harness()
    t = h.commit("spark-app", {("events", 0): 100, ("events", 1): 200}, metadata="batch-7")
    assert h.commit_errors(t) == {("events", 0): E.NONE, ("events", 1): E.NONE}
    (g,) = h.describe("spark-app")
    assert (g["group_state"], g["protocol_type"], g["members"]) == ("Empty", "", [])
    assert h.fetched("spark-app") == {
        ("events", 0): (100, "batch-7", E.NONE),
        ("events", 1): (200, "batch-7", E.NONE),
    }
    # A consumer group can then form on top of it.
    (leader,), gen = h.form_group("spark-app", 1)
    assert gen == 1


@pytest.mark.parametrize("version, error", [(8, E.ILLEGAL_GENERATION), (9, E.GROUP_ID_NOT_FOUND)])
def test_a_commit_with_a_generation_to_an_unknown_group(version, error):
    h = Harness()
    t = h.commit("nope", {("t", 0): 1}, generation=3, member_id="m", version=version)
    assert h.commit_errors(t) == {("t", 0): error}
    assert h.coord.group("nope") is None


def test_the_commit_is_answered_and_visible_only_once_persisted():
    h = Harness()
    h.hold_writes = True
    t = h.commit("g", {("t", 0): 7})
    assert not h.answered(t)
    assert h.fetched("g", {"t": [0]})[("t", 0)][0] == -1
    h.complete_writes()
    assert h.commit_errors(t) == {("t", 0): E.NONE}
    assert h.fetched("g", {"t": [0]})[("t", 0)][0] == 7


def test_a_failed_commit_write_reports_the_coordinator_error_and_keeps_the_old_offset():
    h = Harness()
    h.reply(h.commit("g", {("t", 0): 1}))
    h.hold_writes = True
    t = h.commit("g", {("t", 0): 2})
    h.complete_writes(E.NOT_ENOUGH_REPLICAS)
    assert h.commit_errors(t) == {("t", 0): E.COORDINATOR_NOT_AVAILABLE}
    assert h.fetched("g", {"t": [0]})[("t", 0)][0] == 1


def test_metadata_longer_than_the_limit_is_rejected_per_partition():
    h = Harness(dataclasses.replace(TEST_CONFIG, offset_metadata_max_bytes=5))
    t = h.commit("g", {("t", 0): 1}, metadata="123456")
    assert h.commit_errors(t) == {("t", 0): E.OFFSET_METADATA_TOO_LARGE}
    t = h.commit("g", {("t", 0): 1}, metadata="12345")
    assert h.commit_errors(t) == {("t", 0): E.NONE}


def test_null_metadata_is_stored_as_empty():
    h = Harness()
    h.commit("g", {("t", 0): 1}, metadata=None)
    assert h.fetched("g", {"t": [0]})[("t", 0)] == (1, "", E.NONE)


def test_commit_records_are_kafkas_offset_commit_v3():
    h = Harness()
    h.now = 12345
    h.commit("g", {("t", 3): 99}, metadata="m", leader_epoch=4)
    (rec,) = records_of(h, "g")
    assert rec == OffsetCommitRecord(
        "g", "t", 3, offset=99, leader_epoch=4, metadata="m", commit_timestamp=12345
    )
    assert h.log[h.coord.partition_for("g")][0].value[:2] == b"\x00\x03"


# --- OffsetFetch layouts ------------------------------------------------------------------------------


def test_fetch_of_all_offsets_with_null_topics():
    h = Harness()
    h.commit("g", {("a", 0): 1, ("b", 2): 3})
    assert h.fetched("g") == {("a", 0): (1, "", E.NONE), ("b", 2): (3, "", E.NONE)}
    assert h.fetched("unknown") == {}


def test_fetch_v5_returns_the_committed_leader_epoch():
    h = Harness()
    h.commit("g", {("t", 0): 1}, leader_epoch=6)
    r = h.reply(h.fetch("g", {"t": [0]}, version=5))
    assert r["topics"][0]["partitions"][0]["committed_leader_epoch"] == 6


def test_fetch_v8_answers_several_groups():
    h = Harness()
    h.commit("g1", {("t", 0): 1})
    h.commit("g2", {("t", 0): 2})
    token = h.send(
        9,
        8,
        groups=[
            {"group_id": "g1", "topics": [{"name": "t", "partition_indexes": [0]}]},
            {"group_id": "g2", "topics": None},
        ],
        require_stable=True,
    )
    groups = h.reply(token)["groups"]
    assert [(g["group_id"], g["error_code"]) for g in groups] == [("g1", 0), ("g2", 0)]
    assert groups[0]["topics"][0]["partitions"][0]["committed_offset"] == 1
    assert groups[1]["topics"][0]["partitions"][0]["committed_offset"] == 2


def test_fetch_for_a_group_this_broker_does_not_coordinate():
    h = Harness(partitions=[])
    h.run(h.coord.load(0, [], 0))
    other = next(g for g in ("a", "b", "c", "d", "e") if h.coord.partition_for(g) != 0)
    r = h.reply(h.fetch(other, {"t": [0]}, version=7))
    assert r["error_code"] == E.NOT_COORDINATOR
    # Before v2 there is no top-level error: it is repeated in every partition.
    r = h.reply(h.fetch(other, {"t": [0]}, version=1))
    assert r["topics"][0]["partitions"][0]["error_code"] == E.NOT_COORDINATOR


# --- retention --------------------------------------------------------------------------------------------


def test_offsets_of_a_simple_group_expire_a_retention_after_their_commit_and_the_group_goes():
    h = Harness()
    h.commit("g", {("t", 0): 1})
    h.advance(DAY // 2)
    h.commit("g", {("t", 1): 2})
    h.advance(DAY // 2 + CHECK)  # t/0 is a day old, t/1 half a day
    assert h.fetched("g", {"t": [0, 1]}) == {("t", 0): (-1, "", E.NONE), ("t", 1): (2, "", E.NONE)}
    assert h.state("g") == "Empty"
    h.advance(DAY // 2)
    assert h.coord.group("g") is None
    tail = records_of(h, "g")[-3:]
    assert [(type(r).__name__, getattr(r, "partition", None)) for r in tail] == [
        ("OffsetCommitRecord", 0),
        ("OffsetCommitRecord", 1),
        ("GroupMetadataRecord", None),
    ]
    assert tail[0].is_tombstone and tail[1].is_tombstone and tail[2].tombstone


def test_offsets_of_an_empty_consumer_group_expire_a_retention_after_it_became_empty():
    h = Harness()
    (leader,), gen = h.form_group("g", 1)
    committed_at = h.now
    h.commit("g", {("t", 0): 5}, generation=gen, member_id=leader)
    h.advance(DAY // 2)  # the member is gone after its session timeout
    assert h.state("g") == "Empty"
    emptied_at = h.coord.group("g").state_timestamp
    assert emptied_at < h.now
    # A day after the commit the offset is still there: the retention counts
    # from when the group became empty.
    h.advance(emptied_at + DAY - 1 - h.now)
    assert h.now - committed_at > DAY
    assert h.fetched("g", {"t": [0]})[("t", 0)][0] == 5
    h.advance(CHECK + 1)
    assert h.fetched("g", {"t": [0]})[("t", 0)][0] == -1
    assert h.coord.group("g") is None


def test_a_stable_consumer_group_keeps_offsets_of_subscribed_topics_and_expires_the_others():
    h = Harness()
    (leader,), gen = h.form_group("g", 1, topics=("kept",))
    h.commit("g", {("kept", 0): 1, ("dropped", 0): 2}, generation=gen, member_id=leader)
    for _ in range(DAY // 5000 + CHECK // 5000 + 1):
        h.advance(5000)
        assert h.hb_error("g", leader, gen) == 0
    assert h.fetched("g", {"kept": [0], "dropped": [0]}) == {
        ("kept", 0): (1, "", E.NONE),
        ("dropped", 0): (-1, "", E.NONE),
    }


def test_an_explicit_retention_from_commit_v2_expires_at_its_own_deadline():
    h = Harness()
    h.commit("g", {("t", 0): 1}, version=2, retention_ms=1000)
    assert h.log[h.coord.partition_for("g")][0].value[:2] == b"\x00\x01"  # value v1
    assert records_of(h, "g")[0].expire_timestamp == 1000
    h.advance(CHECK)
    assert h.coord.group("g") is None


def test_an_empty_group_without_offsets_is_deleted_at_the_next_check():
    h = Harness()
    (leader,), gen = h.form_group("g", 1)
    h.reply(h.leave("g", leader))
    assert h.state("g") == "Empty"
    h.advance(CHECK)
    assert h.coord.group("g") is None
    assert records_of(h, "g")[-1] == decode_record(*_group_tombstone("g"))


def _group_tombstone(group):
    from coordinator.records import encode_group_tombstone

    return encode_group_tombstone(group)


def test_offsets_with_a_commit_in_flight_do_not_expire():
    h = Harness()
    h.commit("g", {("t", 0): 1})
    h.advance(DAY - CHECK)
    h.hold_writes = True
    t = h.commit("g", {("t", 0): 2})
    h.advance(CHECK)
    assert not any(p.records[0].value is None for p in h.held[1:])
    h.complete_writes()
    assert h.commit_errors(t) == {("t", 0): E.NONE}
    assert h.fetched("g", {"t": [0]})[("t", 0)][0] == 2


# --- OffsetDelete -----------------------------------------------------------------------------------------


def test_offset_delete_refuses_topics_the_consumer_group_is_subscribed_to():
    h = Harness()
    (leader,), gen = h.form_group("g", 1, topics=("live",))
    h.commit("g", {("live", 0): 1, ("old", 0): 2, ("old", 1): 3}, generation=gen, member_id=leader)
    r = h.reply(h.offset_delete("g", {"live": [0], "old": [0]}))
    assert r["error_code"] == E.NONE
    assert {(t["name"], p["partition_index"]): p["error_code"] for t in r["topics"]
            for p in t["partitions"]} == {
        ("live", 0): E.GROUP_SUBSCRIBED_TO_TOPIC,
        ("old", 0): E.NONE,
    }  # fmt: skip
    assert h.fetched("g", {"live": [0], "old": [0, 1]}) == {
        ("live", 0): (1, "", E.NONE),
        ("old", 0): (-1, "", E.NONE),
        ("old", 1): (3, "", E.NONE),
    }


def test_offset_delete_on_an_active_non_consumer_group_is_non_empty_group():
    h = Harness()
    a = h.join_new_member("connect-cluster", protocol_type="connect")
    h.join("connect-cluster", a, protocol_type="connect")
    r = h.reply(h.offset_delete("connect-cluster", {"t": [0]}))
    assert r["error_code"] == E.NON_EMPTY_GROUP


def test_offset_delete_on_an_unknown_group_is_group_id_not_found():
    h = Harness()
    assert h.reply(h.offset_delete("nope", {"t": [0]}))["error_code"] == E.GROUP_ID_NOT_FOUND


def test_offset_delete_on_an_empty_group_writes_tombstones_and_answers_after_them():
    h = Harness()
    h.commit("g", {("t", 0): 1})
    h.hold_writes = True
    t = h.offset_delete("g", {"t": [0, 9]})
    assert not h.answered(t)
    (persist,) = h.held
    assert [r.value for r in persist.records] == [None]  # no tombstone for t/9
    h.complete_writes()
    assert h.reply(t)["error_code"] == E.NONE
    assert h.fetched("g", {"t": [0]})[("t", 0)][0] == -1


def test_a_commit_in_flight_when_the_group_is_deleted_does_not_come_back():
    h = Harness()
    h.commit("g", {("t", 0): 1})
    h.hold_writes = True
    c = h.commit("g", {("t", 0): 2})
    d = h.send(42, 2, groups_names=["g"])
    h.complete_writes()
    assert h.commit_errors(c) == {("t", 0): E.NONE}
    assert h.reply(d)["results"][0]["error_code"] == E.NONE
    assert h.fetched("g") == {}
    assert h.coord.committed_offsets("g") == {}


# --- failed tombstone writes ---------------------------------------------------------------


def test_a_failed_offset_delete_brings_the_offset_back():
    h = Harness()
    h.commit("g", {("t", 0): 1})
    h.hold_writes = True
    t = h.offset_delete("g", {"t": [0]})
    assert h.coord.committed_offsets("g") == {}
    h.complete_writes(E.NOT_ENOUGH_REPLICAS)
    assert h.reply(t)["error_code"] == E.COORDINATOR_NOT_AVAILABLE
    assert h.fetched("g", {"t": [0]})[("t", 0)][0] == 1


def test_a_failed_delete_groups_brings_the_group_and_its_offsets_back():
    h = Harness()
    (leader,), gen = h.form_group("g", 1)
    h.commit("g", {("t", 0): 1}, generation=gen, member_id=leader)
    h.reply(h.leave("g", leader))
    h.hold_writes = True
    t = h.send(42, 2, groups_names=["g"])
    assert h.coord.group("g") is None
    h.complete_writes(E.REQUEST_TIMED_OUT)
    assert h.reply(t)["results"][0]["error_code"] == E.COORDINATOR_NOT_AVAILABLE
    g = h.coord.group("g")
    assert (g.state.value, g.generation, g.protocol_type) == ("Empty", gen + 1, "consumer")
    assert h.fetched("g", {"t": [0]})[("t", 0)][0] == 1


def test_a_failed_delete_restores_the_commit_that_completed_behind_it():
    h = Harness()
    h.commit("g", {("t", 0): 1})
    h.hold_writes = True
    c = h.commit("g", {("t", 0): 2})
    h.send(42, 2, groups_names=["g"])
    commit_write, delete_write = h.held
    h.held = [commit_write]
    h.complete_writes()
    assert h.commit_errors(c) == {("t", 0): E.NONE}
    assert h.coord.committed_offsets("g") == {}  # the tombstone comes after it
    h.held = [delete_write]
    h.complete_writes(E.NOT_ENOUGH_REPLICAS)
    assert h.fetched("g", {"t": [0]})[("t", 0)][0] == 2  # what the log holds


# --- deleted topics --------------------------------------------------------------------------


def test_offsets_of_deleted_partitions_are_tombstoned_in_every_group_and_the_groups_stay():
    h = Harness()
    h.commit("a", {("gone", 0): 5, ("gone", 1): 6, ("kept", 0): 7})
    h.commit("b", {("gone", 1): 8})
    (member,), generation = h.form_group("c", 1)
    h.commit("c", {("gone", 0): 1, ("kept", 0): 9}, generation=generation, member_id=member)

    h.run(h.coord.partitions_deleted([("gone", 0), ("gone", 1)], h.now))

    assert h.fetched("a") == {("kept", 0): (7, "", E.NONE)}
    assert h.fetched("b") == {}
    assert h.fetched("c") == {("kept", 0): (9, "", E.NONE)}
    tombstones = {
        (r.group, r.topic, r.partition)
        for g in ("a", "b", "c")
        for r in records_of(h, g)
        if isinstance(r, OffsetCommitRecord) and r.is_tombstone
    }
    assert tombstones == {("a", "gone", 0), ("a", "gone", 1), ("b", "gone", 1), ("c", "gone", 0)}
    # The groups are still there (an Empty one without offsets goes at the next check).
    assert [h.state(g) for g in ("a", "b", "c")] == ["Empty", "Empty", "Stable"]


def test_deleting_partitions_without_offsets_writes_nothing():
    h = Harness()
    h.commit("a", {("kept", 0): 7})
    written = len(h.persists)
    assert h.coord.partitions_deleted([("other", 0)], h.now) == []
    assert len(h.persists) == written


def test_a_failed_tombstone_write_for_a_deleted_partition_brings_the_offset_back():
    h = Harness()
    h.commit("a", {("gone", 0): 5})
    h.hold_writes = True
    h.run(h.coord.partitions_deleted([("gone", 0)], h.now))
    assert h.coord.committed_offsets("a") == {}
    h.complete_writes(E.NOT_ENOUGH_REPLICAS)
    assert h.fetched("a", {"gone": [0]})[("gone", 0)][0] == 5
