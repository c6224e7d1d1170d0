"""AlterClientQuotas (API key 49)."""

from wire.schema import F, api

ALTER_CLIENT_QUOTAS = api(
    49,
    "AlterClientQuotas",
    valid="0-1",
    flexible="1+",
    request=[
        F("entries", "[]EntryData", "0+",
            F("entity", "[]EntityData", "0+",
                F("entity_type", "string", "0+"),
                F("entity_name", "string", "0+", nullable="0+"),
            ),
            F("ops", "[]OpData", "0+",
                F("key", "string", "0+"),
                F("value", "float64", "0+"),
                F("remove", "bool", "0+"),
            ),
        ),
        F("validate_only", "bool", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("entries", "[]EntryData", "0+",
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
            F("entity", "[]EntityData", "0+",
                F("entity_type", "string", "0+"),
                F("entity_name", "string", "0+", nullable="0+"),
            ),
        ),
    ],
)
