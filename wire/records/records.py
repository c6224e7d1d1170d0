"""Records of a v2 batch: decode lazily, encode, build whole batches.

Record layout (inside the records section, after the 61-byte header; the
whole section is compressed when the batch's codec is not none):

    length          varint   bytes that follow, up to the end of the record
    attributes      int8     unused by Kafka (written 0, kept as read)
    timestampDelta  varlong  record timestamp - batch base_timestamp
    offsetDelta     varint   record offset - batch base_offset
    keyLength       varint   -1 for a null key
    key             bytes
    valueLength     varint   -1 for a null value
    value           bytes
    headersCount    varint
    headers         [headerKeyLength varint, headerKey utf-8,
                     headerValueLength varint (-1 null), headerValue]

Varints are zigzag-encoded like protobuf's sint32/sint64: at most 5 bytes for
a varint, 10 for a varlong, and a value beyond 32 / 64 bits is an error.

Decoding trusts nothing: every length and count is checked against the bytes
that remain (of the record, or of the records section) before anything is
sliced or allocated, and each record's length must match what its fields use.
Header keys are decoded as UTF-8 with `surrogateescape`, so they never fail to
decode (Java replaces bad UTF-8 instead of rejecting it) and encode back to
the same bytes.

This is the slow, per-record path, for features that need records
(validation of compressed batches, compaction, tools). The produce path reads
only headers and CRCs (`batch.py`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from wire.errors import DecodeError, EncodeError
from wire.records.batch import (
    BATCH_HEADER_SIZE,
    COMPRESSION_MASK,
    CONTROL_MASK,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    encode_batch,
    peek_batch_header,
    read_batch_header,
)
from wire.records.compression import (
    CODEC_NAMES,
    NONE,
    compress,
    decompress_buffer,
    decompress_scratch,
)

# What a decompressed records section may grow to unless the caller says
# otherwise (Kafka itself has no such limit; we need one against bombs).
DEFAULT_MAX_UNCOMPRESSED = 64 * 1024 * 1024

# The smallest possible record: length, attributes, timestamp delta, offset
# delta, key length, value length, header count -- one byte each.
MIN_RECORD_SIZE = 7

NO_TIMESTAMP = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1

# Control record types (the int16 in the control record's key).
CONTROL_ABORT = 0
CONTROL_COMMIT = 1

_CONTROL_KEY = struct.Struct(">hh")  # version, type
_END_TXN_MARKER = struct.Struct(">hi")  # version, coordinator epoch

Header = tuple[str, bytes | None]


class Record(NamedTuple):
    """One record as stored: deltas relative to its batch's base offset and
    base timestamp (see `record_timestamp`). `attributes` is the record's
    unused int8, kept so that re-encoding reproduces the input."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    attributes: int = 0


class RecordInput(NamedTuple):
    """A record to build a batch from: absolute timestamp (None: the batch's
    base timestamp), offsets assigned in order."""

    key: bytes | None
    value: bytes | None
    headers: Sequence[Header] = ()
    timestamp: int | None = None


def record_timestamp(header: BatchHeader, record: Record) -> int:
    """A record's timestamp as consumers see it: the batch's max timestamp
    for LogAppendTime batches, else base timestamp + delta."""
    if header.attributes & TIMESTAMP_TYPE_MASK:
        return header.max_timestamp
    return header.base_timestamp + record.timestamp_delta


# -- varints -----------------------------------------------------------------


def _read_varint(buf, p: int, end: int) -> tuple[int, int]:
    """Zigzag varint (int32) at p, not reading at or past `end`."""
    if p < end:
        b = buf[p]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), p + 1
    return _read_varint_slow(buf, p, end, 5, 32)


def _read_varlong(buf, p: int, end: int) -> tuple[int, int]:
    """Zigzag varlong (int64) at p, not reading at or past `end`."""
    if p < end:
        b = buf[p]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), p + 1
    return _read_varint_slow(buf, p, end, 10, 64)


def _read_varint_slow(buf, p: int, end: int, max_bytes: int, bits: int) -> tuple[int, int]:
    value = 0
    shift = 0
    limit = min(end, p + max_bytes)
    while p < limit:
        b = buf[p]
        p += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value >> bits:
                raise DecodeError(f"varint overflows {bits} bits")
            return (value >> 1) ^ -(value & 1), p
        shift += 7
    if limit == end and shift < 7 * max_bytes:
        raise DecodeError("varint runs past the end of the record data")
    raise DecodeError(f"varint longer than {max_bytes} bytes")


