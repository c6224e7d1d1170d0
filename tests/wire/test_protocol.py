"""Whole requests and responses: headers, header versions, golden bytes."""

import struct

import pytest

from wire.api_keys import ApiKey
from wire.buffers import Reader
from wire.codec import message_codec
from wire.errors import DecodeError, UnsupportedVersionError
from wire.headers import REQUEST_HEADER
from wire.protocol import (
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    peek_request_header,
)


def test_api_versions_v3_request_golden_bytes():
    frame = encode_request(
        ApiKey.API_VERSIONS, 3, 7,
        {"client_software_name": "x", "client_software_version": "1"},
        client_id="cli",
    )  # fmt: skip
    assert frame == bytes.fromhex(
        "0012"      # request_api_key 18
        "0003"      # request_api_version 3
        "00000007"  # correlation_id
        "0003636c69"  # client_id: int16 length even in header v2, "cli"
        "00"        # header tagged fields: none
        "0278"      # client_software_name: compact string, length+1 = 2, "x"
        "0231"      # client_software_version: "1"
        "00"        # body tagged fields: none
    )  # fmt: skip
    header, body = decode_request(frame)
    assert header.client_id == "cli" and header.correlation_id == 7
    assert body.client_software_name == "x"


def test_api_versions_response_header_is_v0_even_when_flexible():
    frame = encode_response(ApiKey.API_VERSIONS, 3, 9, {"api_keys": []})
    assert frame == bytes.fromhex(
        "00000009"  # correlation_id; response header v0: no tagged fields
        "0000"      # error_code
        "01"        # api_keys: compact array, 0 elements
        "00000000"  # throttle_time_ms
        "00"        # tagged fields
    )  # fmt: skip
    assert decode_response(ApiKeys := ApiKey.API_VERSIONS, 3, frame)[0] == 9
    assert ApiKeys == 18


def test_flexible_responses_use_header_v1_with_tagged_fields():
    frame = encode_response(ApiKey.METADATA, 9, 5, {})
    assert frame[:5] == bytes.fromhex("0000000500")  # correlation id, empty tagged section


def test_metadata_v0_request_golden_bytes():
    frame = encode_request(ApiKey.METADATA, 0, 1, {"topics": [{"name": "t"}]}, client_id=None)
    assert frame == bytes.fromhex(
        "0003" "0000" "00000001"
        "ffff"          # client_id: null
        "00000001"      # topics: int32 count 1
        "00017" "4"     # name: int16 length 1, "t"
    )  # fmt: skip


def test_null_client_id_round_trips():
    header, _ = decode_request(encode_request(ApiKey.METADATA, 12, 3, {}, client_id=None))
    assert header.client_id is None


@pytest.mark.parametrize("version", [5, 99, -1])
def test_unsupported_version_is_reported_with_the_correlation_id(version):
    frame = encode_request(ApiKey.API_VERSIONS, 0, 42, {})
    frame = frame[:2] + version.to_bytes(2, "big", signed=True) + frame[4:]
    assert peek_request_header(frame) == (18, version, 42)
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(frame)
    assert info.value.api_key == 18 and info.value.version == version
    assert info.value.correlation_id == 42


def test_unknown_api_key_is_an_unsupported_version_error():
    frame = bytes.fromhex("7fff0000000000030000")
    with pytest.raises(UnsupportedVersionError):
        decode_request(frame)


def test_an_unsupported_version_is_caught_as_the_one_decode_error_type():
    frame = bytes.fromhex("7fff0000000000030000")
    with pytest.raises(DecodeError):
        decode_request(frame)


def test_truncated_request_is_a_decode_error():
    frame = encode_request(ApiKey.METADATA, 12, 3, {"topics": [{"name": "abc"}]})
    for cut in range(len(frame)):
        with pytest.raises(DecodeError):
            decode_request(frame[:cut])


def test_unknown_keys_names_a_misspelled_key_at_any_depth():
    from wire.protocol import api
    from wire.schema import unknown_keys

    produce = api(0).response
    body = {
        "responses": [
            {"name": "t", "partition_responses": [{"index": 0, "eror_code": 0}]},
        ],
        "throttle_time_ms": 0,
    }
    assert unknown_keys(produce, body) == ["responses[].partition_responses[].eror_code"]
    # A key of another version is not unknown: handlers fill fields for every version.
    body["responses"][0]["partition_responses"][0] = {"index": 0, "log_start_offset": 5}
    assert unknown_keys(produce, body) == []


@pytest.mark.parametrize(
    ("api_key", "version", "header_version"),
    [(ApiKey.PRODUCE, 7, 1), (ApiKey.PRODUCE, 9, 2), (ApiKey.CONTROLLED_SHUTDOWN, 0, 0)],
)
@pytest.mark.parametrize("client_id", [None, "", "rdkafka", "prodücer"])
@pytest.mark.parametrize("tagged", [b"\x00", b"\x01\x05\x02xy", b"\x02\x01\x00\x07\x01z"])
def test_request_headers_decode_as_their_declaration_reads_them(
    api_key, version, header_version, client_id, tagged
):
    """decode_request_header reads the common headers itself; it must agree
    with the declared RequestHeader, unknown tagged fields included."""
    fixed = struct.pack(">hhi", api_key, version, 9)
    if header_version == 0:
        header = fixed
    elif client_id is None:
        header = fixed + struct.pack(">h", -1)
    else:
        encoded = client_id.encode()
        header = fixed + struct.pack(">h", len(encoded)) + encoded
    if header_version == 2:
        header += tagged
    frame = header + b"body"
    reference = message_codec(REQUEST_HEADER, header_version).read(Reader(frame))
    r = Reader(frame)
    decoded = decode_request_header(r)
    assert decoded == (
        api_key,
        version,
        9,
        reference.get("client_id"),
        tuple(reference.get("unknown_tagged_fields", ())),
    )
    assert bytes(frame[r.pos :]) == b"body"


def test_a_request_header_cut_anywhere_is_a_decode_error():
    header = struct.pack(">hhih", ApiKey.PRODUCE, 9, 9, 7) + b"rdkafka" + b"\x01\x05\x02xy"
    for cut in range(len(header)):
        with pytest.raises(DecodeError):
            decode_request_header(Reader(header[:cut]))
