"""Record batch v2: build, parse, CRC, and interoperability with kafka-python.

kafka-python 3.x is an independent implementation of the format (its own
record builder and reader, Java's semantics): batches it writes must parse to
exactly the records it was given, and batches we write must read back in it.
"""

from __future__ import annotations

import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import (
    ControlRecord,
    DefaultRecordBatch,
    DefaultRecordBatchBuilder,
)
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from wire.errors import DecodeError, EncodeError
from wire.records import (
    ATTRIBUTES_POS,
    BATCH_HEADER_SIZE,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    CRC_COVERED_FROM,
    CRC_POS,
    GZIP,
    LOG_APPEND_TIME,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    BatchHeader,
    Record,
    RecordInput,
    batch_attributes,
    batch_payload,
    build_batch,
    build_control_batch,
    check_records,
    compute_crc,
    decompress,
    encode_batch,
    encode_records,
    iter_batches,
    iter_records,
    parse_control_record,
    read_batch_header,
    record_timestamp,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    validate_batch,
    write_crc,
)

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
CODEC_IDS = ["none", "gzip", "snappy", "lz4", "zstd"]
T0 = 1_700_000_000_000


def sample_inputs() -> list[RecordInput]:
    """Keys, null keys, null values, empty values, headers with null values."""
    return [
        RecordInput(b"key-0", b"value-0", (), T0),
        RecordInput(None, b"value with a null key", (), T0 + 5),
        RecordInput(b"tombstone", None, (), T0 + 3),
        RecordInput(b"empty", b"", (("h1", b"v1"), ("h2", None), ("", b"")), T0 + 9),
        RecordInput(None, None, (("only-null", None),), T0 - 2),
        RecordInput("ключ".encode(), "значение ✓".encode(), (("ü", "ß".encode()),), T0 + 1),
    ]


def parse(buf, pos=0):
    header = validate_batch(buf, pos)
    return header, list(iter_records(buf, pos))


def as_kafka_python(records, header):
    return [
        (
            header.base_offset + r.offset_delta,
            record_timestamp(header, r),
            r.key,
            r.value,
            list(r.headers),
        )
        for r in records
    ]


def header_for(**fields):
    defaults = dict(
        base_offset=0,
        batch_length=0,
        partition_leader_epoch=-1,
        magic=2,
        crc=0,
        attributes=0,
        last_offset_delta=0,
        base_timestamp=0,
        max_timestamp=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        records_count=0,
    )
    defaults.update(fields)
    return BatchHeader(**defaults)


# -- build -> parse -------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_built_batch_parses_back_to_the_same_records(codec):
    inputs = sample_inputs()
    buf = build_batch(inputs, compression=codec, base_offset=100)
    header, records = parse(buf)
    assert header.compression == codec
    assert header.records_count == len(inputs)
    assert header.last_offset_delta == len(inputs) - 1
    assert [(r.key, r.value, r.headers) for r in records] == [
        (i.key, i.value, tuple(i.headers)) for i in inputs
    ]
    assert [header.base_offset + r.offset_delta for r in records] == list(range(100, 106))
    assert [record_timestamp(header, r) for r in records] == [i.timestamp for i in inputs]


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_batch_timestamps_are_first_record_base_and_max_of_records(codec):
    buf = build_batch(sample_inputs(), compression=codec)
    header = validate_batch(buf)
    assert header.base_timestamp == T0  # the first record's, like Kafka's producer
    assert header.max_timestamp == T0 + 9
    assert not header.is_log_append_time


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_many_records_round_trip_with_consecutive_offsets(codec):
    inputs = [RecordInput(b"k%d" % i, b"v" * (i % 50), (), T0 + i) for i in range(5000)]
    header, records = parse(build_batch(inputs, compression=codec))
    assert header.records_count == 5000
    assert [r.offset_delta for r in records] == list(range(5000))
    assert [r.key for r in records] == [i.key for i in inputs]
    assert [r.value for r in records] == [i.value for i in inputs]
    assert header.max_timestamp == T0 + 4999


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_one_mebibyte_value_round_trips(codec):
    value = (os.urandom(1 << 19) + b"kafka " * (1 << 18))[: 1 << 20]
    header, records = parse(build_batch([RecordInput(b"big", value, (), T0)], compression=codec))
    assert header.compression == codec
    assert [(r.key, r.value) for r in records] == [(b"big", value)]


