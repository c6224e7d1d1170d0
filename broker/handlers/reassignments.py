"""ListPartitionReassignments (key 46) version 0 and AlterPartitionReassignments
(key 45) versions 0-1.

Reassignment moves a partition's replicas as Kafka's KIP-455 does, through
the controller (broker/controller/elections.py): the replica set becomes the
target plus the replicas leaving, the new replicas fetch until they are in
sync, then the leaving ones are dropped (a leaving leader hands over first)
and their logs deleted. Until then ListPartitionReassignments shows the
partition with its adding and removing replicas. Null replicas cancel a
reassignment in progress (NO_REASSIGNMENT_IN_PROGRESS when there is none);
asking for the replicas a partition already has is a no-op that succeeds.
Kafka 4.3.1 answers an empty topic list when nothing is in flight, both for
"all" (null topics) and for named partitions. Each partition is validated
as Kafka's controller does (unknown topic or partition, then the replica
list: empty, unregistered broker, duplicate broker, checked in sorted
order), with Kafka's messages. From v1 (KIP-860) a request may refuse
changes of replication factor: a target whose size is not that of the
replica set the partition is headed for (its replicas, or during a
reassignment its replicas and adding ones without the removing ones) is then
INVALID_REPLICATION_FACTOR, checked after the replica list.
"""

from __future__ import annotations

from broker.controller.api import Controller
from broker.metadata.publisher import MetadataCache
from broker.registry import handles
from broker.request_context import RequestContext
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


class ReassignmentsHandler:
    def __init__(self, metadata: MetadataCache, controller: Controller):
        self.metadata = metadata
        self.controller = controller

    @handles(ApiKey.LIST_PARTITION_REASSIGNMENTS, "0")
    async def list_partition_reassignments(self, ctx: RequestContext, request):
        image = self.metadata.image
        if request.topics is None:
            wanted = [(t.name, i) for t in image.topics.values() for i in sorted(t.partitions)]
        else:
            wanted = [(t.name, i) for t in request.topics for i in t.partition_indexes]
        topics: dict[str, list] = {}
        for name, index in wanted:
            reg = image.partition(name, index)
            if reg is None or not reg.reassigning:
                continue
            topics.setdefault(name, []).append(
                {
                    "partition_index": index,
                    "replicas": list(reg.replicas),
                    "adding_replicas": list(reg.adding_replicas),
                    "removing_replicas": list(reg.removing_replicas),
                }
            )
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "topics": [{"name": n, "partitions": parts} for n, parts in topics.items()],
        }

    @handles(ApiKey.ALTER_PARTITION_REASSIGNMENTS, "0-1")
    async def alter_partition_reassignments(self, ctx: RequestContext, request):
        image = self.metadata.image
        answers: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
        moves: dict[tuple[str, int], list[int] | None] = {}
        for t in request.topics:
            for p in t.partitions:
                tp = (t.name, p.partition_index)
                error, message = reassignment_error(image, t.name, p.partition_index, p.replicas)
                current = image.partition(*tp)
                if (
                    error == ErrorCode.NONE
                    and p.replicas is not None
                    and not request.allow_replication_factor_change
                ):
                    error, message = _replication_factor_change(current, p.replicas)
                if error != ErrorCode.NONE or current is None:
                    answers[tp] = (error, message)
                elif p.replicas is None or tuple(p.replicas) != current.replicas:
                    moves[tp] = None if p.replicas is None else list(p.replicas)
                else:
                    answers[tp] = (ErrorCode.NONE, None)
        if moves:
            answers.update(await self.controller.alter_partition_reassignments(moves))
        responses = [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": answers[(t.name, p.partition_index)][0],
                        "error_message": answers[(t.name, p.partition_index)][1],
                    }
                    for p in t.partitions
                ],
            }
            for t in request.topics
        ]
        return _answer(responses, request.allow_replication_factor_change)


def _replication_factor_change(current, replicas) -> tuple[ErrorCode, str | None]:
    """Kafka's validatePartitionReplicationFactorUnchanged."""
    heading = (set(current.replicas) | set(current.adding_replicas)) - set(
        current.removing_replicas
    )
    if len(heading) == len(replicas):
        return ErrorCode.NONE, None
    return (
        ErrorCode.INVALID_REPLICATION_FACTOR,
        f"The replication factor is changed from {len(heading)} to {len(replicas)}",
    )


def _answer(responses, allow_replication_factor_change: bool):
    return {
        "throttle_time_ms": 0,
        "allow_replication_factor_change": allow_replication_factor_change,
        "error_code": ErrorCode.NONE,
        # Kafka answers an empty message, not null, when no topic was named.
        "error_message": None if responses else "",
        "responses": responses,
    }


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
        if not partition.reassigning:
            return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
        return ErrorCode.NONE, None
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
    return ErrorCode.NONE, None
