"""StopReplica (API key 5)."""

from wire.schema import F, api

STOP_REPLICA = api(
    5,
    "StopReplica",
    valid="0-4",
    flexible="2+",
    request=[
        F("controller_id", "int32", "0+"),
        F("is_k_raft_controller", "bool", "4+"),
        F("controller_epoch", "int32", "0+"),
        F("broker_epoch", "int64", "1+", default=-1),
        F("delete_partitions", "bool", "0-2"),
        F("ungrouped_partitions", "[]StopReplicaPartitionV0", "0",
            F("topic_name", "string", "0"),
            F("partition_index", "int32", "0"),
        ),
        F("topics", "[]StopReplicaTopicV1", "1-2",
            F("name", "string", "1-2"),
            F("partition_indexes", "[]int32", "1-2"),
        ),
        F("topic_states", "[]StopReplicaTopicState", "3+",
            F("topic_name", "string", "3+"),
            F("partition_states", "[]StopReplicaPartitionState", "3+",
                F("partition_index", "int32", "3+"),
                F("leader_epoch", "int32", "3+", default=-1),
                F("delete_partition", "bool", "3+"),
            ),
        ),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("partition_errors", "[]StopReplicaPartitionError", "0+",
            F("topic_name", "string", "0+"),
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
        ),
    ],
)
