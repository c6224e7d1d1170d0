"""FindCoordinator answers, shaped as Kafka shapes them (KafkaApis, 4.x).

Which broker coordinates a key is the broker's knowledge (the leader of the
key's `__consumer_offsets` or `__transaction_state` partition); this module
only computes the partition and lays the answer out per version: v0-3 answer
one key at the top level, v4+ a list of keys.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from coordinator.hashing import coordinator_partition
from wire.error_codes import ErrorCode

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
SHARE_KEY_TYPE = 2


class Node(NamedTuple):
    node_id: int
    host: str
    port: int


NO_NODE = Node(-1, "", -1)

# locate(key_type, key) -> (error, node). For groups, typically:
#   p = coordinator_partition(key, offsets.topic.num.partitions)
#   leader of __consumer_offsets-p, or (COORDINATOR_NOT_AVAILABLE, NO_NODE) when the
#   topic does not exist yet (create it) or the partition has no live leader.
Locate = Callable[[int, str], tuple[int, Node]]


def group_partition(group_id: str, offsets_topic_partitions: int) -> int:
    return coordinator_partition(group_id, offsets_topic_partitions)


def _message(error: int) -> str | None:
    # Kafka sends Errors.message(): the exception's message, "NONE" for NONE.
    error = ErrorCode(error)
    return "NONE" if error == ErrorCode.NONE else error.message


def find_coordinator(version: int, req, locate: Locate) -> dict:
    """The FindCoordinator response body for `req` at `version`."""
    key_type = req.key_type
    keys = list(req.coordinator_keys) if version >= 4 else [req.key]

    def one(key: str) -> tuple[int, Node]:
        if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE, SHARE_KEY_TYPE):
            return ErrorCode.INVALID_REQUEST, NO_NODE
        if key_type == SHARE_KEY_TYPE and version < 6:
            return ErrorCode.INVALID_REQUEST, NO_NODE
        error, node = locate(key_type, key)
        return error, (node if error == ErrorCode.NONE else NO_NODE)

    if version >= 4:
        coordinators = []
        for key in keys:
            error, node = one(key)
            coordinators.append(
                {
                    "key": key,
                    "node_id": node.node_id,
                    "host": node.host,
                    "port": node.port,
                    "error_code": int(error),
                    "error_message": None,
                }
            )
        return {"throttle_time_ms": 0, "coordinators": coordinators}
    error, node = one(keys[0])
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "error_message": _message(error),
        "node_id": node.node_id,
        "host": node.host,
        "port": node.port,
    }
