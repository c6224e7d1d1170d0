"""A segment's transaction index (`<base>.txnindex`, Kafka's TransactionIndex).

One entry per transaction aborted by a marker in the segment, in the order the
markers were appended (so last offsets increase), each exactly Kafka's
AbortedTxn, 34 bytes big-endian:

    version int16 (0) | producer id int64 | first offset int64 |
    last offset int64 (the marker's) | last stable offset int64

The last stable offset is the log's LSO right after the marker: the first
offset of the oldest transaction of another producer still open then, or the
marker's next offset. A read_committed fetch scans entries until one whose
LSO reaches past what it fetched: no later entry can overlap the fetch.

The file is created by the first aborted transaction (most segments have
none), written with pwrite and read whole when first needed; entries are then
kept in memory. It is derived data: recovery rebuilds it from the log.
"""

from __future__ import annotations

import os
import struct
from typing import NamedTuple

from logstore.errors import CorruptIndexError, LogStorageError
from logstore.files import unlink_quietly

ABORTED_TXN_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(
            ABORTED_TXN_VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )


class TransactionIndex:
    """The aborted transactions whose markers lie in the segment starting at
    `start_offset`. Not thread-safe: the owning LocalLog serializes calls."""

    def __init__(self, path: str, start_offset: int):
        self.path = path
        self.start_offset = start_offset
        self._entries: list[AbortedTxn] | None = None  # None: not read yet

    # --- reads --------------------------------------------------------------------

    def entries(self) -> list[AbortedTxn]:
        """Every entry, oldest first (a copy). CorruptIndexError when the file
        is not a whole number of valid entries."""
        return list(self._load())

    def _load(self) -> list[AbortedTxn]:
        if self._entries is None:
            try:
                with open(self.path, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                data = b""
            except OSError as e:
                raise LogStorageError("read transaction index", self.path, e) from e
            self._entries = decode_entries(data, self.path)
        return self._entries

    @property
    def last_offset(self) -> int | None:
        entries = self._load()
        return entries[-1].last_offset if entries else None

    def collect_aborted(
        self, fetch_offset: int, upper_bound_offset: int
    ) -> tuple[list[AbortedTxn], bool]:
        """The entries overlapping [fetch_offset, upper_bound_offset): last
        offset >= fetch_offset and first offset < upper_bound_offset; and
        whether the search is complete (an entry's LSO reached the upper
        bound, so no later segment can hold an overlapping one) -- Kafka's
        collectAbortedTxns."""
        found = []
        for txn in self._load():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    def sanity_check(self) -> None:
        """Kafka's check: every entry's last offset lies in this segment (at
        or above its start); CorruptIndexError otherwise."""
        for txn in self._load():
            if txn.last_offset < self.start_offset:
                raise CorruptIndexError(
                    self.path,
                    f"aborted transaction {txn} ends below the segment's base {self.start_offset}",
                )

    # --- writes -------------------------------------------------------------------

    def append(self, txn: AbortedTxn) -> None:
        """Add an entry; its last offset must be above the previous one's
        (ValueError otherwise, Kafka's IllegalArgumentException)."""
        entries = self._load()
        if entries and entries[-1].last_offset >= txn.last_offset:
            raise ValueError(
                f"aborted transaction ending at {txn.last_offset} does not follow "
                f"the last one in {self.path}, ending at {entries[-1].last_offset}"
            )
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                data = txn.encode()
                if os.pwrite(fd, data, len(entries) * ENTRY_SIZE) != len(data):
                    raise OSError(f"short write to {self.path}")
            finally:
                os.close(fd)
        except OSError as e:
            raise LogStorageError("append to transaction index", self.path, e) from e
        entries.append(txn)

    def truncate_to(self, offset: int) -> None:
        """Remove the entries whose marker is at or above `offset`."""
        entries = self._load()
        keep = next((i for i, t in enumerate(entries) if t.last_offset >= offset), len(entries))
        if keep == len(entries):
            return
        self._truncate_entries(keep)

    def reset(self) -> None:
        """Remove every entry (recovery rebuilds them)."""
        if self._entries == [] and not os.path.exists(self.path):
            return
        self._truncate_entries(0)

    def _truncate_entries(self, keep: int) -> None:
        try:
            if keep == 0:
                unlink_quietly(self.path)
            else:
                os.truncate(self.path, keep * ENTRY_SIZE)
        except OSError as e:
            self._entries = None
            raise LogStorageError("truncate transaction index", self.path, e) from e
        self._entries = self._load()[:keep]

    def rename(self, new_path: str) -> None:
        """Move the file (if there is one) along with its segment's."""
        if os.path.exists(self.path):
            os.replace(self.path, new_path)
        self.path = new_path

    def delete(self) -> None:
        unlink_quietly(self.path)
        self._entries = []

    def __repr__(self) -> str:
        return f"TransactionIndex({self.path!r})"


def decode_entries(data: bytes, path: str = "<txnindex>") -> list[AbortedTxn]:
    if len(data) % ENTRY_SIZE:
        raise CorruptIndexError(
            path, f"{len(data)} bytes are not a whole number of {ENTRY_SIZE}-byte entries"
        )
    entries = []
    for version, *fields in _ENTRY.iter_unpack(data):
        if version != ABORTED_TXN_VERSION:
            raise CorruptIndexError(path, f"aborted transaction version {version} is not 0")
        entries.append(AbortedTxn(*fields))
    return entries
