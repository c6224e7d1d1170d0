"""Transactions in the partition log: markers, the last stable offset, the
transaction index, and what survives a restart or a truncation."""

from __future__ import annotations

import os

import pytest

from logstore import (
    ControlBatchFromClient,
    FetchIsolation,
    InvalidProducerEpoch,
    InvalidTxnState,
    LogConfig,
    TransactionCoordinatorFenced,
)
from logstore.log_validator import RecordsError, validate_records
from logstore.producer_state import decode_snapshot
from logstore.transaction_index import AbortedTxn
from wire.error_codes import ErrorCode
from wire.records import (
    DELETE_HORIZON_MASK,
    RecordInput,
    build_batch,
    build_control_batch,
    iter_batches,
)

from .compaction_helpers import clean, compact_config, kv_batch, records_of
from .helpers import OPEN_LIMITS, T0, FakeClock, batch, open_log, read_all

A, B, C = 1000, 2000, 3000
SMALL = LogConfig(segment_bytes=400, index_interval_bytes=100)


class Producer:
    """A transactional producer's batches, sequences kept."""

    def __init__(self, log, pid, epoch=0):
        self.log, self.pid, self.epoch, self.seq = log, pid, epoch, 0

    def send(self, n=1, *, transactional=True):
        info = self.log.append(
            batch(
                n,
                producer_id=self.pid,
                producer_epoch=self.epoch,
                base_sequence=self.seq,
                is_transactional=transactional,
            ),
            0,
        )
        self.seq += n
        return info

    def end(self, commit, *, epoch=None, coordinator_epoch=0, transaction_version=0):
        return self.log.append_transaction_marker(
            self.pid,
            self.epoch if epoch is None else epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            leader_epoch=0,
            transaction_version=transaction_version,
        )


def plain(log, n=1):
    return log.append(batch(n), 0)


def replicate(log):
    """Every replica has everything: the high watermark at the log end."""
    log.maybe_increment_high_watermark(log.log_end_offset)


def txn_indexes(path) -> dict[str, bytes]:
    out = {}
    for name in sorted(os.listdir(path)):
        if name.endswith(".txnindex"):
            with open(os.path.join(path, name), "rb") as f:
                out[name] = f.read()
    return out


def committed_offsets(log) -> list[int]:
    """Offsets a read_committed consumer is given (before it drops aborted data)."""
    data = read_all(log, max_offset=log.fetch_upper_bound(FetchIsolation.TXN_COMMITTED))
    return [o for _, h in iter_batches(data) for o in range(h.base_offset, h.next_offset)]


# --- aborted transactions for read_committed ---------------------------------------------


def test_aborted_transaction_is_listed_for_read_committed(tmp_path):
    log = open_log(tmp_path / "t-0")
    a, b = Producer(log, A), Producer(log, B)
    a.send(3)  # 0..2
    plain(log)  # 3
    assert a.end(commit=False).first_offset == 4
    b.send(2)  # 5..6
    b.end(commit=True)  # 7
    replicate(log)
    assert log.last_stable_offset == 8
    assert log.collect_aborted_transactions(0, 8) == [AbortedTxn(A, 0, 4, 5)]
    result = log.read(0, 1 << 20, log.fetch_upper_bound(FetchIsolation.TXN_COMMITTED))
    assert [(t.producer_id, t.first_offset) for t in log.aborted_transactions(result)] == [(A, 0)]
    # A fetch after the abort marker has nothing to skip.
    assert log.aborted_transactions(log.read(5, 1 << 20, 8)) == []
    assert txn_indexes(tmp_path / "t-0") == {
        "00000000000000000000.txnindex": AbortedTxn(A, 0, 4, 5).encode()
    }


def test_aborted_entry_records_the_lso_of_another_open_transaction(tmp_path):
    log = open_log(tmp_path / "t-0")
    a, b = Producer(log, A), Producer(log, B)
    a.send()  # 0
    b.send()  # 1
    a.end(commit=False)  # 2: B's transaction (from 1) is still open
    b.end(commit=False)  # 3
    replicate(log)
    assert log.collect_aborted_transactions(0, 4) == [
        AbortedTxn(A, 0, 2, 1),
        AbortedTxn(B, 1, 3, 4),
    ]
    assert log.collect_aborted_transactions(3, 4) == [AbortedTxn(B, 1, 3, 4)]


