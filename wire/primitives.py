"""Kafka's primitive types as bounds-checked read/write functions and constructs.

Each type has a `read_<type>(reader)` and a `write_<type>(writer, value)`
function and a `construct` class instance wrapping them. The interpreted form
calls the functions through the constructs; the compiled form (see
`wire.codec`) emits straight-line code that calls the same functions, so both
forms share one implementation of every bounds check:

- fixed-size reads check the bytes that remain before unpacking;
- a length or an element count is checked against the bytes that remain
  before anything is allocated or looped over;
- unsigned varints are at most 5 bytes, varlongs at most 10.

Every failure is a `DecodeError`.
"""

from __future__ import annotations

import struct
import uuid

import construct

from wire.buffers import Reader, Writer
from wire.errors import DecodeError, EncodeError


def _short(r: Reader, n: int) -> DecodeError:
    return DecodeError(f"need {n} bytes at position {r.pos}, {r.end - r.pos} remain")


def _fixed(fmt: str, name: str):
    codec = struct.Struct(fmt)
    size = codec.size
    unpack_from = codec.unpack_from
    pack = codec.pack

    def read(r: Reader):
        p = r.pos
        e = p + size
        if e > r.end:
            raise _short(r, size)
        r.pos = e
        return unpack_from(r.buf, p)[0]

    def write(w: Writer, v) -> None:
        w.buf += pack(v)

    read.__name__ = read.__qualname__ = f"read_{name}"
    write.__name__ = write.__qualname__ = f"write_{name}"
    return read, write, size


read_int8, write_int8, _ = _fixed(">b", "int8")
read_int16, write_int16, _ = _fixed(">h", "int16")
read_int32, write_int32, _ = _fixed(">i", "int32")
read_int64, write_int64, _ = _fixed(">q", "int64")
read_uint16, write_uint16, _ = _fixed(">H", "uint16")
read_uint32, write_uint32, _ = _fixed(">I", "uint32")
read_float64, write_float64, _ = _fixed(">d", "float64")


def raise_short(r: Reader, n: int):
    """Raise the error of a read of n bytes past the end (for compiled code)."""
    raise _short(r, n)


def read_bool(r: Reader) -> bool:
    p = r.pos
    if p >= r.end:
        raise _short(r, 1)
    r.pos = p + 1
    return r.buf[p] != 0


def write_bool(w: Writer, v) -> None:
    w.buf.append(1 if v else 0)


def read_uvarint(r: Reader) -> int:
    """Unsigned varint of at most 5 bytes (Kafka's readUnsignedVarint)."""
    buf = r.buf
    p = r.pos
    end = r.end
    if p < end:
        b = buf[p]
        if b < 0x80:
            r.pos = p + 1
            return b
    result = 0
    shift = 0
    while True:
        if p >= end:
            raise _short(r, p - r.pos + 1)
        b = buf[p]
        p += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            r.pos = p
            return result
        shift += 7
        if shift > 28:
            raise DecodeError(f"unsigned varint at position {r.pos} is longer than 5 bytes")


def _read_uvarlong(r: Reader) -> int:
    buf = r.buf
    p = r.pos
    end = r.end
    result = 0
    shift = 0
    while True:
        if p >= end:
            raise _short(r, p - r.pos + 1)
        b = buf[p]
        p += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            r.pos = p
            return result
        shift += 7
        if shift > 63:
            raise DecodeError(f"varlong at position {r.pos} is longer than 10 bytes")


def write_uvarint(w: Writer, v: int) -> None:
    if v < 0:
        raise EncodeError(f"unsigned varint cannot hold {v}")
    buf = w.buf
    while v >= 0x80:
        buf.append((v & 0x7F) | 0x80)
        v >>= 7
    buf.append(v)


def read_varint(r: Reader) -> int:
    """Zigzag-encoded signed 32-bit varint."""
    v = read_uvarint(r) & 0xFFFFFFFF
    return (v >> 1) ^ -(v & 1)


