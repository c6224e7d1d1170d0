"""ShareGroupHeartbeat (API key 76)."""

from wire.schema import F, api

_TOPIC_PARTITIONS = (
    F("topic_id", "uuid", "0+"),
    F("partitions", "[]int32", "0+"),
)

SHARE_GROUP_HEARTBEAT = api(
    76,
    "ShareGroupHeartbeat",
    valid="0",
    flexible="0+",
    request=[
        F("group_id", "string", "0+"),
        F("member_id", "string", "0+"),
        F("member_epoch", "int32", "0+"),
        F("rack_id", "string", "0+", nullable="0+", default=None),
        F("subscribed_topic_names", "[]string", "0+", nullable="0+", default=None),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F("member_id", "string", "0+", nullable="0+", default=None),
        F("member_epoch", "int32", "0+"),
        F("heartbeat_interval_ms", "int32", "0+"),
        F("assignment", "Assignment", "0+",
            F("topic_partitions", "[]TopicPartitions", "0+", *_TOPIC_PARTITIONS),
            nullable="0+", default=None,
        ),
    ],
)