def test_aborted_transactions_are_collected_across_segments(tmp_path):
    log = open_log(tmp_path / "t-0", SMALL)
    a, b = Producer(log, A), Producer(log, B)
    a.send()
    for _ in range(8):
        b.send()
    b.end(commit=False)
    for _ in range(8):
        plain(log)
    a.end(commit=False)
    replicate(log)
    assert len(log.segments) > 3
    aborted = log.collect_aborted_transactions(0, log.log_end_offset)
    assert [(t.producer_id, t.first_offset) for t in aborted] == [(B, 1), (A, 0)]
    # Each entry lives in the index of the segment holding its marker.
    for txn in aborted:
        seg = next(s for s in reversed(log.segments) if s.base_offset <= txn.last_offset)
        assert txn in seg.txn_index.entries()
    # A fetch of a middle segment learns of A's transaction, which spans it.
    middle = log.segments[2].base_offset
    assert [t.producer_id for t in log.collect_aborted_transactions(middle, middle + 1)] == [A]


# --- the last stable offset ------------------------------------------------------------------


def test_lso_stops_at_an_open_transaction_and_moves_when_its_marker_is_replicated(tmp_path):
    log = open_log(tmp_path / "t-0")
    a = Producer(log, A)
    plain(log, 2)  # 0..1
    a.send()  # 2
    plain(log)  # 3
    replicate(log)
    assert (log.high_watermark, log.first_unstable_offset, log.last_stable_offset) == (4, 2, 2)
    assert committed_offsets(log) == [0, 1]
    a.end(commit=True)  # 4
    log.maybe_increment_high_watermark(4)
    assert log.last_stable_offset == 2  # the marker itself is not replicated yet
    log.maybe_increment_high_watermark(5)
    assert (log.first_unstable_offset, log.last_stable_offset) == (None, 5)
    assert committed_offsets(log) == [0, 1, 2, 3, 4]


def test_lso_is_the_high_watermark_when_that_is_lower(tmp_path):
    log = open_log(tmp_path / "t-0")
    plain(log, 3)
    Producer(log, A).send()
    log.maybe_increment_high_watermark(1)
    assert log.last_stable_offset == 1
    log.update_high_watermark(4)
    assert log.last_stable_offset == 3


def test_follower_sees_the_same_lso_and_transaction_index(tmp_path):
    leader = open_log(tmp_path / "t-0")
    a, b = Producer(leader, A), Producer(leader, B)
    a.send(2)
    b.send()
    a.end(commit=False)
    plain(leader)
    follower = open_log(tmp_path / "f" / "t-0")
    follower.append_as_follower(read_all(leader))
    replicate(leader)
    replicate(follower)
    assert follower.last_stable_offset == leader.last_stable_offset == 2
    assert txn_indexes(tmp_path / "f" / "t-0") == txn_indexes(tmp_path / "t-0")
    assert follower.collect_aborted_transactions(0, 5) == [AbortedTxn(A, 0, 3, 2)]


# --- restarts ------------------------------------------------------------------------------


def _transactions(log):
    a, b, c = Producer(log, A), Producer(log, B), Producer(log, C)
    a.send(2)
    for i in range(6):
        b.send()
        if i == 2:
            c.send()
        plain(log)
    b.end(commit=False)
    c.end(commit=False)
    for _ in range(6):
        plain(log)
    return a  # left open


