"""DescribeClientQuotas (API key 48)."""

from wire.schema import F, api

DESCRIBE_CLIENT_QUOTAS = api(
    48,
    "DescribeClientQuotas",
    valid="0-1",
    flexible="1+",
    request=[
        F("components", "[]ComponentData", "0+",
            F("entity_type", "string", "0+"),
            F("match_type", "int8", "0+"),
            F("match", "string", "0+", nullable="0+"),
        ),
        F("strict", "bool", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("entries", "[]EntryData", "0+",
            F("entity", "[]EntityData", "0+",
                F("entity_type", "string", "0+"),
                F("entity_name", "string", "0+", nullable="0+"),
            ),
            F("values", "[]ValueData", "0+",
                F("key", "string", "0+"),
                F("value", "float64", "0+"),
            ),
            nullable="0+",
        ),
    ],
)
