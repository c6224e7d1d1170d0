"""InitializeShareGroupState (API key 83)."""

from wire.schema import F, api

INITIALIZE_SHARE_GROUP_STATE = api(
    83,
    "InitializeShareGroupState",
    valid="0",
    flexible="0+",
    request=[
        F("group_id", "string", "0+"),
        F("topics", "[]InitializeStateData", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionData", "0+",
                F("partition", "int32", "0+"),
                F("state_epoch", "int32", "0+"),
                F("start_offset", "int64", "0+"),
            ),
        ),
    ],
    response=[
        F("results", "[]InitializeStateResult", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionResult", "0+",
                F("partition", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+", default=None),
            ),
        ),
    ],
)
