"""CreateAcls (API key 30)."""

from wire.schema import F, api

CREATE_ACLS = api(
    30,
    "CreateAcls",
    valid="0-3",
    flexible="2+",
    request=[
        F("creations", "[]AclCreation", "0+",
            F("resource_type", "int8", "0+"),
            F("resource_name", "string", "0+"),
            F("resource_pattern_type", "int8", "1+", default=3),
            F("principal", "string", "0+"),
            F("host", "string", "0+"),
            F("operation", "int8", "0+"),
            F("permission_type", "int8", "0+"),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("results", "[]AclCreationResult", "0+",
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
        ),
    ],
)
