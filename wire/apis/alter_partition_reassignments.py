"""AlterPartitionReassignments (API key 45)."""

from wire.schema import F, api

ALTER_PARTITION_REASSIGNMENTS = api(
    45,
    "AlterPartitionReassignments",
    valid="0-1",
    flexible="0+",
    request=[
        F("timeout_ms", "int32", "0+", default=60000),
        F("allow_replication_factor_change", "bool", "1+", default=True),
        F("topics", "[]ReassignableTopic", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]ReassignablePartition", "0+",
                F("partition_index", "int32", "0+"),
                F("replicas", "[]int32", "0+", nullable="0+", default=None),
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("allow_replication_factor_change", "bool", "1+", default=True),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("responses", "[]ReassignableTopicResponse", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]ReassignablePartitionResponse", "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
            ),
        ),
    ],
)
