"""What Kafka checks in a Produce request's records before appending them.

The CRC covers every byte of a batch, compressed or not, so corruption is
caught before anything is decompressed; the header carries the base offset,
counts, attributes and timestamps checked here. The records themselves are
walked, not decoded: the section must hold exactly `records_count` records
with offset deltas 0, 1, 2, ... (`check_record_offsets`), or offsets would
collide with the next batch's. Keys are decoded only for compacted topics.
Per-record timestamps are not checked, only the batch's first and largest.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from wire.error_codes import ErrorCode
from wire.errors import DecodeError
from wire.records import check_record_offsets, iter_batches, iter_records
from wire.records.batch import BatchHeader, set_log_append_time


@dataclass
class RecordsError(Exception):
    code: ErrorCode
    message: str
    # (batch index, message) pairs for the Produce response's record_errors.
    batch_errors: tuple = ()


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


def validate_records(records, limits: TopicLimits, now_ms: int | None = None) -> list[BatchHeader]:
    """Check a producer's records; returns their batch headers.

    With LogAppendTime the batches are stamped in place (records must then be
    writable), as Kafka does, which rewrites their CRC.
    """
    if records is None or len(records) == 0:
        raise RecordsError(ErrorCode.INVALID_RECORD, "Produce request carries no records")
    if len(records) > limits.segment_bytes:
        raise RecordsError(
            ErrorCode.RECORD_LIST_TOO_LARGE,
            f"Message batch size is {len(records)} bytes in append to partition, which "
            f"exceeds the maximum configured segment size of {limits.segment_bytes}.",
        )
    now = now_ms if now_ms is not None else time.time_ns() // 1_000_000
    headers = []
    try:
        batches = list(iter_batches(records, check_crc=True))
    except DecodeError as e:
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE, f"Record is corrupt: {e}") from None
    if len(batches) != 1:
        # Produce v3+ carries exactly one batch per partition (Kafka's rule).
        raise RecordsError(
            ErrorCode.INVALID_RECORD,
            f"Produce requests with version 3 or above must have exactly one record batch "
            f"per partition, found {len(batches)}",
        )
    for index, (pos, h) in enumerate(batches):
        if h.size > limits.max_message_bytes:
            raise RecordsError(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"The record batch size in the append to partition is {h.size} bytes which "
                f"exceeds the maximum configured value of {limits.max_message_bytes}.",
            )
        problem = _batch_problem(h, limits, now)
        if problem is not None:
            code, message = problem
            raise RecordsError(code, message, ((index, message),))
        try:
            check_record_offsets(records, pos)
        except DecodeError as e:
            message = f"Inner records of the batch are invalid: {e}"
            raise RecordsError(ErrorCode.INVALID_RECORD, message, ((index, message),)) from None
        if limits.compacted:
            _check_keys(records, pos, index)
        if limits.log_append_time:
            set_log_append_time(records, now, pos)
        headers.append(h)
    return headers


def _batch_problem(h: BatchHeader, limits: TopicLimits, now: int):
    if h.base_offset != 0:
        return (
            ErrorCode.INVALID_RECORD,
            f"The baseOffset of the record batch in the append should be 0, but it is {h.base_offset}",
        )
    if h.last_offset_delta + 1 != h.records_count:
        return ErrorCode.INVALID_RECORD, (
            f"Inner record count {h.records_count} does not match the last offset delta "
            f"{h.last_offset_delta} of the batch"
        )
    if h.records_count == 0:
        return ErrorCode.INVALID_RECORD, "A record batch must contain at least one record"
    if h.producer_id >= 0 and h.base_sequence < 0:
        return ErrorCode.INVALID_RECORD, (
            f"Idempotent batch from producer {h.producer_id} has no base sequence"
        )
    if h.is_control:
        return ErrorCode.INVALID_RECORD, "Control records are not allowed from clients"
    if h.is_log_append_time:
        return ErrorCode.INVALID_TIMESTAMP, "Producers may not set the LogAppendTime timestamp type"
    if not limits.log_append_time and h.records_count > 0:
        for ts in (h.base_timestamp, h.max_timestamp):
            if ts < 0:
                continue
            if (
                ts < now - limits.timestamp_before_max_ms
                or ts > now + limits.timestamp_after_max_ms
            ):
                return ErrorCode.INVALID_TIMESTAMP, (
                    f"Timestamp {ts} of message is out of range. The timestamp should be within "
                    f"[{now - limits.timestamp_before_max_ms}, {now + limits.timestamp_after_max_ms}]"
                )
    return None


def _check_keys(records, pos: int, index: int) -> None:
    try:
        for record in iter_records(records, pos):
            if record.key is None:
                message = "Compacted topic cannot accept message without key in topic partition"
                raise RecordsError(ErrorCode.INVALID_RECORD, message, ((index, message),))
    except DecodeError as e:
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE, f"Record is corrupt: {e}") from None
