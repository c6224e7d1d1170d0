"""IncrementalAlterConfigs (API key 44)."""

from wire.schema import F, api

INCREMENTAL_ALTER_CONFIGS = api(
    44,
    "IncrementalAlterConfigs",
    valid="0-1",
    flexible="1+",
    request=[
        F("resources", "[]AlterConfigsResource", "0+",
            F("resource_type", "int8", "0+"),
            F("resource_name", "string", "0+"),
            F("configs", "[]AlterableConfig", "0+",
                F("name", "string", "0+"),
                F("config_operation", "int8", "0+"),
                F("value", "string", "0+", nullable="0+"),
            ),
        ),
        F("validate_only", "bool", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("responses", "[]AlterConfigsResourceResponse", "0+",
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
            F("resource_type", "int8", "0+"),
            F("resource_name", "string", "0+"),
        ),
    ],
)