_SMALL_VARINTS = [bytes((z,)) for z in range(0x80)]


def _varint(n: int) -> bytes:
    if not -0x80000000 <= n <= 0x7FFFFFFF:
        raise EncodeError(f"{n} does not fit a varint (int32)")
    z = (n << 1) ^ (n >> 31)
    return _SMALL_VARINTS[z] if z < 0x80 else _unsigned_varint(z)


def _varlong(n: int) -> bytes:
    if not -0x8000000000000000 <= n <= 0x7FFFFFFFFFFFFFFF:
        raise EncodeError(f"{n} does not fit a varlong (int64)")
    z = (n << 1) ^ (n >> 63)
    return _SMALL_VARINTS[z] if z < 0x80 else _unsigned_varint(z)


def _unsigned_varint(z: int) -> bytes:
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


# -- decoding ------------------------------------------------------------------


def iter_records(
    batch_buf, pos: int = 0, max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED
) -> Iterator[Record]:
    """The records of the batch at `pos` of `batch_buf`, decoded one at a time.

    The header, the batch's length, the codec and the record count are checked
    and a compressed records section is decompressed (at most
    `max_uncompressed` bytes) when this is called; each record is decoded as
    the iterator reaches it. Any malformed input raises DecodeError: from this
    call or from the iterator. The record count must fit the section (every
    record takes at least 7 bytes) and no bytes may follow the last record.

    The CRC is not checked (`validate_batch` does that, once, first).
    """
    header = read_batch_header(batch_buf, pos)
    size = LOG_OVERHEAD + header.batch_length
    if size > len(batch_buf) - pos:
        raise DecodeError(
            f"record batch is truncated: its length field declares {size} bytes, "
            f"{len(batch_buf) - pos} remain"
        )
    payload = memoryview(batch_buf)[pos + BATCH_HEADER_SIZE : pos + size]
    codec = header.compression
    section = payload if codec == NONE else decompress_buffer(codec, payload, max_uncompressed)
    return iter_records_section(section, header.records_count)


class WalkedRecords(NamedTuple):
    """What `check_records` learned of a produced batch's records."""

    count: int  # type: ignore[assignment]  # shadows tuple.count on purpose: nothing counts items of it
    # Kafka's maxBatchTimestamp: the largest record timestamp (base + delta),
    # or NO_TIMESTAMP when no record has one above -1. Meaningless for a
    # LogAppendTime batch, whose records take the batch's max timestamp.
    max_timestamp: int


def check_records(
    batch_buf, pos: int = 0, max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED
) -> WalkedRecords:
    """Kafka's inner-record check of a produced batch, without decoding records:
    the records section holds exactly `records_count` records whose offset
    deltas run 0, 1, 2, ... and nothing follows the last one. Only each
    record's length, attributes, timestamp delta and offset delta are read,
    by the C walk when it was built (`_walk.c`), else by `_walk_records`.
    Returns the record count and the largest record timestamp (which Kafka
    stores as the batch's max timestamp, whatever the producer wrote there);
    raises DecodeError otherwise."""
    header = read_batch_header(batch_buf, pos)
    size = LOG_OVERHEAD + header.batch_length
    if size > len(batch_buf) - pos:
        raise DecodeError(
            f"record batch is truncated: its length field declares {size} bytes, "
            f"{len(batch_buf) - pos} remain"
        )
    payload = memoryview(batch_buf)[pos + BATCH_HEADER_SIZE : pos + size]
    codec = header.compression
    # The walk keeps nothing of the records: the thread's scratch buffer will do.
    section = payload if codec == NONE else decompress_scratch(codec, payload, max_uncompressed)
    count = header.records_count
    if count < 0 or count * MIN_RECORD_SIZE > len(section):
        raise DecodeError(f"record count {count} cannot fit in {len(section)} bytes of records")
    problem, max_timestamp = walk_records(section, count, header.base_timestamp)
    if problem is not None:
        raise DecodeError(problem)
    return WalkedRecords(count, max_timestamp)


