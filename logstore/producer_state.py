"""Idempotent-producer state of one partition.

Per producer id: its epoch and the metadata of its last five batches
(first/last sequence, first/last offset, timestamp). Before a leader append,
`prepare` checks every batch that carries a producer id, the way Kafka's
ProducerAppendInfo does:

- an epoch older than the producer's current one -> InvalidProducerEpoch;
- a batch whose sequence range equals one of the five retained batches of the
  same epoch -> a `Duplicate` carrying the original offsets (the broker
  answers the retry with them and writes nothing);
- a new epoch must start at sequence 0 (unless the producer is unknown);
- within an epoch the first sequence must follow the last one, with int32
  wrap-around (2147483647 is followed by 0) -> else OutOfOrderSequence;
- a producer id with no state (new, expired, or its batches deleted) is
  accepted at any sequence, as in Kafka since KIP-360.

Appends from replication and recovery update the state without sequence
checks (`update_from_batch`).

Transactions, as Kafka's ProducerStateManager / ProducerAppendInfo keep them:

- a producer's first transactional batch opens its transaction
  (`current_txn_first_offset`); the log's ongoing transactions are kept in
  order of first offset, and the oldest is the first unstable offset;
- a marker (a control batch, `TxnMarker`) closes it into a `CompletedTxn`
  (producer id, first offset, marker offset, aborted?); the log writes an
  aborted one into the segment's transaction index with the LSO after it
  (`last_stable_offset(completed)`), then the transaction waits among the
  unreplicated ones until the high watermark passes its marker, since the
  LSO cannot pass it before (`on_high_watermark_updated`);
- refused, except from replication (which logs): a data batch or marker with
  an epoch older than the producer's -> InvalidProducerEpoch (a marker of
  transaction version 2 must carry a newer epoch, except a retry after the
  transaction ended); a marker from an older coordinator epoch ->
  TransactionCoordinatorFenced; a producer in a transaction sending a
  non-transactional batch -> InvalidTxnState;
- a producer with an open transaction never expires, and snapshots keep the
  transaction's first offset, so it is open again after a restart.

Persistence: snapshot files `%020d.snapshot` beside the segments, in Kafka's
own snapshot format (version 1, CRC-32C, one entry per producer id). Gregor
writes one entry per *retained batch* (oldest first), so the whole five-batch
window survives a restart; Kafka's reader keeps the last entry of a producer
id, so the files stay readable by Kafka's tools. A snapshot named N holds the
state after every batch below offset N. The log takes one when a segment rolls
(N = the new segment's base offset) and when it closes (N = log end offset);
on open it loads the newest valid snapshot at or below the log end offset and
replays the batch headers after it (header-level, no record decoding).
"""

from __future__ import annotations

import enum
import logging
import os
import struct
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import crc32c

from logstore.errors import (
    CorruptFileError,
    InvalidProducerEpoch,
    InvalidTxnState,
    LogError,
    OutOfOrderSequence,
    TransactionCoordinatorFenced,
)
from logstore.files import SNAPSHOT_SUFFIX, file_name, parse_file_name, unlink_quietly

log = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1

SNAPSHOT_VERSION = 1
_SNAP_HEADER = struct.Struct(">hIi")  # version, crc, entry count
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")
# producer_id, epoch, last_sequence, last_offset, offset_delta, timestamp,
# coordinator_epoch, current_txn_first_offset
_CRC_FROM = 6  # the CRC covers the entry array (count included)


class AppendOrigin(enum.Enum):
    """Who writes a batch, which decides what is checked (Kafka's AppendOrigin)."""

    # A producer's Produce request: epochs, sequences, duplicates, transactions.
    CLIENT = "client"
    # A coordinator (transaction markers, group records): epochs, transactions.
    COORDINATOR = "coordinator"
    # A follower's fetch or a replay of the log: nothing refused.
    REPLICATION = "replication"


class TxnMarker(NamedTuple):
    """What a transaction marker's control record says."""

    is_commit: bool
    coordinator_epoch: int