def test_clean_restart_keeps_the_open_transaction_open_and_the_index(tmp_path):
    path = tmp_path / "t-0"
    log = open_log(path, SMALL)
    a = _transactions(log)
    replicate(log)
    before = txn_indexes(path)
    leo, lso = log.log_end_offset, log.last_stable_offset
    log.close()
    (snapshot,) = [n for n in os.listdir(path) if n == f"{leo:020d}.snapshot"]
    with open(path / snapshot, "rb") as f:
        entries = {e.producer_id: e for e in decode_snapshot(f.read())}
    assert entries[A].current_txn_first_offset == 0
    assert entries[B].current_txn_first_offset == -1

    log = open_log(path, SMALL, clean_shutdown=True, recovery_point=leo, high_watermark=leo)
    assert (log.first_unstable_offset, log.last_stable_offset) == (0, lso) == (0, 0)
    assert txn_indexes(path) == before
    a.log = log
    a.end(commit=False)
    assert log.collect_aborted_transactions(0, log.log_end_offset)[-1] == AbortedTxn(
        A, 0, leo, leo + 1
    )


@pytest.mark.parametrize("lose_indexes", [False, True], ids=["indexes kept", "indexes lost"])
def test_unclean_restart_rebuilds_the_transaction_index_and_open_transactions(
    tmp_path, lose_indexes
):
    path = tmp_path / "t-0"
    log = open_log(path, SMALL)
    _transactions(log)
    replicate(log)
    before = txn_indexes(path)
    assert len(before) == 1
    leo = log.log_end_offset
    if lose_indexes:
        for name in before:
            os.unlink(path / name)
    # No close: as after kill -9 (the page cache kept the files).
    log = open_log(path, SMALL, clean_shutdown=False, recovery_point=0, high_watermark=leo)
    assert txn_indexes(path) == before
    assert (log.first_unstable_offset, log.last_stable_offset) == (0, 0)
    assert [t.producer_id for t in log.collect_aborted_transactions(0, leo)] == [B, C]


def test_unclean_restart_with_a_snapshot_inside_a_transaction(tmp_path):
    # A roll snapshots the state while A's transaction is open; the replay
    # from that snapshot must still see the transaction started before it.
    path = tmp_path / "t-0"
    log = open_log(path, SMALL)
    a = Producer(log, A)
    a.send()
    for _ in range(10):
        plain(log)
    assert len(log.segments) > 2
    a.end(commit=False)
    replicate(log)
    before = txn_indexes(path)
    leo = log.log_end_offset
    log = open_log(path, SMALL, clean_shutdown=False, recovery_point=leo - 1, high_watermark=leo)
    assert txn_indexes(path) == before
    assert log.collect_aborted_transactions(0, leo) == [AbortedTxn(A, 0, leo - 1, leo)]
    assert log.last_stable_offset == leo


def test_corrupt_transaction_index_is_rebuilt_on_open(tmp_path):
    path = tmp_path / "t-0"
    log = open_log(path, SMALL)
    _transactions(log)
    replicate(log)
    before = txn_indexes(path)
    leo = log.log_end_offset
    log.close()
    ((name, data),) = before.items()
    (path / name).write_bytes(data[:-3])
    log = open_log(path, SMALL, clean_shutdown=True, recovery_point=leo, high_watermark=leo)
    assert txn_indexes(path) == before


# --- truncation, retention ---------------------------------------------------------------


def test_truncating_a_marker_reopens_its_transaction(tmp_path):
    path = tmp_path / "t-0"
    log = open_log(path)
    a = Producer(log, A)
    a.send(2)  # 0..1
    a.end(commit=False)  # 2
    plain(log)  # 3
    replicate(log)
    assert log.last_stable_offset == 4
    log.truncate_to(2)
    assert log.log_end_offset == 2
    assert (log.first_unstable_offset, log.last_stable_offset) == (0, 0)
    assert log.collect_aborted_transactions(0, 2) == []
    assert txn_indexes(path) == {}
    a.end(commit=True)  # 2 again, now a commit
    replicate(log)
    assert log.last_stable_offset == 3 and log.collect_aborted_transactions(0, 3) == []


def test_truncation_keeps_entries_of_markers_below_the_cut(tmp_path):
    log = open_log(tmp_path / "t-0")
    a, b = Producer(log, A), Producer(log, B)
    a.send()  # 0
    a.end(commit=False)  # 1
    b.send()  # 2
    b.end(commit=False)  # 3
    log.truncate_to(3)
    replicate(log)
    assert log.collect_aborted_transactions(0, 3) == [AbortedTxn(A, 0, 1, 2)]
    assert log.first_unstable_offset == 2


