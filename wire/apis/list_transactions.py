"""ListTransactions (API key 66)."""

from wire.schema import F, api

LIST_TRANSACTIONS = api(
    66,
    "ListTransactions",
    valid="0-2",
    flexible="0+",
    request=[
        F("state_filters", "[]string", "0+"),
        F("producer_id_filters", "[]int64", "0+"),
        F("duration_filter", "int64", "1+", default=-1),
        F("transactional_id_pattern", "string", "2+", nullable="2+", default=None),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("unknown_state_filters", "[]string", "0+"),
        F("transaction_states", "[]TransactionState", "0+",
            F("transactional_id", "string", "0+"),
            F("producer_id", "int64", "0+"),
            F("transaction_state", "string", "0+"),
        ),
    ],
)