def test_build_sets_producer_fields_flags_and_leader_epoch():
    buf = build_batch(
        [RecordInput(b"k", b"v", (), T0)],
        base_offset=7,
        producer_id=1234,
        producer_epoch=5,
        base_sequence=42,
        partition_leader_epoch=9,
        is_transactional=True,
    )
    header = validate_batch(buf)
    assert header.base_offset == 7
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (1234, 5, 42)
    assert header.partition_leader_epoch == 9
    assert header.is_transactional and not header.is_control
    assert header.size == len(buf)


def test_record_inputs_without_timestamp_take_the_base_timestamp():
    buf = build_batch(
        [RecordInput(b"a", b"1"), RecordInput(b"b", b"2", (), T0 + 4)], base_timestamp=T0
    )
    header, records = parse(buf)
    assert [record_timestamp(header, r) for r in records] == [T0, T0 + 4]


def test_batch_without_any_timestamp_uses_no_timestamp():
    header, records = parse(build_batch([RecordInput(b"a", b"1")]))
    assert header.base_timestamp == header.max_timestamp == -1
    assert record_timestamp(header, records[0]) == -1


def test_negative_and_extreme_deltas_round_trip():
    records = [
        Record(0, -(2**40), b"a", b"1"),
        Record(1, 2**62, b"b", b"2"),
        Record(2**31 - 1, 0, None, None, (), -128),
    ]
    buf = build_batch(records, base_timestamp=0, last_offset_delta=2**31 - 1)
    assert list(iter_records(buf)) == records


def test_record_attributes_byte_is_kept():
    records = [Record(0, 0, b"k", b"v", (), 5)]
    assert list(iter_records(build_batch(records, base_timestamp=T0))) == records


def test_compacted_batch_keeps_offset_gaps_and_last_offset_delta():
    records = [Record(1, 10, b"a", b"x"), Record(4, 12, b"b", None)]
    buf = build_batch(records, base_offset=50, base_timestamp=T0, last_offset_delta=6)
    header, parsed = parse(buf)  # count 2 != last_offset_delta + 1: still valid
    assert parsed == records
    assert header.records_count == 2 and header.last_offset_delta == 6
    assert header.next_offset == 57


def test_empty_batch_keeps_producer_state():
    buf = build_batch(
        [],
        base_timestamp=T0,
        last_offset_delta=3,
        producer_id=8,
        producer_epoch=0,
        base_sequence=10,
    )
    header, records = parse(buf)
    assert records == []
    assert (header.records_count, header.last_offset_delta, header.last_sequence) == (0, 3, 13)


def test_non_utf8_header_key_round_trips_byte_for_byte():
    raw_key = b"bad\xff\xfekey"
    section = b"".join(
        [
            b"\x00",  # attributes
            b"\x00",  # timestamp delta
            b"\x00",  # offset delta
            b"\x01",  # key null
            b"\x01",  # value null
            b"\x02",  # one header
            bytes([len(raw_key) * 2]),
            raw_key,
            b"\x01",  # header value null
        ]
    )
    section = bytes([len(section) * 2]) + section
    buf = encode_batch(header_for(records_count=1), section)
    (record,) = iter_records(buf)
    assert record.headers[0][0].encode("utf-8", "surrogateescape") == raw_key
    assert encode_records([record], base_timestamp=0) == section


