"""Values the UnifiedLog returns: append outcomes, read ranges, timestamp lookups."""

from __future__ import annotations

import os
from typing import NamedTuple

from logstore.segment import SegmentFile


class AppendInfo(NamedTuple):
    """What one append did (Kafka's LogAppendInfo, trimmed).

    For a retried idempotent batch (`duplicate` True) nothing was written:
    first/last offset and max_timestamp are those of the original append, and
    size, segment_base_offset and position are 0/-1.
    """

    first_offset: int
    last_offset: int
    max_timestamp: int
    # Last offset of the (first) batch carrying max_timestamp.
    offset_of_max_timestamp: int
    record_count: int
    size: int
    # Where the first batch landed: segment base offset and byte position.
    segment_base_offset: int
    position: int
    log_start_offset: int
    duplicate: bool = False

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


class ReadResult:
    """Whole batches of one segment file as a byte range, for os.sendfile.

    `fd`, `position` and `size` are what sendfile needs; `read_bytes()`
    copies the range into memory instead. The result keeps the segment's file
    open even if retention deletes the segment meanwhile; if the log is
    truncated under it, the file may end before position + size (sendfile
    then sends fewer bytes; the broker must close such a connection, as Kafka
    does). An empty result (size 0) has no file.
    """

    __slots__ = ("file", "position", "size", "start_offset", "segment_base_offset")

    def __init__(
        self,
        file: SegmentFile | None,
        position: int,
        size: int,
        start_offset: int,
        segment_base_offset: int,
    ):
        self.file = file
        self.position = position
        self.size = size
        # The offset that was asked for; the first batch may start before it.
        self.start_offset = start_offset
        self.segment_base_offset = segment_base_offset

    @property
    def fd(self) -> int:
        if self.file is None:
            raise ValueError("an empty read has no file")
        if self.file.closed:
            raise ValueError(f"{self.file.path} was closed")
        return self.file.fd

    def __len__(self) -> int:
        return self.size

    def read_bytes(self) -> bytes:
        """The batches as bytes (a copy; sendfile avoids it)."""
        if self.size == 0:
            return b""
        assert self.file is not None  # only an empty read has no file
        data = self.file.pread(self.size, self.position)
        if len(data) != self.size:
            raise OSError(f"{self.file.path} ends before {self.position + self.size}")
        return data

    def __repr__(self) -> str:
        name = os.path.basename(self.file.path) if self.file else None
        return (
            f"ReadResult({name}, position={self.position}, size={self.size}, "
            f"start_offset={self.start_offset})"
        )


class TimestampAndOffset(NamedTuple):
    """A ListOffsets answer: the record's timestamp and offset, and the leader
    epoch of its batch (None when the batch has none)."""

    timestamp: int
    offset: int
    leader_epoch: int | None
