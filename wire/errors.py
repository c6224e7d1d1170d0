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


class UnsupportedVersionError(WireError):
    """An API version outside the range that `wire` declares."""

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
