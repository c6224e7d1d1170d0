"""ListPartitionReassignments (key 46) and AlterPartitionReassignments (key 45), version 0.

Gregor never moves replicas, so no reassignment is ever in progress: Kafka
4.3.1 answers an empty topic list both for "all" (null topics) and for named
partitions with nothing in flight, existing or not. Altering is answered per
partition as Kafka's controller validates it (unknown topic or partition,
then the replica list: empty, unregistered broker, duplicate broker, checked
in sorted order); cancelling (null replicas) finds nothing to cancel, and
asking for the replicas a partition already has is a no-op that succeeds.
Any other replica set would need data moved, which Gregor does not do.
"""

from __future__ import annotations

from broker.metadata.publisher import MetadataCache
from broker.registry import handles
from broker.request_context import RequestContext
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


class ReassignmentsHandler:
    def __init__(self, metadata: MetadataCache):
        self.metadata = metadata

    @handles(ApiKey.LIST_PARTITION_REASSIGNMENTS, "0")
    async def list_partition_reassignments(self, ctx: RequestContext, request):
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "topics": [],
        }

    @handles(ApiKey.ALTER_PARTITION_REASSIGNMENTS, "0")
    async def alter_partition_reassignments(self, ctx: RequestContext, request):
        return _alter(self.metadata.image, request)


def _alter(cluster, request):
    responses = [
        {
            "name": t.name,
            "partitions": [
                partition_result(cluster, t.name, p.partition_index, p.replicas)
                for p in t.partitions
            ],
        }
        for t in request.topics
    ]
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        # Kafka answers an empty message, not null, when no topic was named.
        "error_message": None if responses else "",
        "responses": responses,
    }


def partition_result(cluster, topic_name, index, replicas):
    error, message = reassignment_error(cluster, topic_name, index, replicas)
    return {"partition_index": index, "error_code": error, "error_message": message}


def reassignment_error(cluster, topic_name, index, replicas):
    topic = cluster.topic(topic_name)
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic_name}."
    partition = topic.partitions.get(index)
    if partition is None:
        return (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"Unable to find partition {topic_name}:{index}.",
        )
    if replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
    invalid = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    if not replicas:
        return invalid, "The manual partition assignment includes an empty replica list."
    previous = None
    for broker_id in sorted(replicas):
        if broker_id not in cluster.brokers:
            return invalid, (
                f"The manual partition assignment includes broker {broker_id}, "
                "but no such broker is registered."
            )
        if broker_id == previous:
            return invalid, (
                f"The manual partition assignment includes the broker {broker_id} more than once."
            )
        previous = broker_id
    if tuple(replicas) != tuple(partition.replicas):
        return invalid, "Gregor does not move replicas between brokers."
    return ErrorCode.NONE, None
