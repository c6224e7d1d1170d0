"""Metadata (key 3), versions 0-13: brokers, topics, partitions, leaders.

Versions: v0 asks for all topics with an empty list, v1+ with null; v4+
carries allow_auto_topic_creation (before v4 creation is always allowed when
the broker enables it); v10+ returns topic ids; v12 may ask by topic id; v13
adds a top-level error code (KIP-1102's REBOOTSTRAP_REQUIRED, which a broker
answering from its own metadata never needs: always NONE, as Kafka's is).
"""

from __future__ import annotations

from broker.config import BrokerConfig
from broker.metadata.image import MetadataImage, TopicImage
from broker.metadata.publisher import MetadataCache
from broker.registry import handles
from broker.replica_manager import ReplicaManager
from broker.request_context import RequestContext
from broker.topics import TopicError, TopicManager, validate_topic_name
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.schema import ZERO_UUID
from wire.values import EncodeOnce

# Without an authorizer every operation is allowed: READ, WRITE, CREATE,
# DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (AclOperation codes).
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
# CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
NOT_REQUESTED = -(2**31)


def reachable_brokers(image: MetadataImage, listener: str, include_fenced: bool = False):
    """(registration, endpoint) of the live brokers, and the fenced ones when
    asked for, as clients on `listener` reach them (Kafka leaves out brokers
    without an endpoint on that listener), by node id."""
    for _, registration in sorted(image.brokers.items()):
        endpoint = registration.endpoint(listener)
        if endpoint is None or (registration.fenced and not include_fenced):
            continue
        yield registration, endpoint


def broker_entries(image: MetadataImage, listener: str) -> list[dict]:
    """The live brokers as Metadata lists them."""
    return [
        {"node_id": b.node_id, "host": e.host, "port": e.port, "rack": b.rack}
        for b, e in reachable_brokers(image, listener)
    ]


def partition_entries(
    image: MetadataImage, replicas: ReplicaManager, topic: TopicImage, indexes
) -> list[dict]:
    """Partitions as Metadata and DescribeTopicPartitions describe them: a
    leader that is not live is -1 (LEADER_NOT_AVAILABLE), replicas on brokers
    that are not live or on a failed log dir of this broker are offline."""
    entries = []
    for index in indexes:
        p = topic.partitions[index]
        error = ErrorCode.NONE if image.is_live(p.leader) else ErrorCode.LEADER_NOT_AVAILABLE
        offline = [r for r in p.replicas if not image.is_live(r)]
        if replicas.is_offline((topic.name, index)):
            offline.append(replicas.node_id)
            if p.leader == replicas.node_id:
                error = ErrorCode.KAFKA_STORAGE_ERROR
        entries.append(
            {
                "error_code": error,
                "partition_index": index,
                "leader_id": p.leader if image.is_live(p.leader) else -1,
                "leader_epoch": p.leader_epoch,
                "replica_nodes": list(p.replicas),
                "isr_nodes": list(p.isr),
                "offline_replicas": offline,
            }
        )
    return entries


class PartitionEntriesCache:
    """Each topic's partition entries as Metadata answers them, kept while
    nothing they say can have changed: the same metadata image (a change makes
    a new one) and no replica of this broker gone offline or back since.
    Clients of topics with many partitions ask for metadata often: building a
    thousand entries for each answer was a fifth of the event loop's time in
    the 1,000-partition benchmark. The entries are shared between responses
    and never changed, so the codec encodes each only once (`EncodeOnce`)."""

    def __init__(self, replicas: ReplicaManager):
        self.replicas = replicas
        self._image: MetadataImage | None = None
        self._stamp: tuple[int, int] | None = None
        self._entries: dict[str, EncodeOnce] = {}

    def get(self, image: MetadataImage, topic: TopicImage) -> EncodeOnce:
        stamp = self.replicas.offline_stamp()
        if image is not self._image or stamp != self._stamp:
            self._image, self._stamp, self._entries = image, stamp, {}
        entries = self._entries.get(topic.name)
        if entries is None:
            # Encoded once per version, then reused while the entries hold.
            entries = EncodeOnce(
                partition_entries(image, self.replicas, topic, sorted(topic.partitions))
            )
            self._entries[topic.name] = entries
        return entries


