"""CreateDelegationToken (API key 38)."""

from wire.schema import F, api

CREATE_DELEGATION_TOKEN = api(
    38,
    "CreateDelegationToken",
    valid="0-3",
    flexible="2+",
    request=[
        F("owner_principal_type", "string", "3+", nullable="3+"),
        F("owner_principal_name", "string", "3+", nullable="3+"),
        F("renewers", "[]CreatableRenewers", "0+",
            F("principal_type", "string", "0+"),
            F("principal_name", "string", "0+"),
        ),
        F("max_lifetime_ms", "int64", "0+"),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("principal_type", "string", "0+"),
        F("principal_name", "string", "0+"),
        F("token_requester_principal_type", "string", "3+"),
        F("token_requester_principal_name", "string", "3+"),
        F("issue_timestamp_ms", "int64", "0+"),
        F("expiry_timestamp_ms", "int64", "0+"),
        F("max_timestamp_ms", "int64", "0+"),
        F("token_id", "string", "0+"),
        F("hmac", "bytes", "0+"),
        F("throttle_time_ms", "int32", "0+"),
    ],
)
