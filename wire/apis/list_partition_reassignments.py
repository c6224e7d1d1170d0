"""ListPartitionReassignments (API key 46)."""

from wire.schema import F, api

LIST_PARTITION_REASSIGNMENTS = api(
    46,
    "ListPartitionReassignments",
    valid="0",
    flexible="0+",
    request=[
        F("timeout_ms", "int32", "0+", default=60000),
        F("topics", "[]ListPartitionReassignmentsTopics", "0+",
            F("name", "string", "0+"),
            F("partition_indexes", "[]int32", "0+"),
            nullable="0+", default=None,
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("topics", "[]OngoingTopicReassignment", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]OngoingPartitionReassignment", "0+",
                F("partition_index", "int32", "0+"),
                F("replicas", "[]int32", "0+"),
                F("adding_replicas", "[]int32", "0+"),
                F("removing_replicas", "[]int32", "0+"),
            ),
        ),
    ],
)
