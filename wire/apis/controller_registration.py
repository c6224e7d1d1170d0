"""ControllerRegistration (API key 70)."""

from wire.schema import F, api

CONTROLLER_REGISTRATION = api(
    70,
    "ControllerRegistration",
    valid="0",
    flexible="0+",
    request=[
        F("controller_id", "int32", "0+"),
        F("incarnation_id", "uuid", "0+"),
        F("zk_migration_ready", "bool", "0+"),
        F("listeners", "[]Listener", "0+",
            F("name", "string", "0+"),
            F("host", "string", "0+"),
            F("port", "uint16", "0+"),
            F("security_protocol", "int16", "0+"),
        ),
        F("features", "[]Feature", "0+",
            F("name", "string", "0+"),
            F("min_supported_version", "int16", "0+"),
            F("max_supported_version", "int16", "0+"),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
    ],
)
