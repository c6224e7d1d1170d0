"""WriteTxnMarkers (API key 27)."""

from wire.schema import F, api

WRITE_TXN_MARKERS = api(
    27,
    "WriteTxnMarkers",
    valid="0-2",
    flexible="1+",
    request=[
        F("markers", "[]WritableTxnMarker", "0+",
            F("producer_id", "int64", "0+"),
            F("producer_epoch", "int16", "0+"),
            F("transaction_result", "bool", "0+"),
            F("topics", "[]WritableTxnMarkerTopic", "0+",
                F("name", "string", "0+"),
                F("partition_indexes", "[]int32", "0+"),
            ),
            F("coordinator_epoch", "int32", "0+"),
            F("transaction_version", "int8", "2+", default=0),
        ),
    ],
    response=[
        F("markers", "[]WritableTxnMarkerResult", "0+",
            F("producer_id", "int64", "0+"),
            F("topics", "[]WritableTxnMarkerTopicResult", "0+",
                F("name", "string", "0+"),
                F("partitions", "[]WritableTxnMarkerPartitionResult", "0+",
                    F("partition_index", "int32", "0+"),
                    F("error_code", "int16", "0+"),
                ),
            ),
        ),
    ],
)
