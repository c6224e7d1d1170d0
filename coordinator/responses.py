"""Response bodies, shaped for the request's version as Kafka's response
classes shape them (JoinGroupResponse, LeaveGroupResponse, OffsetFetchResponse).

Bodies are plain dicts in `wire`'s field names; fields a version does not carry
are simply ignored by the encoder. A failed write of the coordinator's own
records reaches the client as the error `append_error_to_response_error` says.
"""

from __future__ import annotations

from collections.abc import Iterable

from wire.error_codes import ErrorCode

E = ErrorCode
NONE = ErrorCode.NONE
INT32_MIN = -(2**31)


def append_error_to_response_error(error: int) -> ErrorCode:
    """How Kafka reports a failed `__consumer_offsets` append to the client
    (GroupMetadataManager.appendGroupMetadataErrorToResponseError and
    CoordinatorOperationExceptionHelper)."""
    error = ErrorCode(error)
    if error in (E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS, E.REQUEST_TIMED_OUT):
        return E.COORDINATOR_NOT_AVAILABLE
    if error in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return E.NOT_COORDINATOR
    if error in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_FETCH_SIZE):
        return E.UNKNOWN_SERVER_ERROR
    return error


def join_group(
    version: int,
    error: int = NONE,
    *,
    member_id: str = "",
    generation_id: int = -1,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    leader: str = "",
    skip_assignment: bool = False,
    members: list[dict] | None = None,
) -> dict:
    # Before v7 the protocol name is not nullable: Kafka sends "" for null; from
    # v7 it sends null for "".
    if version < 7 and protocol_name is None:
        protocol_name = ""
    elif version >= 7 and protocol_name == "":
        protocol_name = None
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "generation_id": generation_id,
        "protocol_type": protocol_type,
        "protocol_name": protocol_name,
        "leader": leader if leader is not None else "",
        "skip_assignment": skip_assignment,
        "member_id": member_id,
        "members": members or [],
    }


def sync_group(
    error: int = NONE,
    *,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    assignment: bytes = b"",
) -> dict:
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "protocol_type": protocol_type,
        "protocol_name": protocol_name,
        "assignment": assignment,
    }


def heartbeat(error: int = NONE) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(error)}


def leave_group(version: int, error: int = NONE, members: list[dict] | None = None) -> dict:
    """v3+ carries per-member errors; v0-2 fold the first member error into the
    top-level one (LeaveGroupResponse)."""
    members = members or []
    if version < 3 and error == NONE:
        error = next((m["error_code"] for m in members if m["error_code"] != NONE), NONE)
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "members": members if version >= 3 else [],
    }


def leave_member(member_id: str, group_instance_id: str | None, error: int = NONE) -> dict:
    return {
        "member_id": member_id,
        "group_instance_id": group_instance_id,
        "error_code": int(error),
    }


def offset_commit(topics: Iterable[tuple[str, Iterable[tuple[int, int]]]]) -> dict:
    """topics: (name, [(partition, error), ...])."""
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": name,
                "partitions": [{"partition_index": p, "error_code": int(e)} for p, e in parts],
            }
            for name, parts in topics
        ],
    }


def fetched_partition(
    partition: int, offset: int = -1, leader_epoch: int = -1, metadata: str = "", error: int = NONE
) -> dict:
    return {
        "partition_index": partition,
        "committed_offset": offset,
        "committed_leader_epoch": leader_epoch,
        "metadata": metadata,
        "error_code": int(error),
    }


def fetched_group(group_id: str, topics: list[dict] | None = None, error: int = NONE) -> dict:
    """One group of an OffsetFetch (the v8+ layout); topics: {name, partitions}."""
    return {"group_id": group_id, "topics": topics or [], "error_code": int(error)}


def offset_fetch(version: int, groups: list[dict]) -> dict:
    """v8+ answers per group; before, the single group's topics and error go at
    the top level. A group error comes without topics, except before v2, which
    has no top-level error: there it is repeated in every requested partition
    (as Kafka's OffsetFetchRequest.getErrorResponse did for those versions)."""
    if version >= 8:
        return {
            "throttle_time_ms": 0,
            "groups": [g if g["error_code"] == NONE else {**g, "topics": []} for g in groups],
        }
    (group,) = groups
    error = group["error_code"]
    if version >= 2 and error != NONE:
        return {"throttle_time_ms": 0, "topics": [], "error_code": int(error)}
    topics = []
    for topic in group["topics"]:
        parts = topic["partitions"]
        if version < 2 and error != NONE:
            parts = [fetched_partition(p["partition_index"], error=error) for p in parts]
        topics.append({"name": topic["name"], "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics, "error_code": int(error)}


def described_group(
    group_id: str,
    error: int = NONE,
    *,
    state: str = "",
    protocol_type: str = "",
    protocol_data: str = "",
    members: list[dict] | None = None,
    message: str | None = None,
) -> dict:
    return {
        "error_code": int(error),
        "error_message": message,
        "group_id": group_id,
        "group_state": state,
        "protocol_type": protocol_type,
        "protocol_data": protocol_data,
        "members": members or [],
        # Left for the broker: Kafka fills it only when include_authorized_operations.
        "authorized_operations": INT32_MIN,
    }


def describe_groups(groups: list[dict]) -> dict:
    return {"throttle_time_ms": 0, "groups": groups}


def list_groups(error: int = NONE, groups: list[dict] | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(error), "groups": groups or []}


def delete_groups(results: list[tuple[str, int]]) -> dict:
    return {
        "throttle_time_ms": 0,
        "results": [{"group_id": g, "error_code": int(e)} for g, e in results],
    }


def offset_delete(
    error: int = NONE, topics: Iterable[tuple[str, Iterable[tuple[int, int]]]] = ()
) -> dict:
    return {
        "error_code": int(error),
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": name,
                "partitions": [{"partition_index": p, "error_code": int(e)} for p, e in parts],
            }
            for name, parts in topics
        ],
    }
