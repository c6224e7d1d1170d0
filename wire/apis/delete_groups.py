"""DeleteGroups (API key 42)."""

from wire.schema import F, api

DELETE_GROUPS = api(
    42,
    "DeleteGroups",
    valid="0-2",
    flexible="2+",
    request=[
        F("groups_names", "[]string", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("results", "[]DeletableGroupResult", "0+",
            F("group_id", "string", "0+"),
            F("error_code", "int16", "0+"),
        ),
    ],
)
