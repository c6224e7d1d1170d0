"""ListOffsets (API key 2)."""

from wire.schema import F, api

LIST_OFFSETS = api(
    2,
    "ListOffsets",
    valid="0-11",
    flexible="6+",
    request=[
        F("replica_id", "int32", "0+"),
        F("isolation_level", "int8", "2+"),
        F("topics", "[]ListOffsetsTopic", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]ListOffsetsPartition", "0+",
                F("partition_index", "int32", "0+"),
                F("current_leader_epoch", "int32", "4+", default=-1),
                F("timestamp", "int64", "0+"),
                F("max_num_offsets", "int32", "0", default=1),
            ),
        ),
        F("timeout_ms", "int32", "10+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "2+"),
        F("topics", "[]ListOffsetsTopicResponse", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]ListOffsetsPartitionResponse", "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("old_style_offsets", "[]int64", "0"),
                F("timestamp", "int64", "1+", default=-1),
                F("offset", "int64", "1+", default=-1),
                F("leader_epoch", "int32", "4+", default=-1),
            ),
        ),
    ],
)
