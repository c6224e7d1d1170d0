"""Loading `__consumer_offsets` at start (coordinator/replay.py and what a
loaded partition starts), the loading state as groups see it, and unloading.
The runtime's own loading states are in test_runtime.py."""

from coordinator import GroupCoordinator
from coordinator.records import (
    GroupMetadataRecord,
    MemberMetadataRecord,
    OffsetCommitRecord,
    encode_group_metadata,
    encode_offset_commit,
)
from tests.coordinator.harness import SESSION, TEST_CONFIG, Harness, subscription
from wire.error_codes import ErrorCode as E


def snapshot(coord: GroupCoordinator) -> dict:
    """The durable state: what a restart must bring back."""
    out = {}
    for g in coord.groups():
        out[g.group_id] = {
            "state": g.state,
            "generation": g.generation,
            "protocol_type": g.protocol_type,
            "protocol_name": g.protocol_name,
            "leader": g.leader_id,
            # A group known only from offset records gets the load time, as in Kafka.
            "state_timestamp": g.state_timestamp if g.protocol_type is not None else None,
            "members": {
                m.member_id: (
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata(g.protocol_name),
                    m.assignment,
                )
                for m in g.members.values()
            },
            "subscribed": g.subscribed_topics,
            "offsets": coord.committed_offsets(g.group_id),
        }
    return out


def restart(h: Harness) -> Harness:
    """A new coordinator that loads every partition from the old one's log."""
    new = Harness(h.config, partitions=[], now=h.now)
    for p in range(h.config.offsets_topic_num_partitions):
        new.run(new.coord.load(p, [(r.key, r.value) for r in h.log.get(p, [])], h.now))
    new.log = {p: list(rs) for p, rs in h.log.items()}
    return new


def test_load_after_a_history_of_writes_rebuilds_the_same_state():
    h = Harness()
    # A stable static group that went through two generations and a restart of a member.
    (a, b), gen = h.form_group("static", 2, static=True)
    h.join("static", a, instance=h.instance_of("static", a))
    h.join("static", b, instance=h.instance_of("static", b))
    h.sync("static", a, gen + 1, {a: b"A", b: b"B"})
    h.sync("static", b, gen + 1)
    h.join("static", instance=h.instance_of("static", b))  # restart: new member id
    h.commit("static", {("t", 0): 10, ("t", 1): 11}, generation=gen + 1, member_id=a)
    # A dynamic group that emptied, with an offset.
    (d,), dgen = h.form_group("dynamic", 1)
    h.commit("dynamic", {("t", 0): 3}, generation=dgen, member_id=d, metadata="m")
    h.reply(h.leave("dynamic", d))
    # Simple groups; one gets deleted, one has an offset deleted.
    h.commit("simple", {("x", 0): 1, ("x", 1): 2})
    h.commit("gone", {("x", 0): 1})
    h.delete_groups("gone")
    h.reply(h.offset_delete("simple", {"x": [1]}))
    h.advance(1000)
    before = snapshot(h.coord)
    assert set(before) == {"static", "dynamic", "simple"}
    assert before["static"]["state"].value == "Stable"
    assert len(before["static"]["members"]) == 2

    after = restart(h)
    assert snapshot(after.coord) == before


def test_a_restarted_coordinator_serves_loaded_groups():
    h = Harness()
    (a, b), gen = h.form_group("g", 2, static=True)
    h.commit("g", {("t", 0): 42}, generation=gen, member_id=a, metadata="x")
    new = restart(h)
    assert new.fetched("g", {"t": [0]}) == {("t", 0): (42, "x", E.NONE)}
    assert new.state("g") == "Stable"
    assert new.hb_error("g", a, gen, instance=new.instance_of("g", a)) == E.NONE
    # A static member restarting against the new coordinator still avoids a rebalance.
    r = new.reply(new.join("g", instance=new.instance_of("g", b)))
    assert (r["error_code"], r["generation_id"]) == (E.NONE, gen)
    assert new.state("g") == "Stable"


def test_loaded_members_must_heartbeat_or_time_out():
    h = Harness()
    (a,), gen = h.form_group("g", 1)
    new = restart(h)
    new.advance(SESSION)
    assert new.state("g") == "Empty"


