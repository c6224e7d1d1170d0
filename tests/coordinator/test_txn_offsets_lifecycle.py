"""Transactional offsets through the rest of a group's life, as Kafka 4.3.1's
OffsetMetadataManager treats them: a plain commit racing a transactional
one, OffsetDelete and DeleteGroups (their tombstones remove pending offsets
too), retention (an offset with a pending successor does not expire, a group
with an open transaction is not deleted), a failed write on either side,
OffsetFetch's shapes with require_stable, unloading, and replay."""

from coordinator import GroupCoordinator
from coordinator.records import encode_offset_tombstone
from coordinator.replay import TransactionalRecord, TransactionEnd
from tests.coordinator.harness import TEST_CONFIG, Harness
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode as E

PID, EPOCH = 4000, 3
OTHER_PID = 4001
DAY = 24 * 60 * 60 * 1000


def txn_commit(h: Harness, group: str, offsets: dict, *, pid=PID, metadata="m", version=3):
    """TxnOffsetCommit of `offsets` ({partition of topic "in": offset})."""
    token = h.send(
        ApiKey.TXN_OFFSET_COMMIT,
        version,
        transactional_id=f"t{pid}",
        group_id=group,
        producer_id=pid,
        producer_epoch=EPOCH,
        generation_id=-1,
        member_id="",
        topics=[
            {
                "name": "in",
                "partitions": [
                    {"partition_index": p, "committed_offset": o, "committed_metadata": metadata}
                    for p, o in offsets.items()
                ],
            }
        ],
    )
    return token


def end_txn(h: Harness, group: str, commit: bool, pid=PID) -> None:
    h.run(h.coord.complete_transaction(h.coord.partition_for(group), pid, commit, h.now))


def offsets_of(h: Harness, group: str, *parts: int, require_stable=False) -> dict:
    """{partition: (error, offset)} of an OffsetFetch v7 for topic "in"."""
    fetched = h.fetched(group, {"in": list(parts)}, require_stable=require_stable)
    return {p: (err, off) for (_, p), (off, _, err) in fetched.items()}


def test_a_plain_commit_written_after_the_transactional_one_wins_when_it_commits():
    h = Harness()
    txn_commit(h, "g", {0: 42, 1: 42})
    h.commit("g", {("in", 0): 50})
    end_txn(h, "g", commit=True)
    assert offsets_of(h, "g", 0, 1) == {0: (E.NONE, 50), 1: (E.NONE, 42)}


def test_a_transactional_commit_written_after_a_plain_one_replaces_it_when_it_commits():
    h = Harness()
    h.commit("g", {("in", 0): 50})
    txn_commit(h, "g", {0: 42})
    assert offsets_of(h, "g", 0) == {0: (E.NONE, 50)}  # still the committed one
    end_txn(h, "g", commit=True)
    assert offsets_of(h, "g", 0) == {0: (E.NONE, 42)}


def test_metadata_too_large_fails_only_its_partition_and_is_not_written():
    h = Harness()
    big = "x" * (TEST_CONFIG.offset_metadata_max_bytes + 1)
    token = h.send(
        ApiKey.TXN_OFFSET_COMMIT,
        3,
        transactional_id="t",
        group_id="g",
        producer_id=PID,
        producer_epoch=EPOCH,
        generation_id=-1,
        member_id="",
        topics=[
            {
                "name": "in",
                "partitions": [
                    {"partition_index": 0, "committed_offset": 1, "committed_metadata": big},
                    {"partition_index": 1, "committed_offset": 2, "committed_metadata": "ok"},
                ],
            }
        ],
    )
    assert h.commit_errors(token) == {("in", 0): E.OFFSET_METADATA_TOO_LARGE, ("in", 1): E.NONE}
    [persist] = h.persists
    assert len(persist.records) == 1 and persist.transactional
    end_txn(h, "g", commit=True)
    assert offsets_of(h, "g", 0, 1) == {0: (E.NONE, -1), 1: (E.NONE, 2)}


