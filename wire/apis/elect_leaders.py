"""ElectLeaders (API key 43)."""

from wire.schema import F, api

ELECT_LEADERS = api(
    43,
    "ElectLeaders",
    valid="0-2",
    flexible="2+",
    request=[
        F("election_type", "int8", "1+"),
        F("topic_partitions", "[]TopicPartitions", "0+",
            F("topic", "string", "0+"),
            F("partitions", "[]int32", "0+"),
            nullable="0+",
        ),
        F("timeout_ms", "int32", "0+", default=60000),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "1+"),
        F("replica_election_results", "[]ReplicaElectionResult", "0+",
            F("topic", "string", "0+"),
            F("partition_result", "[]PartitionResult", "0+",
                F("partition_id", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
            ),
        ),
    ],
)
