"""BrokerHeartbeat (API key 63)."""

from wire.schema import F, api

BROKER_HEARTBEAT = api(
    63,
    "BrokerHeartbeat",
    valid="0-1",
    flexible="0+",
    request=[
        F("broker_id", "int32", "0+"),
        F("broker_epoch", "int64", "0+", default=-1),
        F("current_metadata_offset", "int64", "0+"),
        F("want_fence", "bool", "0+"),
        F("want_shut_down", "bool", "0+"),
        F("offline_log_dirs", "[]uuid", "1+", tagged="1+", tag=0),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("is_caught_up", "bool", "0+"),
        F("is_fenced", "bool", "0+", default=True),
        F("should_shut_down", "bool", "0+"),
    ],
)
