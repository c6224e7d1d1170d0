"""ListGroups (API key 16)."""

from wire.schema import F, api

LIST_GROUPS = api(
    16,
    "ListGroups",
    valid="0-5",
    flexible="3+",
    request=[
        F("states_filter", "[]string", "4+"),
        F("types_filter", "[]string", "5+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "0+"),
        F("groups", "[]ListedGroup", "0+",
            F("group_id", "string", "0+"),
            F("protocol_type", "string", "0+"),
            F("group_state", "string", "4+"),
            F("group_type", "string", "5+"),
        ),
    ],
)