def test_requests_while_loading_get_load_in_progress_heartbeats_none_syncs_rebalance():
    h = Harness(partitions=[])
    p = h.coord.partition_for("g")
    h.coord.begin_loading(p)
    assert h.reply(h.join("g"))["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.commit_errors(h.commit("g", {("t", 0): 1})) == {
        ("t", 0): E.COORDINATOR_LOAD_IN_PROGRESS
    }
    assert h.reply(h.fetch("g", {"t": [0]}))["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.describe("g")[0]["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.reply(h.leave("g", "m"))["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS
    # Kafka: heartbeats are answered blindly, syncs are told to rejoin.
    assert h.hb_error("g", "m", 1) == E.NONE
    assert h.reply(h.sync("g", "m", 1))["error_code"] == E.REBALANCE_IN_PROGRESS
    h.run(h.coord.finish_loading(p, h.now))
    assert h.reply(h.join("g"))["error_code"] == E.MEMBER_ID_REQUIRED


def test_groups_of_partitions_not_led_here_are_not_coordinator():
    h = Harness(partitions=[])
    assert h.reply(h.join("g"))["error_code"] == E.NOT_COORDINATOR
    assert h.hb_error("g", "m", 1) == E.NOT_COORDINATOR
    assert h.reply(h.sync("g", "m", 1))["error_code"] == E.NOT_COORDINATOR


def test_load_skips_record_types_it_does_not_know_and_reads_old_versions():
    import struct

    p = 0
    h = Harness(partitions=[])
    group = next(g for g in map(str, range(100)) if h.coord.partition_for(g) == p)
    consumer_group_key = struct.pack(">h", 3) + struct.pack(">h", 1) + b"x"  # KIP-848 record
    old_value = (  # GroupMetadataValue v1: no timestamp, no instance id
        struct.pack(">h", 1)
        + struct.pack(">h", 8) + b"consumer" + struct.pack(">i", 4)
        + struct.pack(">h", 5) + b"range" + struct.pack(">h", 1) + b"m"
        + struct.pack(">i", 1)
        + struct.pack(">h", 1) + b"m" + struct.pack(">h", 1) + b"c" + struct.pack(">h", 2) + b"/h"
        + struct.pack(">i", 20000) + struct.pack(">i", 7000)
        + struct.pack(">i", len(subscription("t"))) + subscription("t")
        + struct.pack(">i", 1) + b"A"
    )  # fmt: skip
    key = encode_group_metadata(GroupMetadataRecord(group))[0]
    h.run(h.coord.load(p, [(consumer_group_key, b"\x00\x00"), (key, old_value)], 0))
    g = h.coord.group(group)
    assert (g.state.value, g.generation, g.state_timestamp) == ("Stable", 4, None)
    assert g.members["m"].rebalance_timeout_ms == 20000
    assert g.subscribed_topics == {"t"}


def test_a_loaded_group_over_the_max_size_rebalances():
    import dataclasses

    members = tuple(
        MemberMetadataRecord(f"m{i}", None, "c", "/h", 30000, 10000, subscription("t"), b"")
        for i in range(3)
    )
    rec = GroupMetadataRecord(
        "g", protocol_type="consumer", generation=2, protocol="range", leader="m0",
        current_state_timestamp=0, members=members,
    )  # fmt: skip
    h = Harness(dataclasses.replace(TEST_CONFIG, group_max_size=2), partitions=[])
    p = h.coord.partition_for("g")
    h.run(h.coord.load(p, [encode_group_metadata(rec)], 0))
    assert h.state("g") == "PreparingRebalance"


def test_offsets_replayed_for_a_group_without_metadata_form_a_simple_group():
    h = Harness(partitions=[])
    p = h.coord.partition_for("g")
    rec = OffsetCommitRecord("g", "t", 0, offset=5, commit_timestamp=0)
    h.run(h.coord.load(p, [encode_offset_commit(rec)], 100))
    g = h.coord.group("g")
    assert (g.state.value, g.protocol_type, g.state_timestamp) == ("Empty", None, 100)
    assert h.fetched("g", {"t": [0]}) == {("t", 0): (5, "", E.NONE)}


def test_unload_answers_parked_requests_not_coordinator_and_forgets_the_groups():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    t = h.join("g", leader)
    h.commit("g", {("t", 0): 1}, generation=gen, member_id=leader)
    p = h.coord.partition_for("g")
    h.run(h.coord.unload(p, h.now))
    assert h.reply(t)["error_code"] == E.NOT_COORDINATOR
    assert h.coord.group("g") is None and h.coord.committed_offsets("g") == {}
    assert h.hb_error("g", follower, gen) == E.NOT_COORDINATOR
    # Leading it again: loaded back from the log.
    h.run(h.coord.load(p, [(r.key, r.value) for r in h.log[p]], h.now))
    assert h.fetched("g", {"t": [0]})[("t", 0)][0] == 1


def test_unload_fails_the_requests_waiting_for_its_writes():
    h = Harness()
    h.hold_writes = True
    t = h.commit("g", {("t", 0): 1})
    (persist,) = h.held
    h.run(h.coord.unload(h.coord.partition_for("g"), h.now))
    assert h.commit_errors(t) == {("t", 0): E.NOT_COORDINATOR}
    # The broker reporting the write later changes nothing.
    assert h.coord.persisted(persist.write_id, h.now) == []


def test_loading_twice_is_an_error():
    import pytest

    h = Harness(partitions=[0])
    with pytest.raises(ValueError):
        h.coord.begin_loading(0)
