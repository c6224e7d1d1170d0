"""PushTelemetry (API key 72)."""

from wire.schema import F, api

PUSH_TELEMETRY = api(
    72,
    "PushTelemetry",
    valid="0",
    flexible="0+",
    request=[
        F("client_instance_id", "uuid", "0+"),
        F("subscription_id", "int32", "0+"),
        F("terminating", "bool", "0+"),
        F("compression_type", "int8", "0+"),
        F("metrics", "bytes", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
    ],
)
