"""LeaderAndIsr (API key 4)."""

from wire.schema import F, api

_LEADER_AND_ISR_PARTITION_STATE = (
    F("topic_name", "string", "0-1"),
    F("partition_index", "int32", "0+"),
    F("controller_epoch", "int32", "0+"),
    F("leader", "int32", "0+"),
    F("leader_epoch", "int32", "0+"),
    F("isr", "[]int32", "0+"),
    F("partition_epoch", "int32", "0+"),
    F("replicas", "[]int32", "0+"),
    F("adding_replicas", "[]int32", "3+"),
    F("removing_replicas", "[]int32", "3+"),
    F("is_new", "bool", "1+"),
    F("leader_recovery_state", "int8", "6+"),
)

_LEADER_AND_ISR_PARTITION_ERROR = (
    F("topic_name", "string", "0-4"),
    F("partition_index", "int32", "0+"),
    F("error_code", "int16", "0+"),
)

LEADER_AND_ISR = api(
    4,
    "LeaderAndIsr",
    valid="0-7",
    flexible="4+",
    request=[
        F("controller_id", "int32", "0+"),
        F("is_k_raft_controller", "bool", "7+"),
        F("controller_epoch", "int32", "0+"),
        F("broker_epoch", "int64", "2+", default=-1),
        F("type", "int8", "5+"),
        F("ungrouped_partition_states", "[]LeaderAndIsrPartitionState", "0-1", *_LEADER_AND_ISR_PARTITION_STATE),
        F("topic_states", "[]LeaderAndIsrTopicState", "2+",
            F("topic_name", "string", "2+"),
            F("topic_id", "uuid", "5+"),
            F("partition_states", "[]LeaderAndIsrPartitionState", "2+", *_LEADER_AND_ISR_PARTITION_STATE),
        ),
        F("live_leaders", "[]LeaderAndIsrLiveLeader", "0+",
            F("broker_id", "int32", "0+"),
            F("host_name", "string", "0+"),
            F("port", "int32", "0+"),
        ),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("partition_errors", "[]LeaderAndIsrPartitionError", "0-4", *_LEADER_AND_ISR_PARTITION_ERROR),
        F("topics", "[]LeaderAndIsrTopicError", "5+",
            F("topic_id", "uuid", "5+"),
            F("partition_errors", "[]LeaderAndIsrPartitionError", "5+", *_LEADER_AND_ISR_PARTITION_ERROR),
        ),
    ],
)
