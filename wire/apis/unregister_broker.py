"""UnregisterBroker (API key 64)."""

from wire.schema import F, api

UNREGISTER_BROKER = api(
    64,
    "UnregisterBroker",
    valid="0",
    flexible="0+",
    request=[
        F("broker_id", "int32", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
    ],
)
