"""atheris fuzz target for `wire`: decoding any bytes returns or raises DecodeError.

The first two input bytes pick what decodes the rest: a message and a version
(decoded by both the compiled and the interpreted codec, which must agree), a
whole request frame, or a record path -- a checked batch, the records of a
batch whose CRC is not checked (so mutations reach the record decoder), the
producer-batch offset check, or one codec's decompressor. Any exception other
than the wire errors is a crash that atheris reports with its input.

    make fuzz                       # bounded run (FUZZ_SECONDS, default 60)
    python fuzz/fuzz_wire.py -max_total_time=30 fuzz-artifacts/corpus
"""

import sys

import atheris

with atheris.instrument_imports():
    from wire.apis import ALL_APIS
    from wire.codec import message_codec
    from wire.errors import DecodeError
    from wire.protocol import decode_request
    from wire.records import check_records, decompress, iter_records, validate_batch
    from wire.records.records import _walk_records, walk_records

# Small, so that a bomb found by the fuzzer costs little to refuse.
MAX_UNCOMPRESSED = 1 << 20

MESSAGES = [
    (getattr(api, direction), version)
    for api in ALL_APIS
    for direction in ("request", "response")
    for version in api.valid
]


def _decode(codec, data):
    try:
        return ("ok", codec.decode(data))
    except DecodeError:
        return ("error", None)


def test_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    selector = int.from_bytes(data[:2], "big")
    body = data[2:]
    mode = selector % 3
    if mode == 0:
        message, version = MESSAGES[(selector // 3) % len(MESSAGES)]
        compiled = _decode(message_codec(message, version, compiled=True), body)
        interpreted = _decode(message_codec(message, version, compiled=False), body)
        if compiled != interpreted:
            raise AssertionError(f"{message.name} v{version}: compiled and interpreted disagree")
    elif mode == 1:
        try:
            decode_request(body)
        except DecodeError:  # UnsupportedVersionError is one
            pass
    else:
        _decode_records(selector // 3, body)


def _decode_records(path: int, body: bytes) -> None:
    try:
        if path % 4 == 0:
            validate_batch(body)
            for _ in iter_records(body, 0, MAX_UNCOMPRESSED):
                pass
        elif path % 4 == 1:
            for _ in iter_records(body, 0, MAX_UNCOMPRESSED):
                pass
        elif path % 4 == 2:
            check_records(body, 0, MAX_UNCOMPRESSED)
            # The C walk and its Python reference agree on any section.
            count = (path // 4) % 64
            base = int.from_bytes(body[:8], "big", signed=True) if len(body) >= 8 else -1
            if walk_records(body, count, base) != _walk_records(body, count, base):
                raise AssertionError("the C and Python record walks disagree")
        else:
            codec = 1 + (path // 4) % 4  # gzip, snappy, lz4, zstd
            decompress(codec, body, MAX_UNCOMPRESSED)
    except DecodeError:
        pass


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
