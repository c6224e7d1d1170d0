"""Envelope (API key 58)."""

from wire.schema import F, api

ENVELOPE = api(
    58,
    "Envelope",
    valid="0",
    flexible="0+",
    request=[
        F("request_data", "bytes", "0+"),
        F("request_principal", "bytes", "0+", nullable="0+"),
        F("client_host_address", "bytes", "0+"),
    ],
    response=[
        F("response_data", "bytes", "0+", nullable="0+", default=None),
        F("error_code", "int16", "0+"),
    ],
)
