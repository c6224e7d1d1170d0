"""DescribeQuorum (API key 55)."""

from wire.schema import F, api

_REPLICA_STATE = (
    F("replica_id", "int32", "0+"),
    F("replica_directory_id", "uuid", "2+"),
    F("log_end_offset", "int64", "0+"),
    F("last_fetch_timestamp", "int64", "1+", default=-1),
    F("last_caught_up_timestamp", "int64", "1+", default=-1),
)

DESCRIBE_QUORUM = api(
    55,
    "DescribeQuorum",
    valid="0-2",
    flexible="0+",
    request=[
        F("topics", "[]TopicData", "0+",
            F("topic_name", "string", "0+"),
            F("partitions", "[]PartitionData", "0+",
                F("partition_index", "int32", "0+"),
            ),
        ),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "2+", nullable="2+"),
        F("topics", "[]TopicData", "0+",
            F("topic_name", "string", "0+"),
            F("partitions", "[]PartitionData", "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "2+", nullable="2+"),
                F("leader_id", "int32", "0+"),
                F("leader_epoch", "int32", "0+"),
                F("high_watermark", "int64", "0+"),
                F("current_voters", "[]ReplicaState", "0+", *_REPLICA_STATE),
                F("observers", "[]ReplicaState", "0+", *_REPLICA_STATE),
            ),
        ),
        F("nodes", "[]Node", "2+",
            F("node_id", "int32", "2+"),
            F("listeners", "[]Listener", "2+",
                F("name", "string", "2+"),
                F("host", "string", "2+"),
                F("port", "uint16", "2+"),
            ),
        ),
    ],
)