# -- build errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("records", "kwargs"),
    [
        ([RecordInput("str key", b"v")], {}),
        ([RecordInput(b"k", 12)], {}),
        ([RecordInput(b"k", b"v", ((b"bytes key", b"v"),))], {}),
        ([RecordInput(b"k", b"v", (("k", "str value"),))], {}),
        ([RecordInput(b"k", b"v", (("\ud800", b"v"),))], {}),
        ([RecordInput(b"k", b"v", ("not a pair",))], {}),
        ([RecordInput(b"k", b"v")], {"compression": 5}),
        ([RecordInput(b"k", b"v")], {"timestamp_type": 2}),
        ([RecordInput(b"k", b"v")], {"producer_epoch": 40000}),
        ([RecordInput(b"k", b"v", (), 2**63)], {}),
        ([Record(0, 0, b"k", b"v")], {}),  # Records need base_timestamp
        ([Record(3, 0, b"a", b"v"), Record(3, 0, b"b", b"v")], {"base_timestamp": 0}),
        ([Record(2**31, 0, b"a", b"v")], {"base_timestamp": 0}),
        ([Record(0, 0, b"a", b"v", (), 128)], {"base_timestamp": 0}),
        ([Record(5, 0, b"a", b"v")], {"base_timestamp": 0, "last_offset_delta": 4}),
        ([], {}),  # an empty batch needs last_offset_delta
        ([(b"k", b"v")], {}),
    ],
)
def test_unencodable_input_raises_encode_error(records, kwargs):
    with pytest.raises(EncodeError):
        build_batch(records, **kwargs)


# -- control batches ---------------------------------------------------------------------


@pytest.mark.parametrize(("commit", "kind"), [(True, CONTROL_COMMIT), (False, CONTROL_ABORT)])
def test_control_batch_is_a_transactional_marker_with_one_control_record(commit, kind):
    buf = build_control_batch(commit, 77, 3, 12, T0, base_offset=500, partition_leader_epoch=4)
    header, records = parse(buf)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 3, -1)
    assert (header.base_offset, header.partition_leader_epoch) == (500, 4)
    assert header.base_timestamp == header.max_timestamp == T0
    assert header.records_count == 1 and header.last_offset_delta == 0
    (record,) = records
    assert record.key == struct.pack(">hh", 0, kind)
    assert record.value == struct.pack(">hi", 0, 12)
    assert parse_control_record(record) == (kind, 12)


# An ABORT marker as Kafka's MemoryRecords.withEndTransactionMarker writes it
# (producer 1000, epoch 5, coordinator epoch 7, at offset 42, leader epoch 3).
ABORT_MARKER_GOLDEN = bytes.fromhex(
    "000000000000002a"  # base offset 42
    "00000042"  # batch length 66 (78 bytes - 12)
    "00000003"  # partition leader epoch 3
    "02"  # magic 2
    "b4ebc2a1"  # CRC-32C of attributes .. end
    "0030"  # attributes: transactional 0x10 | control 0x20, no codec, CreateTime
    "00000000"  # last offset delta 0
    "0000018bcfe56800"  # base timestamp 1700000000000
    "0000018bcfe56800"  # max timestamp 1700000000000
    "00000000000003e8"  # producer id 1000
    "0005"  # producer epoch 5
    "ffffffff"  # base sequence -1 (markers carry none)
    "00000001"  # one record
    "20"  # record length 16 (zigzag varint)
    "00"  # record attributes
    "00"  # timestamp delta 0
    "00"  # offset delta 0
    "08"  # key length 4
    "0000"
    "0000"  # key: ControlRecordType version 0, type 0 (ABORT)
    "0c"  # value length 6
    "0000"
    "00000007"  # value: EndTxnMarker version 0, coordinator epoch 7
    "00"  # no headers
)


def test_abort_marker_matches_kafkas_bytes():
    built = build_control_batch(False, 1000, 5, 7, T0, base_offset=42, partition_leader_epoch=3)
    assert built == ABORT_MARKER_GOLDEN
    assert compute_crc(built) == read_batch_header(built).crc
    header, (record,) = parse(built)
    assert parse_control_record(record) == (CONTROL_ABORT, 7)


