"""What the produce path stores of a batch's timestamps (logstore/log_validator.py):
Kafka's LogValidator keeps the records' largest timestamp as a CreateTime
batch's max timestamp, whatever the producer wrote in the header."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logstore.log_validator import (
    RecordsError,
    TopicLimits,
    check_single_batch,
    validate_common_batch,
    validate_records,
)
from wire.error_codes import ErrorCode
from wire.records import (
    GZIP,
    LZ4,
    SNAPPY,
    ZSTD,
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


# --- the common batch checked at once, against the staged checks ------------------------


def staged(batch: bytearray, limits: TopicLimits, api_version: int = 9):
    """What the produce path stores by Kafka's stages, or the error it answers."""
    try:
        size = check_single_batch(batch, api_version)
        return bytes(validate_records(batch[:size], limits, "t-0", now_ms=NOW))
    except RecordsError as e:
        return e.code


def test_a_producers_common_batch_takes_the_plain_path_and_stores_the_same():
    records = [RecordInput(None, b"a", (), NOW - 5), RecordInput(b"k", b"b", (), NOW - 1)]
    batch = bytearray(build_batch(records, max_timestamp=0))
    expected = staged(bytearray(batch), LIMITS)
    out = validate_common_batch(batch, LIMITS, NOW, 9)
    assert out is not None, "the common batch must not need the staged checks"
    assert bytes(out) == expected
    assert read_batch_header(out, 0).max_timestamp == NOW - 1


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_a_compressed_common_batch_takes_the_one_pass_path_and_stores_the_same(codec):
    records = [RecordInput(None, b"a" * 100, (), NOW - 5), RecordInput(b"k", b"b", (), NOW - 1)]
    batch = bytearray(build_batch(records, compression=codec, max_timestamp=0))
    expected = staged(bytearray(batch), LIMITS)
    out = validate_common_batch(batch, LIMITS, NOW, 9)
    assert out is not None, "a compressed common batch must not need the staged checks"
    assert bytes(out) == expected
    assert read_batch_header(out, 0).max_timestamp == NOW - 1


def test_zstd_before_produce_v7_is_left_to_the_staged_checks():
    batch = bytearray(build_batch([RecordInput(None, b"a", (), NOW)], compression=ZSTD))
    assert validate_common_batch(batch, LIMITS, NOW, 6) is None
    assert staged(batch, LIMITS, 6) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


timestamps_near_now = st.one_of(st.just(-1), st.integers(NOW - 10**7, NOW + 10**7))
limits_variants = st.builds(
    lambda compacted, append_time, max_bytes, segment, before, after: dataclasses.replace(
        LIMITS,
        compacted=compacted,
        log_append_time=append_time,
        max_message_bytes=max_bytes,
        segment_bytes=segment,
        timestamp_before_max_ms=before,
        timestamp_after_max_ms=after,
    ),
    st.booleans(),
    st.booleans(),
    st.sampled_from([1 << 20, 90, 100]),
    st.sampled_from([1 << 30, 1 << 30, 110]),
    st.sampled_from([2**63 - 1, 2**63 - 1, 10**6]),
    st.sampled_from([2**63 - 1, 3_600_000, 10**6]),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.builds(
            RecordInput,
            st.none() | st.binary(max_size=8),
            st.none() | st.binary(max_size=60),
            st.just(()),
            timestamps_near_now,
        ),
        min_size=1,
        max_size=6,
    ),
    limits_variants,
    st.sampled_from(
        [
            {},
            {},
            {"compression": GZIP},
            {"compression": SNAPPY},
            {"compression": LZ4},
            {"compression": ZSTD},
            {"compression": LZ4, "max_timestamp": 0},
            {"max_timestamp": 0},
            {"timestamp_type": 1},
        ]
    ),
    st.sampled_from([9, 9, 6]),
    st.data(),
)
def test_the_one_pass_path_stores_what_the_staged_checks_store(
    records, limits, fields, api_version, data
):
    batch = bytearray(build_batch(records, **fields))
    if data.draw(st.booleans()):
        pos = data.draw(st.integers(0, len(batch) - 1))
        batch[pos] = data.draw(st.integers(0, 255))
    batch += data.draw(st.sampled_from([b"", b"", b"\x00\x00"]))
    expected = staged(bytearray(batch), limits, api_version)
    out = validate_common_batch(batch, limits, NOW, api_version)
    if out is not None:
        assert bytes(out) == expected