def _walk_records(section, count: int, base_timestamp: int) -> tuple[str | None, int]:
    """The record walk of `check_records` in Python: (None, the largest record
    timestamp) when the section holds exactly `count` records with offset
    deltas 0, 1, 2, ..., else (what is wrong, any timestamp). The reference
    for `_walk.c` and its fallback."""
    buf = section if type(section) is bytes else bytes(section)
    end = len(buf)
    p = 0
    last = end - 2
    max_timestamp = NO_TIMESTAMP
    try:
        for i in range(count):
            # The length varint: one or two bytes inline (records up to 8 KiB).
            if p < last and buf[p] < 0x80:
                z = buf[p]
                length = (z >> 1) ^ -(z & 1)
                p += 1
            elif p < last and buf[p + 1] < 0x80:
                z = (buf[p] & 0x7F) | (buf[p + 1] << 7)
                length = (z >> 1) ^ -(z & 1)
                p += 2
            else:
                length, p = _read_varint_slow(buf, p, end, 5, 32)
            record_end = p + length
            if length < MIN_RECORD_SIZE - 1 or record_end > end:
                return f"record {i} has an impossible length {length}", max_timestamp
            # Past the attributes byte: the timestamp delta, then the offset delta.
            timestamp_delta, q = _read_varlong(buf, p + 1, record_end)
            timestamp = _java_long(base_timestamp + timestamp_delta)
            if timestamp > max_timestamp:
                max_timestamp = timestamp
            if q < record_end and buf[q] < 0x80:
                z = buf[q]
                delta = (z >> 1) ^ -(z & 1)
            else:
                delta, _ = _read_varint_slow(buf, q, record_end, 5, 32)
            if delta != i:
                return f"record {i} of the batch has offset delta {delta}", max_timestamp
            p = record_end
    except DecodeError as e:
        return str(e), max_timestamp
    if p != end:
        return f"{end - p} bytes follow the last of {count} records", max_timestamp
    return None, max_timestamp


def _java_long(n: int) -> int:
    """`n` wrapped to a signed 64-bit value, as Java's long arithmetic does."""
    return ((n + 2**63) % 2**64) - 2**63


def _check_plain_batch(buf) -> tuple[int, int, int] | None:
    """The produce path's checks of the common batch, at once: `buf` is one
    whole uncompressed CreateTime magic 2 batch and nothing else, at base
    offset 0, not a control batch, whose header Kafka accepts
    (LogValidator.validateBatch: records count = last offset delta + 1 > 0,
    a base sequence for a producer id) and whose records `check_records`
    accepts. Returns (the CRC as stored, the header's max timestamp, the
    records' largest timestamp as WalkedRecords.max_timestamp); the CRC is
    the caller's to compare. None for anything else, valid or not: the
    caller then checks it field by field, as before, for Kafka's answer.
    The reference for `_walk.c`'s check_plain_batch and its fallback."""
    view = memoryview(buf).cast("B")
    h = _producer_header(view)
    if (
        h is None
        or h.attributes & COMPRESSION_MASK
        or h.records_count * MIN_RECORD_SIZE > len(view) - BATCH_HEADER_SIZE
    ):
        return None
    return _walked(h, view[BATCH_HEADER_SIZE:])


def _producer_header(view: memoryview) -> BatchHeader | None:
    """The header of `view` when it is one whole CreateTime magic 2 batch and
    nothing else, at base offset 0, not a control batch, with a header Kafka
    accepts (LogValidator.validateBatch: records count = last offset delta +
    1 > 0, a base sequence for a producer id); else None."""
    if len(view) < BATCH_HEADER_SIZE:
        return None
    h = peek_batch_header(view)
    if (
        h.magic != MAGIC_V2
        or LOG_OVERHEAD + h.batch_length != len(view)
        or h.base_offset != 0
        or h.attributes & (TIMESTAMP_TYPE_MASK | CONTROL_MASK)
        or h.records_count <= 0
        or h.last_offset_delta + 1 != h.records_count
        or (h.producer_id >= 0 and h.base_sequence < 0)
    ):
        return None
    return h


def _walked(h: BatchHeader, section) -> tuple[int, int, int] | None:
    """What the one-call checks return for a batch whose records `section`
    (uncompressed) holds, or None when `check_records` would refuse them."""
    problem, max_timestamp = walk_records(section, h.records_count, h.base_timestamp)
    if problem is not None:
        return None
    return h.crc, h.max_timestamp, max_timestamp


try:
    from wire.records._walk import check_plain_batch, walk_records
except ImportError:  # the C walk was not built (no compiler): the same checks in Python
    walk_records = _walk_records
    check_plain_batch = _check_plain_batch


