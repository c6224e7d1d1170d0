"""The produce path's record walk in C (wire/records/_walk.c) against its
Python reference (`_walk_records`): the same answer -- None and the largest
record timestamp, or the same message -- for what producers build, for
garbage and for mutations of both."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wire.records import RecordInput, build_batch
from wire.records import records as records_module
from wire.records.batch import BATCH_HEADER_SIZE

python_walk = records_module._walk_records

try:
    from wire.records._walk import walk_records as c_walk
except ImportError:  # pragma: no cover - reported by the first test
    c_walk = None

FUZZ = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_the_c_walk_is_built_and_used():
    assert c_walk is not None, (
        "wire.records._walk was not compiled (pip install -e . builds it with the machine's C "
        "compiler): produce falls back to the Python walk, about 2.5 us per record"
    )
    assert records_module.walk_records is c_walk


def section_of(records: list[RecordInput]) -> tuple[bytes, int]:
    return bytes(build_batch(records)[BATCH_HEADER_SIZE:]), len(records)


def same(section, count, base_timestamp=-1):
    expected = python_walk(section, count, base_timestamp)
    assert c_walk(section, count, base_timestamp) == expected
    return expected


base_timestamps = st.sampled_from([-1, 0, 1_700_000_000_000, 2**63 - 1, -(2**63)]) | st.integers(
    -(2**63), 2**63 - 1
)


record_inputs = st.lists(
    st.builds(
        RecordInput,
        st.none() | st.binary(max_size=40),
        st.none() | st.binary(max_size=300),
        st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=2),
        st.integers(0, 2**41),
    ),
    min_size=1,
    max_size=12,
)


@FUZZ
@given(record_inputs)
def test_what_producers_build_passes_both_walks(records):
    section, count = section_of(records)
    base = records[0].timestamp
    assert same(section, count, base) == (None, max(-1, *(r.timestamp for r in records)))


@FUZZ
@given(record_inputs, st.data())
def test_mutated_sections_get_the_same_answer(records, data):
    base = data.draw(base_timestamps)
    section, count = section_of(records)
    buf = bytearray(section)
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(buf) - 1))
        buf[pos] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(buf)))
    declared = count + data.draw(st.integers(-1, 1))
    same(bytes(buf[:cut]) if data.draw(st.booleans()) else bytes(buf), max(declared, 0), base)


@FUZZ
@given(st.binary(max_size=200), st.integers(0, 40), base_timestamps)
def test_garbage_gets_the_same_answer(section, count, base):
    same(section, count, base)


@pytest.mark.parametrize(
    "section, count, message",
    [
        (b"\x0c\x00\x00\x02\x00\x00\x00", 1, "record 0 of the batch has offset delta 1"),
        (b"\x0c\x00\x00\x00\x00\x00\x00\xff", 1, "1 bytes follow the last of 1 records"),
        (b"\x02\x00\x00", 1, "record 0 has an impossible length 1"),
        (b"\xff\xff\xff\xff\xff\x01", 1, "varint longer than 5 bytes"),
        (b"\xff\xff\xff\xff\x7f\x00", 1, "varint overflows 32 bits"),
        (b"\x80", 1, "varint runs past the end of the record data"),
        # The timestamp delta, a varlong: at most 10 bytes and 64 bits.
        (b"\x18\x00" + b"\xff" * 10 + b"\x01", 1, "varint longer than 10 bytes"),
        (b"\x16\x00" + b"\xff" * 9 + b"\x03", 1, "varint overflows 64 bits"),
        (b"\x0c\x00\xff\xff\xff\xff\xff", 1, "varint runs past the end of the record data"),
    ],
)
def test_golden_errors(section, count, message):
    problem, _ = same(section, count)
    assert problem == message


def test_a_ten_byte_timestamp_delta_is_read_whole():
    # -2**63 as a zigzag varlong takes all ten bytes; base 0 makes it the timestamp.
    section = b"\x1e\x00" + b"\xff" * 9 + b"\x01" + b"\x00\x01\x01\x00"
    assert same(section, 1, 0) == (None, -1)  # -2**63 is below NO_TIMESTAMP
    assert same(section, 1, -1) == (None, 2**63 - 1)  # -1 - 2**63 wraps, as a Java long


def test_a_memoryview_of_a_larger_buffer_is_read_only_within_the_view():
    section, count = section_of([RecordInput(None, b"v" * 10, (), 7) for _ in range(3)])
    backing = bytearray(section + b"\x00" * 16)
    assert c_walk(memoryview(backing)[: len(section)], count, 7) == (None, 7)
    assert c_walk(memoryview(backing), count, 7) == ("16 bytes follow the last of 3 records", 7)


# --- check_plain_batch: the common produced batch, checked whole ---------------------

python_plain = records_module._check_plain_batch

try:
    from wire.records._walk import check_plain_batch as c_plain
except ImportError:  # pragma: no cover - reported below
    c_plain = None


def test_the_c_plain_batch_check_is_built_and_used():
    assert c_plain is not None, "wire.records._walk was not compiled: see the walk's test above"
    assert records_module.check_plain_batch is c_plain


def same_plain(batch):
    expected = python_plain(batch)
    assert c_plain(batch) == expected
    return expected


header_fields = st.fixed_dictionaries(
    {},
    optional={
        "base_offset": st.sampled_from([0, 0, 0, 1, -1, 2**40]),
        "compression": st.sampled_from([0, 0, 0, 1, 3, 4]),
        "timestamp_type": st.sampled_from([0, 0, 0, 1]),
        "producer_id": st.sampled_from([-1, 0, 7, 2**40]),
        "base_sequence": st.sampled_from([-1, 0, 5, 2**31 - 1]),
        "is_transactional": st.booleans(),
        "extra_offset_delta": st.sampled_from([0, 0, 1, 5]),
        "max_timestamp": base_timestamps,
        "partition_leader_epoch": st.integers(-1, 9),
    },
)


@FUZZ
@given(record_inputs, header_fields)
def test_producers_batches_get_the_same_plain_answer(records, fields):
    extra = fields.pop("extra_offset_delta", 0)
    batch = build_batch(records, last_offset_delta=len(records) - 1 + extra, **fields)
    found = same_plain(batch)
    plain = (
        fields.get("base_offset", 0) == 0
        and fields.get("compression", 0) == 0
        and fields.get("timestamp_type", 0) == 0
        and extra == 0
        and not (fields.get("producer_id", -1) >= 0 and fields.get("base_sequence", -1) < 0)
    )
    if plain:
        header = records_module.read_batch_header(batch)
        assert found == (header.crc, header.max_timestamp, max(-1, *(r.timestamp for r in records)))
    else:
        assert found is None


@FUZZ
@given(record_inputs, st.data())
def test_mutated_batches_get_the_same_plain_answer(records, data):
    buf = bytearray(build_batch(records))
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(buf) - 1))
        buf[pos] = data.draw(st.integers(0, 255))
    tail = data.draw(st.sampled_from([b"", b"", b"\x00", bytes(12), bytes(buf[:61])]))
    cut = data.draw(st.integers(0, len(buf)))
    same_plain(bytes(buf[:cut]) if data.draw(st.booleans()) else bytes(buf) + tail)


@FUZZ
@given(st.binary(max_size=200))
def test_garbage_gets_the_same_plain_answer(garbage):
    same_plain(garbage)