def test_commit_marker_differs_from_abort_only_in_type_and_crc():
    commit = build_control_batch(True, 1000, 5, 7, T0, base_offset=42, partition_leader_epoch=3)
    diff = [i for i, (a, b) in enumerate(zip(commit, ABORT_MARKER_GOLDEN, strict=True)) if a != b]
    key_type_pos = len(ABORT_MARKER_GOLDEN) - 1 - 6 - 1 - 1  # last byte of the key
    assert set(diff) <= set(range(CRC_POS, CRC_POS + 4)) | {key_type_pos}
    assert commit[key_type_pos] == CONTROL_COMMIT


def test_kafka_python_reads_our_control_batch_as_commit_marker():
    (record,) = DefaultRecordBatch(build_control_batch(True, 1, 0, 5, T0))
    assert isinstance(record, ControlRecord)
    assert record.commit and record.version == 0 and record.timestamp == T0


def test_non_transaction_control_types_have_no_coordinator_epoch():
    record = Record(0, 0, struct.pack(">hh", 0, 3), b"\x00\x00anything")
    assert parse_control_record(record) == (3, None)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, b"\x00\x00\x00\x00\x00\x01"),
        (b"\x00\x00\x00", b"\x00\x00\x00\x00\x00\x01"),
        (b"\xff\xff\x00\x01", b"\x00\x00\x00\x00\x00\x01"),
        (b"\x00\x00\x00\x01", None),
        (b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00"),
        (b"\x00\x00\x00\x00", b"\xff\xff\x00\x00\x00\x01"),
    ],
)
def test_malformed_control_record_raises_decode_error(key, value):
    with pytest.raises(DecodeError):
        parse_control_record(Record(0, 0, key, value))


# -- kafka-python writes, we read -----------------------------------------------------------


KP_RECORDS = [
    (T0, b"k0", b"v0" * 30, []),
    (T0 + 7, None, b"null key " * 10, [("h", b"1")]),
    (T0 + 2, b"tomb", None, [("a", None), ("b", b"")]),
    (T0 + 11, b"", b"", []),
    (T0 - 1, b"k4", b"compressible " * 40, [("x" * 20, b"y" * 200)]),
]


def kafka_python_batch(codec, *, transactional=False, producer_id=-1, epoch=-1, seq=-1):
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=seq,
        batch_size=1 << 20,
    )
    for offset, (ts, key, value, headers) in enumerate(KP_RECORDS):
        builder.append(offset, ts, key, value, headers)
    return bytes(builder.build())


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_we_read_exactly_what_kafka_python_wrote(codec):
    buf = kafka_python_batch(codec)
    header, records = parse(buf)
    assert header.compression == codec  # the data compresses, so kafka-python kept the codec
    assert header.records_count == len(KP_RECORDS)
    expected = [(o, ts, k, v, h) for o, (ts, k, v, h) in enumerate(KP_RECORDS)]
    assert as_kafka_python(records, header) == expected
    assert as_kafka_python(records, header) == [
        (r.offset, r.timestamp, r.key, r.value, r.headers) for r in DefaultRecordBatch(buf)
    ]


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_reencoding_a_kafka_python_batch_around_its_payload_is_byte_identical(codec):
    buf = kafka_python_batch(codec, transactional=True, producer_id=9, epoch=2, seq=100)
    header = validate_batch(buf)
    assert encode_batch(header, batch_payload(buf)) == buf


