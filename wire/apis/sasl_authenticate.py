"""SaslAuthenticate (API key 36)."""

from wire.schema import F, api

SASL_AUTHENTICATE = api(
    36,
    "SaslAuthenticate",
    valid="0-2",
    flexible="2+",
    request=[
        F("auth_bytes", "bytes", "0+"),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("auth_bytes", "bytes", "0+"),
        F("session_lifetime_ms", "int64", "1+"),
    ],
)
