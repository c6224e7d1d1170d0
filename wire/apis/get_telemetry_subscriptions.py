"""GetTelemetrySubscriptions (API key 71)."""

from wire.schema import F, api

GET_TELEMETRY_SUBSCRIPTIONS = api(
    71,
    "GetTelemetrySubscriptions",
    valid="0",
    flexible="0+",
    request=[
        F("client_instance_id", "uuid", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("client_instance_id", "uuid", "0+"),
        F("subscription_id", "int32", "0+"),
        F("accepted_compression_types", "[]int8", "0+"),
        F("push_interval_ms", "int32", "0+"),
        F("telemetry_max_bytes", "int32", "0+"),
        F("delta_temporality", "bool", "0+"),
        F("requested_metrics", "[]string", "0+"),
    ],
)
