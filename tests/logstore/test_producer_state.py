"""Idempotent producer state: sequence checks and snapshot files."""

from __future__ import annotations

import os
import struct

import crc32c
import pytest

from logstore.errors import CorruptFileError, InvalidProducerEpoch, OutOfOrderSequence
from logstore.producer_state import (
    INT32_MAX,
    AppendOrigin,
    CompletedTxn,
    Duplicate,
    PendingUpdate,
    ProducerStateManager,
    TxnMarker,
    decode_snapshot,
    encode_snapshot,
)
from wire.records import BatchHeader

PID = 4000


def header(base_offset, count, *, seq, epoch=0, pid=PID, ts=1000, attributes=0) -> BatchHeader:
    return BatchHeader(
        base_offset=base_offset,
        batch_length=100,
        partition_leader_epoch=0,
        magic=2,
        crc=0,
        attributes=attributes,
        last_offset_delta=count - 1,
        base_timestamp=ts,
        max_timestamp=ts,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        records_count=count,
    )


def append(state: ProducerStateManager, *headers):
    result = state.prepare(headers)
    if isinstance(result, PendingUpdate):
        state.apply(result, headers[-1].next_offset)
    return result


def test_unknown_producer_is_accepted_at_any_sequence():
    state = ProducerStateManager(None)
    assert isinstance(append(state, header(0, 3, seq=17)), PendingUpdate)
    entry = state.entry(PID)
    assert entry.producer_epoch == 0 and entry.last_seq == 19 and entry.last_offset == 2


def test_retried_batch_is_a_duplicate_with_its_original_offsets():
    state = ProducerStateManager(None)
    append(state, header(0, 3, seq=0))
    append(state, header(3, 2, seq=3))
    dup = state.prepare([header(99, 3, seq=0)])
    assert dup == Duplicate(PID, 0, 2, 1000)
    assert state.prepare([header(99, 2, seq=3)]) == Duplicate(PID, 3, 4, 1000)


def test_only_the_last_five_batches_are_remembered():
    state = ProducerStateManager(None)
    for i in range(6):
        append(state, header(i, 1, seq=i))
    with pytest.raises(OutOfOrderSequence):
        state.prepare([header(10, 1, seq=0)])
    assert isinstance(state.prepare([header(10, 1, seq=1)]), Duplicate)


def test_sequence_gap_is_out_of_order_and_names_the_expected_sequence():
    state = ProducerStateManager(None)
    append(state, header(0, 3, seq=0))
    with pytest.raises(OutOfOrderSequence) as e:
        state.prepare([header(3, 1, seq=5)])
    assert (e.value.producer_id, e.value.first_sequence, e.value.last_sequence) == (PID, 5, 2)
    assert "expected sequence 3" in str(e.value)


def test_stale_epoch_is_invalid_producer_epoch():
    state = ProducerStateManager(None)
    append(state, header(0, 1, seq=0, epoch=3))
    with pytest.raises(InvalidProducerEpoch) as e:
        state.prepare([header(1, 1, seq=1, epoch=2)])
    assert (e.value.producer_epoch, e.value.current_epoch) == (2, 3)


def test_new_epoch_must_start_at_sequence_zero():
    state = ProducerStateManager(None)
    append(state, header(0, 1, seq=0, epoch=0))
    with pytest.raises(OutOfOrderSequence):
        state.prepare([header(1, 1, seq=1, epoch=1)])
    assert isinstance(append(state, header(1, 1, seq=0, epoch=1)), PendingUpdate)
    assert state.entry(PID).producer_epoch == 1
    # The old epoch's batches are forgotten with the bump.
    assert len(state.entry(PID).batches) == 1


def test_sequence_wraps_after_int32_max():
    state = ProducerStateManager(None)
    append(state, header(0, 3, seq=INT32_MAX - 2))
    assert state.entry(PID).last_seq == INT32_MAX
    assert isinstance(append(state, header(3, 2, seq=0)), PendingUpdate)
    # A batch straddling the wrap: first sequence INT32_MAX - 1, last 1.
    state = ProducerStateManager(None)
    append(state, header(0, 4, seq=INT32_MAX - 1))
    assert state.entry(PID).last_seq == 1
    assert state.prepare([header(9, 4, seq=INT32_MAX - 1)]) == Duplicate(PID, 0, 3, 1000)


