"""Record batch v2 (magic 2): the 61-byte header, read and patched in place.

Layout (big-endian), offsets from the start of the batch:

    0  base_offset             int64   \\ the "log overhead": not covered by the CRC,
    8  batch_length            int32   /  counted from offset 12 to the end
   12  partition_leader_epoch  int32   -- not covered by the CRC (broker overwrites it)
   16  magic                   int8    -- 2
   17  crc                     uint32  -- CRC-32C of attributes .. end of batch
   21  attributes              int16
   23  last_offset_delta       int32
   27  base_timestamp          int64
   35  max_timestamp           int64
   43  producer_id             int64
   51  producer_epoch          int16
   53  base_sequence           int32
   57  records_count           int32
   61  records ...

The header is read with one `struct.unpack_from`; records are not touched. The
broker keeps batches as bytes (memoryview) and only patches base offset and
partition leader epoch, which the CRC does not cover.

`validate_batch` / `iter_batches` add the length and CRC-32C checks (one call
into the C `crc32c` package per batch, no per-record work); `encode_batch` and
`batch_payload` rebuild a batch around its stored (possibly compressed)
records section; `set_log_append_time` patches a CRC-covered field and
recomputes the CRC. Decoding and building records is in `records.py`.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from crc32c import crc32c

from wire.errors import DecodeError, EncodeError

BATCH_HEADER_SIZE = 61
# base_offset + batch_length: the bytes before the part that batch_length counts.
LOG_OVERHEAD = 12
MAGIC_V2 = 2

_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _HEADER.size == BATCH_HEADER_SIZE

_BASE_OFFSET = struct.Struct(">q")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")

# Offsets of the fields the broker rewrites or reads on its own.
BASE_OFFSET_POS = 0
BATCH_LENGTH_POS = 8
PARTITION_LEADER_EPOCH_POS = 12
MAGIC_POS = 16
CRC_POS = 17
ATTRIBUTES_POS = 21
CRC_COVERED_FROM = ATTRIBUTES_POS

# Attribute bits.
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # 0 = CreateTime, 1 = LogAppendTime
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1


# Builds a header from its 13 fields without namedtuple's _make/_replace,
# whose length checks cost as much again on the per-batch paths below.
_new_tuple = tuple.__new__


class BatchHeader(NamedTuple):
    """The fixed 61-byte header of a v2 record batch."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, header included."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        """Codec id: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    def assigned(self, base_offset: int, partition_leader_epoch: int) -> BatchHeader:
        """This header with the base offset and leader epoch a leader's append
        gives it (as _replace, at a third of its cost: it runs per appended batch)."""
        return _new_tuple(BatchHeader, (base_offset, self[1], partition_leader_epoch) + self[3:])

    @property
    def last_sequence(self) -> int:
        """Sequence of the batch's last record (wraps at int32 like Kafka's)."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def read_batch_header(buf, pos: int = 0) -> BatchHeader:
    """Parse the header of the batch starting at `pos` of `buf`.

    Raises DecodeError when fewer than 61 bytes remain, the magic is not 2, or
    the declared length cannot hold a header. Does not check the CRC and does
    not require the whole batch to be present (see `batch_size_at`).
    """
    if pos < 0 or len(buf) - pos < BATCH_HEADER_SIZE:
        raise DecodeError(
            f"record batch header needs {BATCH_HEADER_SIZE} bytes, {max(0, len(buf) - pos)} remain"
        )
    header = _new_tuple(BatchHeader, _HEADER.unpack_from(buf, pos))
    if header.magic != MAGIC_V2:
        raise DecodeError(f"record batch magic {header.magic} is not supported (only v2)")
    if header.batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
        raise DecodeError(f"record batch length {header.batch_length} is too small for a header")
    return header


def peek_batch_header(buf, pos: int = 0) -> BatchHeader:
    """The header fields at `pos` as they are, nothing checked (the caller
    checks what it needs); struct.error when fewer than 61 bytes remain."""
    return _new_tuple(BatchHeader, _HEADER.unpack_from(buf, pos))


