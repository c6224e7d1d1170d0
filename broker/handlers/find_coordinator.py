"""FindCoordinator (key 10), versions 0-6: which broker coordinates a group
(or a transactional id).

The coordinator of a key is the leader of its partition of the internal topic
(`__consumer_offsets` for groups, `__transaction_state` for transactional
ids), which is created here on first use, as Kafka does. Until it exists and
has a live leader the answer is COORDINATOR_NOT_AVAILABLE, which clients
retry. The response layout per version is the coordinator package's.
"""

from __future__ import annotations

from broker.group_runtime import OFFSETS_TOPIC, TRANSACTION_TOPIC, GroupRuntime
from broker.metadata.publisher import MetadataCache
from broker.registry import handles
from broker.request_context import RequestContext
from broker.txn_runtime import TransactionRuntime
from coordinator.find_coordinator import (
    GROUP_KEY_TYPE,
    NO_NODE,
    TRANSACTION_KEY_TYPE,
    Node,
)
from coordinator.find_coordinator import (
    find_coordinator as find_coordinator_response,
)
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


class FindCoordinatorHandler:
    def __init__(self, groups: GroupRuntime, txns: TransactionRuntime, metadata: MetadataCache):
        self.groups = groups
        self.txns = txns
        self.metadata = metadata

    @handles(ApiKey.FIND_COORDINATOR, "0-6")
    async def find_coordinator(self, ctx: RequestContext, request):
        # The coordinator package walks the keys and shapes the answer; it
        # asks `locate` for each. Internal topics are created first, here.
        keys = {GROUP_KEY_TYPE: OFFSETS_TOPIC, TRANSACTION_KEY_TYPE: TRANSACTION_TOPIC}
        topic_name = keys.get(request.key_type)
        if topic_name is not None:
            await self.groups.ensure_topic(topic_name)
        image = self.metadata.image

        def locate(key_type: int, key: str):
            if key_type not in keys:
                # Share groups: Kafka 4.x answers only when share groups are enabled.
                return ErrorCode.INVALID_REQUEST, NO_NODE
            topic = image.topic(keys[key_type])
            if topic is None:
                return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_NODE
            if key_type == GROUP_KEY_TYPE:
                index = self.groups.coordinator.partition_for(key)
            else:
                index = self.txns.coordinator.partition_for(key)
            leader = topic.partitions[index].leader
            registration = image.brokers.get(leader)
            if registration is None:
                return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_NODE
            endpoint = registration.endpoint(ctx.listener)
            if endpoint is None or registration.fenced:
                return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_NODE
            return ErrorCode.NONE, Node(leader, endpoint.host, endpoint.port)

        return find_coordinator_response(ctx.api_version, request, locate)
