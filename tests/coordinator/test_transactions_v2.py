"""The transaction coordinator under transactions v2 (KIP-890 part 2), sans I/O
(tests/coordinator/txn_harness.py): partitions added by their leaders, the
epoch bumped by every EndTxn v5, retries told apart by that epoch, and a spent
epoch handed over to a new producer id, as Kafka 4.3's coordinator does."""

from __future__ import annotations

import pytest

from coordinator.transactions import MAX_EPOCH, OVERFLOW_EPOCH, TransactionCoordinator, TxnConfig
from coordinator.txn_records import decode_key, decode_value
from coordinator.txn_state import TxnState
from tests.coordinator.txn_harness import PARTITIONS, TxnHarness
from wire.error_codes import ErrorCode

E = ErrorCode
S = TxnState
TP = ("orders", 0)


def started(h: TxnHarness, txn_id: str = "t") -> tuple[int, int]:
    reply = h.init(txn_id)
    pid, epoch = reply["producer_id"], reply["producer_epoch"]
    assert h.broker_add(txn_id, pid, epoch, TP) == {TP: E.NONE}
    return pid, epoch


def last_value(h: TxnHarness, txn_id: str = "t"):
    partition = h.coord.partition_for(txn_id)
    key, value = h.log[partition][-1]
    assert decode_key(key) == txn_id
    return decode_value(value)


def test_a_leader_adds_the_partition_of_a_v2_producers_first_batch():
    h = TxnHarness()
    pid, epoch = started(h)
    assert h.state() is S.ONGOING
    assert h.coord.txns["t"].partitions == {TP}
    value = last_value(h)
    assert value.state is S.ONGOING and value.client_transaction_version == 2
    # Adding it again writes nothing.
    writes = len(h.log[h.coord.partition_for("t")])
    assert h.broker_add("t", pid, epoch, TP) == {TP: E.NONE}
    assert len(h.log[h.coord.partition_for("t")]) == writes


def test_end_txn_v5_bumps_the_epoch_and_the_markers_carry_it():
    h = TxnHarness()
    pid, epoch = started(h)
    assert h.end_v2("t", pid, epoch, commit=True) == (E.NONE, pid, epoch + 1)
    prepared = last_value(h)
    assert (prepared.state, prepared.producer_epoch) == (S.PREPARE_COMMIT, epoch + 1)
    [marker] = h.markers
    assert (marker.producer_id, marker.producer_epoch, marker.commit) == (pid, epoch + 1, True)
    assert marker.partitions == (TP,) and marker.transaction_version == 2
    # While the markers are written, adding answers that first, whatever the
    # epoch (Kafka's handleAddPartitionsToTransaction checks its pending
    # transition before the producer).
    assert h.broker_add("t", pid, epoch + 1, TP) == {TP: E.CONCURRENT_TRANSACTIONS}
    assert h.broker_add("t", pid, epoch, TP) == {TP: E.CONCURRENT_TRANSACTIONS}
    h.deliver_markers()
    assert h.state() is S.COMPLETE_COMMIT
    assert h.coord.txns["t"].producer_epoch == epoch + 1
    # The next transaction runs at the bumped epoch; the old one is fenced.
    assert h.broker_add("t", pid, epoch, TP) == {TP: E.PRODUCER_FENCED}
    assert h.broker_add("t", pid, epoch + 1, TP) == {TP: E.NONE}
    assert h.end_v2("t", pid, epoch + 1, commit=False) == (E.NONE, pid, epoch + 2)


def test_a_retried_end_txn_is_told_apart_by_its_epoch():
    h = TxnHarness()
    pid, epoch = started(h)
    assert h.end_v2("t", pid, epoch) == (E.NONE, pid, epoch + 1)
    # Retried while the markers are on their way, to commit or to abort: wait.
    assert h.end_v2("t", pid, epoch)[0] == E.CONCURRENT_TRANSACTIONS
    assert h.end_v2("t", pid, epoch, commit=False)[0] == E.CONCURRENT_TRANSACTIONS
    h.deliver_markers()
    # Retried to abort what was committed: refused.
    assert h.end_v2("t", pid, epoch, commit=False)[0] == E.INVALID_TXN_STATE
    # Retried once complete: the same answer again, nothing written.
    writes = len(h.log[h.coord.partition_for("t")])
    assert h.end_v2("t", pid, epoch) == (E.NONE, pid, epoch + 1)
    assert len(h.log[h.coord.partition_for("t")]) == writes
    # At the new epoch, a commit with no transaction open is invalid...
    assert h.end_v2("t", pid, epoch + 1)[0] == E.INVALID_TXN_STATE
    # ...and an epoch the coordinator never handed out is fenced.
    assert h.end_v2("t", pid, epoch + 2)[0] == E.PRODUCER_FENCED