def batch_size_at(buf, pos: int = 0) -> int | None:
    """Total size of the batch at `pos` from its length field alone, or None
    when fewer than 12 bytes remain. Used to split concatenated batches."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    return _declared_batch_size(buf, pos)


def _declared_batch_size(buf, pos: int) -> int:
    """Total size of the batch at `pos` as its length field says; the caller
    knows the 12 bytes are there."""
    return LOG_OVERHEAD + _INT32.unpack_from(buf, pos + BATCH_LENGTH_POS)[0]


def batch_attributes(buf, pos: int = 0) -> int:
    """The attributes of the batch at `pos` without parsing the rest of its
    header; the caller knows the header is there (struct.error otherwise)."""
    return _INT16.unpack_from(buf, pos + ATTRIBUTES_POS)[0]


def set_base_offset(buf, base_offset: int, pos: int = 0) -> None:
    """Overwrite base_offset in place (a writable buffer); the CRC stays valid."""
    _BASE_OFFSET.pack_into(buf, pos + BASE_OFFSET_POS, base_offset)


def set_partition_leader_epoch(buf, epoch: int, pos: int = 0) -> None:
    """Overwrite partition_leader_epoch in place; the CRC stays valid."""
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_POS, epoch)


# -- CRC-32C, validation, splitting, re-encoding ------------------------------
#
# Everything below reads the header and runs one C-accelerated CRC-32C over the
# batch; no record is decoded. The broker's produce path needs nothing more.

_MAX_TIMESTAMP_POS = 35
_INT64 = struct.Struct(">q")
# The header without base_offset..crc, i.e. the CRC-covered part of it.
_COVERED_HEADER = struct.Struct(">hiqqqhii")


def _whole_batch_size(buf, pos: int) -> int:
    """Size of the batch at pos from its length field, checking that it is
    all present; DecodeError otherwise."""
    remaining = len(buf) - pos
    if pos < 0 or remaining < BATCH_HEADER_SIZE:
        raise DecodeError(
            f"record batch header needs {BATCH_HEADER_SIZE} bytes, {max(0, remaining)} remain"
        )
    size = _declared_batch_size(buf, pos)
    if size < BATCH_HEADER_SIZE:
        raise DecodeError(f"record batch length {size - LOG_OVERHEAD} is too small for a header")
    if size > remaining:
        raise DecodeError(
            f"record batch is truncated: its length field declares {size} bytes, {remaining} remain"
        )
    return size


def _read_whole_batch_header(buf, pos: int) -> BatchHeader:
    header = read_batch_header(buf, pos)
    size = LOG_OVERHEAD + header.batch_length
    if size > len(buf) - pos:
        raise DecodeError(
            f"record batch is truncated: its length field declares {size} bytes, "
            f"{len(buf) - pos} remain"
        )
    return header


def compute_crc(buf, pos: int = 0) -> int:
    """CRC-32C of the batch at `pos` over attributes .. end of the batch (the
    length field says where the end is). DecodeError when the batch is not all
    there. Does not look at the stored CRC."""
    size = _whole_batch_size(buf, pos)
    return crc32c(memoryview(buf)[pos + CRC_COVERED_FROM : pos + size])


def write_crc(buf, pos: int = 0) -> int:
    """Recompute the CRC of the batch at `pos` and store it in place (a
    writable buffer); returns it. For after patching a CRC-covered field."""
    crc = compute_crc(buf, pos)
    _UINT32.pack_into(buf, pos + CRC_POS, crc)
    return crc


def validate_batch(buf, pos: int = 0) -> BatchHeader:
    """Check the batch at `pos` of `buf` and return its header.

    DecodeError when: fewer than 61 bytes remain; the magic is not 2; the
    length field is too small for a header or declares more bytes than remain
    (truncated); the stored CRC differs from the CRC-32C of attributes .. end.
    Bytes after the batch are ignored (see `iter_batches`).

    Deliberately not checked here, because they are policies of one caller
    rather than properties of a well-formed batch: `last_offset_delta + 1 ==
    records_count` (Kafka demands it of a producer's batch, compressed or not,
    but compaction legitimately leaves batches with fewer records than their
    offset range, even none at all); base offset 0, no control bit, no
    LogAppendTime bit (produce rules, checkable on the returned header); the
    records themselves (`iter_records` decodes them, decompressing first).
    """
    header = _read_whole_batch_header(buf, pos)
    end = pos + LOG_OVERHEAD + header.batch_length
    crc = crc32c(memoryview(buf)[pos + CRC_COVERED_FROM : end])
    if crc != header.crc:
        raise DecodeError(
            f"record batch at offset {header.base_offset} is corrupt: "
            f"stored CRC 0x{header.crc:08x}, computed 0x{crc:08x}"
        )
    return header


def iter_batches(buf, *, check_crc: bool = True, partial_tail: bool = False):
    """Split concatenated batches: yield (position, header) for each batch of
    `buf` in order, each checked as by `validate_batch` (the CRC only if
    `check_crc`).

    A batch cut short by the end of `buf` is a DecodeError, unless
    `partial_tail` is true: then iteration stops silently before it, as a
    consumer does with a Fetch response, which may end in a partial batch.
    Even then, as in Kafka's ByteBufferLogInputStream, a length field too small
    for a header, or a magic byte other than 2 once the first 17 bytes are
    there, is a DecodeError: that is corruption, not truncation.
    """
    end = len(buf)
    pos = 0
    while pos < end:
        remaining = end - pos
        if partial_tail and (
            remaining < BATCH_HEADER_SIZE or _declared_batch_size(buf, pos) > remaining
        ):
            _check_partial_batch(buf, pos)
            return
        if check_crc:
            header = validate_batch(buf, pos)
        else:
            header = _read_whole_batch_header(buf, pos)
        yield pos, header
        pos += LOG_OVERHEAD + header.batch_length


def _check_partial_batch(buf, pos: int) -> None:
    remaining = len(buf) - pos
    if remaining >= LOG_OVERHEAD:
        length = _INT32.unpack_from(buf, pos + BATCH_LENGTH_POS)[0]
        if length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
            raise DecodeError(f"record batch length {length} is too small for a header")
    if remaining > MAGIC_POS and buf[pos + MAGIC_POS] != MAGIC_V2:
        raise DecodeError(f"record batch magic {buf[pos + MAGIC_POS]} is not supported (only v2)")


def batch_payload(buf, pos: int = 0) -> memoryview:
    """The records section of the batch at `pos`: the bytes after the 61-byte
    header, compressed as they are (a memoryview, no copy)."""
    size = _whole_batch_size(buf, pos)
    return memoryview(buf)[pos + BATCH_HEADER_SIZE : pos + size]


def encode_batch(header: BatchHeader, payload) -> bytes:
    """A batch from a header and a records section (`payload`, as stored:
    compressed when the header's attributes say so). Every header field is
    taken from `header` except batch_length and crc, which are computed, and
    magic, which is 2. So `encode_batch(validate_batch(b), batch_payload(b))`
    reproduces b byte for byte; change fields with `header._replace(...)`."""
    try:
        covered = _COVERED_HEADER.pack(
            header.attributes,
            header.last_offset_delta,
            header.base_timestamp,
            header.max_timestamp,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            header.records_count,
        )
        payload = memoryview(payload).cast("B")
        crc = crc32c(payload, crc32c(covered))
        prefix = _HEADER.pack(
            header.base_offset,
            BATCH_HEADER_SIZE - LOG_OVERHEAD + len(payload),
            header.partition_leader_epoch,
            MAGIC_V2,
            crc,
            *_COVERED_HEADER.unpack(covered),
        )
    except (struct.error, TypeError) as e:
        raise EncodeError(f"cannot encode record batch header: {e}") from e
    return prefix + payload


def set_max_timestamp(buf, timestamp: int, pos: int = 0) -> None:
    """Set the max timestamp of the batch at `pos` (a writable buffer) and
    recompute its CRC: Kafka's DefaultRecordBatch.setMaxTimestamp for a
    CreateTime batch, which stores the largest record timestamp whatever the
    producer wrote."""
    _whole_batch_size(buf, pos)
    _INT64.pack_into(buf, pos + _MAX_TIMESTAMP_POS, timestamp)
    write_crc(buf, pos)


def set_log_append_time(buf, timestamp: int, pos: int = 0) -> None:
    """Mark the batch at `pos` (a writable buffer) as LogAppendTime: set the
    timestamp-type attribute bit and max_timestamp to `timestamp`, then
    recompute the CRC -- what Kafka does for message.timestamp.type=
    LogAppendTime. Records keep their deltas; readers take every record's
    timestamp from max_timestamp."""
    _whole_batch_size(buf, pos)
    _INT16.pack_into(buf, pos + ATTRIBUTES_POS, batch_attributes(buf, pos) | TIMESTAMP_TYPE_MASK)
    _INT64.pack_into(buf, pos + _MAX_TIMESTAMP_POS, timestamp)
    write_crc(buf, pos)
