"""LeaveGroup (API key 13)."""

from wire.schema import F, api

LEAVE_GROUP = api(
    13,
    "LeaveGroup",
    valid="0-5",
    flexible="4+",
    request=[
        F("group_id", "string", "0+"),
        F("member_id", "string", "0-2"),
        F("members", "[]MemberIdentity", "3+",
            F("member_id", "string", "3+"),
            F("group_instance_id", "string", "3+", nullable="3+", default=None),
            F("reason", "string", "5+", nullable="5+", default=None),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "0+"),
        F("members", "[]MemberResponse", "3+",
            F("member_id", "string", "3+"),
            F("group_instance_id", "string", "3+", nullable="3+"),
            F("error_code", "int16", "3+"),
        ),
    ],
)
