"""atheris fuzz target for `wire`: decoding any bytes returns or raises DecodeError.

The first two input bytes pick a message and a version, the rest is decoded by
both the compiled and the interpreted codec, which must agree; whole request
frames and record batches are decoded too. Any exception other than the wire
errors is a crash that atheris reports with the input that caused it.

    make fuzz                       # bounded run (FUZZ_SECONDS, default 60)
    python fuzz/fuzz_wire.py -max_total_time=30 fuzz-artifacts/corpus
"""

import sys

import atheris

with atheris.instrument_imports():
    from wire.apis import ALL_APIS
    from wire.codec import message_codec
    from wire.errors import DecodeError, UnsupportedVersionError
    from wire.protocol import decode_request

    try:
        from wire.records import iter_records, validate_batch
    except ImportError:  # record layer not built yet
        iter_records = validate_batch = None

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
        except (DecodeError, UnsupportedVersionError):
            pass
    elif validate_batch is not None:
        try:
            validate_batch(body)
            for _ in iter_records(body):
                pass
        except DecodeError:
            pass


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