def test_rebuilding_an_uncompressed_kafka_python_batch_is_byte_identical():
    buf = kafka_python_batch(NONE, producer_id=9, epoch=2, seq=100)
    header, records = parse(buf)
    rebuilt = build_batch(
        records,
        base_timestamp=header.base_timestamp,
        producer_id=9,
        producer_epoch=2,
        base_sequence=100,
        partition_leader_epoch=header.partition_leader_epoch,  # kafka-python writes 0
    )
    assert rebuilt == buf


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD], ids=CODEC_IDS[1:])
def test_records_section_of_a_compressed_kafka_python_batch_re_encodes_byte_identical(codec):
    buf = kafka_python_batch(codec)
    header, records = parse(buf)
    section = decompress(codec, batch_payload(buf), 1 << 20)
    assert encode_records(records, base_timestamp=header.base_timestamp) == section


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_we_split_kafka_python_memory_records(codec):
    # kafka-python writes base offset 0 and puts the builder's offsets in the
    # offset deltas, so these batches have deltas 10..19 and 20..29.
    buf = bytearray()
    for start in (0, 10, 20):
        builder = MemoryRecordsBuilder(2, codec, batch_size=1 << 20, offset=start)
        for i in range(10):
            builder.append(T0 + i, b"k%d" % i, b"value %d " % i * 20, [])
        builder.close()
        buf += builder.buffer()
    found = list(iter_batches(bytes(buf)))
    assert [(h.records_count, h.last_offset) for _, h in found] == [(10, 9), (10, 19), (10, 29)]
    offsets = [h.base_offset + r.offset_delta for pos, h in found for r in iter_records(buf, pos)]
    assert offsets == list(range(30))


# -- we write, kafka-python reads ---------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_kafka_python_reads_exactly_what_we_wrote(codec):
    inputs = sample_inputs() + [RecordInput(b"k", b"compressible " * 100, (), T0 + 20)]
    buf = build_batch(
        inputs, compression=codec, base_offset=33, producer_id=4, producer_epoch=1, base_sequence=0
    )
    batch = DefaultRecordBatch(buf)
    assert batch.validate_crc()
    assert batch.compression_type == codec
    assert (batch.base_offset, batch.producer_id, batch.base_sequence) == (33, 4, 0)
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch]
    assert got == [
        (33 + n, i.timestamp, i.key, i.value, list(i.headers)) for n, i in enumerate(inputs)
    ]


def test_kafka_python_splits_our_concatenated_batches():
    buf = b"".join(
        build_batch([RecordInput(b"k", b"v%d" % n, (), T0)], base_offset=n) for n in range(3)
    )
    records = MemoryRecords(buf)
    offsets = []
    while records.has_next():
        offsets += [r.offset for r in records.next_batch()]
    assert offsets == [0, 1, 2]


# -- CRC ------------------------------------------------------------------------------------------


def test_crc_is_crc32c_of_attributes_to_end():
    buf = build_batch(sample_inputs())
    assert compute_crc(buf) == read_batch_header(buf).crc
    assert DefaultRecordBatch(buf).validate_crc()


@pytest.mark.parametrize("codec", [NONE, LZ4], ids=["none", "lz4"])
def test_flipping_any_byte_the_crc_covers_is_detected(codec):
    buf = build_batch(sample_inputs()[:3], compression=codec)
    for i in range(CRC_POS, len(buf)):  # the CRC field itself and everything it covers
        for mask in (0x01, 0x80, 0xFF):
            corrupt = bytearray(buf)
            corrupt[i] ^= mask
            with pytest.raises(DecodeError, match="CRC"):
                validate_batch(corrupt)


def test_base_offset_length_and_leader_epoch_are_outside_the_crc():
    buf = bytearray(build_batch(sample_inputs()))
    crc = compute_crc(buf)
    set_base_offset(buf, 123456789)
    set_partition_leader_epoch(buf, 17)
    header = validate_batch(buf)
    assert (header.base_offset, header.partition_leader_epoch, header.crc) == (123456789, 17, crc)
    assert [r.offset for r in DefaultRecordBatch(buf)][0] == 123456789


