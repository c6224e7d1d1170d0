"""SaslHandshake (API key 17)."""

from wire.schema import F, api

SASL_HANDSHAKE = api(
    17,
    "SaslHandshake",
    valid="0-1",
    flexible="none",
    request=[
        F("mechanism", "string", "0+"),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("mechanisms", "[]string", "0+"),
    ],
)
