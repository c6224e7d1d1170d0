"""RemoveRaftVoter (API key 81)."""

from wire.schema import F, api

REMOVE_RAFT_VOTER = api(
    81,
    "RemoveRaftVoter",
    valid="0",
    flexible="0+",
    request=[
        F("cluster_id", "string", "0+", nullable="0+"),
        F("voter_id", "int32", "0+"),
        F("voter_directory_id", "uuid", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
    ],
)