def test_write_crc_repairs_the_crc_after_patching_a_covered_field():
    buf = bytearray(build_batch(sample_inputs()))
    buf[ATTRIBUTES_POS + 1] |= 0x10  # transactional bit
    with pytest.raises(DecodeError):
        validate_batch(buf)
    write_crc(buf)
    assert validate_batch(buf).is_transactional


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_batch_attributes_are_the_headers_attributes(codec):
    buf = bytearray(build_batch(sample_inputs(), compression=codec, producer_id=7))
    buf[ATTRIBUTES_POS + 1] |= 0x10  # transactional bit
    header = read_batch_header(buf)
    assert batch_attributes(buf) == header.attributes
    assert header.is_transactional and header.compression == codec
    # At a position: the second of two batches.
    two = bytes(build_batch(sample_inputs())) + bytes(buf)
    assert batch_attributes(two, len(two) - len(buf)) == header.attributes


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_set_log_append_time_sets_the_bit_and_max_timestamp_and_a_valid_crc(codec):
    buf = bytearray(build_batch(sample_inputs(), compression=codec))
    before = validate_batch(buf)
    set_log_append_time(buf, T0 + 999_999)
    header, records = parse(buf)
    assert header.is_log_append_time
    assert header.max_timestamp == T0 + 999_999
    assert header.base_timestamp == before.base_timestamp
    assert header.compression == codec
    assert {record_timestamp(header, r) for r in records} == {T0 + 999_999}
    batch = DefaultRecordBatch(buf)
    assert batch.validate_crc() and batch.timestamp_type == LOG_APPEND_TIME
    assert {r.timestamp for r in batch} == {T0 + 999_999}


# -- validation errors ---------------------------------------------------------------------------


def test_short_buffer_is_rejected_with_the_byte_counts():
    buf = build_batch(sample_inputs())
    with pytest.raises(DecodeError, match="needs 61 bytes, 60 remain"):
        validate_batch(buf[:60])


def test_wrong_magic_is_rejected():
    buf = bytearray(build_batch(sample_inputs()))
    buf[16] = 1
    with pytest.raises(DecodeError, match="magic 1"):
        validate_batch(buf)


def test_truncated_batch_is_rejected_as_truncated():
    buf = build_batch(sample_inputs())
    with pytest.raises(DecodeError, match="truncated"):
        validate_batch(buf[:-1])


def test_length_field_too_small_for_a_header_is_rejected():
    buf = bytearray(build_batch(sample_inputs()))
    struct.pack_into(">i", buf, 8, 48)
    with pytest.raises(DecodeError, match="too small"):
        validate_batch(buf)


def test_validate_ignores_bytes_after_the_batch():
    buf = build_batch(sample_inputs())
    assert validate_batch(buf + b"trailing") == validate_batch(buf)


def test_validate_reads_a_batch_in_the_middle_of_a_buffer():
    one = build_batch([RecordInput(b"a", b"1", (), T0)])
    two = build_batch([RecordInput(b"b", b"2", (), T0)], base_offset=1)
    buf = memoryview(one + two)
    assert validate_batch(buf, len(one)).base_offset == 1
    assert next(iter_records(buf, len(one))).key == b"b"


# -- splitting concatenated batches ------------------------------------------------------------------


def three_batches():
    return [
        build_batch(
            [RecordInput(b"k", b"v" * n, (), T0)] * (n + 1), base_offset=10 * n, compression=n
        )
        for n in range(3)
    ]


def test_iter_batches_yields_position_and_header_of_each_batch():
    batches = three_batches()
    buf = b"".join(batches)
    found = list(iter_batches(buf))
    assert [pos for pos, _ in found] == [0, len(batches[0]), len(batches[0]) + len(batches[1])]
    assert [h.base_offset for _, h in found] == [0, 10, 20]


def test_iter_batches_raises_on_a_truncated_tail():
    buf = b"".join(three_batches())
    with pytest.raises(DecodeError, match="truncated"):
        list(iter_batches(buf[:-5]))
    with pytest.raises(DecodeError, match="needs 61 bytes"):
        list(iter_batches(buf + b"\x00" * 20))


