"""Primitive types on their own: golden bytes (Kafka's ByteUtils encodings), edge
values, and what a truncated or overlong input raises."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wire.buffers import Reader, Writer
from wire.errors import DecodeError, EncodeError
from wire.primitives import (
    read_int64,
    read_uint16,
    read_uint32,
    read_uvarint,
    read_varint,
    read_varlong,
    write_int64,
    write_uint16,
    write_uint32,
    write_uvarint,
    write_varint,
    write_varlong,
)

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


def encode(write, value) -> bytes:
    w = Writer()
    write(w, value)
    return w.getvalue()


def decode_all(read, data: bytes):
    """The value, and that exactly all of `data` was read."""
    r = Reader(data)
    value = read(r)
    assert r.pos == len(data), f"{len(data) - r.pos} bytes left"
    return value


VARINTS = {
    "varint": (write_varint, read_varint),
    "varlong": (write_varlong, read_varlong),
    "uvarint": (write_uvarint, read_uvarint),
}


@pytest.mark.parametrize(
    "codec, value, hex_bytes",
    [
        ("varint", 0, "00"),
        ("varint", -1, "01"),
        ("varint", 1, "02"),
        ("varint", -2, "03"),
        ("varint", 63, "7e"),
        ("varint", -64, "7f"),
        ("varint", 64, "8001"),
        ("varint", INT32[1], "feffffff0f"),
        ("varint", INT32[0], "ffffffff0f"),
        ("varlong", 0, "00"),
        ("varlong", -1, "01"),
        ("varlong", 1, "02"),
        ("varlong", INT32[1] + 1, "8080808010"),
        ("varlong", INT64[1], "feffffffffffffffff01"),
        ("varlong", INT64[0], "ffffffffffffffffff01"),
        ("uvarint", 0, "00"),
        ("uvarint", 127, "7f"),
        ("uvarint", 128, "8001"),
        ("uvarint", 300, "ac02"),
        ("uvarint", 2**32 - 1, "ffffffff0f"),
    ],
)
def test_varint_golden_bytes(codec, value, hex_bytes):
    write, read = VARINTS[codec]
    assert encode(write, value).hex() == hex_bytes
    assert decode_all(read, bytes.fromhex(hex_bytes)) == value


@given(st.integers(*INT32))
def test_every_int32_round_trips_as_a_varint(value):
    data = encode(write_varint, value)
    assert len(data) <= 5
    assert decode_all(read_varint, data) == value


@given(st.integers(*INT64))
def test_every_int64_round_trips_as_a_varlong(value):
    data = encode(write_varlong, value)
    assert len(data) <= 10
    assert decode_all(read_varlong, data) == value


@pytest.mark.parametrize(
    "read, data",
    [
        (read_uvarint, "ffffffffff01"),  # six bytes: Kafka allows five
        (read_varint, "ffffffffff01"),
        (read_varlong, "ffffffffffffffffffff01"),  # eleven bytes: Kafka allows ten
    ],
)
def test_overlong_varints_are_decode_errors(read, data):
    with pytest.raises(DecodeError, match="longer than"):
        read(Reader(bytes.fromhex(data)))


@pytest.mark.parametrize("read", [read_uvarint, read_varint, read_varlong])
@pytest.mark.parametrize("data", ["", "80", "ffff", "ffffffff"])
def test_truncated_varints_are_decode_errors(read, data):
    with pytest.raises(DecodeError):
        read(Reader(bytes.fromhex(data)))


@pytest.mark.parametrize(
    "write, value",
    [
        (write_varint, INT32[1] + 1),
        (write_varint, INT32[0] - 1),
        (write_varlong, INT64[1] + 1),
        (write_uvarint, -1),
    ],
)
def test_values_out_of_range_are_encode_errors(write, value):
    with pytest.raises(EncodeError):
        encode(write, value)


@pytest.mark.parametrize(
    "read, write, value, hex_bytes",
    [
        (read_uint16, write_uint16, 65535, "ffff"),
        (read_uint32, write_uint32, 2**32 - 1, "ffffffff"),
        (read_uint32, write_uint32, 2**31, "80000000"),
        (read_int64, write_int64, INT64[0], "8000000000000000"),
    ],
)
def test_fixed_width_edges(read, write, value, hex_bytes):
    assert encode(write, value).hex() == hex_bytes
    assert decode_all(read, bytes.fromhex(hex_bytes)) == value
    with pytest.raises(DecodeError, match="need"):
        read(Reader(bytes.fromhex(hex_bytes)[:-1]))


def test_a_read_stops_at_the_readers_end_not_the_buffers():
    r = Reader(bytes.fromhex("ac02ac02"), 0, 1)
    with pytest.raises(DecodeError):
        read_uvarint(r)
