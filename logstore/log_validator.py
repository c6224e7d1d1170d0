"""What Kafka checks in a Produce request's records, and how it answers each failure.

Kafka 4.3 checks a partition's records in stages, and the stage that finds a
problem decides the whole answer: the error code, whether the response carries
a message and per-record errors, and whether it reports the partition's log
start offset or -1. The functions here follow those stages in Kafka's order:

1. `first_batch_is_transactional` (KafkaApis, before anything else, for every
   partition of the request): the first batch's length field and magic byte
   are read as Kafka's batch iterator reads them. A length below 14 or a magic
   outside 0..2 fails the whole request with CORRUPT_MESSAGE and a message.
2. `check_single_batch` (ProduceRequest.validateRecords): exactly one whole
   batch of magic 2, no zstd before Produce v7. Bytes after the batch that do
   not make a second one are ignored, as Kafka trims them. No message, -1.
3. `validate_records` (UnifiedLog.analyzeAndValidateRecords, LogValidator):
   base offset 0 (INVALID_RECORD); the size within max.message.bytes
   (MESSAGE_TOO_LARGE, no message, -1); the CRC (CORRUPT_MESSAGE, no message,
   -1); the header's offset range, count, control bit and sequence
   (INVALID_RECORD); the records section (`check_records`); then each
   record's key and timestamp, which give per-record errors and a summary
   message; last, the batch against segment.bytes (RECORD_LIST_TOO_LARGE).

Records stay bytes: they are walked (count, offset deltas, the largest
timestamp) but decoded only where a check needs them -- keys on compacted
topics, timestamps when the topic sets a lower bound
(message.timestamp.before.max.ms) or the largest timestamp is out of range,
and batches a producer marked LogAppendTime. Otherwise the upper bound is
checked against the largest timestamp alone. As Kafka does, a CreateTime
batch is stored with that largest timestamp as its max timestamp, whatever
the producer wrote there (its CRC recomputed).

This is storage-format logic (it reads and patches batch bytes), so it lives
beside the log, as Kafka's LogValidator lives in its storage module; the
broker's produce handler calls the stages and turns a `RecordsError` into its
answer.

One deliberate difference: Kafka stores an uncompressed batch whose records'
offset deltas do not run 0, 1, 2, ... as it is (its offsets then collide with
the next batch's); Gregor refuses it with INVALID_RECORD.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from crc32c import crc32c

from wire.error_codes import ErrorCode
from wire.errors import DecodeError
from wire.records import (
    BATCH_HEADER_SIZE,
    COMPRESSION_MASK,
    CRC_COVERED_FROM,
    DEFAULT_MAX_UNCOMPRESSED,
    LOG_OVERHEAD,
    MAGIC_POS,
    MAGIC_V2,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    ZSTD,
    BatchHeader,
    batch_attributes,
    batch_payload,
    batch_size_at,
    check_compressed_batch,
    check_plain_batch,
    check_records,
    compute_crc,
    decompress_buffer,
    encode_batch,
    iter_records,
    read_batch_header,
    record_timestamp,
    set_log_append_time,
    set_max_timestamp,
)

# The smallest length field Kafka's batch iterator accepts (a magic 0 record).
RECORD_OVERHEAD_V0 = 14
JAVA_LONG_MAX = 2**63 - 1
# How many per-record errors Kafka quotes in the summary message.
QUOTED_RECORD_ERRORS = 3


@dataclass
class RecordsError(Exception):
    """A partition's records refused as Kafka refuses them.

    `message` and `record_errors` ((record index, message) pairs) are what
    Kafka's response carries: None and () for most errors. Kafka reports the
    partition's log start offset for errors found while appending, -1 for
    those found before (`reports_log_start_offset`).
    """

    code: ErrorCode
    message: str | None = None
    record_errors: tuple[tuple[int, str], ...] = ()
    reports_log_start_offset: bool = True


@dataclass(frozen=True)
class TopicLimits:
    """The topic settings that decide what an append may carry."""

    max_message_bytes: int
    log_append_time: bool
    compacted: bool
    timestamp_before_max_ms: int
    timestamp_after_max_ms: int
    segment_bytes: int
    min_insync_replicas: int = 1


# --- stages 1 and 2: the batches as Kafka's iterator sees them --------------------------


def _next_batch_size(records, pos: int) -> int | None:
    """The size of the batch at `pos` as Kafka's ByteBufferLogInputStream
    reads it: None when too few bytes remain to tell; RecordsError
    (CORRUPT_MESSAGE, with Kafka's message) for a length field below 14 or a
    magic byte outside 0..2."""
    size = batch_size_at(records, pos)
    if size is None:
        return None
    length = size - LOG_OVERHEAD
    if length < RECORD_OVERHEAD_V0:
        raise RecordsError(
            ErrorCode.CORRUPT_MESSAGE,
            f"Record size {length} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})",
            reports_log_start_offset=False,
        )
    if len(records) - pos <= MAGIC_POS:
        return None
    magic = _magic_at(records, pos)
    if not 0 <= magic <= MAGIC_V2:
        raise RecordsError(
            ErrorCode.CORRUPT_MESSAGE,
            f"Invalid magic found in record: {magic}",
            reports_log_start_offset=False,
        )
    return size


def _magic_at(records, pos: int) -> int:
    return (records[pos + MAGIC_POS] ^ 0x80) - 0x80  # a signed byte


def _whole_batch_size(records, pos: int) -> int | None:
    """The size of the batch at `pos` if all of it is there, else None."""
    size = _next_batch_size(records, pos)
    if size is None or size > len(records) - pos:
        return None
    return size


def first_batch_is_transactional(records) -> bool:
    """Stage 1: whether the partition's first batch is transactional (then the
    request must name a transactional id). Raises RecordsError for a first
    batch Kafka's iterator cannot read: the whole request fails with it."""
    if records is None:
        return False
    size = _whole_batch_size(records, 0)
    if size is None or _magic_at(records, 0) != MAGIC_V2 or size < BATCH_HEADER_SIZE:
        return False
    # The attributes alone (every Produce asks this of every partition).
    return bool(batch_attributes(records) & TRANSACTIONAL_MASK)


