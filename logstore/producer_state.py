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

import logging
import os
import struct
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import crc32c

from logstore.errors import CorruptFileError, InvalidProducerEpoch, OutOfOrderSequence
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
    """Producer entries changed by one append, applied after the write succeeds."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}


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

    def __len__(self) -> int:
        return len(self.producers)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self.producers.get(producer_id)

    # --- leader appends ---------------------------------------------------------------

    def prepare(self, batches: Iterable) -> PendingUpdate | Duplicate:
        """Check the batches of one client append (BatchHeaders whose offsets
        are the ones they are about to get). Returns the pending update to
        `apply` after writing, or the Duplicate to answer without writing.
        Raises InvalidProducerEpoch / OutOfOrderSequence."""
        pending = PendingUpdate()
        for h in batches:
            pid = h.producer_id
            if pid == NO_PRODUCER_ID:
                continue
            current = self.producers.get(pid)
            if current is not None and not h.is_control:
                dup = current.find_duplicate(h.producer_epoch, h.base_sequence, h.last_sequence)
                if dup is not None:
                    return Duplicate(pid, dup.first_offset, dup.last_offset, dup.timestamp)
            updated = pending.entries.get(pid)
            if updated is None:
                updated = current.copy() if current is not None else ProducerEntry(pid)
                pending.entries[pid] = updated
            self._append(updated, current, h, check_sequence=True)
        return pending

    def apply(self, pending: PendingUpdate, next_offset: int) -> None:
        self.producers.update(pending.entries)
        self.map_end_offset = max(self.map_end_offset, next_offset)

    # --- replication and recovery ------------------------------------------------------

    def update_from_batch(self, h) -> None:
        """Apply one batch header from replication or log replay (no sequence
        checks; an older epoch is logged, not refused)."""
        pid = h.producer_id
        if pid != NO_PRODUCER_ID:
            current = self.producers.get(pid)
            entry = current if current is not None else ProducerEntry(pid)
            self._append(entry, current, h, check_sequence=False)
            self.producers[pid] = entry
        self.map_end_offset = max(self.map_end_offset, h.next_offset)

    def _append(self, updated: ProducerEntry, current: ProducerEntry | None, h, check_sequence):
        epoch = h.producer_epoch
        if epoch < updated.producer_epoch:
            if check_sequence:
                raise InvalidProducerEpoch(h.producer_id, epoch, updated.producer_epoch)
            log.warning(
                "producer %d epoch %d at offset %d is older than its epoch %d",
                h.producer_id,
                epoch,
                h.base_offset,
                updated.producer_epoch,
            )
        if h.is_control:
            # A transaction marker: bumps the epoch, ends the open transaction.
            updated.update_epoch(epoch)
            updated.current_txn_first_offset = -1
            updated.last_timestamp = h.max_timestamp
            return
        if check_sequence:
            self._check_sequence(updated, current, h)
        updated.add_batch(
            epoch, h.last_sequence, h.last_offset, h.last_offset - h.base_offset, h.max_timestamp
        )
        if h.is_transactional and updated.current_txn_first_offset < 0:
            updated.current_txn_first_offset = h.base_offset

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
        self.map_end_offset = map_end_offset

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
            for entry in entries:
                if (
                    entry.current_txn_first_offset >= 0
                    or now_ms - entry.last_timestamp < self.producer_id_expiration_ms
                ):
                    self.producers[entry.producer_id] = entry
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
