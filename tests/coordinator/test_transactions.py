"""The transaction coordinator, sans I/O (tests/coordinator/txn_harness.py):
transactions v1, the rules every client before Kafka 4.0 follows."""

from __future__ import annotations

import pytest

from coordinator.transactions import TxnConfig
from coordinator.txn_records import decode_key, decode_value
from coordinator.txn_state import TxnState
from tests.coordinator.txn_harness import PARTITIONS, TxnHarness
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

E = ErrorCode
S = TxnState


def test_a_new_transactional_id_gets_a_producer_id_at_epoch_zero_and_is_logged():
    h = TxnHarness()
    reply = h.init("t")
    assert (reply["error_code"], reply["producer_id"], reply["producer_epoch"]) == (0, 1000, 0)
    partition = h.coord.partition_for("t")
    key, value = h.log[partition][-1]
    assert decode_key(key) == "t"
    logged = decode_value(value)
    assert (logged.producer_id, logged.producer_epoch, logged.state) == (1000, 0, S.EMPTY)
    assert logged.transaction_timeout_ms == 60_000


def test_init_again_bumps_the_epoch_and_fences_the_previous_producer():
    h = TxnHarness()
    first = h.init("t")
    second = h.init("t")
    assert second["producer_id"] == first["producer_id"]
    assert second["producer_epoch"] == 1
    pid = first["producer_id"]
    assert h.add("t", pid, 0, ("a", 0)) == {("a", 0): E.PRODUCER_FENCED}
    # Clients before AddPartitionsToTxn v2 do not know PRODUCER_FENCED.
    assert h.add("t", pid, 0, ("a", 0), version=1) == {("a", 0): E.INVALID_PRODUCER_EPOCH}
    assert h.end("t", pid, 0) == E.PRODUCER_FENCED


def test_commit_writes_prepare_then_markers_then_complete():
    h = TxnHarness()
    r = h.init("t")
    pid, epoch = r["producer_id"], r["producer_epoch"]
    assert h.add("t", pid, epoch, ("a", 0), ("a", 1)) == {("a", 0): 0, ("a", 1): 0}
    assert h.state() is S.ONGOING
    assert h.end("t", pid, epoch, commit=True) == E.NONE
    assert h.state() is S.PREPARE_COMMIT
    [marker] = h.markers
    assert marker.commit and marker.partitions == (("a", 0), ("a", 1))
    assert marker.coordinator_epoch == 5
    # Until the markers are written the producer may not start the next one,
    # nor end this one otherwise (Kafka's pending CompleteCommit).
    assert h.add("t", pid, epoch, ("a", 0)) == {("a", 0): E.CONCURRENT_TRANSACTIONS}
    assert h.end("t", pid, epoch, commit=True) == E.CONCURRENT_TRANSACTIONS
    assert h.end("t", pid, epoch, commit=False) == E.CONCURRENT_TRANSACTIONS
    # A fenced epoch is still told so first (v1 checks the epoch before).
    assert h.end("t", pid, epoch + 1, commit=False) == E.PRODUCER_FENCED
    h.deliver_markers()
    assert h.state() is S.COMPLETE_COMMIT
    assert h.coord.txns["t"].partitions == set()
    # A retried commit is answered again; an abort of it is refused.
    assert h.end("t", pid, epoch, commit=True) == E.NONE
    assert h.end("t", pid, epoch, commit=False) == E.INVALID_TXN_STATE
    states = [decode_value(v).state for _, v in h.log[h.coord.partition_for("t")]]
    assert states == [S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]


def test_end_without_a_transaction_is_invalid_and_unknown_producers_are_refused():
    h = TxnHarness()
    r = h.init("t")
    pid = r["producer_id"]
    assert h.end("t", pid, 0) == E.INVALID_TXN_STATE
    assert h.end("t", pid + 1, 0) == E.INVALID_PRODUCER_ID_MAPPING
    assert h.end("nobody", pid, 0) == E.INVALID_PRODUCER_ID_MAPPING
    assert h.add("t", pid + 1, 0, ("a", 0)) == {("a", 0): E.INVALID_PRODUCER_ID_MAPPING}