def test_iter_batches_with_partial_tail_stops_before_each_incomplete_batch():
    batches = three_batches()
    buf = b"".join(batches)
    ends = [len(batches[0]), len(batches[0]) + len(batches[1]), len(buf)]
    for cut in range(len(buf) + 1):  # every prefix, as a Fetch response might be cut
        found = list(iter_batches(buf[:cut], partial_tail=True))
        assert len(found) == sum(end <= cut for end in ends)


def test_iter_batches_with_partial_tail_still_rejects_corrupt_tails():
    buf = bytearray(b"".join(three_batches()))
    cut = len(buf) - 3
    bad_magic = bytearray(buf)
    bad_magic[len(buf) - len(three_batches()[2]) + 16] = 7
    with pytest.raises(DecodeError, match="magic"):
        list(iter_batches(bad_magic[:cut], partial_tail=True))
    bad_length = bytearray(buf[:cut])
    struct.pack_into(">i", bad_length, len(buf) - len(three_batches()[2]) + 8, 3)
    with pytest.raises(DecodeError, match="too small"):
        list(iter_batches(bad_length, partial_tail=True))


def test_iter_batches_checks_crcs_unless_told_not_to():
    buf = bytearray(b"".join(three_batches()))
    buf[-1] ^= 0xFF
    with pytest.raises(DecodeError, match="CRC"):
        list(iter_batches(buf))
    assert len(list(iter_batches(buf, check_crc=False))) == 3


# -- malformed records --------------------------------------------------------------------------------


def batch_with_section(section: bytes, count: int, attributes: int = 0) -> bytes:
    return encode_batch(header_for(records_count=count, attributes=attributes), section)


ONE_RECORD = encode_records([RecordInput(b"k", b"v")])


@pytest.mark.parametrize(
    ("section", "count", "message"),
    [
        (ONE_RECORD, 2, "cannot fit"),
        (ONE_RECORD * 2 + b"\x10" + b"\x00" * 6, 3, "record length 8 does not fit"),
        (ONE_RECORD * 2, 1, "follow the last"),
        (ONE_RECORD, -1, "negative"),
        (b"\x12" + ONE_RECORD[1:] + b"\x00", 1, "says 9 bytes, its fields take 8"),
        (b"\xff\xff\xff\xff\xff\x01" + b"\x00" * 8, 1, "longer than 5 bytes"),
        (b"\xff\xff\xff\xff\x7f" + b"\x00" * 8, 1, "overflows 32 bits"),
        (b"\x0e\x00\x00\x00\x03" + b"\x00" * 5, 1, "key length -2"),
        (b"\x0e\x00\x00\x00\x10" + b"\x00" * 5, 1, "key length 8 exceeds"),
        (b"\x0e\x00\x00\x00\x01\x20" + b"\x00" * 4, 1, "value length 16 exceeds"),
        (b"\x0e\x00\x00\x00\x01\x01\x10" + b"\x00" * 3, 1, "header count"),
        (b"\x10\x00\x00\x00\x01\x01\x02\x03\x00", 1, "header key length -2"),
        (b"\x10\x00\x00\x00\x01\x01\x02\x00\x03", 1, "header value length -2"),
        (b"\x10\x00\x00\x00\x01\x01\x02\x00\x08", 1, "header value length 4 exceeds"),
        (b"\x10\x00\x00\x00\x01\x01\x02\x08\x00", 1, "header key length 4 is invalid"),
    ],
)
def test_malformed_records_raise_decode_error(section, count, message):
    buf = batch_with_section(section, count)
    with pytest.raises(DecodeError, match=message):
        list(iter_records(buf))


def test_unknown_codec_bits_raise_decode_error():
    buf = batch_with_section(ONE_RECORD, 1, attributes=6)
    validate_batch(buf)  # well-formed as a batch
    with pytest.raises(DecodeError, match="codec 6"):
        iter_records(buf)


def test_corrupt_compressed_payload_raises_decode_error():
    buf = batch_with_section(b"definitely not zstd", 1, attributes=ZSTD)
    with pytest.raises(DecodeError, match="zstd"):
        iter_records(buf)