def check_compressed_batch(
    buf, max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED
) -> tuple[int, int, int] | None:
    """`check_plain_batch` for a compressed batch: `buf` is one whole
    CreateTime magic 2 batch and nothing else, compressed with a codec
    Gregor reads, at base offset 0, not a control batch, with a header Kafka
    accepts, whose records section decompresses (within `max_uncompressed`)
    to records `check_records` accepts. Returns what `check_plain_batch`
    returns (the CRC as stored, for the caller to compare); None for anything
    else, valid or not, for the caller's checks field by field.

    Why: the staged checks read the header three times and the frame twice
    over; with six 64 KiB batches a request (franz-go's Produce) that was a
    tenth of a partition's produce time. The records are decompressed into
    this thread's scratch buffer and nothing of them is kept."""
    view = memoryview(buf).cast("B")
    h = _producer_header(view)
    if h is None:
        return None
    codec = h.attributes & COMPRESSION_MASK
    if codec == NONE or codec not in CODEC_NAMES:
        return None
    try:
        section = decompress_scratch(codec, view[BATCH_HEADER_SIZE:], max_uncompressed)
    except DecodeError:
        return None
    if h.records_count * MIN_RECORD_SIZE > len(section):
        return None
    return _walked(h, section)


def iter_records_section(section, count: int) -> Iterator[Record]:
    """Decode `count` records from an uncompressed records section (the bytes
    after the header, decompressed), checking `count` against its size first."""
    if count < 0:
        raise DecodeError(f"record count {count} is negative")
    if count * MIN_RECORD_SIZE > len(section):
        raise DecodeError(f"record count {count} cannot fit in {len(section)} bytes of records")
    return _records(section, count)


def _records(section, count: int) -> Iterator[Record]:
    # Indexing and slicing bytes is much faster than a memoryview or a
    # bytearray, and slices of bytes are the keys and values we hand out.
    buf = section if type(section) is bytes else bytes(section)
    end = len(buf)
    p = 0
    for _ in range(count):
        record, p = _decode_record(buf, p, end)
        yield record
    if p != end:
        raise DecodeError(f"{end - p} bytes follow the last of {count} records")


def _decode_record(buf: bytes, p: int, end: int) -> tuple[Record, int]:
    """The record at p of `buf`, which ends at or before `end`. Single-byte
    varints (the common case) are decoded inline; every read is bounded by
    the record's end."""
    if p < end and buf[p] < 0x80:
        length = (buf[p] >> 1) ^ -(buf[p] & 1)
        p += 1
    else:
        length, p = _read_varint_slow(buf, p, end, 5, 32)
    if length < MIN_RECORD_SIZE - 1 or length > end - p:
        raise DecodeError(f"record length {length} does not fit the {end - p} bytes left")
    rend = p + length
    attributes = buf[p]
    if attributes > 0x7F:
        attributes -= 0x100
    p += 1
    timestamp_delta, p = _read_varlong(buf, p, rend)
    offset_delta, p = _read_varint(buf, p, rend)

    n, p = _read_varint(buf, p, rend)
    if n >= 0:
        if n > rend - p:
            raise DecodeError(f"record key length {n} exceeds the record")
        key = buf[p : p + n]
        p += n
    elif n == -1:
        key = None
    else:
        raise DecodeError(f"record key length {n} is negative")

    n, p = _read_varint(buf, p, rend)
    if n >= 0:
        if n > rend - p:
            raise DecodeError(f"record value length {n} exceeds the record")
        value = buf[p : p + n]
        p += n
    elif n == -1:
        value = None
    else:
        raise DecodeError(f"record value length {n} is negative")

    count, p = _read_varint(buf, p, rend)
    if count == 0:
        headers: tuple[Header, ...] = ()
    else:
        # Each header takes at least 2 bytes (two length varints).
        if count < 0 or 2 * count > rend - p:
            raise DecodeError(f"record header count {count} does not fit the record")
        items = []
        for _ in range(count):
            n, p = _read_varint(buf, p, rend)
            if n < 0 or n > rend - p:
                raise DecodeError(f"record header key length {n} is invalid")
            hkey = buf[p : p + n].decode("utf-8", "surrogateescape")
            p += n
            n, p = _read_varint(buf, p, rend)
            if n >= 0:
                if n > rend - p:
                    raise DecodeError(f"record header value length {n} exceeds the record")
                hvalue = buf[p : p + n]
                p += n
            elif n == -1:
                hvalue = None
            else:
                raise DecodeError(f"record header value length {n} is negative")
            items.append((hkey, hvalue))
        headers = tuple(items)

    if p != rend:
        raise DecodeError(f"record length says {length} bytes, its fields take {p - rend + length}")
    return Record(offset_delta, timestamp_delta, key, value, headers, attributes), rend


# -- control records -------------------------------------------------------------