def test_timeouts_outside_the_allowed_range_are_refused():
    h = TxnHarness(max_timeout_ms=10_000)
    assert h.init("t", timeout=10_001)["error_code"] == E.INVALID_TRANSACTION_TIMEOUT
    assert h.init("t", timeout=0)["error_code"] == E.INVALID_TRANSACTION_TIMEOUT
    assert h.init("t", timeout=10_000)["error_code"] == E.NONE


def test_an_open_transaction_past_its_timeout_is_aborted_with_the_epoch_bumped():
    h = TxnHarness()
    r = h.init("t", timeout=5_000)
    pid, epoch = r["producer_id"], r["producer_epoch"]
    h.add("t", pid, epoch, ("a", 0))
    h.tick(4_000)
    assert h.state() is S.ONGOING
    h.tick(1_500)
    assert h.state() is S.PREPARE_ABORT
    [marker] = h.markers
    assert not marker.commit and marker.producer_epoch == epoch + 1
    h.deliver_markers()
    assert h.state() is S.COMPLETE_ABORT
    # The producer that stalled is fenced.
    assert h.end("t", pid, epoch, commit=True) == E.PRODUCER_FENCED


def test_a_new_producer_aborts_the_open_transaction_of_its_predecessor():
    h = TxnHarness()
    r = h.init("t")
    pid, epoch = r["producer_id"], r["producer_epoch"]
    h.add("t", pid, epoch, ("a", 0))
    assert h.init("t")["error_code"] == E.CONCURRENT_TRANSACTIONS
    assert h.state() is S.PREPARE_ABORT
    assert h.init("t")["error_code"] == E.CONCURRENT_TRANSACTIONS  # markers not written yet
    h.deliver_markers()
    reply = h.init("t")
    assert reply["error_code"] == E.NONE
    assert (reply["producer_id"], reply["producer_epoch"]) == (pid, epoch + 2)


def test_add_offsets_adds_the_groups_offsets_partition():
    h = TxnHarness()
    r = h.init("t")
    pid, epoch = r["producer_id"], r["producer_epoch"]
    reply = h.call(
        "add_offsets",
        ApiKey.ADD_OFFSETS_TO_TXN,
        3,
        transactional_id="t",
        producer_id=pid,
        producer_epoch=epoch,
        group_id="g",
    )
    assert reply["error_code"] == E.NONE
    assert h.coord.txns["t"].partitions == {("__consumer_offsets", 7)}


def test_a_failed_log_write_changes_nothing_and_maps_to_a_retriable_error():
    h = TxnHarness()
    r = h.init("t")
    pid, epoch = r["producer_id"], r["producer_epoch"]
    h.fail_writes = E.NOT_ENOUGH_REPLICAS
    assert h.add("t", pid, epoch, ("a", 0)) == {("a", 0): E.COORDINATOR_NOT_AVAILABLE}
    assert h.state() is S.EMPTY
    h.fail_writes = E.NOT_LEADER_OR_FOLLOWER
    assert h.init("u")["error_code"] == E.NOT_COORDINATOR
    assert "u" not in h.coord.txns


def test_a_new_coordinator_resends_the_markers_of_prepared_transactions():
    h = TxnHarness()
    r = h.init("t")
    pid, epoch = r["producer_id"], r["producer_epoch"]
    h.add("t", pid, epoch, ("a", 0))
    h.end("t", pid, epoch, commit=True)
    partition = h.coord.partition_for("t")
    h.markers.clear()  # the old coordinator died before writing them
    h.run(h.coord.unload(partition, h.now))
    assert "t" not in h.coord.txns
    h.load(partition, epoch=6)
    [marker] = h.markers
    assert marker.commit and marker.coordinator_epoch == 6 and marker.partitions == (("a", 0),)
    h.deliver_markers()
    assert h.state() is S.COMPLETE_COMMIT


