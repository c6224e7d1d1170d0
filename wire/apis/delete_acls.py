"""DeleteAcls (API key 31)."""

from wire.schema import F, api

DELETE_ACLS = api(
    31,
    "DeleteAcls",
    valid="0-3",
    flexible="2+",
    request=[
        F("filters", "[]DeleteAclsFilter", "0+",
            F("resource_type_filter", "int8", "0+"),
            F("resource_name_filter", "string", "0+", nullable="0+"),
            F("pattern_type_filter", "int8", "1+", default=3),
            F("principal_filter", "string", "0+", nullable="0+"),
            F("host_filter", "string", "0+", nullable="0+"),
            F("operation", "int8", "0+"),
            F("permission_type", "int8", "0+"),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("filter_results", "[]DeleteAclsFilterResult", "0+",
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
            F("matching_acls", "[]DeleteAclsMatchingAcl", "0+",
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
                F("resource_type", "int8", "0+"),
                F("resource_name", "string", "0+"),
                F("pattern_type", "int8", "1+", default=3),
                F("principal", "string", "0+"),
                F("host", "string", "0+"),
                F("operation", "int8", "0+"),
                F("permission_type", "int8", "0+"),
            ),
        ),
    ],
)
