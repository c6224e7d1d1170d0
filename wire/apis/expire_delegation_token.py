"""ExpireDelegationToken (API key 40)."""

from wire.schema import F, api

EXPIRE_DELEGATION_TOKEN = api(
    40,
    "ExpireDelegationToken",
    valid="0-2",
    flexible="2+",
    request=[
        F("hmac", "bytes", "0+"),
        F("expiry_time_period_ms", "int64", "0+"),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("expiry_timestamp_ms", "int64", "0+"),
        F("throttle_time_ms", "int32", "0+"),
    ],
)