def check_single_batch(records, api_version: int) -> int:
    """Stage 2: the partition's records must be one whole magic 2 batch;
    returns its size (bytes after it are not appended)."""
    try:
        size = None if records is None else _whole_batch_size(records, 0)
        if size is None:
            raise _before_append(ErrorCode.INVALID_RECORD)
        if _magic_at(records, 0) != MAGIC_V2:
            raise _before_append(ErrorCode.INVALID_RECORD)
        readable = size >= BATCH_HEADER_SIZE
        if readable and api_version < 7 and read_batch_header(records, 0).compression == ZSTD:
            raise _before_append(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
        if _whole_batch_size(records, size) is not None:
            raise _before_append(ErrorCode.INVALID_RECORD)
    except RecordsError as e:
        # Here Kafka answers with the error code alone.
        raise _before_append(e.code) from None
    if not readable:
        # Kafka fails reading the header fields past the batch's end.
        raise _before_append(ErrorCode.UNKNOWN_SERVER_ERROR)
    return size


def _before_append(code: ErrorCode) -> RecordsError:
    return RecordsError(code, reports_log_start_offset=False)


# --- stages 2 and 3 at once, for the common batch -------------------------------------


def validate_common_batch(records, limits: TopicLimits, now_ms: int, api_version: int):
    """The common batch (one whole CreateTime batch, uncompressed or
    compressed, and nothing after it, on a topic that is not compacted)
    checked in one go: the bytes to append, as `check_single_batch` and then
    `validate_records` would return them. None when the batch is of another
    kind or fails any check: the caller then runs those two, which answer as
    Kafka does, in Kafka's order. `check_plain_batch` is C where it was
    built; the few microseconds of Python checks it replaces were the
    largest part of a partition's produce time."""
    # Refusals that need no record are decided first: the staged checks
    # answer them before decompressing, and a batch the fast path decoded
    # only to refuse would be decoded twice.
    if limits.compacted or records is None:
        return None
    size = len(records)
    if size > limits.max_message_bytes or size > limits.segment_bytes:
        return None
    found = check_plain_batch(records)
    if found is None:
        if (
            api_version < 7
            and size >= BATCH_HEADER_SIZE
            and batch_attributes(records) & COMPRESSION_MASK == ZSTD
        ):
            return None
        found = check_compressed_batch(records)
        if found is None:
            return None
    crc, header_max_timestamp, max_timestamp = found
    batch = memoryview(records)
    if crc32c(batch[CRC_COVERED_FROM:]) != crc or _timestamps_need_records(
        max_timestamp, limits, now_ms
    ):
        return None
    if limits.log_append_time:
        set_log_append_time(batch, now_ms)
    elif header_max_timestamp != max_timestamp:
        set_max_timestamp(batch, max_timestamp)
    return batch


# --- stage 3: the batch, then its records -------------------------------------------------


def validate_records(records, limits: TopicLimits, topic_partition: str, now_ms: int | None = None):
    """Check a producer's single batch (after `check_single_batch`); returns
    the bytes to append (the batch without anything after it).

    With LogAppendTime the batch is stamped in place (records must then be
    writable), as Kafka does, which rewrites its CRC; a batch the producer
    marked LogAppendTime on a CreateTime topic is rewritten as CreateTime.
    """
    now = now_ms if now_ms is not None else time.time_ns() // 1_000_000
    h = read_batch_header(records, 0)
    if h.base_offset != 0:
        raise RecordsError(ErrorCode.INVALID_RECORD)
    if h.size > limits.max_message_bytes:
        raise _before_append(ErrorCode.MESSAGE_TOO_LARGE)
    if compute_crc(records, 0) != h.crc:
        raise _before_append(ErrorCode.CORRUPT_MESSAGE)
    if _header_problem(h):
        raise RecordsError(ErrorCode.INVALID_RECORD)
    try:
        walked = check_records(records, 0)
    except DecodeError:
        raise RecordsError(_records_section_error(records, h)) from None
    try:
        errors = _record_errors(records, h, walked.max_timestamp, limits, topic_partition, now)
    except DecodeError:
        raise RecordsError(ErrorCode.INVALID_RECORD) from None
    if errors:
        raise _rejected(errors)
    batch = memoryview(records)[: h.size]
    if h.size > limits.segment_bytes:
        raise _before_append(ErrorCode.RECORD_LIST_TOO_LARGE)
    if limits.log_append_time:
        set_log_append_time(batch, now)
    elif h.is_log_append_time:
        batch[:] = encode_batch(
            h._replace(attributes=h.attributes & ~TIMESTAMP_TYPE_MASK), batch_payload(batch)
        )
    elif h.max_timestamp != walked.max_timestamp:
        # Kafka stores the records' largest timestamp, not the producer's
        # header (librdkafka writes 0 there when every record has none, -1);
        # retention and the time index go by the stored value.
        set_max_timestamp(batch, walked.max_timestamp)
    return batch


def _header_problem(h: BatchHeader) -> bool:
    """Kafka's checks of a producer's batch header (LogValidator.validateBatch)."""
    count_from_offsets = h.last_offset_delta + 1
    return (
        count_from_offsets <= 0
        or h.records_count <= 0
        or count_from_offsets != h.records_count
        or h.is_control
        or (h.producer_id >= 0 and h.base_sequence < 0)
    )


def _records_section_error(records, h: BatchHeader) -> ErrorCode:
    """Records that cannot be read are INVALID_RECORD; a compressed section
    that cannot even be decompressed fails inside Kafka's decompressor, which
    answers UNKNOWN_SERVER_ERROR."""
    if h.compression:
        try:
            decompress_buffer(h.compression, batch_payload(records), DEFAULT_MAX_UNCOMPRESSED)
        except DecodeError:
            return ErrorCode.UNKNOWN_SERVER_ERROR
    return ErrorCode.INVALID_RECORD


def _record_errors(
    records, h, max_timestamp, limits, topic_partition, now
) -> list[tuple[ErrorCode, int, str]]:
    """(code, record index, message) for each record Kafka refuses: a missing
    key on a compacted topic, else a timestamp out of range or a
    LogAppendTime batch where Kafka does not accept one. `max_timestamp` is
    the records' largest timestamp (from the record walk)."""
    check_time = not limits.log_append_time
    if not (
        limits.compacted
        or h.is_log_append_time
        or _timestamps_need_records(max_timestamp, limits, now)
    ):
        return []
    errors = []
    for index, record in enumerate(iter_records(records, 0)):
        if limits.compacted and record.key is None:
            errors.append(
                (
                    ErrorCode.INVALID_RECORD,
                    index,
                    "Compacted topic cannot accept message without key in topic partition "
                    f"{topic_partition}",
                )
            )
            continue
        timestamp = record_timestamp(h, record)
        if check_time and timestamp != NO_TIMESTAMP:
            if _timestamp_out_of_range(timestamp, limits, now):
                lower, upper = _timestamp_bounds(limits, now)
                errors.append(
                    (
                        ErrorCode.INVALID_TIMESTAMP,
                        index,
                        f"Timestamp {timestamp} of message with offset {record.offset_delta} is "
                        f"out of range. The timestamp should be within [{lower}, {upper}]",
                    )
                )
        elif h.is_log_append_time:
            key = 0 if record.key is None else len(record.key)
            value = 0 if record.value is None else len(record.value)
            errors.append(
                (
                    ErrorCode.INVALID_TIMESTAMP,
                    index,
                    f"Invalid timestamp type in message DefaultRecord(offset={record.offset_delta}, "
                    f"timestamp={timestamp}, key={key} bytes, value={value} bytes). Producer "
                    "should not set timestamp type to LogAppendTime.",
                )
            )
    return errors


def _timestamps_need_records(max_timestamp: int, limits: TopicLimits, now: int) -> bool:
    """Whether a CreateTime batch's timestamps must be read record by record.

    With no lower bound (before.max.ms = Long.MAX_VALUE, the default) Kafka's
    lower check cannot fail, and the upper one is decided by the records'
    largest timestamp, which the record walk found (not the header's, which
    a producer may get wrong); otherwise, or when that timestamp is out of
    range, every record is checked for the per-record errors.
    """
    if limits.log_append_time:
        return False
    if limits.timestamp_before_max_ms != JAVA_LONG_MAX:
        return True
    return max_timestamp != NO_TIMESTAMP and _timestamp_out_of_range(max_timestamp, limits, now)


def _java_long(n: int) -> int:
    """`n` wrapped to a signed 64-bit value, as Java's long arithmetic does."""
    return ((n + 2**63) % 2**64) - 2**63


def _timestamp_out_of_range(timestamp: int, limits: TopicLimits, now: int) -> bool:
    diff = _java_long(now - timestamp)
    return (
        diff > limits.timestamp_before_max_ms or _java_long(-diff) > limits.timestamp_after_max_ms
    )


def _timestamp_bounds(limits: TopicLimits, now: int) -> tuple[int, int]:
    return (
        _java_long(now - limits.timestamp_before_max_ms),
        _java_long(now + limits.timestamp_after_max_ms),
    )


def _rejected(errors: list[tuple[ErrorCode, int, str]]) -> RecordsError:
    """Kafka's answer to per-record errors (LogValidator.processRecordErrors):
    INVALID_TIMESTAMP if any record has a bad timestamp, else INVALID_RECORD
    with a summary quoting the first three."""
    record_errors = tuple((index, message) for _, index, message in errors)
    if any(code == ErrorCode.INVALID_TIMESTAMP for code, _, _ in errors):
        return RecordsError(
            ErrorCode.INVALID_TIMESTAMP,
            "One or more records have been rejected due to invalid timestamp",
            record_errors,
        )
    quoted = ", ".join(
        f"RecordError(batchIndex={index}, message='{message}')"
        for index, message in record_errors[:QUOTED_RECORD_ERRORS]
    )
    return RecordsError(
        ErrorCode.INVALID_RECORD,
        f"One or more records have been rejected due to {len(record_errors)} record errors in "
        f"total, and only showing the first three errors at most: [{quoted}]",
        record_errors,
    )