def test_deleted_segments_take_their_transaction_index_along(tmp_path):
    path = tmp_path / "t-0"
    log = open_log(path, SMALL)
    a = Producer(log, A)
    a.send()
    a.end(commit=False)
    for _ in range(12):
        plain(log)
    replicate(log)
    assert "00000000000000000000.txnindex" in txn_indexes(path)
    log.delete_records_before(log.segments[1].base_offset)
    assert txn_indexes(path) == {}
    assert log.collect_aborted_transactions(log.log_start_offset, log.log_end_offset) == []


# --- what is refused -----------------------------------------------------------------------


def test_marker_with_an_older_producer_epoch_is_refused(tmp_path):
    log = open_log(tmp_path / "t-0")
    a = Producer(log, A, epoch=3)
    a.send()
    with pytest.raises(InvalidProducerEpoch) as e:
        a.end(commit=False, epoch=2)
    assert e.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == 1 and log.first_unstable_offset == 0


def test_transactional_batch_of_a_fenced_epoch_is_refused(tmp_path):
    log = open_log(tmp_path / "t-0")
    old, new = Producer(log, A, epoch=0), Producer(log, A, epoch=1)
    old.send()
    new.send()  # a new epoch starts at sequence 0
    with pytest.raises(InvalidProducerEpoch):
        old.send()
    assert log.log_end_offset == 2


def test_marker_from_an_older_coordinator_epoch_is_fenced(tmp_path):
    log = open_log(tmp_path / "t-0")
    a = Producer(log, A)
    a.send()
    a.end(commit=True, coordinator_epoch=5)
    a.send()
    with pytest.raises(TransactionCoordinatorFenced) as e:
        a.end(commit=True, coordinator_epoch=4)
    assert e.value.error_code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    replicate(log)
    assert log.log_end_offset == 3 and log.first_unstable_offset == 2
    a.end(commit=True, coordinator_epoch=5)
    replicate(log)
    assert log.first_unstable_offset is None


def test_transaction_version_2_markers_must_bump_the_epoch_except_retries(tmp_path):
    log = open_log(tmp_path / "t-0")
    a = Producer(log, A)
    a.send()
    with pytest.raises(InvalidProducerEpoch):
        a.end(commit=False, epoch=0, transaction_version=2)
    a.end(commit=False, epoch=1, transaction_version=2)
    # The coordinator retries the marker: written again, ends nothing.
    a.end(commit=False, epoch=1, transaction_version=2)
    replicate(log)
    assert log.log_end_offset == 3
    assert log.collect_aborted_transactions(0, 3) == [AbortedTxn(A, 0, 1, 2)]


def test_non_transactional_batch_inside_a_transaction_is_invalid_txn_state(tmp_path):
    log = open_log(tmp_path / "t-0")
    a = Producer(log, A)
    a.send()
    with pytest.raises(InvalidTxnState) as e:
        a.send(transactional=False)
    assert e.value.error_code == ErrorCode.INVALID_TXN_STATE
    assert log.log_end_offset == 1


def test_clients_may_not_write_control_batches(tmp_path):
    log = open_log(tmp_path / "t-0")
    marker = bytearray(build_control_batch(False, A, 0, 0, T0))
    with pytest.raises(ControlBatchFromClient) as e:
        log.append(marker, 0)
    assert e.value.error_code == ErrorCode.INVALID_RECORD
    assert log.log_end_offset == 0
    limits = OPEN_LIMITS
    with pytest.raises(RecordsError) as refused:
        validate_records(marker, limits, "t-0", now_ms=T0)
    assert refused.value.code == ErrorCode.INVALID_RECORD
    # Transactional data from clients is fine.
    txn = batch(producer_id=A, producer_epoch=0, base_sequence=0, is_transactional=True)
    validate_records(txn, limits, "t-0", now_ms=T0)


