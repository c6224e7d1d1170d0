"""The classic group APIs, served by the group coordinator (broker/group_runtime.py).

JoinGroup 0-9, SyncGroup 0-5, Heartbeat 0-4, LeaveGroup 0-5, OffsetCommit
2-10, OffsetFetch 1-10, DescribeGroups 0-6 (v6 is Kafka 4.3's), ListGroups 0-5, DeleteGroups 0-2,
OffsetDelete 0, TxnOffsetCommit 0-5: the versions Kafka 4.x serves (librdkafka
still checks that the group APIs start at 0). A TxnOffsetCommit is first
verified with the transaction coordinator (the group's offsets partition must
be in the producer's open transaction, KIP-890 part 1), or from v5
(transactions v2) the partition is added to it there, as Kafka does. The coordinator shapes every response; the broker adds
only what Kafka's KafkaApis adds: partitions of topics that do not exist get
UNKNOWN_TOPIC_OR_PARTITION in OffsetCommit and OffsetDelete without reaching
the coordinator, and DescribeGroups carries the authorized operations when
asked. From v10 OffsetCommit and OffsetFetch name topics by id (KIP-848):
the broker names them for the coordinator, which keeps offsets by topic
name, and answers by id; an id it does not know is UNKNOWN_TOPIC_ID for
each of its partitions, as Kafka 4.3.1 answers (an OffsetFetch's with
offset -1 and empty metadata), and a topic whose offsets outlive it is left
out of a v10 answer for all topics, having no id to be named by.
"""

from __future__ import annotations

from broker.group_runtime import OFFSETS_TOPIC, GroupRuntime
from broker.metadata.publisher import MetadataCache
from broker.registry import handles
from broker.request_context import RequestContext
from broker.txn_verifier import Operation, TxnVerifier
from coordinator.responses import fetched_partition
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.values import Struct

# Without an authorizer every operation on a group is allowed: READ, DELETE,
# DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (AclOperation codes).
GROUP_OPERATIONS = sum(1 << op for op in (3, 6, 8, 10, 11))