def test_a_write_the_log_refuses_answers_its_error_and_leaves_nothing_pending():
    h = Harness()
    h.hold_writes = True
    token = txn_commit(h, "g", {0: 42})
    assert not h.answered(token)  # answered once durable
    h.complete_writes(E.INVALID_PRODUCER_EPOCH)  # a fenced producer's batch
    assert h.commit_errors(token) == {("in", 0): E.INVALID_PRODUCER_EPOCH}
    assert offsets_of(h, "g", 0, require_stable=True) == {0: (E.NONE, -1)}


def test_fetch_v8_answers_unstable_per_partition_and_no_group_error():
    h = Harness()
    h.commit("g", {("in", 0): 5, ("in", 1): 6})
    txn_commit(h, "g", {1: 42})
    r = h.reply(h.fetch("g", {"in": [0, 1]}, version=8, require_stable=True))
    [group] = r["groups"]
    assert group["error_code"] == E.NONE
    parts = {p["partition_index"]: p for p in group["topics"][0]["partitions"]}
    assert (parts[0]["error_code"], parts[0]["committed_offset"]) == (E.NONE, 5)
    assert (parts[1]["error_code"], parts[1]["committed_offset"]) == (E.UNSTABLE_OFFSET_COMMIT, -1)
    assert parts[1]["committed_leader_epoch"] == -1


def test_fetching_all_offsets_marks_the_pending_ones_unstable():
    h = Harness()
    h.commit("g", {("in", 0): 5, ("in", 1): 6})
    txn_commit(h, "g", {1: 42, 2: 43})
    everything = h.fetched("g", None, require_stable=True)
    # Like Kafka's fetchAllOffsets: the committed partitions only, a pending
    # one answered as unstable; a partition with nothing committed is not listed.
    assert everything == {
        ("in", 0): (5, "", E.NONE),
        ("in", 1): (-1, "", E.UNSTABLE_OFFSET_COMMIT),
    }
    assert h.fetched("g", None) == {("in", 0): (5, "", E.NONE), ("in", 1): (6, "", E.NONE)}


def test_offset_delete_removes_pending_offsets_with_a_tombstone():
    h = Harness()
    txn_commit(h, "g", {0: 42})
    before = len(h.persists)
    assert h.reply(h.offset_delete("g", {"in": [0]}))["error_code"] == E.NONE
    [tombstone] = h.persists[before:]
    assert [(r.key, r.value) for r in tombstone.records] == [encode_offset_tombstone("g", "in", 0)]
    assert not tombstone.transactional
    assert offsets_of(h, "g", 0, require_stable=True) == {0: (E.NONE, -1)}
    end_txn(h, "g", commit=True)
    assert offsets_of(h, "g", 0) == {0: (E.NONE, -1)}


def test_delete_groups_removes_pending_offsets_too():
    h = Harness()
    h.commit("g", {("in", 0): 5})
    txn_commit(h, "g", {0: 42, 1: 43})
    before = len(h.persists)
    assert h.delete_groups("g") == {"g": E.NONE}
    [persist] = h.persists[before:]
    written = {(r.key, r.value) for r in persist.records}
    assert encode_offset_tombstone("g", "in", 0) in written
    assert encode_offset_tombstone("g", "in", 1) in written  # pending only
    end_txn(h, "g", commit=True)
    assert h.coord.committed_offsets("g") == {}


def test_a_failed_tombstone_brings_pending_offsets_back():
    h = Harness()
    txn_commit(h, "g", {0: 42})
    h.hold_writes = True
    token = h.offset_delete("g", {"in": [0]})
    h.complete_writes(E.NOT_LEADER_OR_FOLLOWER)
    assert h.reply(token)["error_code"] == E.NOT_COORDINATOR
    h.hold_writes = False
    assert offsets_of(h, "g", 0, require_stable=True) == {0: (E.UNSTABLE_OFFSET_COMMIT, -1)}
    end_txn(h, "g", commit=True)
    assert offsets_of(h, "g", 0) == {0: (E.NONE, 42)}