def topic_entry(partitions: list[dict], topic, include_operations: bool) -> dict:
    return {
        "error_code": ErrorCode.NONE,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.is_internal,
        "partitions": partitions,
        "topic_authorized_operations": TOPIC_OPERATIONS if include_operations else NOT_REQUESTED,
    }


def _error_entry(name, code, topic_id=ZERO_UUID) -> dict:
    return {"error_code": code, "name": name, "topic_id": topic_id, "partitions": []}


class MetadataHandler:
    def __init__(
        self,
        metadata: MetadataCache,
        replicas: ReplicaManager,
        topics: TopicManager,
        config: BrokerConfig,
    ):
        self.metadata = metadata
        self.replicas = replicas
        self.topics = topics
        self.config = config
        self.partition_entries = PartitionEntriesCache(replicas)

    @handles(ApiKey.METADATA, "0-13")
    async def metadata(self, ctx: RequestContext, request):
        image = self.metadata.image
        version = ctx.api_version
        include_ops = bool(request.include_topic_authorized_operations)
        allow_create = self.config.auto_create_topics_enable and (
            version < 4 or request.allow_auto_topic_creation
        )
        all_topics = request.topics is None or (version == 0 and not request.topics)
        topics = []
        if all_topics:
            for name in sorted(image.topics):
                topics.append(self._entry(image, image.topics[name], include_ops))
        else:
            for wanted in request.topics:
                topics.append(await self._topic(image, wanted, allow_create, include_ops))
        return {
            "throttle_time_ms": 0,
            "brokers": broker_entries(image, ctx.listener),
            "cluster_id": image.cluster_id,
            "controller_id": image.controller_id,
            "topics": topics,
            "cluster_authorized_operations": (
                CLUSTER_OPERATIONS
                if request.include_cluster_authorized_operations
                else NOT_REQUESTED
            ),
            "error_code": ErrorCode.NONE,
        }

    def _entry(self, image, topic, include_ops: bool) -> dict:
        return topic_entry(self.partition_entries.get(image, topic), topic, include_ops)

    async def _topic(self, image, wanted, allow_create: bool, include_ops: bool) -> dict:
        name = wanted.name
        if name is None:
            topic = image.topic_by_id(wanted.topic_id)
            if topic is None:
                return _error_entry(None, ErrorCode.UNKNOWN_TOPIC_ID, wanted.topic_id)
            return self._entry(image, topic, include_ops)
        topic = image.topic(name)
        if topic is not None:
            return self._entry(image, topic, include_ops)
        try:
            validate_topic_name(name)
        except TopicError:
            return _error_entry(name, ErrorCode.INVALID_TOPIC_EXCEPTION)
        if not allow_create or name.startswith("__"):
            return _error_entry(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        try:
            await self.topics.create(name)
        except TopicError as e:
            if e.code == ErrorCode.TOPIC_ALREADY_EXISTS:
                # Created by another request meanwhile: as if we had made it.
                return _error_entry(name, ErrorCode.LEADER_NOT_AVAILABLE)
            code = (
                e.code
                if e.code in (ErrorCode.INVALID_REPLICATION_FACTOR, ErrorCode.KAFKA_STORAGE_ERROR)
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
            return _error_entry(name, code)
        # Kafka hands the creation to its controller and answers this
        # request with LEADER_NOT_AVAILABLE; clients ask again and
        # find the topic. Answering the same way keeps clients on the
        # code path they take with Kafka.
        return _error_entry(name, ErrorCode.LEADER_NOT_AVAILABLE)