def test_the_next_end_waits_for_the_markers_of_the_last_instead_of_being_fenced():
    """KAFKA-18464: franz-go ends a transaction whose batches all failed with
    an abort at the epoch the last EndTxn handed out, which can reach the
    coordinator before that end's markers are written. Kafka 4.x answers
    CONCURRENT_TRANSACTIONS (its CompleteCommit is pending) and the client
    retries; PRODUCER_FENCED there would end the client for good."""
    h = TxnHarness()
    pid, epoch = started(h)
    assert h.end_v2("t", pid, epoch, commit=True) == (E.NONE, pid, epoch + 1)
    assert h.state() is S.PREPARE_COMMIT
    assert h.end_v2("t", pid, epoch + 1, commit=False)[0] == E.CONCURRENT_TRANSACTIONS
    assert h.end_v2("t", pid, epoch + 1, commit=True)[0] == E.CONCURRENT_TRANSACTIONS
    h.deliver_markers()
    assert h.state() is S.COMPLETE_COMMIT
    assert h.end_v2("t", pid, epoch + 1, commit=False) == (E.NONE, pid, epoch + 2)
    h.deliver_markers()
    assert h.state() is S.COMPLETE_ABORT


def test_a_v2_producer_may_abort_a_transaction_none_of_whose_batches_arrived():
    h = TxnHarness()
    reply = h.init("t")
    pid, epoch = reply["producer_id"], reply["producer_epoch"]
    assert h.end_v2("t", pid, epoch, commit=False) == (E.NONE, pid, epoch + 1)
    [marker] = h.markers
    assert marker.partitions == ()
    h.deliver_markers()
    assert h.state() is S.COMPLETE_ABORT
    # Commit of nothing stays invalid.
    assert h.end_v2("t", pid, epoch + 1)[0] == E.INVALID_TXN_STATE


def test_a_spent_epoch_hands_the_id_over_to_a_new_producer_id():
    h = TxnHarness()
    pid, _ = started(h)
    h.coord.txns["t"].producer_epoch = MAX_EPOCH  # 32,765 transactions later
    assert h.coord.epoch_exhausted("t")
    error, new_pid, new_epoch = h.end_v2("t", pid, MAX_EPOCH)
    assert (error, new_epoch) == (E.NONE, 0) and new_pid != pid
    prepared = last_value(h)
    assert (prepared.producer_id, prepared.producer_epoch) == (pid, OVERFLOW_EPOCH)
    assert prepared.next_producer_id == new_pid
    [marker] = h.markers
    assert (marker.producer_id, marker.producer_epoch) == (pid, OVERFLOW_EPOCH)
    # The new id before the transaction is complete: wait, not a wrong mapping.
    assert h.broker_add("t", new_pid, 0, TP) == {TP: E.CONCURRENT_TRANSACTIONS}
    h.deliver_markers()
    complete = last_value(h)
    assert (complete.state, complete.producer_id, complete.producer_epoch) == (
        S.COMPLETE_COMMIT,
        new_pid,
        0,
    )
    assert complete.previous_producer_id == pid and complete.next_producer_id == -1
    # The end retried with the old id and epoch gets the same answer.
    assert h.end_v2("t", pid, MAX_EPOCH) == (E.NONE, new_pid, 0)
    assert h.broker_add("t", new_pid, 0, TP) == {TP: E.NONE}


def test_a_new_coordinator_finishes_a_hand_over_left_prepared():
    h = TxnHarness()
    pid, _ = started(h)
    h.coord.txns["t"].producer_epoch = MAX_EPOCH
    _, new_pid, _ = h.end_v2("t", pid, MAX_EPOCH)
    h.markers.clear()  # the coordinator dies before they are written
    partition = h.coord.partition_for("t")
    h.coord = TransactionCoordinator(TxnConfig(PARTITIONS))
    h.load(partition, epoch=6)
    [marker] = h.markers
    assert (marker.producer_id, marker.producer_epoch, marker.transaction_version) == (
        pid,
        OVERFLOW_EPOCH,
        2,
    )
    h.deliver_markers()
    txn = h.coord.txns["t"]
    assert (txn.state, txn.producer_id, txn.producer_epoch) == (S.COMPLETE_COMMIT, new_pid, 0)


def test_verification_answers_transaction_abortable_for_partitions_not_in_it():
    h = TxnHarness()
    pid, epoch = started(h)
    other = ("orders", 1)
    answer = h.broker_add("t", pid, epoch, TP, other, verify_only=True)
    assert answer == {TP: E.NONE, other: E.TRANSACTION_ABORTABLE}


@pytest.mark.parametrize(("transaction_version", "marker_version"), [(2, 2), (1, 0)])
def test_a_timed_out_transaction_is_aborted_under_the_brokers_version(
    transaction_version, marker_version
):
    h = TxnHarness()
    h.coord.config = TxnConfig(PARTITIONS, transaction_version=transaction_version)
    reply = h.init("t", timeout=1000)
    pid, epoch = reply["producer_id"], reply["producer_epoch"]
    assert h.add("t", pid, epoch, TP) == {TP: E.NONE}  # a v1 producer's
    h.tick(1001)
    [marker] = h.markers
    assert (marker.commit, marker.producer_epoch) == (False, epoch + 1)
    assert marker.transaction_version == marker_version