def parse_control_record(record) -> tuple[int, int | None]:
    """(type, coordinator epoch) of a control record: type CONTROL_ABORT (0)
    or CONTROL_COMMIT (1) with the transaction coordinator's epoch from the
    value. For other control types (KRaft's, 2 and up) the epoch is None.
    DecodeError when the key or value is too short or has a negative version."""
    key = record.key
    if key is None or len(key) < _CONTROL_KEY.size:
        raise DecodeError("control record key is shorter than 4 bytes")
    version, kind = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise DecodeError(f"control record key version {version} is negative")
    if kind not in (CONTROL_ABORT, CONTROL_COMMIT):
        return kind, None
    value = record.value
    if value is None or len(value) < _END_TXN_MARKER.size:
        raise DecodeError("transaction marker value is shorter than 6 bytes")
    version, coordinator_epoch = _END_TXN_MARKER.unpack_from(value)
    if version < 0:
        raise DecodeError(f"transaction marker version {version} is negative")
    return kind, coordinator_epoch


# -- encoding ------------------------------------------------------------------


def _as_bytes(data, what: str):
    if isinstance(data, bytes | bytearray):
        return data
    if isinstance(data, memoryview):
        return data.tobytes()
    raise EncodeError(f"record {what} must be bytes or None, not {type(data).__name__}")


def _encode_record(
    out: bytearray, attributes, timestamp_delta, offset_delta, key, value, headers
) -> None:
    if not -0x80 <= attributes <= 0x7F:
        raise EncodeError(f"record attributes {attributes} do not fit an int8")
    body = bytearray((attributes & 0xFF,))
    body += _varlong(timestamp_delta)
    body += _varint(offset_delta)
    if key is None:
        body += b"\x01"
    else:
        key = _as_bytes(key, "key")
        body += _varint(len(key))
        body += key
    if value is None:
        body += b"\x01"
    else:
        value = _as_bytes(value, "value")
        body += _varint(len(value))
        body += value
    if not headers:
        body += b"\x00"
    else:
        if not isinstance(headers, tuple | list):
            headers = tuple(headers)
        body += _varint(len(headers))
        for item in headers:
            try:
                hkey, hvalue = item
            except (TypeError, ValueError) as e:
                raise EncodeError(f"record header must be a (key, value) pair: {item!r}") from e
            if not isinstance(hkey, str):
                raise EncodeError(f"record header key must be str, not {type(hkey).__name__}")
            try:
                encoded = hkey.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError as e:
                raise EncodeError(f"record header key {hkey!r} is not encodable: {e}") from e
            body += _varint(len(encoded))
            body += encoded
            if hvalue is None:
                body += b"\x01"
            else:
                hvalue = _as_bytes(hvalue, "header value")
                body += _varint(len(hvalue))
                body += hvalue
    out += _varint(len(body))
    out += body


class _Encoded(NamedTuple):
    section: bytes
    count: int  # type: ignore[assignment]  # shadows tuple.count on purpose: nothing counts items of it
    base_timestamp: int
    max_timestamp: int
    last_offset_delta: int | None


def _encode(records: Iterable[Record | RecordInput], base_timestamp: int | None) -> _Encoded:
    out = bytearray()
    count = 0
    previous = -1
    base = base_timestamp
    max_ts = None
    for r in records:
        if isinstance(r, Record):
            if base is None:
                raise EncodeError(
                    "base_timestamp is needed to build from Record values "
                    "(their timestamps are deltas)"
                )
            offset_delta = r.offset_delta
            timestamp_delta = r.timestamp_delta
            timestamp = base + timestamp_delta
            attributes = r.attributes
        elif isinstance(r, RecordInput):
            if base is None:
                base = NO_TIMESTAMP if r.timestamp is None else r.timestamp
            timestamp = base if r.timestamp is None else r.timestamp
            offset_delta = previous + 1
            timestamp_delta = timestamp - base
            attributes = 0
        else:
            raise EncodeError(f"cannot build a record from {type(r).__name__}")
        if offset_delta <= previous:
            raise EncodeError(
                f"record offset deltas must increase: {offset_delta} follows {previous}"
            )
        try:
            _encode_record(
                out, attributes, timestamp_delta, offset_delta, r.key, r.value, r.headers
            )
        except TypeError as e:  # a non-int delta or attributes, non-iterable headers
            raise EncodeError(f"cannot encode record {r!r}: {e}") from e
        previous = offset_delta
        if max_ts is None or timestamp > max_ts:
            max_ts = timestamp
        count += 1
    if base is None:
        base = NO_TIMESTAMP
    return _Encoded(
        bytes(out),
        count,
        base,
        base if max_ts is None else max_ts,
        previous if count else None,
    )


