"""AddRaftVoter (API key 80)."""

from wire.schema import F, api

ADD_RAFT_VOTER = api(
    80,
    "AddRaftVoter",
    valid="0",
    flexible="0+",
    request=[
        F("cluster_id", "string", "0+", nullable="0+"),
        F("timeout_ms", "int32", "0+"),
        F("voter_id", "int32", "0+"),
        F("voter_directory_id", "uuid", "0+"),
        F("listeners", "[]Listener", "0+",
            F("name", "string", "0+"),
            F("host", "string", "0+"),
            F("port", "uint16", "0+"),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
    ],
)
