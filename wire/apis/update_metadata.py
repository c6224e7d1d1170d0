"""UpdateMetadata (API key 6)."""

from wire.schema import F, api

_UPDATE_METADATA_PARTITION_STATE = (
    F("topic_name", "string", "0-4"),
    F("partition_index", "int32", "0+"),
    F("controller_epoch", "int32", "0+"),
    F("leader", "int32", "0+"),
    F("leader_epoch", "int32", "0+"),
    F("isr", "[]int32", "0+"),
    F("zk_version", "int32", "0+"),
    F("replicas", "[]int32", "0+"),
    F("offline_replicas", "[]int32", "4+"),
)

UPDATE_METADATA = api(
    6,
    "UpdateMetadata",
    valid="0-8",
    flexible="6+",
    request=[
        F("controller_id", "int32", "0+"),
        F("is_k_raft_controller", "bool", "8+"),
        F("type", "int8", "8+", tagged="8+", tag=0),
        F("controller_epoch", "int32", "0+"),
        F("broker_epoch", "int64", "5+", default=-1),
        F("ungrouped_partition_states", "[]UpdateMetadataPartitionState", "0-4", *_UPDATE_METADATA_PARTITION_STATE),
        F("topic_states", "[]UpdateMetadataTopicState", "5+",
            F("topic_name", "string", "5+"),
            F("topic_id", "uuid", "7+"),
            F("partition_states", "[]UpdateMetadataPartitionState", "5+", *_UPDATE_METADATA_PARTITION_STATE),
        ),
        F("live_brokers", "[]UpdateMetadataBroker", "0+",
            F("id", "int32", "0+"),
            F("v0_host", "string", "0"),
            F("v0_port", "int32", "0"),
            F("endpoints", "[]UpdateMetadataEndpoint", "1+",
                F("port", "int32", "1+"),
                F("host", "string", "1+"),
                F("listener", "string", "3+"),
                F("security_protocol", "int16", "1+"),
            ),
            F("rack", "string", "2+", nullable="0+"),
        ),
    ],
    response=[
        F("error_code", "int16", "0+"),
    ],
)
