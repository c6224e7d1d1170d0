"""DescribeDelegationToken (API key 41)."""

from wire.schema import F, api

DESCRIBE_DELEGATION_TOKEN = api(
    41,
    "DescribeDelegationToken",
    valid="0-3",
    flexible="2+",
    request=[
        F("owners", "[]DescribeDelegationTokenOwner", "0+",
            F("principal_type", "string", "0+"),
            F("principal_name", "string", "0+"),
            nullable="0+",
        ),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("tokens", "[]DescribedDelegationToken", "0+",
            F("principal_type", "string", "0+"),
            F("principal_name", "string", "0+"),
            F("token_requester_principal_type", "string", "3+"),
            F("token_requester_principal_name", "string", "3+"),
            F("issue_timestamp", "int64", "0+"),
            F("expiry_timestamp", "int64", "0+"),
            F("max_timestamp", "int64", "0+"),
            F("token_id", "string", "0+"),
            F("hmac", "bytes", "0+"),
            F("renewers", "[]DescribedDelegationTokenRenewer", "0+",
                F("principal_type", "string", "0+"),
                F("principal_name", "string", "0+"),
            ),
        ),
        F("throttle_time_ms", "int32", "0+"),
    ],
)