def test_producer_with_an_open_transaction_does_not_expire(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", LogConfig(producer_id_expiration_ms=1000), clock)
    a, b = Producer(log, A), Producer(log, B)
    a.send()
    b.send(transactional=False)
    clock.advance(5000)
    assert log.remove_expired_producers() == [B]
    assert log.first_unstable_offset == 0
    a.end(commit=True)
    clock.advance(5000)
    assert log.remove_expired_producers() == [A]


def test_cleaner_swap_keeps_the_aborted_transactions(tmp_path):
    path = tmp_path / "t-0"
    log = open_log(path, compact_config())
    a = Producer(log, A)
    log.append(
        bytearray(
            build_batch(
                [RecordInput(b"txn-key", b"aborted", timestamp=T0)],
                producer_id=A,
                producer_epoch=0,
                base_sequence=0,
                is_transactional=True,
            )
        ),
        0,
    )
    a.end(commit=False)
    for i in range(30):
        log.append(kv_batch([(f"k{i % 3}", f"v{i}")]), 0)
    log.roll()
    replicate(log)
    before = log.collect_aborted_transactions(0, log.log_end_offset)
    assert before == [AbortedTxn(A, 0, 1, 2)]
    cleaned = clean(log, tmp_path)
    assert cleaned is not None and 0 in cleaned.result.stats.swapped_bases
    assert log.collect_aborted_transactions(0, log.log_end_offset) == before
    assert txn_indexes(path) == {"00000000000000000000.txnindex": before[0].encode()}
    log.close()
    leo = log.log_end_offset
    log = open_log(
        path, compact_config(), clean_shutdown=False, recovery_point=0, high_watermark=leo
    )
    assert log.collect_aborted_transactions(0, leo) == before


@pytest.mark.parametrize("log_swapped", [False, True], ids=["log renamed", "log still .swap"])
def test_interrupted_swap_keeps_the_swapped_segments_transaction_index(tmp_path, log_swapped):
    path = tmp_path / "t-0"
    log = open_log(path)
    a = Producer(log, A)
    a.send()
    a.end(commit=False)
    log.roll()
    plain(log)
    leo = log.log_end_offset
    log.close()
    # The crash came while the cleaner renamed segment 0's files from .swap.
    name = "00000000000000000000"
    os.replace(path / f"{name}.txnindex", path / f"{name}.txnindex.swap")
    if log_swapped:
        os.replace(path / f"{name}.log", path / f"{name}.log.swap")
    log = open_log(path, clean_shutdown=True, recovery_point=leo, high_watermark=leo)
    assert txn_indexes(path) == {f"{name}.txnindex": AbortedTxn(A, 0, 1, 2).encode()}
    assert log.collect_aborted_transactions(0, leo) == [AbortedTxn(A, 0, 1, 2)]


# --- compaction ---------------------------------------------------------------------------


def _txn_kv(pid, seq, key, value):
    return bytearray(
        build_batch(
            [RecordInput(key.encode(), value.encode(), timestamp=T0)],
            producer_id=pid,
            producer_epoch=0,
            base_sequence=seq,
            is_transactional=True,
        )
    )


def test_cleaner_drops_aborted_records_and_keeps_what_they_would_have_shadowed(tmp_path):
    log = open_log(tmp_path / "t-0", compact_config())
    log.append(kv_batch([("k", "committed")]), 0)  # 0
    log.append(_txn_kv(A, 0, "k", "aborted"), 0)  # 1
    Producer(log, A).end(commit=False)  # 2
    log.append(_txn_kv(B, 0, "j", "committed-in-txn"), 0)  # 3
    Producer(log, B).end(commit=True)  # 4
    for i in range(12):
        log.append(kv_batch([(f"x{i % 2}", f"v{i}")]), 0)
    log.roll()
    replicate(log)
    assert clean(log, tmp_path) is not None
    kept = {(key, value) for _, key, value in records_of(log)}
    assert ("k", "committed") in kept and ("j", "committed-in-txn") in kept
    assert ("k", "aborted") not in kept
    markers = [h for _, h in iter_batches(read_all(log)) if h.is_control]
    assert [h.base_offset for h in markers] == [2, 4]
    assert log.collect_aborted_transactions(0, log.log_end_offset) == [AbortedTxn(A, 1, 2, 3)]


def test_cleaner_stops_at_the_first_unstable_offset(tmp_path):
    log = open_log(tmp_path / "t-0", compact_config())
    for i in range(6):
        log.append(kv_batch([("k", f"old{i}")]), 0)
    open_at = log.log_end_offset
    log.append(_txn_kv(A, 0, "t", "open"), 0)
    for i in range(12):
        log.append(kv_batch([("k", f"new{i}")]), 0)
    log.roll()
    replicate(log)
    assert log.first_unstable_offset == open_at
    plan = log.log_to_clean(None)
    assert plan.first_uncleanable_offset <= open_at
    clean(log, tmp_path)
    offsets = [offset for offset, key, _ in records_of(log) if key == "k"]
    # The latest value below the open transaction survives: nothing at or
    # above the first unstable offset was looked at.
    assert open_at - 1 in offsets


def _markers(log) -> list[tuple[int, bool]]:
    """(offset, has a delete horizon) of every control batch."""
    return [
        (h.base_offset, bool(h.attributes & DELETE_HORIZON_MASK))
        for _, h in iter_batches(read_all(log))
        if h.is_control
    ]


def test_cleaner_compacts_committed_transactions_and_removes_markers_in_two_passes(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", compact_config(delete_retention_ms=1000), clock)
    log.append(_txn_kv(A, 0, "k", "txn-old"), 0)  # 0
    Producer(log, A).end(commit=True)  # 1
    log.append(_txn_kv(B, 0, "j", "aborted"), 0)  # 2
    Producer(log, B).end(commit=False)  # 3
    # Later transactions of both producers, so that the first ones' batches are
    # not the producers' last (those stay as empty headers, and their markers with them).
    log.append(_txn_kv(A, 1, "a", "txn-kept"), 0)  # 4
    Producer(log, A).end(commit=True)  # 5
    log.append(_txn_kv(B, 1, "b", "txn-kept"), 0)  # 6
    Producer(log, B).end(commit=True)  # 7
    for i in range(12):
        log.append(kv_batch([("k", f"new{i}")]), 0)

    def clean_again(tag: str) -> None:
        log.append(kv_batch([("dirt", tag)]), 0)
        log.roll()
        replicate(log)
        assert clean(log, tmp_path) is not None

    clean_again("1")
    kept = {(key, value) for _, key, value in records_of(log)}
    # Committed transactional records compact like any other; aborted ones go.
    assert ("k", "txn-old") not in kept and ("j", "aborted") not in kept
    assert ("a", "txn-kept") in kept and ("b", "txn-kept") in kept
    txn_batches = [h for _, h in iter_batches(read_all(log)) if h.base_offset == 4]
    assert txn_batches[0].is_transactional and txn_batches[0].producer_id == A
    # The first pass read the transactions' batches: their markers stay as they were.
    assert _markers(log) == [(1, False), (3, False), (5, False), (7, False)]
    assert log.collect_aborted_transactions(0, log.log_end_offset) == [AbortedTxn(B, 2, 3, 4)]

    clean_again("2")
    # Nothing of the first two transactions is left: their markers get a horizon.
    assert _markers(log) == [(1, True), (3, True), (5, False), (7, False)]
    clean_again("3")
    assert _markers(log) == [(1, True), (3, True), (5, False), (7, False)]

    clock.advance(1001)
    clean_again("4")
    assert _markers(log) == [(5, False), (7, False)]
    # The aborted transaction went with its marker.
    assert log.collect_aborted_transactions(0, log.log_end_offset) == []
    assert txn_indexes(tmp_path / "t-0") in ({}, {"00000000000000000000.txnindex": b""})
    kept_after = {(key, value) for _, key, value in records_of(log)}
    assert {("a", "txn-kept"), ("b", "txn-kept"), ("k", "new11")} <= kept_after
