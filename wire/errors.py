"""The exceptions `wire` raises.

Decoding hostile bytes must end in exactly one exception type, `DecodeError`,
so the broker can turn any malformed input into an error response or a closed
connection without catching anything broader.
"""


class WireError(Exception):
    """Base class of every error raised by `wire`."""


class DecodeError(WireError):
    """The bytes are not a valid encoding of what was asked for."""


class EncodeError(WireError):
    """A value cannot be encoded (wrong type, out of range, unknown version)."""


class UnsupportedVersionError(DecodeError):
    """An API key or version that `wire` does not declare. A decode error (a
    request in it cannot be read), carrying what the broker needs to answer
    UNSUPPORTED_VERSION instead of closing: key, version, correlation id."""

    def __init__(
        self,
        api_key: int,
        version: int,
        message: str | None = None,
        correlation_id: int | None = None,
    ):
        self.api_key = api_key
        self.version = version
        self.correlation_id = correlation_id
        super().__init__(message or f"api key {api_key} has no version {version}")