def test_decompressed_records_beyond_the_limit_raise_decode_error():
    buf = build_batch([RecordInput(b"k", b"\x00" * 100_000)], compression=LZ4)
    assert len(buf) < 1000
    with pytest.raises(DecodeError, match="limit of 50000 bytes"):
        iter_records(buf, max_uncompressed=50_000)
    assert next(iter_records(buf, max_uncompressed=200_000)).value == b"\x00" * 100_000


def test_records_are_decoded_lazily():
    section = ONE_RECORD + b"\x7f" + b"\x00" * 6  # the second record is broken
    records = iter_records(batch_with_section(section, 2))
    assert next(records).key == b"k"
    with pytest.raises(DecodeError):
        next(records)


def test_payload_is_the_bytes_after_the_header():
    buf = build_batch(sample_inputs(), compression=GZIP)
    assert bytes(batch_payload(buf)) == buf[BATCH_HEADER_SIZE:]
    assert CRC_COVERED_FROM == ATTRIBUTES_POS == 21


# -- check_records: the broker's inner-record check on produce ----------------


def _patched(buf: bytes, fmt: str, pos: int, value: int) -> bytearray:
    from wire.records import write_crc

    out = bytearray(buf)
    struct.pack_into(fmt, out, pos, value)
    write_crc(out)
    return out


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("size", [0, 1, 63, 64, 200, 9000])
def test_check_records_accepts_what_producers_build(codec, size):
    records = [
        RecordInput(b"k%d" % i, bytes(size), (("h", b"v"),), 1_700_000_000_000 + 7 * i % 5)
        for i in range(7)
    ]
    walked = check_records(build_batch(records, compression=codec))
    assert walked == (7, 1_700_000_000_004)


@pytest.mark.parametrize("declared", [1, 2, 4, 9])
def test_check_records_refuses_a_miscounted_batch(declared):
    buf = build_batch([RecordInput(None, b"r%d" % i) for i in range(3)])
    buf = _patched(buf, ">i", 57, declared)  # records_count
    with pytest.raises(DecodeError):
        check_records(buf)


def test_check_records_refuses_offset_deltas_with_gaps():
    # Compaction leaves gaps like this; a producer's batch may not have them.
    records = [Record(0, 0, None, b"a"), Record(2, 0, None, b"b")]
    buf = build_batch(records, base_timestamp=0)  # 2 records, last offset delta 2
    with pytest.raises(DecodeError, match="offset delta 2"):
        check_records(buf)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_check_records_on_garbage_raises_only_decode_error(data):
    base = build_batch([RecordInput(b"k", b"v" * 20) for _ in range(3)])
    buf = bytearray(base[:61]) + data
    try:
        check_records(buf)
    except DecodeError:
        pass


@pytest.mark.parametrize(
    ("timestamps", "largest"),
    [
        ([-1, -1, -1], -1),  # no record has a timestamp (librdkafka's timestamp=-1)
        ([-1, 1_700_000_000_000, -1], 1_700_000_000_000),
        ([5, 3], 5),
        ([0], 0),
        ([-7, -2], -1),  # Kafka's maximum starts at NO_TIMESTAMP
        ([2**63 - 1, 0], 2**63 - 1),
    ],
)
@pytest.mark.parametrize("codec", [0, 3])
def test_check_records_finds_the_largest_record_timestamp(timestamps, largest, codec):
    records = [RecordInput(None, b"v", (), ts) for ts in timestamps]
    buf = build_batch(records, compression=codec, base_timestamp=timestamps[0])
    assert check_records(buf).max_timestamp == largest


def test_the_largest_timestamp_wraps_as_a_java_long():
    # base + delta overflows a long: Kafka's record.timestamp() wraps around.
    records = [Record(0, 2, None, b"a")]
    buf = build_batch(records, base_timestamp=2**63 - 1, max_timestamp=2**63 - 1)
    assert check_records(buf).max_timestamp == -1  # -2**63 + 1 < -1
