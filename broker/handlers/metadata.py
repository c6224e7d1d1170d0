"""Metadata (key 3), versions 0-12: brokers, topics, partitions, leaders.

Versions: v0 asks for all topics with an empty list, v1+ with null; v4+
carries allow_auto_topic_creation (before v4 creation is always allowed when
the broker enables it); v10+ returns topic ids; v12 may ask by topic id.
"""

from __future__ import annotations

from broker.registry import handles
from broker.topics import TopicError, validate_topic_name
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.schema import ZERO_UUID

# Without an authorizer every operation is allowed: READ, WRITE, CREATE,
# DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (AclOperation codes).
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
# CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
NOT_REQUESTED = -(2**31)


def broker_entries(ctx) -> list[dict]:
    broker = ctx.broker
    entries = []
    for node_id, info in sorted(broker.cluster.brokers.items()):
        if node_id == broker.node_id:
            _, host, port = broker.advertised_endpoint(ctx.listener)
        else:
            host, port = info.host, info.port
        entries.append({"node_id": node_id, "host": host, "port": port, "rack": info.rack})
    return entries


def topic_entry(ctx, topic, include_operations: bool) -> dict:
    live = set(ctx.broker.cluster.brokers)
    partitions = []
    for index in sorted(topic.partitions):
        p = topic.partitions[index]
        leader_live = p.leader in live
        error = ErrorCode.NONE if leader_live else ErrorCode.LEADER_NOT_AVAILABLE
        offline = [r for r in p.replicas if r not in live]
        local = ctx.broker.replicas.get(topic.name, index)
        if local is not None and local.log.offline:
            # This broker's replica lost its log dir.
            offline.append(ctx.broker.node_id)
            if p.leader == ctx.broker.node_id:
                error = ErrorCode.KAFKA_STORAGE_ERROR
        partitions.append(
            {
                "error_code": error,
                "partition_index": index,
                "leader_id": p.leader if leader_live else -1,
                "leader_epoch": p.leader_epoch,
                "replica_nodes": list(p.replicas),
                "isr_nodes": list(p.isr),
                "offline_replicas": offline,
            }
        )
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


@handles(ApiKey.METADATA, "0-12")
async def metadata(ctx, request):
    broker = ctx.broker
    cluster = broker.cluster
    version = ctx.api_version
    include_ops = bool(request.include_topic_authorized_operations)
    allow_create = broker.config.auto_create_topics_enable and (
        version < 4 or request.allow_auto_topic_creation
    )
    all_topics = request.topics is None or (version == 0 and not request.topics)
    topics = []
    if all_topics:
        for name in sorted(cluster.topics):
            topics.append(topic_entry(ctx, cluster.topics[name], include_ops))
    else:
        for wanted in request.topics:
            name = wanted.name
            if name is None:
                topic = cluster.topic_by_id(wanted.topic_id)
                if topic is None:
                    topics.append(_error_entry(None, ErrorCode.UNKNOWN_TOPIC_ID, wanted.topic_id))
                else:
                    topics.append(topic_entry(ctx, topic, include_ops))
                continue
            topic = cluster.topic(name)
            if topic is None:
                try:
                    validate_topic_name(name)
                except TopicError:
                    topics.append(_error_entry(name, ErrorCode.INVALID_TOPIC_EXCEPTION))
                    continue
                if not allow_create or name.startswith("__"):
                    topics.append(_error_entry(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                try:
                    topic = broker.topics.create(name)
                except TopicError as e:
                    code = (
                        e.code
                        if e.code
                        in (ErrorCode.INVALID_REPLICATION_FACTOR, ErrorCode.KAFKA_STORAGE_ERROR)
                        else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    )
                    topics.append(_error_entry(name, code))
                    continue
                # Kafka hands the creation to its controller and answers this
                # request with LEADER_NOT_AVAILABLE; clients ask again and
                # find the topic. Answering the same way keeps clients on the
                # code path they take with Kafka.
                topics.append(_error_entry(name, ErrorCode.LEADER_NOT_AVAILABLE))
                continue
            topics.append(topic_entry(ctx, topic, include_ops))
    return {
        "throttle_time_ms": 0,
        "brokers": broker_entries(ctx),
        "cluster_id": cluster.cluster_id,
        "controller_id": cluster.controller_id,
        "topics": topics,
        "cluster_authorized_operations": (
            CLUSTER_OPERATIONS if request.include_cluster_authorized_operations else NOT_REQUESTED
        ),
    }
