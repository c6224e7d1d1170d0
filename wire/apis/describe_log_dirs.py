"""DescribeLogDirs (API key 35)."""

from wire.schema import F, api

DESCRIBE_LOG_DIRS = api(
    35,
    "DescribeLogDirs",
    valid="0-5",
    flexible="2+",
    request=[
        F("topics", "[]DescribableLogDirTopic", "0+",
            F("topic", "string", "0+"),
            F("partitions", "[]int32", "0+"),
            nullable="0+",
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "3+"),
        F("results", "[]DescribeLogDirsResult", "0+",
            F("error_code", "int16", "0+"),
            F("log_dir", "string", "0+"),
            F("topics", "[]DescribeLogDirsTopic", "0+",
                F("name", "string", "0+"),
                F("partitions", "[]DescribeLogDirsPartition", "0+",
                    F("partition_index", "int32", "0+"),
                    F("partition_size", "int64", "0+"),
                    F("offset_lag", "int64", "0+"),
                    F("is_future_key", "bool", "0+"),
                ),
            ),
            F("total_bytes", "int64", "4+", default=-1),
            F("usable_bytes", "int64", "4+", default=-1),
            F("is_cordoned", "bool", "5+", default=False),
        ),
    ],
)
