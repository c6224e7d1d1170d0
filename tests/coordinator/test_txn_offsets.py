"""Transactional offsets (TxnOffsetCommit): pending until the transaction's
marker, invisible to OffsetFetch (UNSTABLE_OFFSET_COMMIT with require_stable),
written as the producer's transactional batch, rebuilt from the log."""

from coordinator import GroupCoordinator
from coordinator.replay import TransactionalRecord, TransactionEnd
from tests.coordinator.harness import TEST_CONFIG, Harness
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode as E

PID, EPOCH = 4000, 3


def txn_commit(h: Harness, group: str, offset: int, *, generation=-1, member="", version=3):
    token = h.send(
        ApiKey.TXN_OFFSET_COMMIT,
        version,
        transactional_id="t",
        group_id=group,
        producer_id=PID,
        producer_epoch=EPOCH,
        generation_id=generation,
        member_id=member,
        topics=[
            {
                "name": "in",
                "partitions": [
                    {"partition_index": 0, "committed_offset": offset, "committed_metadata": "m"}
                ],
            }
        ],
    )
    return h.reply(token)


def fetch(h: Harness, group: str, require_stable: bool):
    token = h.send(
        ApiKey.OFFSET_FETCH,
        7,
        group_id=group,
        topics=[{"name": "in", "partition_indexes": [0]}],
        require_stable=require_stable,
    )
    [p] = h.reply(token)["topics"][0]["partitions"]
    return p["error_code"], p["committed_offset"]


def test_offsets_count_only_once_their_transaction_commits():
    h = Harness()
    reply = txn_commit(h, "g", 42)
    assert reply["topics"][0]["partitions"][0]["error_code"] == E.NONE
    [persist] = h.persists
    assert (persist.producer_id, persist.producer_epoch) == (PID, EPOCH)  # transactional
    assert fetch(h, "g", require_stable=False) == (E.NONE, -1)
    assert fetch(h, "g", require_stable=True) == (E.UNSTABLE_OFFSET_COMMIT, -1)
    partition = h.coord.partition_for("g")
    h.run(h.coord.complete_transaction(partition, PID, True, h.now))
    assert fetch(h, "g", require_stable=True) == (E.NONE, 42)


def test_aborted_offsets_are_dropped():
    h = Harness()
    txn_commit(h, "g", 42)
    h.run(h.coord.complete_transaction(h.coord.partition_for("g"), PID, False, h.now))
    assert fetch(h, "g", require_stable=True) == (E.NONE, -1)


def test_a_marker_of_another_partition_leaves_the_offsets_pending():
    h = Harness()
    txn_commit(h, "g", 42)
    other = (h.coord.partition_for("g") + 1) % TEST_CONFIG.offsets_topic_num_partitions
    h.run(h.coord.complete_transaction(other, PID, True, h.now))
    assert fetch(h, "g", require_stable=True) == (E.UNSTABLE_OFFSET_COMMIT, -1)


def test_kip_447_member_checks_apply_to_a_member_but_not_to_a_plain_producer():
    h = Harness()
    h.join("g")  # a member in a group being formed
    assert (
        txn_commit(h, "g", 1, generation=7, member="nobody")["topics"][0]["partitions"][0][
            "error_code"
        ]
        == E.UNKNOWN_MEMBER_ID
    )
    # Without member and generation a transactional commit is taken whatever the state.
    assert txn_commit(h, "g", 1)["topics"][0]["partitions"][0]["error_code"] == E.NONE


def test_replay_keeps_uncommitted_transactions_pending_and_applies_markers():
    h = Harness()
    txn_commit(h, "g", 42)
    partition = h.coord.partition_for("g")
    [persist] = h.persists
    key, value = persist.records[0]
    restarted = GroupCoordinator(TEST_CONFIG)
    restarted.load(partition, [TransactionalRecord(PID, key, value)], h.now)
    assert restarted.committed_offsets("g") == {}
    again = GroupCoordinator(TEST_CONFIG)
    again.load(partition, [TransactionalRecord(PID, key, value), TransactionEnd(PID, True)], h.now)
    assert again.committed_offsets("g")[("in", 0)].offset == 42
