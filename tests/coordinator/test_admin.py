"""DescribeGroups, ListGroups, DeleteGroups."""

from coordinator.consumer_protocol import subscribed_topics
from tests.coordinator.harness import Harness
from wire.error_codes import ErrorCode as E


def test_describe_a_stable_group_shows_members_with_metadata_and_assignment():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2, topics=("orders",))
    (g,) = h.describe("g")
    assert (g["error_code"], g["group_state"], g["protocol_type"], g["protocol_data"]) == (
        E.NONE,
        "Stable",
        "consumer",
        "range",
    )
    members = {m["member_id"]: m for m in g["members"]}
    assert set(members) == {leader, follower}
    m = members[follower]
    assert (m["client_id"], m["client_host"], m["group_instance_id"]) == (
        "client",
        "/127.0.0.1",
        None,
    )
    assert subscribed_topics(m["member_metadata"]) == {"orders"}
    assert m["member_assignment"] == h.coord.group("g").members[follower].assignment != b""


def test_describe_a_rebalancing_group_leaves_out_metadata_and_protocol():
    h = Harness()
    (leader, follower), gen = h.form_group("g", 2)
    h.join("g", leader)
    (g,) = h.describe("g")
    assert (g["group_state"], g["protocol_data"]) == ("PreparingRebalance", "")
    assert all(m["member_metadata"] == b"" for m in g["members"])


def test_describe_unknown_and_uncoordinated_groups():
    h = Harness(partitions=[0])
    ours = next(g for g in map(str, range(100)) if h.coord.partition_for(g) == 0)
    theirs = next(g for g in map(str, range(100)) if h.coord.partition_for(g) != 0)
    unknown, other = h.describe(ours, theirs)
    assert (unknown["error_code"], unknown["group_state"], unknown["members"]) == (
        E.NONE,
        "Dead",
        [],
    )
    assert other["error_code"] == E.NOT_COORDINATOR


def test_describe_v0_encodes_without_instance_ids():
    h = Harness()
    h.form_group("g", 1, static=True)
    (g,) = h.describe("g", version=0)
    assert g["group_state"] == "Stable"


def test_list_groups_with_states_and_types_filters():
    h = Harness()
    h.form_group("stable", 1)
    h.commit("simple", {("t", 0): 1})
    a = h.join_new_member("joining")
    h.join("joining", a)

    def listed(**kw):
        r = h.list_groups(**kw)
        assert r["error_code"] == E.NONE
        return {(g["group_id"], g["group_state"], g["protocol_type"], g["group_type"])
                for g in r["groups"]}  # fmt: skip

    everything = {
        ("stable", "Stable", "consumer", "classic"),
        ("simple", "Empty", "", "classic"),
        ("joining", "PreparingRebalance", "consumer", "classic"),
    }
    assert listed() == everything
    assert listed(states=["stable", " EMPTY "]) == {
        ("stable", "Stable", "consumer", "classic"),
        ("simple", "Empty", "", "classic"),
    }
    assert listed(types=["Classic"]) == everything
    assert listed(types=["consumer"]) == set()
    assert listed(types=["bogus"]) == set()
    # v0 has neither filter nor state in the answer; it still lists every group.
    r = h.list_groups(version=0)
    assert {g["group_id"] for g in r["groups"]} == {"stable", "simple", "joining"}


def test_list_groups_while_a_partition_loads_is_load_in_progress():
    h = Harness(partitions=[0])
    h.coord.begin_loading(1)
    assert h.list_groups()["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS


def test_delete_groups_deletes_empty_ones_and_refuses_the_others():
    h = Harness()
    h.commit("empty", {("t", 0): 1, ("u", 1): 2})
    h.form_group("busy", 1)
    h.hold_writes = True
    t = h.send(42, 2, groups_names=["empty", "busy", "missing"])
    assert not h.answered(t)  # waits for the tombstones
    (persist,) = h.held
    assert [r.value for r in persist.records] == [None, None, None]  # 2 offsets + the group
    h.complete_writes()
    r = {x["group_id"]: x["error_code"] for x in h.reply(t)["results"]}
    assert r == {
        "empty": E.NONE,
        "busy": E.NON_EMPTY_GROUP,
        "missing": E.GROUP_ID_NOT_FOUND,
    }
    assert h.coord.group("empty") is None
    assert h.fetched("empty") == {}


def test_delete_groups_across_partitions_answers_once_every_write_completed():
    h = Harness()
    groups = []
    for name in map(str, range(100)):
        if h.coord.partition_for(name) not in {h.coord.partition_for(g) for g in groups}:
            groups.append(name)
        if len(groups) == 2:
            break
    for g in groups:
        h.commit(g, {("t", 0): 1})
    h.hold_writes = True
    t = h.send(42, 2, groups_names=groups)
    assert len(h.held) == 2
    first, second = h.held
    h.held = [first]
    h.complete_writes()
    assert not h.answered(t)
    h.held = [second]
    h.complete_writes(E.NOT_LEADER_OR_FOLLOWER)
    r = {x["group_id"]: x["error_code"] for x in h.reply(t)["results"]}
    assert r == {groups[0]: E.NONE, groups[1]: E.NOT_COORDINATOR}


def test_delete_groups_for_uncoordinated_and_loading_groups():
    h = Harness(partitions=[0])
    h.coord.begin_loading(1)
    loading = next(g for g in map(str, range(100)) if h.coord.partition_for(g) == 1)
    theirs = next(g for g in map(str, range(100)) if h.coord.partition_for(g) == 2)
    assert h.delete_groups(loading, theirs) == {
        loading: E.COORDINATOR_LOAD_IN_PROGRESS,
        theirs: E.NOT_COORDINATOR,
    }
