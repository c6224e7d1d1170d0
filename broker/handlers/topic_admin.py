"""Creating, deleting and growing topics: CreateTopics (key 19) 2-7,
DeleteTopics (20) 1-6, CreatePartitions (37) 0-3.

Kafka 4.3's answers, as its controller words them (ControllerApis and
ReplicationControlManager): a name given twice in one request gets
INVALID_REQUEST "Duplicate topic name." (listed after the other results for
CreateTopics, before them for CreatePartitions); the rules and messages of
each check live in `broker.topics`. validate_only runs every check and
changes nothing; like Kafka, a validated CreateTopics still answers with a
fresh topic id. Versions: CreateTopics v5+ returns the partition count,
replication factor and the effective configs with their sources, v7 the
topic id; DeleteTopics v5+ carries error messages, v6 addresses topics by
name or by id. timeout_ms is not waited on: every change is complete when
the answer leaves.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping, Sequence

from broker.config import BrokerConfig, ConfigSource
from broker.config.topic import TOPIC_CONFIG_KEYS, TOPIC_CONFIG_SYNONYMS, TopicConfig
from broker.metadata.image import random_uuid
from broker.metadata.publisher import MetadataCache
from broker.registry import handles
from broker.request_context import RequestContext
from broker.topics import TopicError, TopicManager
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.schema import ZERO_UUID

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
DUPLICATE_NAME = "Duplicate topic name."
_NEITHER = "Neither topic name nor id were specified."
_BOTH = "You may not specify both topic name and topic id."
_SAME_TOPIC = "The provided topic name maps to an ID that was already supplied."


# --- CreateTopics ---------------------------------------------------------------


def _create_error(name: str, code: int, message: str | None) -> dict:
    return {
        "name": name,
        "topic_id": ZERO_UUID,
        "error_code": code,
        "error_message": message,
        "num_partitions": -1,
        "replication_factor": -1,
    }


def _create_topics_error(request, code, message=None):
    return {"topics": [_create_error(t.name, code, message) for t in request.topics]}


def creation_configs(broker_config, overrides: dict[str, str]) -> list[dict]:
    """The configs a CreateTopics v5+ answer lists: every topic key, sorted,
    with its effective value and where it comes from (Kafka's
    KafkaConfigSchema.resolveEffectiveTopicConfig: the topic's own value as
    given, else the first broker synonym set dynamically for this broker, for
    the cluster, or statically, else the default)."""
    effective = TopicConfig(broker_config, overrides)
    layers = (
        (broker_config.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
        (broker_config.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        (broker_config.static, ConfigSource.STATIC_BROKER_CONFIG),
    )
    entries = []
    for name in sorted(TOPIC_CONFIG_KEYS):
        spec = TOPIC_CONFIG_KEYS[name]
        value: str | None
        if name in overrides:
            value, source = overrides[name], ConfigSource.TOPIC_CONFIG
        else:
            value, source = effective.string_value(name), ConfigSource.DEFAULT_CONFIG
            synonyms = TOPIC_CONFIG_SYNONYMS.get(name, [])
            for layer, layer_source in layers:
                if any(s in layer for s in synonyms):
                    source = layer_source
                    break
        entries.append(
            {
                "name": name,
                "value": None if spec.sensitive else value,
                "read_only": False,
                "config_source": source,
                "is_sensitive": spec.sensitive,
            }
        )
    return entries


async def _create_topics(topics: TopicManager, broker_config: BrokerConfig, request):
    counts = Counter(t.name for t in request.topics)
    results = []
    trailing: list[dict] = []
    for t in request.topics:
        name = t.name
        if counts[name] > 1:
            if all(r["name"] != name for r in trailing):
                trailing.append(_create_error(name, ErrorCode.INVALID_REQUEST, DUPLICATE_NAME))
            continue
        if name == CLUSTER_METADATA_TOPIC:
            trailing.append(
                _create_error(
                    name,
                    ErrorCode.INVALID_REQUEST,
                    f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited.",
                )
            )
            continue
        configs = {c.name: c.value for c in t.configs}
        assignments = [(a.partition_index, list(a.broker_ids)) for a in t.assignments]
        placed: Mapping[int, Sequence[int]]
        try:
            if request.validate_only:
                placed = topics.check_create(
                    name, t.num_partitions, t.replication_factor, assignments, configs
                )
                topic_id = random_uuid()
            else:
                topic = await topics.create(
                    name, t.num_partitions, t.replication_factor, assignments, configs
                )
                placed = {i: p.replicas for i, p in topic.partitions.items()}
                topic_id = topic.topic_id
        except TopicError as e:
            results.append(_create_error(name, e.code, e.message))
            continue
        results.append(
            {
                "name": name,
                "topic_id": topic_id,
                "error_code": ErrorCode.NONE,
                "error_message": None,
                "topic_config_error_code": ErrorCode.NONE,
                "num_partitions": len(placed),
                "replication_factor": len(placed[min(placed)]),
                "configs": creation_configs(broker_config, configs),
            }
        )
    return {"throttle_time_ms": 0, "topics": results + trailing}


# --- DeleteTopics ---------------------------------------------------------------


def _delete_topics_error(request, code, message=None):
    if request.topics:
        targets = [(t.name, t.topic_id) for t in request.topics]
    else:
        targets = [(name, ZERO_UUID) for name in request.topic_names]
    return {
        "responses": [
            {"name": n, "topic_id": i, "error_code": code, "error_message": message}
            for n, i in targets
        ]
    }


async def _delete_topics(topics: TopicManager, image, broker_config, ctx, request):
    responses: list[dict] = []

    def answer(name, topic_id, code, message=None):
        responses.append(
            {"name": name, "topic_id": topic_id, "error_code": code, "error_message": message}
        )

    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, ZERO_UUID) for name in request.topic_names]
    if not broker_config.delete_topic_enable:
        # Kafka fails the whole request: INVALID_REQUEST before v3.
        if ctx.api_version < 3:
            code, message = ErrorCode.INVALID_REQUEST, "Topic deletion is disabled."
        else:
            code, message = ErrorCode.TOPIC_DELETION_DISABLED, None
        for name, topic_id in wanted:
            answer(name, topic_id, code, message)
        return {"throttle_time_ms": 0, "responses": responses}

    dup_names = {n for n, c in Counter(n for n, i in wanted if i == ZERO_UUID).items() if c > 1}
    dup_ids = {i for i, c in Counter(i for n, i in wanted if n is None).items() if c > 1}
    dup_names.discard(None)
    dup_ids.discard(ZERO_UUID)
    for name in dup_names:
        answer(name, ZERO_UUID, ErrorCode.INVALID_REQUEST, DUPLICATE_NAME)
    for topic_id in dup_ids:
        answer(None, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
    targets: dict[str, uuid.UUID] = {}  # name -> id of the topics to delete, in request order
    for name, topic_id in wanted:
        if name is None and topic_id == ZERO_UUID:
            answer(None, ZERO_UUID, ErrorCode.INVALID_REQUEST, _NEITHER)
            continue
        if name is not None and topic_id != ZERO_UUID:
            answer(name, topic_id, ErrorCode.INVALID_REQUEST, _BOTH)
            continue
        if name in dup_names or topic_id in dup_ids:
            continue
        if name is not None:
            topic = image.topic(name)
            unknown = (name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        else:
            topic = image.topic_by_id(topic_id)
            unknown = (None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID)
        if topic is None:
            answer(*unknown, unknown[2].message)
        elif topic.name in targets:
            answer(topic.name, topic.topic_id, ErrorCode.INVALID_REQUEST, _SAME_TOPIC)
        else:
            targets[topic.name] = topic.topic_id
    for name, topic_id in targets.items():
        try:
            await topics.delete(name)
        except TopicError as e:
            answer(name, topic_id, e.code, e.message)
        else:
            answer(name, topic_id, ErrorCode.NONE)
    return {"throttle_time_ms": 0, "responses": responses}


# --- CreatePartitions -----------------------------------------------------------


def _create_partitions_error(request, code, message=None):
    return {
        "results": [
            {"name": t.name, "error_code": code, "error_message": message} for t in request.topics
        ]
    }


async def _create_partitions(topics: TopicManager, request):
    counts = Counter(t.name for t in request.topics)
    results = [
        {"name": name, "error_code": ErrorCode.INVALID_REQUEST, "error_message": DUPLICATE_NAME}
        for name, n in counts.items()
        if n > 1
    ]
    for t in request.topics:
        if counts[t.name] > 1:
            continue
        assignments = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
        try:
            if request.validate_only:
                topics.check_add_partitions(t.name, t.count, assignments)
            else:
                await topics.add_partitions(t.name, t.count, assignments)
        except TopicError as e:
            results.append({"name": t.name, "error_code": e.code, "error_message": e.message})
            continue
        results.append({"name": t.name, "error_code": ErrorCode.NONE, "error_message": None})
    return {"throttle_time_ms": 0, "results": results}


class TopicAdminHandler:
    def __init__(self, metadata: MetadataCache, topics: TopicManager, config: BrokerConfig):
        self.metadata = metadata
        self.topics = topics
        self.config = config

    @handles(ApiKey.CREATE_TOPICS, "2-7", _create_topics_error)
    async def create_topics(self, ctx: RequestContext, request):
        return await _create_topics(self.topics, self.config, request)

    @handles(ApiKey.DELETE_TOPICS, "1-6", _delete_topics_error)
    async def delete_topics(self, ctx: RequestContext, request):
        return await _delete_topics(self.topics, self.metadata.image, self.config, ctx, request)

    @handles(ApiKey.CREATE_PARTITIONS, "0-3", _create_partitions_error)
    async def create_partitions(self, ctx: RequestContext, request):
        return await _create_partitions(self.topics, request)
