"""FindCoordinator (key 10), versions 0-6: which broker coordinates a group
(or a transactional id).

The coordinator of a key is the leader of its partition of the internal topic
(`__consumer_offsets` for groups, `__transaction_state` for transactional
ids), which is created here on first use, as Kafka does. Until it exists and
has a live leader the answer is COORDINATOR_NOT_AVAILABLE, which clients
retry. The response layout per version is the coordinator package's.
"""

from __future__ import annotations

from broker.group_runtime import OFFSETS_TOPIC, TRANSACTION_TOPIC
from broker.handlers.common import node_endpoint
from broker.registry import handles
from coordinator.find_coordinator import (
    GROUP_KEY_TYPE,
    NO_NODE,
    TRANSACTION_KEY_TYPE,
    Node,
)
from coordinator.find_coordinator import (
    find_coordinator as find_coordinator_response,
)
from coordinator.hashing import coordinator_partition
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


@handles(ApiKey.FIND_COORDINATOR, "0-6")
async def find_coordinator(ctx, request):
    def locate(key_type: int, key: str):
        if key_type == GROUP_KEY_TYPE:
            topic_name = OFFSETS_TOPIC
        elif key_type == TRANSACTION_KEY_TYPE:
            topic_name = TRANSACTION_TOPIC
        else:
            # Share groups: Kafka 4.x answers only when share groups are enabled.
            return ErrorCode.INVALID_REQUEST, NO_NODE
        topic = ctx.broker.groups.ensure_topic(topic_name)
        if topic is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_NODE
        if key_type == GROUP_KEY_TYPE:
            index = ctx.broker.groups.coordinator.partition_for(key)
        else:
            index = coordinator_partition(key, len(topic.partitions))
        leader = topic.partitions[index].leader
        endpoint = node_endpoint(ctx, leader)
        if endpoint is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_NODE
        return ErrorCode.NONE, Node(leader, *endpoint)

    return find_coordinator_response(ctx.api_version, request, locate)
