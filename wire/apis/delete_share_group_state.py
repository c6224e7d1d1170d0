"""DeleteShareGroupState (API key 86)."""

from wire.schema import F, api

DELETE_SHARE_GROUP_STATE = api(
    86,
    "DeleteShareGroupState",
    valid="0",
    flexible="0+",
    request=[
        F("group_id", "string", "0+"),
        F("topics", "[]DeleteStateData", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionData", "0+",
                F("partition", "int32", "0+"),
            ),
        ),
    ],
    response=[
        F("results", "[]DeleteStateResult", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionResult", "0+",
                F("partition", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+", default=None),
            ),
        ),
    ],
)
