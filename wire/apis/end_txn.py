"""EndTxn (API key 26)."""

from wire.schema import F, api

END_TXN = api(
    26,
    "EndTxn",
    valid="0-5",
    flexible="3+",
    request=[
        F("transactional_id", "string", "0+"),
        F("producer_id", "int64", "0+"),
        F("producer_epoch", "int16", "0+"),
        F("committed", "bool", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("producer_id", "int64", "5+", default=-1),
        F("producer_epoch", "int16", "5+", default=-1),
    ],
)