def test_batches_of_one_append_are_checked_against_each_other():
    state = ProducerStateManager(None)
    append(state, header(0, 1, seq=0))
    with pytest.raises(OutOfOrderSequence):
        state.prepare([header(1, 2, seq=1), header(3, 1, seq=4)])
    assert isinstance(state.prepare([header(1, 2, seq=1), header(3, 1, seq=3)]), PendingUpdate)


def test_failed_check_changes_nothing():
    state = ProducerStateManager(None)
    append(state, header(0, 1, seq=0))
    with pytest.raises(OutOfOrderSequence):
        state.prepare([header(1, 1, seq=1), header(2, 1, seq=7)])
    assert state.entry(PID).last_seq == 0


def test_replicated_batches_update_state_without_checks():
    state = ProducerStateManager(None)
    state.update_from_batch(header(0, 1, seq=50, epoch=2))
    state.update_from_batch(header(1, 1, seq=7, epoch=1))  # older epoch: logged, kept
    assert state.map_end_offset == 2


def test_expired_producers_are_removed():
    state = ProducerStateManager(None, producer_id_expiration_ms=1000)
    append(state, header(0, 1, seq=0, ts=5000))
    assert state.remove_expired_producers(5999) == []
    assert state.remove_expired_producers(6000) == [PID]
    assert state.entry(PID) is None


def test_snapshot_round_trips_all_retained_batches(tmp_path):
    state = ProducerStateManager(os.fspath(tmp_path))
    for i in range(7):
        append(state, header(i * 2, 2, seq=i * 2, epoch=1, ts=1000 + i))
    append(state, header(14, 1, seq=0, pid=77, ts=3000))
    path = state.take_snapshot()
    assert os.path.basename(path) == "00000000000000000015.snapshot"
    loaded = ProducerStateManager(os.fspath(tmp_path))
    assert loaded.load_latest_snapshot(15, now_ms=3000) == 15
    entry = loaded.entry(PID)
    assert [b.first_offset for b in entry.batches] == [4, 6, 8, 10, 12]
    assert entry.producer_epoch == 1 and entry.last_seq == 13
    assert loaded.prepare([header(99, 2, seq=6, epoch=1)]) == Duplicate(PID, 6, 7, 1003)


def test_snapshot_uses_kafka_format_one_row_per_batch():
    state = ProducerStateManager(None)
    append(state, header(0, 2, seq=0, epoch=3, ts=111))
    append(state, header(2, 1, seq=2, epoch=3, ts=222))
    data = encode_snapshot(state.producers.values())
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count) == (1, 2)
    assert crc == crc32c.crc32c(data[6:])
    rows = list(struct.iter_unpack(">qhiqiqiq", data[10:]))
    # producer id, epoch, last sequence, last offset, offset delta, timestamp,
    # coordinator epoch, current transaction first offset
    assert rows == [(PID, 3, 1, 1, 1, 111, -1, -1), (PID, 3, 2, 2, 0, 222, -1, -1)]


def test_corrupt_snapshot_is_rejected_and_skipped_for_an_older_one(tmp_path):
    d = os.fspath(tmp_path)
    state = ProducerStateManager(d)
    append(state, header(0, 1, seq=0, ts=10))
    state.take_snapshot()
    append(state, header(1, 1, seq=1, ts=20))
    newer = state.take_snapshot()
    with open(newer, "r+b") as f:
        f.seek(12)
        f.write(b"\xff")
    with pytest.raises(CorruptFileError, match="CRC"):
        decode_snapshot(open(newer, "rb").read(), newer)
    loaded = ProducerStateManager(d)
    assert loaded.load_latest_snapshot(10, now_ms=20) == 1
    assert not os.path.exists(newer)
    assert loaded.entry(PID).last_seq == 0


