"""ListConfigResources (API key 74), ListClientMetricsResources before KIP-1142."""

from wire.schema import F, api

LIST_CONFIG_RESOURCES = api(
    74,
    "ListConfigResources",
    valid="0-1",
    flexible="0+",
    request=[
        F("resource_types", "[]int8", "1+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("config_resources", "[]ConfigResource", "0+",
            F("resource_name", "string", "0+"),
            F("resource_type", "int8", "1+", default=16),
        ),
    ],
)