def write_varint(w: Writer, v: int) -> None:
    if not -0x80000000 <= v <= 0x7FFFFFFF:
        raise EncodeError(f"varint cannot hold {v}")
    write_uvarint(w, ((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)


def read_varlong(r: Reader) -> int:
    """Zigzag-encoded signed 64-bit varint."""
    v = _read_uvarlong(r) & 0xFFFFFFFFFFFFFFFF
    return (v >> 1) ^ -(v & 1)


def write_varlong(w: Writer, v: int) -> None:
    if not -0x8000000000000000 <= v <= 0x7FFFFFFFFFFFFFFF:
        raise EncodeError(f"varlong cannot hold {v}")
    write_uvarint(w, ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)


# --- lengths -------------------------------------------------------------


def _take(r: Reader, n: int) -> memoryview:
    p = r.pos
    e = p + n
    if e > r.end:
        raise DecodeError(f"length {n} at position {p} exceeds the {r.end - p} bytes that remain")
    r.pos = e
    return r.buf[p:e]


def _utf8(view: memoryview) -> str:
    try:
        return str(view, "utf-8")
    except UnicodeDecodeError as e:
        raise DecodeError(f"string is not valid UTF-8: {e.reason}") from None


def _encode_str(s) -> bytes:
    try:
        return s.encode("utf-8")
    except AttributeError:
        raise EncodeError(f"expected a string, got {type(s).__name__}") from None


# --- strings -------------------------------------------------------------


def read_string(r: Reader) -> str:
    n = read_int16(r)
    if n < 0:
        raise DecodeError("non-nullable string is null")
    return _utf8(_take(r, n))


def read_nullable_string(r: Reader) -> str | None:
    n = read_int16(r)
    if n < 0:
        return None
    return _utf8(_take(r, n))


def read_compact_string(r: Reader) -> str:
    n = read_uvarint(r) - 1
    if n < 0:
        raise DecodeError("non-nullable compact string is null")
    return _utf8(_take(r, n))


def read_compact_nullable_string(r: Reader) -> str | None:
    n = read_uvarint(r) - 1
    if n < 0:
        return None
    return _utf8(_take(r, n))


def write_string(w: Writer, v) -> None:
    if v is None:
        raise EncodeError("non-nullable string is None")
    b = _encode_str(v)
    if len(b) > 0x7FFF:
        raise EncodeError(f"string of {len(b)} bytes exceeds int16 length")
    w.buf += len(b).to_bytes(2, "big")
    w.buf += b


def write_nullable_string(w: Writer, v) -> None:
    if v is None:
        w.buf += b"\xff\xff"
    else:
        write_string(w, v)


def write_compact_string(w: Writer, v) -> None:
    if v is None:
        raise EncodeError("non-nullable compact string is None")
    b = _encode_str(v)
    write_uvarint(w, len(b) + 1)
    w.buf += b


def write_compact_nullable_string(w: Writer, v) -> None:
    if v is None:
        w.buf.append(0)
    else:
        write_compact_string(w, v)


# --- bytes ---------------------------------------------------------------
# `bytes` fields are copied out of the input (they are small and often kept,
# like group member metadata); `records` fields stay views of the input.


def read_bytes(r: Reader) -> bytes:
    n = read_int32(r)
    if n < 0:
        raise DecodeError("non-nullable bytes are null")
    return bytes(_take(r, n))


def read_nullable_bytes(r: Reader) -> bytes | None:
    n = read_int32(r)
    if n < 0:
        return None
    return bytes(_take(r, n))


def read_compact_bytes(r: Reader) -> bytes:
    n = read_uvarint(r) - 1
    if n < 0:
        raise DecodeError("non-nullable compact bytes are null")
    return bytes(_take(r, n))


def read_compact_nullable_bytes(r: Reader) -> bytes | None:
    n = read_uvarint(r) - 1
    if n < 0:
        return None
    return bytes(_take(r, n))


def read_records(r: Reader) -> memoryview | None:
    n = read_int32(r)
    if n < 0:
        return None
    return _take(r, n)


def read_compact_records(r: Reader) -> memoryview | None:
    n = read_uvarint(r) - 1
    if n < 0:
        return None
    return _take(r, n)


def _check_bytes(v) -> None:
    if isinstance(v, str):
        raise EncodeError("expected bytes, got str")


def write_bytes(w: Writer, v) -> None:
    if v is None:
        raise EncodeError("non-nullable bytes are None")
    _check_bytes(v)
    w.buf += len(v).to_bytes(4, "big", signed=True)
    w.buf += v


def write_nullable_bytes(w: Writer, v) -> None:
    if v is None:
        w.buf += b"\xff\xff\xff\xff"
    else:
        write_bytes(w, v)


def write_compact_bytes(w: Writer, v) -> None:
    if v is None:
        raise EncodeError("non-nullable compact bytes are None")
    _check_bytes(v)
    write_uvarint(w, len(v) + 1)
    w.buf += v


def write_compact_nullable_bytes(w: Writer, v) -> None:
    if v is None:
        w.buf.append(0)
    else:
        write_compact_bytes(w, v)


def write_records(w: Writer, v) -> None:
    if v is None:
        w.buf += b"\xff\xff\xff\xff"
        return
    _check_bytes(v)
    w.buf += len(v).to_bytes(4, "big", signed=True)
    w.add_payload(v)


def write_compact_records(w: Writer, v) -> None:
    if v is None:
        w.buf.append(0)
        return
    _check_bytes(v)
    write_uvarint(w, len(v) + 1)
    w.add_payload(v)


# --- uuid ----------------------------------------------------------------


def read_uuid(r: Reader) -> uuid.UUID:
    p = r.pos
    e = p + 16
    if e > r.end:
        raise _short(r, 16)
    r.pos = e
    return uuid.UUID(bytes=bytes(r.buf[p:e]))


def write_uuid(w: Writer, v) -> None:
    if isinstance(v, uuid.UUID):
        w.buf += v.bytes
    elif isinstance(v, bytes | bytearray) and len(v) == 16:
        w.buf += v
    else:
        raise EncodeError(f"expected a UUID, got {v!r}")


# --- array lengths -------------------------------------------------------


def read_array_length(r: Reader, min_element_size: int) -> int:
    """Classic (int32) array length, non-null; bounded by the bytes that remain."""
    n = read_int32(r)
    if n < 0:
        raise DecodeError("non-nullable array is null")
    if n * min_element_size > r.end - r.pos:
        raise DecodeError(f"array of {n} elements cannot fit in {r.end - r.pos} bytes")
    return n


def read_nullable_array_length(r: Reader, min_element_size: int) -> int:
    """Classic array length; -1 means null."""
    n = read_int32(r)
    if n < 0:
        return -1
    if n * min_element_size > r.end - r.pos:
        raise DecodeError(f"array of {n} elements cannot fit in {r.end - r.pos} bytes")
    return n


def read_compact_array_length(r: Reader, min_element_size: int) -> int:
    n = read_uvarint(r) - 1
    if n < 0:
        raise DecodeError("non-nullable compact array is null")
    if n * min_element_size > r.end - r.pos:
        raise DecodeError(f"array of {n} elements cannot fit in {r.end - r.pos} bytes")
    return n


def read_compact_nullable_array_length(r: Reader, min_element_size: int) -> int:
    n = read_uvarint(r) - 1
    if n < 0:
        return -1
    if n * min_element_size > r.end - r.pos:
        raise DecodeError(f"array of {n} elements cannot fit in {r.end - r.pos} bytes")
    return n


def write_array_length(w: Writer, v) -> None:
    w.buf += len(v).to_bytes(4, "big")


def write_nullable_array_length(w: Writer, v) -> None:
    if v is None:
        w.buf += b"\xff\xff\xff\xff"
    else:
        w.buf += len(v).to_bytes(4, "big")


def write_compact_array_length(w: Writer, v) -> None:
    write_uvarint(w, len(v) + 1)


def write_compact_nullable_array_length(w: Writer, v) -> None:
    if v is None:
        w.buf.append(0)
    else:
        write_uvarint(w, len(v) + 1)


# --- constructs ------------------------------------------------------------


class Primitive(construct.Construct):
    """A Kafka primitive as a construct, backed by one read and one write function.

    `min_size` is the fewest bytes one encoded value takes; array decoding
    uses it to refuse counts that cannot fit in the input.
    """

    def __init__(self, kind: str, reader, writer, min_size: int, fmt: str | None = None):
        super().__init__()
        self.kind = kind
        self.read = reader
        self.write = writer
        self.min_size = min_size
        # The struct-module format of a fixed-size type, which lets compiled
        # code read a run of fixed-size fields with one bounds check.
        self.fmt = fmt

    def _parse(self, stream, context, path):
        return self.read(stream)

    def _build(self, obj, stream, context, path):
        self.write(stream, obj)
        return obj

    def _emitparse(self, code):
        code.append(PRIMITIVES_IMPORT)
        return f"{self.read.__name__}(io)"

    def _emitbuild(self, code):
        code.append(PRIMITIVES_IMPORT)
        call = f"{self.write.__name__}(io, obj)"
        if self.kind in _COMPACT_NULLABLE:
            # Null is one zero byte: no call for the common absent value.
            return f"(io.buf.append(0) if obj is None else {call})"
        return call

    def __repr__(self) -> str:
        return f"<{self.kind}>"


_COMPACT_NULLABLE = {"compact_nullable_string", "compact_nullable_bytes"}


def _p(kind: str, reader, writer, min_size: int, fmt: str | None = None) -> Primitive:
    return Primitive(kind, reader, writer, min_size, fmt)


INT8 = _p("int8", read_int8, write_int8, 1, "b")
INT16 = _p("int16", read_int16, write_int16, 2, "h")
INT32 = _p("int32", read_int32, write_int32, 4, "i")
INT64 = _p("int64", read_int64, write_int64, 8, "q")
UINT16 = _p("uint16", read_uint16, write_uint16, 2, "H")
UINT32 = _p("uint32", read_uint32, write_uint32, 4, "I")
FLOAT64 = _p("float64", read_float64, write_float64, 8, "d")
BOOL = _p("bool", read_bool, write_bool, 1, "?")
UUID = _p("uuid", read_uuid, write_uuid, 16)
UVARINT = _p("uvarint", read_uvarint, write_uvarint, 1)
VARINT = _p("varint", read_varint, write_varint, 1)
VARLONG = _p("varlong", read_varlong, write_varlong, 1)

# (compact, nullable) -> construct
STRINGS = {
    (False, False): _p("string", read_string, write_string, 2),
    (False, True): _p("nullable_string", read_nullable_string, write_nullable_string, 2),
    (True, False): _p("compact_string", read_compact_string, write_compact_string, 1),
    (True, True): _p(
        "compact_nullable_string", read_compact_nullable_string, write_compact_nullable_string, 1
    ),
}
BYTES = {
    (False, False): _p("bytes", read_bytes, write_bytes, 4),
    (False, True): _p("nullable_bytes", read_nullable_bytes, write_nullable_bytes, 4),
    (True, False): _p("compact_bytes", read_compact_bytes, write_compact_bytes, 1),
    (True, True): _p(
        "compact_nullable_bytes", read_compact_nullable_bytes, write_compact_nullable_bytes, 1
    ),
}
# Records are always nullable on the wire; a view of the input when decoded.
RECORDS = {
    False: _p("records", read_records, write_records, 4),
    True: _p("compact_records", read_compact_records, write_compact_records, 1),
}
FIXED = {
    "int8": INT8,
    "int16": INT16,
    "int32": INT32,
    "int64": INT64,
    "uint16": UINT16,
    "uint32": UINT32,
    "float64": FLOAT64,
    "bool": BOOL,
    "uuid": UUID,
}

_EXPORTED = sorted(
    name
    for name, value in list(globals().items())
    if callable(value) and (name.startswith("read_") or name.startswith("write_"))
) + ["raise_short"]
# The import line compiled codecs start with (construct's CodeGen de-duplicates it).
PRIMITIVES_IMPORT = "from wire.primitives import " + ", ".join(_EXPORTED)