class CompletedTxn(NamedTuple):
    """A transaction a marker ended: its first offset and the marker's."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass
class TxnMetadata:
    """A transaction of the log: open (last_offset None) or ended by a marker
    the high watermark has not yet passed."""

    producer_id: int
    first_offset: int
    last_offset: int | None = None


def decrement_sequence(sequence: int, decrement: int) -> int:
    """sequence - decrement with int32 wrap-around (Kafka's decrementSequence)."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class BatchMetadata(NamedTuple):
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class Duplicate(NamedTuple):
    """A retried batch: the offsets (and timestamp) it got the first time."""

    producer_id: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass
class ProducerEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def copy(self) -> ProducerEntry:
        return ProducerEntry(
            self.producer_id,
            self.producer_epoch,
            deque(self.batches, maxlen=NUM_BATCHES_TO_RETAIN),
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
        )

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def update_epoch(self, epoch: int) -> None:
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def add_batch(
        self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int
    ) -> None:
        self.update_epoch(epoch)
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp


class PendingUpdate:
    """Producer entries changed by one append, and the transactions it opens
    and ends, applied after the write succeeds."""

    __slots__ = ("entries", "started", "completed")

    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}
        self.started: list[TxnMetadata] = []
        self.completed: list[CompletedTxn] = []