def test_a_transactional_write_completing_after_a_tombstone_stays_removed():
    h = Harness()
    h.hold_writes = True
    commit = txn_commit(h, "g", {0: 42})
    h.offset_delete("g", {"in": [0]})
    h.complete_writes()
    assert h.commit_errors(commit) == {("in", 0): E.NONE}
    h.hold_writes = False
    assert offsets_of(h, "g", 0, require_stable=True) == {0: (E.NONE, -1)}
    end_txn(h, "g", commit=True)
    assert offsets_of(h, "g", 0) == {0: (E.NONE, -1)}


def test_an_offset_with_pending_offsets_does_not_expire_nor_does_its_group():
    h = Harness()
    h.commit("g", {("in", 0): 5, ("in", 1): 6})
    txn_commit(h, "g", {0: 42})
    h.advance(DAY + TEST_CONFIG.offsets_retention_check_interval_ms)
    # Partition 1 expired; partition 0 waits for its transaction; the group stays.
    assert h.coord.committed_offsets("g").keys() == {("in", 0)}
    assert h.delete_groups("nothing") == {"nothing": E.GROUP_ID_NOT_FOUND}
    assert h.state("g") == "Empty"
    end_txn(h, "g", commit=False)
    h.advance(TEST_CONFIG.offsets_retention_check_interval_ms)
    assert h.coord.committed_offsets("g") == {}
    assert h.state("g") == "Dead"  # gone: DescribeGroups answers Dead


def test_a_group_with_only_pending_offsets_is_not_deleted_by_retention():
    h = Harness()
    txn_commit(h, "g", {0: 42})
    h.advance(DAY + TEST_CONFIG.offsets_retention_check_interval_ms)
    assert h.state("g") == "Empty"
    end_txn(h, "g", commit=True)
    assert offsets_of(h, "g", 0) == {0: (E.NONE, 42)}


def test_two_producers_pending_in_one_group_end_independently():
    h = Harness()
    txn_commit(h, "g", {0: 10})
    txn_commit(h, "g", {1: 20}, pid=OTHER_PID)
    end_txn(h, "g", commit=False)
    assert offsets_of(h, "g", 0, 1, require_stable=True) == {
        0: (E.NONE, -1),
        1: (E.UNSTABLE_OFFSET_COMMIT, -1),
    }
    end_txn(h, "g", commit=True, pid=OTHER_PID)
    assert offsets_of(h, "g", 0, 1, require_stable=True) == {0: (E.NONE, -1), 1: (E.NONE, 20)}


def test_unloading_forgets_pending_offsets():
    h = Harness()
    txn_commit(h, "g", {0: 42})
    partition = h.coord.partition_for("g")
    h.run(h.coord.unload(partition, h.now))
    h.run(h.coord.load(partition, [], h.now))
    assert offsets_of(h, "g", 0, require_stable=True) == {0: (E.NONE, -1)}
    end_txn(h, "g", commit=True)  # a marker for what this coordinator never read
    assert offsets_of(h, "g", 0) == {0: (E.NONE, -1)}


def test_replay_orders_plain_and_transactional_commits_as_the_log_does():
    h = Harness()
    txn_commit(h, "g", {0: 42, 1: 42})
    h.commit("g", {("in", 0): 50})
    partition = h.coord.partition_for("g")
    txn_persist, plain_persist = h.persists
    log = [TransactionalRecord(PID, k, v) for k, v in txn_persist.records]
    log += list(plain_persist.records)
    log.append(TransactionEnd(PID, True))
    restarted = GroupCoordinator(TEST_CONFIG)
    restarted.load(partition, log, h.now)
    assert {tp: o.offset for tp, o in restarted.committed_offsets("g").items()} == {
        ("in", 0): 50,
        ("in", 1): 42,
    }


def test_replayed_tombstone_removes_pending_offsets():
    h = Harness()
    txn_commit(h, "g", {0: 42})
    [persist] = h.persists
    partition = h.coord.partition_for("g")
    log = [TransactionalRecord(PID, k, v) for k, v in persist.records]
    log += [encode_offset_tombstone("g", "in", 0), TransactionEnd(PID, True)]
    restarted = GroupCoordinator(TEST_CONFIG)
    restarted.load(partition, log, h.now)
    assert restarted.committed_offsets("g") == {}
    # The group itself came back as a simple group, as Kafka's replay makes one.
    assert restarted.group("g") is not None
