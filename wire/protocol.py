"""Whole requests and responses: header + body, without the size prefix.

Sans-I/O: bytes in, `Struct`s out, and back. The broker reads frames with
`wire.framing`, decodes them here, and encodes answers here.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from wire.apis import APIS_BY_KEY
from wire.buffers import Reader, Writer
from wire.codec import MessageCodec, message_codec
from wire.errors import UnsupportedVersionError
from wire.headers import (
    REQUEST_HEADER,
    RESPONSE_HEADER,
    request_header_version,
    response_header_version,
)
from wire.primitives import (
    read_int16,
    read_int32,
    read_nullable_string,
    write_int32,
    write_uvarint,
)
from wire.schema import Api
from wire.values import Struct

# Every request header starts with the api key, its version and the correlation id.
_HEADER_FIXED = struct.Struct(">hhi")


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    # Unknown tagged fields of a v2 header, kept so a proxy can pass them on.
    tagged: tuple = ()


def api(api_key: int) -> Api:
    try:
        return APIS_BY_KEY[api_key]
    except KeyError:
        raise UnsupportedVersionError(api_key, -1, f"unknown api key {api_key}") from None


def request_codec(api_key: int, version: int, compiled: bool = True) -> MessageCodec:
    a = api(api_key)
    if version not in a.valid:
        raise UnsupportedVersionError(api_key, version, f"{a.name} has no version {version}")
    return message_codec(a.request, version, compiled)


def response_codec(api_key: int, version: int, compiled: bool = True) -> MessageCodec:
    a = api(api_key)
    if version not in a.valid:
        raise UnsupportedVersionError(api_key, version, f"{a.name} has no version {version}")
    return message_codec(a.response, version, compiled)


def peek_request_header(frame) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the first 8 bytes of a
    request, whatever the API; enough to answer a request we cannot decode."""
    r = Reader(frame)
    return read_int16(r), read_int16(r), read_int32(r)


def decode_request_header(r: Reader) -> RequestHeader:
    """Read the header of the request at `r`, leaving `r` at the body.

    Raises UnsupportedVersionError for an unknown API key or a version `wire`
    does not declare; it carries the correlation id to answer with.
    """
    start = r.pos
    if r.end - start >= 8:
        api_key, api_version, correlation_id = _HEADER_FIXED.unpack_from(r.buf, start)
        r.pos = start + 8
    else:
        api_key, api_version, correlation_id = read_int16(r), read_int16(r), read_int32(r)
    a = APIS_BY_KEY.get(api_key)
    # Refuse before reading further: the rest of the header's layout depends
    # on the version, and the fixed part is all an error answer needs.
    if a is None:
        raise UnsupportedVersionError(
            api_key, api_version, f"unknown api key {api_key}", correlation_id
        )
    if api_version not in a.valid:
        raise UnsupportedVersionError(
            api_key,
            api_version,
            f"{a.name} has no version {api_version} (valid {a.valid})",
            correlation_id,
        )
    hv = request_header_version(api_key, api_version, api_version in a.flexible)
    if hv == 1 or hv == 2:
        # The usual headers, read here: client_id is a (non-compact) nullable
        # string in both, and a v2 header almost never carries tagged fields.
        client_id = read_nullable_string(r)
        if hv == 1:
            return RequestHeader(api_key, api_version, correlation_id, client_id, ())
        if r.pos < r.end and r.buf[r.pos] == 0:
            r.pos += 1
            return RequestHeader(api_key, api_version, correlation_id, client_id, ())
    r.pos = start
    h = message_codec(REQUEST_HEADER, hv).read(r)
    return RequestHeader(
        api_key,
        api_version,
        correlation_id,
        h.client_id,
        tuple(h.get("unknown_tagged_fields", ())),
    )


def decode_request(frame, compiled: bool = True) -> tuple[RequestHeader, Struct]:
    """Decode a whole request (header and body); bytes left over are an error."""
    r = Reader(frame)
    header = decode_request_header(r)
    body = request_codec(header.api_key, header.api_version, compiled).decode(r)
    return header, body


def encode_request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    body,
    client_id: str | None = "gregor",
    compiled: bool = True,
) -> bytes:
    codec = request_codec(api_key, api_version, compiled)
    w = Writer()
    hv = request_header_version(api_key, api_version, codec.flexible)
    message_codec(REQUEST_HEADER, hv).write(
        w,
        {
            "request_api_key": api_key,
            "request_api_version": api_version,
            "correlation_id": correlation_id,
            "client_id": client_id,
        },
    )
    codec.write(w, body)
    return w.getvalue()


def encode_response_into(
    w: Writer, api_key: int, api_version: int, correlation_id: int, body, compiled: bool = True
) -> None:
    """Encode header and body into `w`; large record payloads stay separate parts."""
    codec = response_codec(api_key, api_version, compiled)
    hv = response_header_version(api_key, codec.flexible)
    # The header by hand: the correlation id, and in v1 an empty tagged-field
    # section (a response header carries none).
    write_int32(w, correlation_id)
    if hv:
        write_uvarint(w, 0)
    codec.write(w, body)


def encode_response(
    api_key: int, api_version: int, correlation_id: int, body, compiled: bool = True
) -> bytes:
    w = Writer()
    encode_response_into(w, api_key, api_version, correlation_id, body, compiled)
    return w.getvalue()


def decode_response(
    api_key: int, api_version: int, frame, compiled: bool = True
) -> tuple[int, Struct]:
    """Decode a whole response to a request of (api_key, api_version):
    (correlation_id, body)."""
    codec = response_codec(api_key, api_version, compiled)
    r = Reader(frame)
    hv = response_header_version(api_key, codec.flexible)
    header = message_codec(RESPONSE_HEADER, hv).read(r)
    return header.correlation_id, codec.decode(r)
