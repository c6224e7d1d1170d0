"""ElectLeaders (key 43), versions 0-2: preferred (0) and unclean (1) elections.

Gregor does not move leadership on request: on a single node the leader is the
first replica, the preferred one, so
every election on it is ELECTION_NOT_NEEDED, as Kafka 4.3.1 answers on a
single node. Naming no partitions (null) elects everywhere: Kafka then lists
every topic with no partition results, leaving out the partitions that needed
no election. Unknown topics and partitions get Kafka's own messages.
"""

from __future__ import annotations

from broker.metadata.publisher import MetadataCache
from broker.registry import handles
from broker.request_context import RequestContext
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


class ElectLeadersHandler:
    def __init__(self, metadata: MetadataCache):
        self.metadata = metadata

    @handles(ApiKey.ELECT_LEADERS, "0-2")
    async def elect_leaders(self, ctx: RequestContext, request):
        return _elect(self.metadata.image, request)


def _elect(cluster, request):
    if request.topic_partitions is None:
        results = [{"topic": name, "partition_result": []} for name in cluster.topics]
    else:
        results = [
            {
                "topic": t.topic,
                "partition_result": [partition_result(cluster, t.topic, p) for p in t.partitions],
            }
            for t in request.topic_partitions
        ]
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "replica_election_results": results,
    }


def partition_result(cluster, topic_name, index):
    topic = cluster.topic(topic_name)
    if topic is None:
        error, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic_name}"
    elif index not in topic.partitions:
        error, message = (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"No such partition as {topic_name}-{index}",
        )
    else:
        error = ErrorCode.ELECTION_NOT_NEEDED
        message = "Leader election not needed for topic partition."
    return {"partition_id": index, "error_code": error, "error_message": message}
