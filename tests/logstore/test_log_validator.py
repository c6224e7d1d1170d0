"""What the produce path stores of a batch's timestamps (logstore/log_validator.py):
Kafka's LogValidator keeps the records' largest timestamp as a CreateTime
batch's max timestamp, whatever the producer wrote in the header."""

from __future__ import annotations

import dataclasses

import pytest

from logstore.log_validator import TopicLimits, validate_records
from wire.records import (
    LZ4,
    Record,
    RecordInput,
    build_batch,
    compute_crc,
    iter_records,
    read_batch_header,
    record_timestamp,
)

from .helpers import OPEN_LIMITS

NOW = 1_795_000_000_000
LIMITS = OPEN_LIMITS


def stored(batch: bytearray, limits: TopicLimits = LIMITS):
    out = validate_records(batch, limits, "t-0", now_ms=NOW)
    h = read_batch_header(out, 0)
    assert compute_crc(out, 0) == h.crc, "the stored batch's CRC must cover what it holds"
    return h, [record_timestamp(h, r) for r in iter_records(out)]


@pytest.mark.parametrize("codec", [0, LZ4])
def test_librdkafkas_header_for_records_without_timestamps_is_stored_as_none(codec):
    # librdkafka with timestamp=-1: base -1, every delta 0, header max timestamp 0.
    records = [Record(i, 0, None, b"v") for i in range(3)]
    batch = bytearray(build_batch(records, base_timestamp=-1, max_timestamp=0, compression=codec))
    h, stamps = stored(batch)
    assert (h.base_timestamp, h.max_timestamp) == (-1, -1)
    assert stamps == [-1, -1, -1]


def test_a_header_below_the_largest_record_timestamp_is_raised_to_it():
    records = [RecordInput(None, b"a", (), NOW - 5), RecordInput(None, b"b", (), NOW - 1)]
    batch = bytearray(build_batch(records, max_timestamp=NOW - 5))
    h, _ = stored(batch)
    assert h.max_timestamp == NOW - 1


def test_a_consistent_batch_is_stored_byte_for_byte():
    records = [
        RecordInput(None, b"a", (), -1),
        RecordInput(None, b"b", (), NOW),
        RecordInput(None, b"c", (), -1),
    ]
    batch = bytearray(build_batch(records))
    original = bytes(batch)
    out = validate_records(batch, LIMITS, "t-0", now_ms=NOW)
    assert bytes(out) == original
    assert read_batch_header(out, 0).max_timestamp == NOW


def test_log_append_time_topics_stamp_records_without_timestamps():
    batch = bytearray(build_batch([RecordInput(None, b"v", (), -1)] * 2, max_timestamp=0))
    h, stamps = stored(batch, dataclasses.replace(LIMITS, log_append_time=True))
    assert h.is_log_append_time and h.max_timestamp == NOW
    assert stamps == [NOW, NOW]
