"""ListClientMetricsResources (API key 74)."""

from wire.schema import F, api

LIST_CLIENT_METRICS_RESOURCES = api(
    74,
    "ListClientMetricsResources",
    valid="0",
    flexible="0+",
    request=[
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("client_metrics_resources", "[]ClientMetricsResource", "0+",
            F("name", "string", "0+"),
        ),
    ],
)
