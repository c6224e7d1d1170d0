"""CreatePartitions (API key 37)."""

from wire.schema import F, api

CREATE_PARTITIONS = api(
    37,
    "CreatePartitions",
    valid="0-3",
    flexible="2+",
    request=[
        F("topics", "[]CreatePartitionsTopic", "0+",
            F("name", "string", "0+"),
            F("count", "int32", "0+"),
            F("assignments", "[]CreatePartitionsAssignment", "0+",
                F("broker_ids", "[]int32", "0+"),
                nullable="0+",
            ),
        ),
        F("timeout_ms", "int32", "0+"),
        F("validate_only", "bool", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("results", "[]CreatePartitionsTopicResult", "0+",
            F("name", "string", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+", default=None),
        ),
    ],
)
