"""AllocateProducerIds (API key 67)."""

from wire.schema import F, api

ALLOCATE_PRODUCER_IDS = api(
    67,
    "AllocateProducerIds",
    valid="0",
    flexible="0+",
    request=[
        F("broker_id", "int32", "0+"),
        F("broker_epoch", "int64", "0+", default=-1),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("producer_id_start", "int64", "0+"),
        F("producer_id_len", "int32", "0+"),
    ],
)
