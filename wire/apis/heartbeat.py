"""Heartbeat (API key 12)."""

from wire.schema import F, api

HEARTBEAT = api(
    12,
    "Heartbeat",
    valid="0-4",
    flexible="4+",
    request=[
        F("group_id", "string", "0+"),
        F("generation_id", "int32", "0+"),
        F("member_id", "string", "0+"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "0+"),
    ],
)
