"""UpdateRaftVoter (API key 82)."""

from wire.schema import F, api

UPDATE_RAFT_VOTER = api(
    82,
    "UpdateRaftVoter",
    valid="0",
    flexible="0+",
    request=[
        F("cluster_id", "string", "0+", nullable="0+"),
        F("current_leader_epoch", "int32", "0+"),
        F("voter_id", "int32", "0+"),
        F("voter_directory_id", "uuid", "0+"),
        F("listeners", "[]Listener", "0+",
            F("name", "string", "0+"),
            F("host", "string", "0+"),
            F("port", "uint16", "0+"),
        ),
        F("k_raft_version_feature", "KRaftVersionFeature", "0+",
            F("min_supported_version", "int16", "0+"),
            F("max_supported_version", "int16", "0+"),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("current_leader", "CurrentLeader", "0+",
            F("leader_id", "int32", "0+", default=-1),
            F("leader_epoch", "int32", "0+", default=-1),
            F("host", "string", "0+"),
            F("port", "int32", "0+"),
            tagged="0+", tag=0,
        ),
    ],
)
