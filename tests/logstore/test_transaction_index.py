"""The `.txnindex` file: Kafka's AbortedTxn entries, lazily created, searched
as a read_committed fetch searches it."""

from __future__ import annotations

import os

import pytest

from logstore.errors import CorruptIndexError
from logstore.transaction_index import ENTRY_SIZE, AbortedTxn, TransactionIndex

# AbortedTxn(producer 7, first 100, last 110, LSO 111) as Kafka writes it.
ENTRY_GOLDEN = bytes.fromhex(
    "0000"  # version 0
    "0000000000000007"  # producer id 7
    "0000000000000064"  # first offset 100
    "000000000000006e"  # last offset 110 (the marker)
    "000000000000006f"  # last stable offset 111
)


def test_entry_is_kafkas_34_byte_aborted_txn(tmp_path):
    path = tmp_path / "00000000000000000100.txnindex"
    index = TransactionIndex(str(path), 100)
    index.append(AbortedTxn(7, 100, 110, 111))
    assert ENTRY_SIZE == 34
    assert path.read_bytes() == ENTRY_GOLDEN


def test_file_is_created_by_the_first_aborted_transaction_and_read_back(tmp_path):
    path = str(tmp_path / "00000000000000000000.txnindex")
    index = TransactionIndex(path, 0)
    assert index.entries() == [] and index.last_offset is None
    assert not os.path.exists(path)
    index.append(AbortedTxn(1, 0, 5, 6))
    index.append(AbortedTxn(2, 3, 9, 10))
    reopened = TransactionIndex(path, 0)
    assert reopened.entries() == [AbortedTxn(1, 0, 5, 6), AbortedTxn(2, 3, 9, 10)]
    assert reopened.last_offset == 9


def test_markers_must_come_in_offset_order(tmp_path):
    index = TransactionIndex(str(tmp_path / "0.txnindex"), 0)
    index.append(AbortedTxn(1, 0, 5, 6))
    with pytest.raises(ValueError):
        index.append(AbortedTxn(2, 1, 5, 6))
    assert index.entries() == [AbortedTxn(1, 0, 5, 6)]


def test_truncate_removes_entries_whose_marker_is_at_or_above_the_offset(tmp_path):
    path = str(tmp_path / "0.txnindex")
    index = TransactionIndex(path, 0)
    for txn in (AbortedTxn(1, 0, 5, 6), AbortedTxn(2, 3, 9, 10), AbortedTxn(3, 11, 12, 13)):
        index.append(txn)
    index.truncate_to(10)
    assert index.entries() == [AbortedTxn(1, 0, 5, 6), AbortedTxn(2, 3, 9, 10)]
    index.truncate_to(9)
    assert TransactionIndex(path, 0).entries() == [AbortedTxn(1, 0, 5, 6)]
    assert os.path.getsize(path) == ENTRY_SIZE
    index.append(AbortedTxn(4, 7, 8, 9))
    assert TransactionIndex(path, 0).entries()[-1] == AbortedTxn(4, 7, 8, 9)


def test_collect_lists_overlapping_transactions_and_stops_at_an_lso_past_the_range(tmp_path):
    index = TransactionIndex(str(tmp_path / "0.txnindex"), 0)
    entries = [
        AbortedTxn(1, 0, 4, 5),  # ends before the fetch
        AbortedTxn(2, 3, 12, 6),  # overlaps; LSO 6 (another transaction was open)
        AbortedTxn(3, 15, 16, 30),  # starts past the fetch; its LSO ends the search
        AbortedTxn(4, 8, 40, 41),  # overlaps, but the search stopped before it
    ]
    for txn in entries:
        index.append(txn)
    found, complete = index.collect_aborted(10, 15)
    assert found == [AbortedTxn(2, 3, 12, 6)] and complete
    found, complete = index.collect_aborted(0, 3)
    assert found == [AbortedTxn(1, 0, 4, 5)] and complete
    found, complete = index.collect_aborted(41, 50)
    assert found == [] and not complete


@pytest.mark.parametrize(
    "data",
    [ENTRY_GOLDEN[:-1], ENTRY_GOLDEN + b"\x00", b"\x00\x01" + ENTRY_GOLDEN[2:]],
    ids=["torn", "trailing byte", "version 1"],
)
def test_unreadable_file_is_a_corrupt_index(tmp_path, data):
    path = tmp_path / "0.txnindex"
    path.write_bytes(data)
    with pytest.raises(CorruptIndexError):
        TransactionIndex(str(path), 0).entries()


def test_entry_ending_below_the_segment_fails_the_sanity_check(tmp_path):
    path = str(tmp_path / "00000000000000000100.txnindex")
    TransactionIndex(path, 0).append(AbortedTxn(1, 0, 50, 51))
    with pytest.raises(CorruptIndexError):
        TransactionIndex(path, 100).sanity_check()
    TransactionIndex(path, 50).sanity_check()
