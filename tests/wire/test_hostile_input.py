"""Decoding any bytes returns a value or raises DecodeError: never another
exception, never a hang, never memory out of proportion to the input. The
compiled and interpreted forms agree on every input, valid or not."""

import random
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wire.apis import ALL_APIS, APIS_BY_KEY
from wire.codec import message_codec
from wire.errors import DecodeError
from wire.protocol import decode_request

from .samples import sample

MESSAGES = [
    (getattr(api, direction), version)
    for api in ALL_APIS
    for direction in ("request", "response")
    for version in api.valid
]


def outcome(codec, data):
    """What decoding gives: ('ok', value) or ('error', None)."""
    try:
        return ("ok", codec.decode(data))
    except DecodeError:
        return ("error", None)


def assert_forms_agree(message, version, data):
    compiled = outcome(message_codec(message, version, compiled=True), data)
    interpreted = outcome(message_codec(message, version, compiled=False), data)
    assert compiled == interpreted


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(MESSAGES), data=st.binary(max_size=300))
def test_random_bytes_decode_or_raise_decode_error_in_both_forms(case, data):
    assert_forms_agree(*case, data)


@settings(max_examples=400, deadline=None)
@given(
    case=st.sampled_from(MESSAGES),
    rnd=st.randoms(use_true_random=False),
    mutations=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
    cut=st.integers(0, 10_000),
)
def test_mutated_valid_messages_decode_or_raise_decode_error(case, rnd, mutations, cut):
    message, version = case
    data = bytearray(
        message_codec(message, version).encode(sample(message_codec(message, version).root, rnd))
    )
    for pos, value in mutations:
        if data:
            data[pos % len(data)] = value
    if data:
        data = data[: cut % (len(data) + 1)]
    assert_forms_agree(message, version, bytes(data))


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200))
def test_random_request_frames_decode_or_raise_wire_errors(data):
    try:
        decode_request(data)
    except DecodeError:  # UnsupportedVersionError included
        pass


@pytest.mark.parametrize(
    "api_key, version, data",
    [
        # Metadata response v0: brokers array claims 2^31-1 elements.
        (3, 0, bytes.fromhex("7fffffff") + b"\x00" * 16),
        # Metadata response v12: compact array count near 2^32.
        (3, 12, bytes.fromhex("00000000feffffff0f") + b"\x00" * 16),
        # Produce request v3: transactional id claims 32767 bytes.
        (0, 3, bytes.fromhex("7fff") + b"a" * 10),
        # Produce request v9: records length 2^31 - 1 (compact).
        (0, 9, bytes.fromhex("000001000000010201740200000000ffffffff07")),
        # Fetch request v4: partitions array 2^31-1 deep inside.
        (1, 4, bytes.fromhex("ffffffff00000000000000000000000000000000010001747fffffff")),
    ],
)
def test_lengths_beyond_the_input_fail_before_allocating(api_key, version, data):
    codec = message_codec(
        APIS_BY_KEY[api_key].response if api_key == 3 else APIS_BY_KEY[api_key].request, version
    )
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError):
            codec.decode(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024, f"decoding {len(data)} bytes peaked at {peak} bytes"


def test_an_overlong_varint_is_refused():
    codec = message_codec(APIS_BY_KEY[18].request, 3)
    with pytest.raises(DecodeError, match="longer than 5 bytes"):
        codec.decode(b"\xff\xff\xff\xff\xff\xff\x01")


def test_invalid_utf8_in_a_string_is_a_decode_error():
    codec = message_codec(APIS_BY_KEY[3].request, 1)
    with pytest.raises(DecodeError, match="UTF-8"):
        codec.decode(bytes.fromhex("000000010002c328"))


def test_many_random_truncations_of_a_large_message_agree():
    rnd = random.Random(7)
    message = APIS_BY_KEY[1].response
    codec = message_codec(message, 16)
    data = codec.encode(sample(codec.root, rnd))
    for cut in range(0, len(data), max(1, len(data) // 200)):
        assert_forms_agree(message, 16, data[:cut])