def test_snapshots_above_the_log_end_are_deleted_on_load(tmp_path):
    d = os.fspath(tmp_path)
    state = ProducerStateManager(d)
    append(state, header(0, 5, seq=0, ts=10))
    state.take_snapshot()
    loaded = ProducerStateManager(d)
    assert loaded.load_latest_snapshot(3, now_ms=10) is None
    assert loaded.snapshot_offsets() == []


# --- transactions --------------------------------------------------------------------------

TXN = 0x10
CONTROL = 0x30


def marker(base_offset, *, pid=PID, epoch=0):
    return header(base_offset, 1, seq=-1, epoch=epoch, pid=pid, attributes=CONTROL)


def end_txn(state, h, *, commit, coordinator_epoch=0, origin=AppendOrigin.COORDINATOR):
    pending = state.prepare(
        [h], origin=origin, markers={h.base_offset: TxnMarker(commit, coordinator_epoch)}
    )
    assert isinstance(pending, PendingUpdate)
    return state.complete_txns(state.apply(pending, h.next_offset))


def test_transactional_batch_opens_and_marker_closes_with_the_lso():
    state = ProducerStateManager(None)
    append(state, header(0, 2, seq=0, attributes=TXN))
    append(state, header(2, 1, seq=0, pid=77, attributes=TXN))
    assert state.first_unstable_offset() == 0
    done = end_txn(state, marker(3), commit=False)
    # Producer 77's transaction from offset 2 is still open: the LSO stops there.
    assert done == [(CompletedTxn(PID, 0, 3, True), 2)]
    assert state.entry(PID).current_txn_first_offset == -1
    assert state.first_unstable_offset() == 0  # the marker is not yet replicated
    state.on_high_watermark_updated(4)
    assert state.first_unstable_offset() == 2


def test_marker_without_a_transaction_completes_nothing():
    state = ProducerStateManager(None)
    append(state, header(0, 1, seq=0))
    assert end_txn(state, marker(1), commit=True) == []
    assert state.first_unstable_offset() is None


def test_snapshot_keeps_the_open_transaction_open(tmp_path):
    state = ProducerStateManager(os.fspath(tmp_path), producer_id_expiration_ms=10)
    append(state, header(0, 1, seq=0, attributes=TXN, ts=1000))
    append(state, header(1, 1, seq=0, pid=77, attributes=TXN, ts=1000))
    end_txn(state, marker(2, pid=77), commit=True, coordinator_epoch=3)
    state.take_snapshot()
    loaded = ProducerStateManager(os.fspath(tmp_path), producer_id_expiration_ms=10)
    # Long after expiry: the producer in a transaction stays, the other goes.
    assert loaded.load_latest_snapshot(3, now_ms=10_000) == 3
    assert loaded.entry(PID).current_txn_first_offset == 0
    assert loaded.entry(77) is None
    assert loaded.first_unstable_offset() == 0
    assert end_txn(loaded, marker(3), commit=False) == [(CompletedTxn(PID, 0, 3, True), 4)]


def test_replicated_marker_from_an_old_coordinator_is_applied():
    state = ProducerStateManager(None)
    append(state, header(0, 1, seq=0, attributes=TXN))
    end_txn(state, marker(1), commit=True, coordinator_epoch=5)
    state.update_from_batch(header(2, 1, seq=1, attributes=TXN))
    completed = state.update_from_batch(marker(3), TxnMarker(False, 4))
    assert completed == CompletedTxn(PID, 2, 3, True)
    assert state.entry(PID).coordinator_epoch == 4


def test_first_unstable_offset_is_the_oldest_ended_transaction_not_the_first_ended():
    state = ProducerStateManager(None)
    append(state, header(0, 1, seq=0, pid=77, attributes=TXN))
    append(state, header(1, 1, seq=0, attributes=TXN))
    end_txn(state, marker(2), commit=False)  # ends the younger transaction first
    end_txn(state, marker(3, pid=77), commit=False)
    assert state.first_unstable_offset() == 0
    state.on_high_watermark_updated(3)
    assert state.first_unstable_offset() == 0
    state.on_high_watermark_updated(4)
    assert state.first_unstable_offset() is None
