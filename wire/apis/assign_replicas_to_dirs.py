"""AssignReplicasToDirs (API key 73)."""

from wire.schema import F, api

ASSIGN_REPLICAS_TO_DIRS = api(
    73,
    "AssignReplicasToDirs",
    valid="0",
    flexible="0+",
    request=[
        F("broker_id", "int32", "0+"),
        F("broker_epoch", "int64", "0+", default=-1),
        F("directories", "[]DirectoryData", "0+",
            F("id", "uuid", "0+"),
            F("topics", "[]TopicData", "0+",
                F("topic_id", "uuid", "0+"),
                F("partitions", "[]PartitionData", "0+",
                    F("partition_index", "int32", "0+"),
                ),
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("directories", "[]DirectoryData", "0+",
            F("id", "uuid", "0+"),
            F("topics", "[]TopicData", "0+",
                F("topic_id", "uuid", "0+"),
                F("partitions", "[]PartitionData", "0+",
                    F("partition_index", "int32", "0+"),
                    F("error_code", "int16", "0+"),
                ),
            ),
        ),
    ],
)