def test_requests_for_partitions_not_served_or_loading():
    h = TxnHarness(partitions=[])
    assert h.init("t")["error_code"] == E.NOT_COORDINATOR
    h.coord.begin_loading(h.coord.partition_for("t"), 1)
    assert h.init("t")["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS


def test_describe_and_list_show_the_state_by_kafka_names():
    h = TxnHarness()
    r = h.init("t")
    h.add("t", r["producer_id"], r["producer_epoch"], ("a", 1), ("b", 0))
    h.init("u")
    reply = h.call("describe", ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=["t", "x"])
    t, x = reply["transaction_states"]
    assert t["transaction_state"] == "Ongoing"
    assert t["topics"] == [{"topic": "a", "partitions": [1]}, {"topic": "b", "partitions": [0]}]
    assert x["error_code"] == E.TRANSACTIONAL_ID_NOT_FOUND
    listed = h.call(
        "list_transactions",
        ApiKey.LIST_TRANSACTIONS,
        1,
        state_filters=["Ongoing", "Nonsense"],
        producer_id_filters=[],
        duration_filter=-1,
    )
    assert [s["transactional_id"] for s in listed["transaction_states"]] == ["t"]
    assert listed["unknown_state_filters"] == ["Nonsense"]


def test_list_filters_by_a_transactional_id_pattern_that_matches_the_whole_id():
    h = TxnHarness()
    for txn_id in ("orders-a", "orders-b", "payments-a", "x-orders-a"):
        h.init(txn_id)

    def listed(pattern):
        reply = h.call(
            "list_transactions",
            ApiKey.LIST_TRANSACTIONS,
            2,
            state_filters=[],
            producer_id_filters=[],
            transactional_id_pattern=pattern,
        )
        return reply["error_code"], sorted(
            s["transactional_id"] for s in reply["transaction_states"]
        )

    everyone = ["orders-a", "orders-b", "payments-a", "x-orders-a"]
    assert listed(None) == listed("") == (E.NONE, everyone)
    assert listed("orders-.*") == (E.NONE, ["orders-a", "orders-b"])
    assert listed(".*-a") == (E.NONE, ["orders-a", "payments-a", "x-orders-a"])
    assert listed("orders") == (E.NONE, [])  # a part of the id is not enough
    # Not RE2 (as Kafka's RE2J): refused, whatever Python's re would make of it.
    assert listed("(") == (E.INVALID_REGULAR_EXPRESSION, [])
    assert listed("(?=orders).*") == (E.INVALID_REGULAR_EXPRESSION, [])
    assert listed(r"(o)\1.*") == (E.INVALID_REGULAR_EXPRESSION, [])


@pytest.mark.parametrize("version", [0, 1])
def test_log_values_round_trip(version):
    from coordinator.txn_records import TxnLogValue, encode_value

    value = TxnLogValue(
        producer_id=7,
        producer_epoch=3,
        transaction_timeout_ms=1000,
        state=S.ONGOING,
        partitions=frozenset({("a", 0), ("a", 2), ("b", 1)}),
        last_update_timestamp_ms=5,
        start_timestamp_ms=4,
        client_transaction_version=2 if version else 0,
    )
    encoded = encode_value(value)
    assert encoded[:2] == bytes([0, version])
    assert decode_value(encoded) == value


def test_idle_transactional_ids_expire_and_open_ones_do_not():
    h = TxnHarness()
    h.coord.config = TxnConfig(PARTITIONS, id_expiration_ms=10_000, id_expiration_check_ms=1_000)
    for p in range(PARTITIONS):  # the timers follow the new settings from here
        h.run(h.coord.unload(p, h.now))
        h.load(p, epoch=5)
    idle = h.init("idle")
    busy = h.init("busy")
    h.add("busy", busy["producer_id"], busy["producer_epoch"], ("a", 0))
    h.coord.txns["busy"].timeout_ms = 60_000
    for _ in range(11):
        h.tick(1_000)
    assert "idle" not in h.coord.txns and "busy" in h.coord.txns
    partition = h.coord.partition_for("idle")
    key, value = h.log[partition][-1]
    assert (decode_key(key), value) == ("idle", None)
    # Loading the log again does not bring it back.
    h.run(h.coord.unload(partition, h.now))
    h.load(partition, epoch=6)
    assert "idle" not in h.coord.txns
    assert h.init("idle")["producer_id"] != idle["producer_id"]
