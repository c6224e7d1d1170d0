"""AlterReplicaLogDirs (API key 34)."""

from wire.schema import F, api

ALTER_REPLICA_LOG_DIRS = api(
    34,
    "AlterReplicaLogDirs",
    valid="0-2",
    flexible="2+",
    request=[
        F("dirs", "[]AlterReplicaLogDir", "0+",
            F("path", "string", "0+"),
            F("topics", "[]AlterReplicaLogDirTopic", "0+",
                F("name", "string", "0+"),
                F("partitions", "[]int32", "0+"),
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("results", "[]AlterReplicaLogDirTopicResult", "0+",
            F("topic_name", "string", "0+"),
            F("partitions", "[]AlterReplicaLogDirPartitionResult", "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
            ),
        ),
    ],
)
