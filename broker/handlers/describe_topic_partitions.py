"""DescribeTopicPartitions (key 75), version 0: topics and their partitions, a page at a time.

Java's AdminClient.describeTopics (so kafka-topics --describe, Spark) asks this
before Metadata. As Kafka 4.3 answers (DescribeTopicPartitionsRequestHandler,
KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse):

- an empty topic list means every topic; the topics (at or after the cursor's
  topic, by name) are described in name order;
- at most response_partition_limit partitions are returned (clamped to
  1..max.request.partition.size.limit, 2000: Gregor accepts that setting but
  keeps Kafka's default); next_cursor names the first partition left out, or
  the next topic when the limit ran out exactly at a topic's end;
- a named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION, or
  INVALID_TOPIC_EXCEPTION for an invalid name; it uses none of the limit;
- a cursor whose topic is not in the list, or whose partition is negative,
  makes the whole request INVALID_REQUEST;
- partitions carry no error code; the leader is -1 when it is not a live
  broker; eligible leader replicas are empty lists (Gregor has no ELR).
"""

from __future__ import annotations

from broker.handlers.metadata import TOPIC_OPERATIONS, partition_entries
from broker.metadata.image import INTERNAL_TOPICS
from broker.metadata.publisher import MetadataCache
from broker.registry import handles
from broker.replica_manager import ReplicaManager
from broker.request_context import RequestContext
from broker.topics import TopicError, validate_topic_name
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.schema import ZERO_UUID

# Kafka's max.request.partition.size.limit default.
MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000


def error_response(request, code, message=None):
    """Kafka's answer to a request it refuses as a whole: each named topic with the error."""
    return {
        "throttle_time_ms": 0,
        "topics": [
            {"error_code": code, "name": t.name, "is_internal": False, "partitions": []}
            for t in request.topics
        ],
        "next_cursor": None,
    }


class DescribeTopicPartitionsHandler:
    def __init__(self, metadata: MetadataCache, replicas: ReplicaManager):
        self.metadata = metadata
        self.replicas = replicas

    @handles(ApiKey.DESCRIBE_TOPIC_PARTITIONS, "0", error_response)
    async def describe_topic_partitions(self, ctx: RequestContext, request):
        return _describe(self.metadata.image, self.replicas, request)


def _describe(image, replicas, request):
    cursor = request.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    every_topic = not request.topics
    wanted = image.topics if every_topic else (t.name for t in request.topics)
    names = sorted({name for name in wanted if name >= cursor_topic})
    if cursor is not None and (
        (not every_topic and cursor.topic_name not in names) or cursor.partition_index < 0
    ):
        return error_response(request, ErrorCode.INVALID_REQUEST)
    limit = max(min(MAX_REQUEST_PARTITION_SIZE_LIMIT, request.response_partition_limit), 1)
    remaining = limit
    topics = []
    next_cursor = None
    for name in names:
        if remaining == 0:
            # The limit ran out at the end of the previous topic.
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        topic = image.topic(name)
        if topic is None:
            if not every_topic:
                topics.append(_topic_error(name, _unknown_topic_error(name)))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        count = len(topic.partitions)
        upper = min(count, start + remaining)
        partitions = [
            {
                **entry,
                "error_code": ErrorCode.NONE,
                "eligible_leader_replicas": [],
                "last_known_elr": [],
            }
            for entry in partition_entries(
                image, replicas, topic, [i for i in range(start, upper) if i in topic.partitions]
            )
        ]
        topics.append(
            {
                "error_code": ErrorCode.NONE,
                "name": name,
                "topic_id": topic.topic_id,
                "is_internal": topic.is_internal,
                "partitions": partitions,
                "topic_authorized_operations": TOPIC_OPERATIONS,
            }
        )
        if upper < count:
            next_cursor = {"topic_name": name, "partition_index": upper}
            break
        remaining -= len(partitions)
    return {"throttle_time_ms": 0, "topics": topics, "next_cursor": next_cursor}


def _unknown_topic_error(name: str) -> ErrorCode:
    try:
        validate_topic_name(name)
    except TopicError:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _topic_error(name: str, code: int) -> dict:
    return {
        "error_code": code,
        "name": name,
        "topic_id": ZERO_UUID,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [],
        "topic_authorized_operations": TOPIC_OPERATIONS,
    }