class ProducerStateManager:
    def __init__(self, dir: str | None, producer_id_expiration_ms: int = 86_400_000):
        """`dir` is the partition directory holding the snapshot files (None:
        memory only)."""
        self.dir = dir
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.producers: dict[int, ProducerEntry] = {}
        # Every batch below this offset is reflected in the state.
        self.map_end_offset = 0
        self.last_snapshot_offset: int | None = None
        # First offset -> transaction: open transactions (in order of first
        # offset: appends and replays add them so, snapshots load sorted),
        # and ended ones whose marker is not yet below the high watermark.
        self.ongoing_txns: dict[int, TxnMetadata] = {}
        self.unreplicated_txns: dict[int, TxnMetadata] = {}

    def __len__(self) -> int:
        return len(self.producers)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self.producers.get(producer_id)

    # --- leader appends ---------------------------------------------------------------

    def prepare(
        self,
        batches: Iterable,
        *,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        markers: Mapping[int, TxnMarker] | None = None,
        transaction_version: int = 0,
    ) -> PendingUpdate | Duplicate:
        """Check the batches of one leader append (BatchHeaders whose offsets
        are the ones they are about to get; `markers` holds the marker of
        each control batch by its base offset). Returns the pending update to
        `apply` after writing, or (client appends only) the Duplicate to
        answer without writing. Raises InvalidProducerEpoch /
        OutOfOrderSequence / InvalidTxnState / TransactionCoordinatorFenced."""
        pending = PendingUpdate()
        for h in batches:
            pid = h.producer_id
            if pid == NO_PRODUCER_ID:
                continue
            current = self.producers.get(pid)
            if current is not None and not h.is_control and origin is AppendOrigin.CLIENT:
                dup = current.find_duplicate(h.producer_epoch, h.base_sequence, h.last_sequence)
                if dup is not None:
                    return Duplicate(pid, dup.first_offset, dup.last_offset, dup.timestamp)
            updated = pending.entries.get(pid)
            if updated is None:
                updated = current.copy() if current is not None else ProducerEntry(pid)
                pending.entries[pid] = updated
            marker = markers.get(h.base_offset) if markers else None
            completed = self._append(
                updated, current, h, marker, origin, transaction_version, pending.started
            )
            if completed is not None:
                pending.completed.append(completed)
        return pending

    def apply(self, pending: PendingUpdate, next_offset: int) -> list[CompletedTxn]:
        """Make a prepared append's state current, once its batches are
        written. Returns the transactions it ended, which the caller passes
        to `complete_txns` (after noting where their markers went)."""
        self.producers.update(pending.entries)
        for txn in pending.started:
            self.ongoing_txns[txn.first_offset] = txn
        self.map_end_offset = max(self.map_end_offset, next_offset)
        return pending.completed

    # --- transactions -----------------------------------------------------------------

    def complete_txns(self, completed: Iterable[CompletedTxn]) -> list[tuple[CompletedTxn, int]]:
        """End the transactions, in order, as Kafka does after an append:
        each one's LSO is computed while it is still open (the first offset
        of the oldest open transaction of another producer, or the marker's
        next offset), then it moves to the unreplicated ones. Returns
        (transaction, its LSO) pairs, for the transaction index."""
        done = []
        for txn in completed:
            done.append((txn, self.last_stable_offset(txn)))
            self.complete_txn(txn)
        return done

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        for txn in self.ongoing_txns.values():
            if txn.producer_id != completed.producer_id:
                return txn.first_offset
        return completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        txn = self.ongoing_txns.pop(completed.first_offset, None)
        if txn is None:
            raise ValueError(f"no open transaction starts at offset {completed.first_offset}")
        txn.last_offset = completed.last_offset
        self.unreplicated_txns[completed.first_offset] = txn

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Forget ended transactions whose marker lies below the high
        watermark: they no longer hold the LSO back."""
        self._remove_unreplicated_below(high_watermark)

    def _remove_unreplicated_below(self, offset: int) -> None:
        if not self.unreplicated_txns:
            return  # every append moves the high watermark: most have none
        done = [
            first
            for first, txn in self.unreplicated_txns.items()
            if txn.last_offset is not None and txn.last_offset < offset
        ]
        for first in done:
            del self.unreplicated_txns[first]

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest transaction that is open or whose
        marker is not yet replicated; None when there is none."""
        if not self.unreplicated_txns and not self.ongoing_txns:
            return None  # most logs: asked on every read of every partition
        # Open transactions are added in offset order; ended ones in the
        # order of their markers, which is not their first offsets' order.
        firsts = list(self.unreplicated_txns)
        if self.ongoing_txns:
            firsts.append(next(iter(self.ongoing_txns)))
        return min(firsts) if firsts else None

    # --- replication and recovery ------------------------------------------------------

    def update_from_batch(self, h, marker: TxnMarker | None = None) -> CompletedTxn | None:
        """Apply one batch header from replication or log replay (`marker`:
        what a control batch's record says). Nothing is refused: an older
        epoch and the like are logged. Returns the transaction a marker
        ended, which the caller passes to `complete_txns`."""
        pid = h.producer_id
        completed = None
        if pid != NO_PRODUCER_ID:
            current = self.producers.get(pid)
            entry = current if current is not None else ProducerEntry(pid)
            started: list[TxnMetadata] = []
            completed = self._append(
                entry, current, h, marker, AppendOrigin.REPLICATION, 0, started
            )
            self.producers[pid] = entry
            for txn in started:
                self.ongoing_txns[txn.first_offset] = txn
        self.map_end_offset = max(self.map_end_offset, h.next_offset)
        return completed

    def _append(
        self,
        updated: ProducerEntry,
        current: ProducerEntry | None,
        h,
        marker: TxnMarker | None,
        origin: AppendOrigin,
        transaction_version: int,
        started: list[TxnMetadata],
    ) -> CompletedTxn | None:
        if h.is_control:
            if marker is None:
                # Emptied by the cleaner (its transaction is gone), or not a
                # transaction marker: nothing to apply, as in Kafka.
                return None
            return self._append_marker(updated, h, marker, origin, transaction_version)
        self._check_epoch(updated, h, origin, strictly_newer=False)
        if origin is AppendOrigin.CLIENT:
            self._check_sequence(updated, current, h)
        updated.add_batch(
            h.producer_epoch,
            h.last_sequence,
            h.last_offset,
            h.last_offset - h.base_offset,
            h.max_timestamp,
        )
        if updated.current_txn_first_offset >= 0 and not h.is_transactional:
            _refuse_unless_replicated(
                origin,
                InvalidTxnState(h.producer_id, h.base_offset, updated.current_txn_first_offset),
                h.base_offset,
            )
        elif updated.current_txn_first_offset < 0 and h.is_transactional:
            updated.current_txn_first_offset = h.base_offset
            started.append(TxnMetadata(h.producer_id, h.base_offset))
        return None

    def _append_marker(
        self,
        updated: ProducerEntry,
        h,
        marker: TxnMarker,
        origin: AppendOrigin,
        transaction_version: int,
    ) -> CompletedTxn | None:
        # Transaction version 2 coordinators bump the epoch for every marker;
        # a marker at the current epoch after the transaction ended is a
        # retry of one already written (Kafka's KAFKA-19999 rule).
        strict = transaction_version >= 2 and origin is not AppendOrigin.REPLICATION
        retry = (
            strict
            and h.producer_epoch == updated.producer_epoch
            and updated.current_txn_first_offset < 0
        )
        if not retry:
            self._check_epoch(updated, h, origin, strictly_newer=strict)
        if updated.coordinator_epoch > marker.coordinator_epoch:
            _refuse_unless_replicated(
                origin,
                TransactionCoordinatorFenced(
                    h.producer_id, marker.coordinator_epoch, updated.coordinator_epoch
                ),
                h.base_offset,
            )
        completed = None
        if updated.current_txn_first_offset >= 0:
            # A marker without data changes neither the LSO nor the index.
            completed = CompletedTxn(
                h.producer_id, updated.current_txn_first_offset, h.base_offset, not marker.is_commit
            )
        updated.update_epoch(h.producer_epoch)
        updated.coordinator_epoch = marker.coordinator_epoch
        updated.last_timestamp = h.max_timestamp
        updated.current_txn_first_offset = -1
        return completed

    @staticmethod
    def _check_epoch(updated: ProducerEntry, h, origin: AppendOrigin, *, strictly_newer: bool):
        epoch, current = h.producer_epoch, updated.producer_epoch
        if epoch > current or (epoch == current and not strictly_newer):
            return
        _refuse_unless_replicated(
            origin, InvalidProducerEpoch(h.producer_id, epoch, current), h.base_offset
        )

    @staticmethod
    def _check_sequence(updated: ProducerEntry, current: ProducerEntry | None, h) -> None:
        epoch, first_seq = h.producer_epoch, h.base_sequence
        if epoch != updated.producer_epoch:
            if first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequence(h.producer_id, epoch, first_seq, None)
            return
        # Same epoch: must continue the sequence, unless nothing is known.
        if current is None or current.producer_epoch == NO_PRODUCER_EPOCH:
            return
        last_seq = updated.last_seq
        if not in_sequence(last_seq, first_seq):
            raise OutOfOrderSequence(h.producer_id, epoch, first_seq, last_seq)

    # --- expiration -------------------------------------------------------------------

    def remove_expired_producers(self, now_ms: int) -> list[int]:
        """Forget producers idle for producer_id_expiration_ms (not in a
        transaction). Returns the removed ids."""
        expired = [
            pid
            for pid, e in self.producers.items()
            if e.current_txn_first_offset < 0
            and now_ms - e.last_timestamp >= self.producer_id_expiration_ms
        ]
        for pid in expired:
            del self.producers[pid]
        return expired

    # --- truncation -------------------------------------------------------------------

    def clear(self, map_end_offset: int = 0) -> None:
        self.producers.clear()
        self.ongoing_txns.clear()
        self.unreplicated_txns.clear()
        self.map_end_offset = map_end_offset

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """Transactions whose marker lies below the new log start are gone."""
        self._remove_unreplicated_below(log_start_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Forget everything and delete every snapshot."""
        self.clear(offset)
        for snap in self.snapshot_offsets():
            unlink_quietly(self._snapshot_path(snap))
        self.last_snapshot_offset = None

    # --- snapshots --------------------------------------------------------------------

    def _snapshot_path(self, offset: int) -> str:
        assert self.dir is not None
        return os.path.join(self.dir, file_name(offset, SNAPSHOT_SUFFIX))

    def snapshot_offsets(self) -> list[int]:
        if self.dir is None:
            return []
        offsets = []
        for name in os.listdir(self.dir):
            parsed = parse_file_name(name)
            if parsed and parsed[1] == SNAPSHOT_SUFFIX and not parsed[2]:
                offsets.append(parsed[0])
        return sorted(offsets)

    def take_snapshot(self) -> str | None:
        """Write `<map_end_offset>.snapshot` unless it exists already (not
        fsynced: a torn snapshot fails its CRC and the log is replayed)."""
        if self.dir is None or self.last_snapshot_offset == self.map_end_offset:
            return None
        path = self._snapshot_path(self.map_end_offset)
        data = encode_snapshot(self.producers.values())
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        self.last_snapshot_offset = self.map_end_offset
        return path

    def delete_snapshots_below(self, offset: int) -> None:
        for snap in self.snapshot_offsets():
            if snap < offset:
                unlink_quietly(self._snapshot_path(snap))

    def delete_snapshots_above(self, offset: int) -> None:
        for snap in self.snapshot_offsets():
            if snap > offset:
                unlink_quietly(self._snapshot_path(snap))
                if self.last_snapshot_offset == snap:
                    self.last_snapshot_offset = None

    def load_latest_snapshot(self, max_offset: int, now_ms: int) -> int | None:
        """Clear the state and load the newest valid snapshot at or below
        `max_offset`, deleting snapshots above it and corrupt ones. Returns the
        snapshot's offset (the caller replays batches from there) or None."""
        self.clear()
        self.delete_snapshots_above(max_offset)
        for snap in reversed(self.snapshot_offsets()):
            path = self._snapshot_path(snap)
            try:
                with open(path, "rb") as f:
                    entries = decode_snapshot(f.read(), path)
            except CorruptFileError as e:
                log.warning("deleting corrupt producer snapshot: %s", e)
                unlink_quietly(path)
                continue
            for entry in sorted(entries, key=lambda e: e.current_txn_first_offset):
                if (
                    entry.current_txn_first_offset >= 0
                    or now_ms - entry.last_timestamp < self.producer_id_expiration_ms
                ):
                    self.producers[entry.producer_id] = entry
                    if entry.current_txn_first_offset >= 0:
                        first = entry.current_txn_first_offset
                        self.ongoing_txns[first] = TxnMetadata(entry.producer_id, first)
            self.map_end_offset = snap
            self.last_snapshot_offset = snap
            return snap
        self.last_snapshot_offset = None
        return None


def encode_snapshot(entries: Iterable[ProducerEntry]) -> bytes:
    rows = []
    for e in entries:
        batches = list(e.batches) or [BatchMetadata(NO_SEQUENCE, -1, 0, e.last_timestamp)]
        for b in batches:
            rows.append(
                _SNAP_ENTRY.pack(
                    e.producer_id,
                    e.producer_epoch,
                    b.last_seq,
                    b.last_offset,
                    b.offset_delta,
                    b.timestamp,
                    e.coordinator_epoch,
                    e.current_txn_first_offset,
                )
            )
    body = struct.pack(">i", len(rows)) + b"".join(rows)
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c.crc32c(body)) + body


