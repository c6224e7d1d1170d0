"""Hostile input for the record batch layer, and round-trip properties.

The invariant (as in h11): any bytes either parse or raise DecodeError, never
another exception; claims of more data than there is are rejected before
anything is allocated for them.
"""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from wire.errors import DecodeError
from wire.records import (
    BatchHeader,
    Record,
    RecordInput,
    build_batch,
    build_control_batch,
    encode_batch,
    iter_batches,
    iter_records,
    parse_control_record,
    record_timestamp,
    validate_batch,
    write_crc,
)

CODECS = [0, 1, 2, 3, 4]
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def header_for(records_count: int, attributes: int = 0) -> BatchHeader:
    return BatchHeader(0, 0, -1, 2, 0, attributes, 0, 0, 0, -1, -1, -1, records_count)


def drain(buf, **kwargs):
    """Parse everything there is to parse; return normally or raise DecodeError."""
    for pos, _header in iter_batches(buf, **kwargs):
        list(iter_records(buf, pos, max_uncompressed=1 << 16))


VALID = [
    build_batch(
        [
            RecordInput(b"k%d" % i, b"value %d " % i * 7, (("h", b"x"), ("n", None)), 1000 + i)
            for i in range(6)
        ]
        + [RecordInput(None, None)],
        compression=codec,
    )
    for codec in CODECS
] + [build_control_batch(True, 3, 1, 9, 5000)]


@FUZZ
@given(st.binary(max_size=400))
def test_arbitrary_bytes_validate_or_raise_decode_error(buf):
    try:
        validate_batch(buf)
    except DecodeError:
        pass


@FUZZ
@given(st.binary(max_size=400), st.booleans(), st.booleans())
def test_arbitrary_bytes_split_and_parse_or_raise_decode_error(buf, partial_tail, check_crc):
    try:
        drain(buf, partial_tail=partial_tail, check_crc=check_crc)
    except DecodeError:
        pass


@FUZZ
@given(
    section=st.binary(max_size=300),
    count=st.one_of(st.integers(-3, 12), st.integers(-(2**31), 2**31 - 1)),
    attributes=st.integers(-(2**15), 2**15 - 1),
)
def test_arbitrary_records_sections_parse_or_raise_decode_error(section, count, attributes):
    """A well-formed header (valid CRC) around any records section, count and
    attributes (any codec bits): the record decoder itself gets the garbage."""
    buf = encode_batch(header_for(count, attributes), section)
    try:
        records = list(iter_records(buf, max_uncompressed=1 << 16))
    except DecodeError:
        return
    assert len(records) == count


@FUZZ
@given(
    section=st.lists(
        st.one_of(
            st.integers(0, 255).map(lambda b: bytes([b])),
            st.sampled_from([b"\x00", b"\x01", b"\x02", b"\x7f", b"\x80", b"\xff\xff\xff\xff\x0f"]),
        ),
        max_size=60,
    ).map(b"".join),
    count=st.integers(0, 4),
)
def test_varint_heavy_sections_parse_or_raise_decode_error(section, count):
    buf = encode_batch(header_for(count), section)
    try:
        list(iter_records(buf))
    except DecodeError:
        pass


@FUZZ
@given(data=st.data())
def test_mutated_valid_batches_parse_or_raise_decode_error(data):
    valid = data.draw(st.sampled_from(VALID))
    kind = data.draw(st.sampled_from(["flip", "cut", "splice", "flip-and-fix-crc"]))
    buf = bytearray(valid)
    if kind in ("flip", "flip-and-fix-crc"):
        for _ in range(data.draw(st.integers(1, 4))):
            buf[data.draw(st.integers(0, len(buf) - 1))] ^= data.draw(st.integers(1, 255))
    elif kind == "cut":
        del buf[data.draw(st.integers(0, len(buf))) :]
    else:
        at = data.draw(st.integers(0, len(buf)))
        buf[at:at] = data.draw(st.binary(max_size=30))
    if kind == "flip-and-fix-crc" and len(buf) >= 61:
        # Keep the CRC right so that the record decoder sees the damage.
        try:
            write_crc(buf)
        except DecodeError:
            pass
    try:
        drain(bytes(buf))
    except DecodeError:
        pass
    try:
        list(iter_records(bytes(buf), max_uncompressed=1 << 16))
    except DecodeError:
        pass


