"""OffsetForLeaderEpoch (API key 23)."""

from wire.schema import F, api

OFFSET_FOR_LEADER_EPOCH = api(
    23,
    "OffsetForLeaderEpoch",
    valid="0-4",
    flexible="4+",
    request=[
        F("replica_id", "int32", "3+", default=-2),
        F("topics", "[]OffsetForLeaderTopic", "0+",
            F("topic", "string", "0+"),
            F("partitions", "[]OffsetForLeaderPartition", "0+",
                F("partition", "int32", "0+"),
                F("current_leader_epoch", "int32", "2+", default=-1),
                F("leader_epoch", "int32", "0+"),
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "2+"),
        F("topics", "[]OffsetForLeaderTopicResult", "0+",
            F("topic", "string", "0+"),
            F("partitions", "[]EpochEndOffset", "0+",
                F("error_code", "int16", "0+"),
                F("partition", "int32", "0+"),
                F("leader_epoch", "int32", "1+", default=-1),
                F("end_offset", "int64", "0+", default=-1),
            ),
        ),
    ],
)