def _rows(data: bytes, path: str) -> Iterator[tuple]:
    if len(data) < _SNAP_HEADER.size:
        raise CorruptFileError(path, f"snapshot of {len(data)} bytes has no header")
    version, crc, count = _SNAP_HEADER.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptFileError(path, f"unknown snapshot version {version}")
    if crc32c.crc32c(memoryview(data)[_CRC_FROM:]) != crc:
        raise CorruptFileError(path, "snapshot CRC does not match")
    if count < 0 or len(data) != _SNAP_HEADER.size + count * _SNAP_ENTRY.size:
        raise CorruptFileError(path, f"snapshot size {len(data)} does not hold {count} entries")
    return _SNAP_ENTRY.iter_unpack(memoryview(data)[_SNAP_HEADER.size :])


def decode_snapshot(data: bytes, path: str = "<snapshot>") -> list[ProducerEntry]:
    """Producer entries of a snapshot; several rows of one producer id (one
    per retained batch, oldest first) fold into one entry."""
    entries: dict[int, ProducerEntry] = {}
    for pid, epoch, last_seq, last_offset, delta, ts, coord_epoch, txn_first in _rows(data, path):
        e = entries.get(pid)
        if e is None:
            e = entries[pid] = ProducerEntry(pid)
        e.update_epoch(epoch)
        e.coordinator_epoch = coord_epoch
        e.current_txn_first_offset = txn_first
        e.last_timestamp = ts
        if last_offset >= 0:
            e.batches.append(BatchMetadata(last_seq, last_offset, delta, ts))
    return list(entries.values())


def _refuse_unless_replicated(origin: AppendOrigin, error: LogError, offset: int) -> None:
    """A client's or a coordinator's write breaking a producer rule is refused
    with `error`; a follower keeps what its leader wrote, and logs it."""
    if origin is not AppendOrigin.REPLICATION:
        raise error
    log.warning("kept the leader's batch at offset %d: %s", offset, error)
