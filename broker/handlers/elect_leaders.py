"""ElectLeaders (key 43), versions 0-2: preferred (0) and unclean (1) elections.

The controller makes the elections (broker/controller/elections.py):
PREFERRED gives leadership back to the first replica when it is live and in
sync; UNCLEAN gives a leaderless partition a leader (from the ISR, else any
live replica). A partition already led as asked is ELECTION_NOT_NEEDED; on a
single node every election is, as Kafka 4.3.1 answers there. Naming no
partitions (null) elects everywhere and, as Kafka, leaves out of the answer
the partitions that needed no election. Unknown topics and partitions get
Kafka's own messages.
"""

from __future__ import annotations

from broker.controller.api import Controller
from broker.metadata.publisher import MetadataCache
from broker.registry import handles
from broker.request_context import RequestContext
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


class ElectLeadersHandler:
    def __init__(self, metadata: MetadataCache, controller: Controller):
        self.metadata = metadata
        self.controller = controller

    @handles(ApiKey.ELECT_LEADERS, "0-2")
    async def elect_leaders(self, ctx: RequestContext, request):
        image = self.metadata.image
        election_type = request.election_type if ctx.api_version >= 1 else 0
        every = request.topic_partitions is None
        if every:
            wanted = [(t.name, i) for t in image.topics.values() for i in sorted(t.partitions)]
        else:
            wanted = [(t.topic, p) for t in request.topic_partitions for p in t.partitions]
        answers = await self.controller.elect_leaders(
            [tp for tp in wanted if image.partition(*tp) is not None], election_type
        )
        results: dict[str, list] = {}
        if every:
            results = {name: [] for name in image.topics}
        for topic, index in wanted:
            error, message = answers.get((topic, index)) or _unknown(image, topic, index)
            if every and error == ErrorCode.ELECTION_NOT_NEEDED:
                continue
            results.setdefault(topic, []).append(
                {"partition_id": index, "error_code": error, "error_message": message}
            )
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.NONE,
            "replica_election_results": [
                {"topic": topic, "partition_result": parts} for topic, parts in results.items()
            ],
        }


def _unknown(image, topic_name: str, index: int) -> tuple[ErrorCode, str]:
    if image.topic(topic_name) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic_name}"
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic_name}-{index}"
