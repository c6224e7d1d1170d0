"""ApiVersions (API key 18)."""

from wire.schema import F, api

API_VERSIONS = api(
    18,
    "ApiVersions",
    valid="0-4",
    flexible="3+",
    request=[
        F("client_software_name", "string", "3+"),
        F("client_software_version", "string", "3+"),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("api_keys", "[]ApiVersion", "0+",
            F("api_key", "int16", "0+"),
            F("min_version", "int16", "0+"),
            F("max_version", "int16", "0+"),
        ),
        F("throttle_time_ms", "int32", "1+"),
        F("supported_features", "[]SupportedFeatureKey", "3+",
            F("name", "string", "3+"),
            F("min_version", "int16", "3+"),
            F("max_version", "int16", "3+"),
            tagged="3+", tag=0,
        ),
        F("finalized_features_epoch", "int64", "3+", tagged="3+", tag=1, default=-1),
        F("finalized_features", "[]FinalizedFeatureKey", "3+",
            F("name", "string", "3+"),
            F("max_version_level", "int16", "3+"),
            F("min_version_level", "int16", "3+"),
            tagged="3+", tag=2,
        ),
        F("zk_migration_ready", "bool", "3+", tagged="3+", tag=3),
    ],
)