def encode_records(
    records: Iterable[Record | RecordInput], *, base_timestamp: int | None = None
) -> bytes:
    """The uncompressed records section for `records` (as `build_batch` would
    write it before compressing). Record values are written as they are;
    RecordInput values get the next offset delta and a delta from the base
    timestamp (default: the first RecordInput's timestamp)."""
    return _encode(records, base_timestamp).section


def build_batch(
    records: Iterable[Record | RecordInput],
    *,
    base_offset: int = 0,
    compression: int = NONE,
    compression_level: int | None = None,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    last_offset_delta: int | None = None,
    timestamp_type: int = CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    is_transactional: bool = False,
) -> bytes:
    """A complete v2 batch holding `records`, CRC included.

    `records` are RecordInput values (offset deltas 0, 1, 2, ... in order;
    timestamps absolute, None meaning the base timestamp) and/or Record values
    (written as they are: their offset and timestamp deltas, attributes).
    Offset deltas must increase.

    - base_timestamp: default the first RecordInput's timestamp (as Kafka's
      producer does), or -1 (NO_TIMESTAMP) when it has none; required when
      `records` holds Record values.
    - max_timestamp: default the largest record timestamp (base_timestamp for
      an empty batch). With timestamp_type=LOG_APPEND_TIME pass the append
      time here, or patch a built batch with `set_log_append_time`.
    - last_offset_delta: default the last record's offset delta; compaction
      passes the original one (its batches keep their offset range). Required
      for an empty batch.
    - compression: codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd), at
      `compression_level` (None: Kafka's default for the codec).

    Raises EncodeError for values that cannot be encoded.
    """
    if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
        raise EncodeError(f"timestamp type {timestamp_type} is neither 0 nor 1")
    if compression not in CODEC_NAMES:
        raise EncodeError(f"unknown compression codec {compression!r}")
    attributes = compression | (TIMESTAMP_TYPE_MASK if timestamp_type else 0)
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    return _build(
        records,
        attributes=attributes,
        compression_level=compression_level,
        base_offset=base_offset,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        last_offset_delta=last_offset_delta,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=partition_leader_epoch,
    )


def _build(
    records,
    *,
    attributes: int,
    compression_level,
    base_offset,
    base_timestamp,
    max_timestamp,
    last_offset_delta,
    producer_id,
    producer_epoch,
    base_sequence,
    partition_leader_epoch,
) -> bytes:
    codec = attributes & COMPRESSION_MASK
    encoded = _encode(records, base_timestamp)
    if last_offset_delta is None:
        if encoded.last_offset_delta is None:
            raise EncodeError("an empty batch needs last_offset_delta")
        last_offset_delta = encoded.last_offset_delta
    elif encoded.last_offset_delta is not None and last_offset_delta < encoded.last_offset_delta:
        raise EncodeError(
            f"last_offset_delta {last_offset_delta} is below the last record's "
            f"offset delta {encoded.last_offset_delta}"
        )
    payload = (
        encoded.section if codec == NONE else compress(codec, encoded.section, compression_level)
    )
    header = BatchHeader(
        base_offset=base_offset,
        batch_length=0,  # computed by encode_batch
        partition_leader_epoch=partition_leader_epoch,
        magic=MAGIC_V2,
        crc=0,  # computed by encode_batch
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=encoded.base_timestamp,
        max_timestamp=encoded.max_timestamp if max_timestamp is None else max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records_count=encoded.count,
    )
    return encode_batch(header, payload)


def build_control_batch(
    commit: bool,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A transaction marker, as Kafka's broker writes it: a transactional
    control batch holding one record whose key is (version 0, type 1 commit /
    0 abort) and whose value is (version 0, coordinator epoch), both int16
    version followed by int16 type / int32 epoch; no sequence."""
    try:
        key = _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT)
        value = _END_TXN_MARKER.pack(0, coordinator_epoch)
    except struct.error as e:
        raise EncodeError(f"cannot encode control record: {e}") from e
    return _build(
        [Record(0, 0, key, value)],
        attributes=TRANSACTIONAL_MASK | CONTROL_MASK,
        compression_level=None,
        base_offset=base_offset,
        base_timestamp=timestamp,
        max_timestamp=timestamp,
        last_offset_delta=0,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        partition_leader_epoch=partition_leader_epoch,
    )
