"""InitProducerId (API key 22)."""

from wire.schema import F, api

INIT_PRODUCER_ID = api(
    22,
    "InitProducerId",
    valid="0-5",
    flexible="2+",
    request=[
        F("transactional_id", "string", "0+", nullable="0+"),
        F("transaction_timeout_ms", "int32", "0+"),
        F("producer_id", "int64", "3+", default=-1),
        F("producer_epoch", "int16", "3+", default=-1),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("producer_id", "int64", "0+", default=-1),
        F("producer_epoch", "int16", "0+"),
    ],
)