def _split_unknown_partitions(image, request):
    """(request with only existing partitions, [(topic, [(partition, UNKNOWN...)])])."""
    known_topics = []
    unknown = []
    for topic in request.topics:
        info = image.topic(topic.name)
        known = [
            p for p in topic.partitions if info is not None and p.partition_index in info.partitions
        ]
        missing = [
            p for p in topic.partitions if info is None or p.partition_index not in info.partitions
        ]
        if known:
            known_topics.append(Struct(topic, partitions=known))
        if missing:
            unknown.append(
                (
                    topic.name,
                    [(p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for p in missing],
                )
            )
    return Struct(request, topics=known_topics), unknown


def _topics_by_name(image, topics) -> tuple[list, list]:
    """v10 names topics by id: (the topics the image knows, with their names
    filled in for the coordinator, the ones it does not)."""
    named, unknown = [], []
    for topic in topics:
        info = image.topic_by_id(topic.topic_id)
        if info is None:
            unknown.append(topic)
        else:
            named.append(Struct(topic, name=info.name))
    return named, unknown


def _with_topic_ids(image, topics: list[dict]) -> list[dict]:
    """A response's topics named by id as well; those no longer in the image
    have none and are left out."""
    out = []
    for topic in topics:
        info = image.topic(topic["name"])
        if info is not None:
            out.append({**topic, "topic_id": info.topic_id})
    return out


def _unknown_id_results(unknown, indexes_of, result_of) -> list[dict]:
    """The answer for topics named by an id the broker does not know: each of
    their partitions' result (`result_of(index)`), by topic id."""
    return [
        {"topic_id": topic.topic_id, "partitions": [result_of(i) for i in indexes_of(topic)]}
        for topic in unknown
    ]


def _merge_topic_results(response: dict, unknown, partition_key: str) -> dict:
    """Add the UNKNOWN_TOPIC_OR_PARTITION results to a response's topics."""
    topics = response.setdefault("topics", [])
    by_name = {t["name"]: t for t in topics}
    for name, results in unknown:
        entry = by_name.get(name)
        if entry is None:
            entry = {"name": name, partition_key: []}
            topics.append(entry)
            by_name[name] = entry
        entry[partition_key].extend(
            {"partition_index": index, "error_code": int(code)} for index, code in results
        )
    return response


class GroupsHandler:
    def __init__(self, groups: GroupRuntime, metadata: MetadataCache, verifier: TxnVerifier):
        self.groups = groups
        self.metadata = metadata
        self.verifier = verifier

    async def _forward(self, api_key: int, ctx: RequestContext, request):
        return await self.groups.request(api_key, ctx, request)

    @handles(ApiKey.JOIN_GROUP, "0-9")
    async def join_group(self, ctx: RequestContext, request):
        return await self._forward(ApiKey.JOIN_GROUP, ctx, request)

    @handles(ApiKey.SYNC_GROUP, "0-5")
    async def sync_group(self, ctx: RequestContext, request):
        return await self._forward(ApiKey.SYNC_GROUP, ctx, request)

    @handles(ApiKey.HEARTBEAT, "0-4")
    async def heartbeat(self, ctx: RequestContext, request):
        return await self._forward(ApiKey.HEARTBEAT, ctx, request)

    @handles(ApiKey.LEAVE_GROUP, "0-5")
    async def leave_group(self, ctx: RequestContext, request):
        return await self._forward(ApiKey.LEAVE_GROUP, ctx, request)

    @handles(ApiKey.OFFSET_FETCH, "1-10")
    async def offset_fetch(self, ctx: RequestContext, request):
        if ctx.api_version < 10:
            return await self._forward(ApiKey.OFFSET_FETCH, ctx, request)
        image = self.metadata.image
        groups, unknown_ids = [], []
        for group in request.groups:
            named, unknown = (
                (None, []) if group.topics is None else _topics_by_name(image, group.topics)
            )
            groups.append(Struct(group, topics=named))
            unknown_ids.append(unknown)
        response = await self._forward(ApiKey.OFFSET_FETCH, ctx, Struct(request, groups=groups))
        for group, unknown in zip(response["groups"], unknown_ids, strict=True):
            if group["error_code"] != ErrorCode.NONE:
                continue  # a group's error comes without topics
            group["topics"] = _with_topic_ids(image, group["topics"]) + _unknown_id_results(
                unknown,
                lambda topic: topic.partition_indexes,
                lambda index: fetched_partition(index, error=ErrorCode.UNKNOWN_TOPIC_ID),
            )
        return response

    @handles(ApiKey.LIST_GROUPS, "0-5")
    async def list_groups(self, ctx: RequestContext, request):
        return await self._forward(ApiKey.LIST_GROUPS, ctx, request)

    @handles(ApiKey.DELETE_GROUPS, "0-2")
    async def delete_groups(self, ctx: RequestContext, request):
        return await self._forward(ApiKey.DELETE_GROUPS, ctx, request)

    @handles(ApiKey.DESCRIBE_GROUPS, "0-6")
    async def describe_groups(self, ctx: RequestContext, request):
        response = await self._forward(ApiKey.DESCRIBE_GROUPS, ctx, request)
        if ctx.api_version >= 3 and request.include_authorized_operations:
            for group in response["groups"]:
                if group["error_code"] == ErrorCode.NONE:
                    group["authorized_operations"] = GROUP_OPERATIONS
        return response

    @handles(ApiKey.OFFSET_COMMIT, "2-10")
    async def offset_commit(self, ctx: RequestContext, request):
        image = self.metadata.image
        unknown_ids: list = []
        if ctx.api_version >= 10:
            named, unknown_ids = _topics_by_name(image, request.topics)
            request = Struct(request, topics=named)
        known, unknown = _split_unknown_partitions(image, request)
        response: dict
        if (unknown or unknown_ids) and not known.topics:
            response = {"throttle_time_ms": 0, "topics": []}
        else:
            response = await self._forward(ApiKey.OFFSET_COMMIT, ctx, known)
        response = _merge_topic_results(response, unknown, "partitions")
        if ctx.api_version >= 10:
            response["topics"] = _with_topic_ids(image, response["topics"]) + _unknown_id_results(
                unknown_ids,
                lambda topic: [p.partition_index for p in topic.partitions],
                lambda index: {"partition_index": index, "error_code": ErrorCode.UNKNOWN_TOPIC_ID},
            )
        return response

    @handles(ApiKey.OFFSET_DELETE, "0")
    async def offset_delete(self, ctx: RequestContext, request):
        known, unknown = _split_unknown_partitions(self.metadata.image, request)
        response = await self._forward(ApiKey.OFFSET_DELETE, ctx, known)
        if response.get("error_code", ErrorCode.NONE) != ErrorCode.NONE:
            return response
        return _merge_topic_results(response, unknown, "partitions")

    @handles(ApiKey.TXN_OFFSET_COMMIT, "0-5")
    async def txn_offset_commit(self, ctx: RequestContext, request):
        known, unknown = _split_unknown_partitions(self.metadata.image, request)
        if known.topics:
            offsets = (OFFSETS_TOPIC, self.groups.coordinator.partition_for(request.group_id))
            verified = await self.verifier.add_or_verify(
                request.transactional_id,
                request.producer_id,
                request.producer_epoch,
                [offsets],
                Operation.for_txn_offset_commit(ctx.api_version),
            )
            error = verified[offsets]
            if error != ErrorCode.NONE:
                if error in _RETRIABLE_VERIFY_ERRORS:
                    error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
                rejected = [
                    (t.name, [(p.partition_index, error) for p in t.partitions])
                    for t in known.topics
                ]
                return _merge_topic_results(
                    {"throttle_time_ms": 0, "topics": []}, rejected + unknown, "partitions"
                )
            response = await self._forward(ApiKey.TXN_OFFSET_COMMIT, ctx, known)
        else:
            response = {"throttle_time_ms": 0, "topics": []}
        return _merge_topic_results(response, unknown, "partitions")


# The transaction coordinator could not answer: the producer retries.
_RETRIABLE_VERIFY_ERRORS = {
    ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.CONCURRENT_TRANSACTIONS,
}
