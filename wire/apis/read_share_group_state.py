"""ReadShareGroupState (API key 84)."""

from wire.schema import F, api

READ_SHARE_GROUP_STATE = api(
    84,
    "ReadShareGroupState",
    valid="0",
    flexible="0+",
    request=[
        F("group_id", "string", "0+"),
        F("topics", "[]ReadStateData", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionData", "0+",
                F("partition", "int32", "0+"),
                F("leader_epoch", "int32", "0+"),
            ),
        ),
    ],
    response=[
        F("results", "[]ReadStateResult", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionResult", "0+",
                F("partition", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+", default=None),
                F("state_epoch", "int32", "0+"),
                F("start_offset", "int64", "0+"),
                F("state_batches", "[]StateBatch", "0+",
                    F("first_offset", "int64", "0+"),
                    F("last_offset", "int64", "0+"),
                    F("delivery_state", "int8", "0+"),
                    F("delivery_count", "int16", "0+"),
                ),
            ),
        ),
    ],
)
