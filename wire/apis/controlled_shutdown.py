"""ControlledShutdown (API key 7)."""

from wire.schema import F, api

CONTROLLED_SHUTDOWN = api(
    7,
    "ControlledShutdown",
    valid="0-3",
    flexible="3+",
    request=[
        F("broker_id", "int32", "0+"),
        F("broker_epoch", "int64", "2+", default=-1),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("remaining_partitions", "[]RemainingPartition", "0+",
            F("topic_name", "string", "0+"),
            F("partition_index", "int32", "0+"),
        ),
    ],
)
