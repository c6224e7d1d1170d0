"""UpdateFeatures (API key 57)."""

from wire.schema import F, api

UPDATE_FEATURES = api(
    57,
    "UpdateFeatures",
    valid="0-2",
    flexible="0+",
    request=[
        F("timeout_ms", "int32", "0+", default=60000),
        F("feature_updates", "[]FeatureUpdateKey", "0+",
            F("feature", "string", "0+"),
            F("max_version_level", "int16", "0+"),
            F("allow_downgrade", "bool", "0"),
            F("upgrade_type", "int8", "1+", default=1),
        ),
        F("validate_only", "bool", "1+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("results", "[]UpdatableFeatureResult", "0-1",
            F("feature", "string", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
        ),
    ],
)