@FUZZ
@given(
    key=st.one_of(st.none(), st.binary(max_size=8)),
    value=st.one_of(st.none(), st.binary(max_size=8)),
)
def test_arbitrary_control_records_parse_or_raise_decode_error(key, value):
    try:
        kind, epoch = parse_control_record(Record(0, 0, key, value))
    except DecodeError:
        return
    assert -(2**15) <= kind < 2**15
    assert epoch is None or isinstance(epoch, int)


# -- claims larger than the data are refused before allocation -----------------------------


def peak_memory_of(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def test_record_count_larger_than_the_bytes_is_refused_when_iteration_starts():
    buf = encode_batch(header_for(2**31 - 1), b"\x00" * 50)

    def call():
        with pytest.raises(DecodeError, match="record count 2147483647 cannot fit in 50 bytes"):
            iter_records(buf)  # raised by the call itself, before any record

    assert peak_memory_of(call) < 16 * 1024


HUGE = b"\xfe\xff\xff\xff\x0f"  # zigzag varint 2147483647


@pytest.mark.parametrize(
    ("body", "message"),
    [
        # attributes, timestamp delta, offset delta, then the field that lies
        (b"\x00\x00\x00" + HUGE, "key length 2147483647"),
        (b"\x00\x00\x00\x01" + HUGE, "value length 2147483647"),
        (b"\x00\x00\x00\x01\x01" + HUGE, "header count 2147483647"),
        (b"\x00\x00\x00\x01\x01\x02" + HUGE, "header key length 2147483647"),
        (b"\x00\x00\x00\x01\x01\x02\x00" + HUGE, "header value length 2147483647"),
    ],
)
def test_lengths_larger_than_the_record_are_refused_before_allocation(body, message):
    body = body.ljust(14, b"\x00")
    buf = encode_batch(header_for(1), b"\x1c" + body)  # record length 14

    def parse():
        with pytest.raises(DecodeError, match=message):
            list(iter_records(buf))

    assert peak_memory_of(parse) < 16 * 1024


def test_record_length_larger_than_the_section_is_refused_before_allocation():
    buf = encode_batch(header_for(1), HUGE + b"\x00" * 9)

    def parse():
        with pytest.raises(DecodeError, match="record length 2147483647 does not fit"):
            list(iter_records(buf))

    assert peak_memory_of(parse) < 16 * 1024


def test_batch_length_larger_than_the_buffer_is_refused():
    buf = bytearray(VALID[0])
    struct.pack_into(">i", buf, 8, 2**31 - 1)
    for call in (validate_batch, iter_records, lambda b: list(iter_batches(b))):
        with pytest.raises(DecodeError, match="truncated"):
            call(bytes(buf))
    assert list(iter_batches(bytes(buf), partial_tail=True)) == []


# -- round-trip properties ------------------------------------------------------------------


header_keys = st.text(max_size=10)
nullable_bytes = st.one_of(st.none(), st.binary(max_size=40))
record_inputs = st.builds(
    RecordInput,
    key=nullable_bytes,
    value=nullable_bytes,
    headers=st.lists(st.tuples(header_keys, nullable_bytes), max_size=3).map(tuple),
    timestamp=st.one_of(st.none(), st.integers(0, 2**45)),
)


@settings(max_examples=150, deadline=None)
@given(
    inputs=st.lists(record_inputs, min_size=1, max_size=20),
    codec=st.sampled_from(CODECS),
    base_offset=st.integers(0, 2**62),
)
def test_any_records_round_trip_through_us_and_kafka_python(inputs, codec, base_offset):
    buf = build_batch(inputs, compression=codec, base_offset=base_offset)
    header = validate_batch(buf)
    records = list(iter_records(buf))
    base = header.base_timestamp
    expected = [
        (
            base_offset + n,
            base if i.timestamp is None else i.timestamp,
            i.key,
            i.value,
            list(i.headers),
        )
        for n, i in enumerate(inputs)
    ]
    ours = [
        (base_offset + r.offset_delta, record_timestamp(header, r), r.key, r.value, list(r.headers))
        for r in records
    ]
    assert ours == expected
    theirs = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in DefaultRecordBatch(buf)]
    assert theirs == expected
