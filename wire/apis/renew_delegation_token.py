"""RenewDelegationToken (API key 39)."""

from wire.schema import F, api

RENEW_DELEGATION_TOKEN = api(
    39,
    "RenewDelegationToken",
    valid="0-2",
    flexible="2+",
    request=[
        F("hmac", "bytes", "0+"),
        F("renew_period_ms", "int64", "0+"),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("expiry_timestamp_ms", "int64", "0+"),
        F("throttle_time_ms", "int32", "0+"),
    ],
)
