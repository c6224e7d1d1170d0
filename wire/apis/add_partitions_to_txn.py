"""AddPartitionsToTxn (API key 24)."""

from wire.schema import F, api

_ADD_PARTITIONS_TO_TXN_TOPIC = (
    F("name", "string", "0+"),
    F("partitions", "[]int32", "0+"),
)

_ADD_PARTITIONS_TO_TXN_PARTITION_RESULT = (
    F("partition_index", "int32", "0+"),
    F("partition_error_code", "int16", "0+"),
)

_ADD_PARTITIONS_TO_TXN_TOPIC_RESULT = (
    F("name", "string", "0+"),
    F("results_by_partition", "[]AddPartitionsToTxnPartitionResult", "0+", *_ADD_PARTITIONS_TO_TXN_PARTITION_RESULT),
)

ADD_PARTITIONS_TO_TXN = api(
    24,
    "AddPartitionsToTxn",
    valid="0-5",
    flexible="3+",
    request=[
        F("transactions", "[]AddPartitionsToTxnTransaction", "4+",
            F("transactional_id", "string", "4+"),
            F("producer_id", "int64", "4+"),
            F("producer_epoch", "int16", "4+"),
            F("verify_only", "bool", "4+"),
            F("topics", "[]AddPartitionsToTxnTopic", "4+", *_ADD_PARTITIONS_TO_TXN_TOPIC),
        ),
        F("v3_and_below_transactional_id", "string", "0-3"),
        F("v3_and_below_producer_id", "int64", "0-3"),
        F("v3_and_below_producer_epoch", "int16", "0-3"),
        F("v3_and_below_topics", "[]AddPartitionsToTxnTopic", "0-3", *_ADD_PARTITIONS_TO_TXN_TOPIC),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "4+"),
        F("results_by_transaction", "[]AddPartitionsToTxnResult", "4+",
            F("transactional_id", "string", "4+"),
            F("topic_results", "[]AddPartitionsToTxnTopicResult", "4+", *_ADD_PARTITIONS_TO_TXN_TOPIC_RESULT),
        ),
        F("results_by_topic_v3_and_below", "[]AddPartitionsToTxnTopicResult", "0-3", *_ADD_PARTITIONS_TO_TXN_TOPIC_RESULT),
    ],
)
