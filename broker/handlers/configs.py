"""Topic and broker configuration: DescribeConfigs (key 32) 1-4, AlterConfigs
(33) 0-2, IncrementalAlterConfigs (44) 0-1, ListConfigResources (74) 0-1.

Resources: topics (type 2) and brokers (type 4), whose name is "" for the
cluster-wide dynamic defaults or this broker's node id. Other types (broker
loggers, client metrics, groups) get INVALID_REQUEST, per resource.

DescribeConfigs answers as Kafka's ConfigHelper: every key (or the keys
asked, unknown ones left out), values, sources, synonyms (include_synonyms),
read_only, is_sensitive, and from v3 config types and documentation
(include_documentation). An unknown topic is UNKNOWN_TOPIC_OR_PARTITION.

AlterConfigs replaces the resource's whole override set; IncrementalAlterConfigs
applies SET (0), DELETE (1), APPEND (2) and SUBTRACT (3, both for list keys)
to it. validate_only checks and changes nothing. Errors are worded and coded
as in Kafka 4.3 (ConfigAdminManager, ControllerConfigurationValidator,
ConfigurationControlManager): INVALID_CONFIG naming the key for a bad topic
config; INVALID_REQUEST for a bad broker config value (Kafka's KAFKA-13609),
duplicate keys, null values, a wrong broker id or a "" topic.
Both kinds of change go to the controller, which persists them in the
cluster metadata; the broker applies them when the new metadata reaches it
(topic overrides to the partitions' logs, dynamic broker configs over the
static ones: broker/dynamic_broker_config.py), before the answer leaves.

ListConfigResources (KIP-1142) lists resources as Kafka 4.3.1 does: v0 the
client metrics resources, v1 every resource of the types asked (all of them
when none is), by type in Kafka's order (groups, client metrics, broker
loggers, brokers, topics): groups and client metrics with configs (none
here: Gregor keeps neither), each live broker as a broker and as a broker
logger, and every topic, internal ones too. A type outside those five is
UNSUPPORTED_VERSION.

Where Gregor differs: a broker config key Gregor does not know is refused with
INVALID_CONFIG (Kafka stores it and ignores it); an unknown operation code is
INVALID_REQUEST (Kafka answers UNKNOWN_SERVER_ERROR for topics).
"""

from __future__ import annotations

from collections import Counter

from broker.config import BrokerConfig, ConfigError
from broker.config.broker_keys import BROKER_CONFIG_KEYS, unknown_key_error
from broker.config.keys import ConfigType
from broker.config.topic import TOPIC_CONFIG_KEYS, validate_topic_config
from broker.controller.api import Controller
from broker.metadata.publisher import MetadataCache
from broker.registry import handles
from broker.request_context import RequestContext
from broker.topic_configs import EffectiveTopicConfigs
from broker.topics import TopicError, validate_topic_name
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

# Kafka's ConfigResource.Type ids.
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
RESOURCE_TYPE_NAMES = {
    TOPIC: "TOPIC",
    BROKER: "BROKER",
    BROKER_LOGGER: "BROKER_LOGGER",
    CLIENT_METRICS: "CLIENT_METRICS",
    GROUP: "GROUP",
}
# The types ListConfigResources v1 lists, in the order Kafka lists them.
LISTED_RESOURCE_TYPES = (GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)
# Kafka's AlterConfigOp.OpType ids.
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


class ResourceError(Exception):
    """One resource's failure: its error code and message."""

    def __init__(self, code: ErrorCode, message: str | None):
        super().__init__(message)
        self.code = code
        self.message = message


def _invalid_request(message: str) -> ResourceError:
    return ResourceError(ErrorCode.INVALID_REQUEST, message)


def _unsupported(resource_type: int) -> ResourceError:
    name = RESOURCE_TYPE_NAMES.get(resource_type)
    if name is None:
        return _invalid_request(f"Unknown resource type {resource_type}")
    return _invalid_request(f"Unsupported resource type: {name}")


def _broker_id(node_id: int, name: str, describe: bool = False) -> None:
    """Kafka's checks of a broker resource name that is not "": this node's id."""
    try:
        value = int(name)
    except ValueError:
        word = "Broker" if describe else "Node"
        raise _invalid_request(f"{word} id must be an integer, but it is: {name}") from None
    if value != node_id:
        expected = f"{node_id} or empty string" if describe else f"{node_id}"
        raise _invalid_request(f"Unexpected broker id, expected {expected}, but received {name}")


def _existing_topic(image, name: str):
    """The topic of a topic resource that is to be altered, with Kafka's errors
    for a "" name and an invalid one (unknown topics are checked later)."""
    if name == "":
        raise _invalid_request("Default topic resources are not allowed.")
    try:
        validate_topic_name(name)
    except TopicError as e:
        raise ResourceError(e.code, e.message) from None
    return image.topic(name)


# --- DescribeConfigs --------------------------------------------------------------


def _entry(e) -> dict:
    return {
        "name": e.name,
        "value": e.value,
        "read_only": e.read_only,
        "config_source": int(e.source),
        "is_sensitive": e.sensitive,
        "synonyms": [
            {"name": s.name, "value": s.value, "source": int(s.source)} for s in e.synonyms
        ],
        "config_type": int(e.config_type),
        "documentation": e.documentation,
    }


def _describe_error(request, code, message=None):
    return {
        "results": [
            {
                "error_code": code,
                "error_message": message,
                "resource_type": r.resource_type,
                "resource_name": r.resource_name,
                "configs": [],
            }
            for r in request.resources
        ]
    }


def _describe_configs(h: ConfigsHandler, request):
    image = h.metadata.image
    options = {
        "include_synonyms": bool(request.include_synonyms),
        "include_documentation": bool(request.include_documentation),
    }
    results = []
    for r in request.resources:
        result = {
            "error_code": ErrorCode.NONE,
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
            "configs": [],
        }
        keys = r.configuration_keys or None
        try:
            if r.resource_type == TOPIC:
                try:
                    validate_topic_name(r.resource_name)
                except TopicError as e:
                    raise ResourceError(e.code, e.message) from None
                topic = image.topic(r.resource_name)
                if topic is None:
                    # Kafka sets no message here: the field keeps its default, "".
                    result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    entries = h.topic_configs.config(topic).describe(keys, **options)
                    result["configs"] = [_entry(e) for e in entries]
            elif r.resource_type == BROKER:
                if r.resource_name == "":
                    entries = h.config.describe_cluster_defaults(keys, **options)
                else:
                    _broker_id(h.node_id, r.resource_name, describe=True)
                    entries = h.config.describe(keys, **options)
                result["configs"] = [_entry(e) for e in entries]
            else:
                raise _unsupported(r.resource_type)
        except ResourceError as e:
            result.update(error_code=e.code, error_message=e.message)
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}


# --- AlterConfigs and IncrementalAlterConfigs -----------------------------------------


def _alter_error(request, code, message=None):
    return {
        "responses": [
            {
                "error_code": code,
                "error_message": message,
                "resource_type": r.resource_type,
                "resource_name": r.resource_name,
            }
            for r in request.resources
        ]
    }


def _check_request_shape(resource, incremental: bool) -> None:
    """Kafka's ConfigAdminManager.preprocess checks of one resource."""
    if any(n > 1 for n in Counter(c.name for c in resource.configs).values()):
        raise _invalid_request("Error due to duplicate config keys")
    nulls = [
        c.name
        for c in resource.configs
        if c.value is None and not (incremental and c.config_operation == DELETE)
    ]
    if nulls:
        raise _invalid_request("Null value not supported for : " + ", ".join(nulls))
    if resource.resource_type not in (TOPIC, BROKER) and (
        resource.resource_type not in RESOURCE_TYPE_NAMES
        or (not incremental and resource.resource_type == BROKER_LOGGER)
    ):
        raise _invalid_request(f"Unknown resource type {resource.resource_type}")


async def _alter_all(h: ConfigsHandler, request, incremental: bool):
    """Both AlterConfigs APIs: the shared per-resource loop."""
    seen = Counter((r.resource_type, r.resource_name) for r in request.resources)
    responses = []
    for r in request.resources:
        response = {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
        }
        try:
            if seen[(r.resource_type, r.resource_name)] > 1:
                raise _invalid_request("Each resource must appear at most once.")
            _check_request_shape(r, incremental)
            if r.resource_type == TOPIC:
                await _alter_topic(h, r, incremental, request.validate_only)
            elif r.resource_type == BROKER:
                await _alter_broker(h, r, incremental, request.validate_only)
            else:
                raise _unsupported(r.resource_type)
        except ResourceError as e:
            response.update(error_code=e.code, error_message=e.message)
        responses.append(response)
    return {"throttle_time_ms": 0, "responses": responses}


def _list_parts(value: str | None) -> list[str]:
    return [] if value is None else [p for p in value.split(",") if p]


def _apply_ops(current: dict[str, str], configs, is_list, default_string, not_list) -> dict:
    """The override set after IncrementalAlterConfigs' operations (Kafka's
    ConfigurationControlManager.incrementalAlterConfigResource): APPEND adds
    the values not yet there, SUBTRACT removes them; both start from the
    current value, or the key's default when it has none."""
    result = dict(current)
    for c in configs:
        op = c.config_operation
        if op == SET:
            result[c.name] = c.value
        elif op == DELETE:
            result.pop(c.name, None)
        elif op in (APPEND, SUBTRACT):
            if not is_list(c.name):
                raise not_list(c.name, OP_NAMES[op])
            base = result[c.name] if c.name in result else default_string(c.name)
            parts = _list_parts(base)
            if op == APPEND:
                parts += [v for v in c.value.split(",") if v not in parts]
            else:
                for v in c.value.split(","):
                    if v in parts:
                        parts.remove(v)
            result[c.name] = ",".join(parts)
        else:
            raise _invalid_request(f"Unknown operations type {op}")
    return result


async def _alter_topic(h: ConfigsHandler, resource, incremental: bool, validate_only: bool):
    topic = _existing_topic(h.metadata.image, resource.resource_name)
    current = dict(topic.configs) if topic is not None else {}
    if incremental:

        def not_list(name, op):
            return ResourceError(
                ErrorCode.INVALID_CONFIG,
                f"Can't {op} to key {name} because its type is not LIST.",
            )

        new = _apply_ops(
            current,
            resource.configs,
            is_list=lambda k: (
                k in TOPIC_CONFIG_KEYS and TOPIC_CONFIG_KEYS[k].type == ConfigType.LIST
            ),
            default_string=lambda k: TOPIC_CONFIG_KEYS[k].default_string,
            not_list=not_list,
        )
    else:
        new = {c.name: c.value for c in resource.configs}
    try:
        validate_topic_config(new, h.config)
    except ConfigError as e:
        raise ResourceError(ErrorCode.INVALID_CONFIG, str(e)) from None
    if topic is None:
        raise ResourceError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"The topic '{resource.resource_name}' does not exist.",
        )
    if validate_only or new == current:
        return
    await h.controller.alter_topic_configs(topic.name, new)


async def _alter_broker(h: ConfigsHandler, resource, incremental: bool, validate_only: bool):
    config = h.config
    per_broker = resource.resource_name != ""
    if per_broker:
        _broker_id(h.node_id, resource.resource_name)
    current = dict(config.dynamic_broker if per_broker else config.dynamic_default)
    if incremental:

        def is_list(name):
            spec = BROKER_CONFIG_KEYS.get(name)
            if spec is None:
                raise ResourceError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {name}")
            return spec.type == ConfigType.LIST

        def not_list(name, op):
            verb = "append" if op == "APPEND" else "subtract"
            return ResourceError(
                ErrorCode.INVALID_CONFIG,
                f"Config value {verb} is not allowed for config key: {name}",
            )

        new = _apply_ops(
            current,
            resource.configs,
            is_list=is_list,
            default_string=lambda k: BROKER_CONFIG_KEYS[k].default_string,
            not_list=not_list,
        )
    else:
        new = {c.name: c.value for c in resource.configs}
    unknown = [k for k in new if k not in BROKER_CONFIG_KEYS]
    if unknown:
        raise ResourceError(ErrorCode.INVALID_CONFIG, str(unknown_key_error(unknown[0])))
    updates = {k: None for k in current if k not in new}
    updates.update({k: v for k, v in new.items() if current.get(k) != v})
    if not updates:
        return
    try:
        # Checked here, applied when the metadata change comes back
        # (broker/dynamic_broker_config.py), as every broker applies it.
        config.alter(updates, per_broker=per_broker, validate_only=True)
    except ConfigError as e:
        raise _invalid_request(str(e)) from None
    if validate_only:
        return
    layer = {k: v for k, v in {**current, **updates}.items() if v is not None}
    await h.controller.alter_broker_configs(str(h.node_id) if per_broker else "", layer)


class ConfigsHandler:
    def __init__(
        self,
        node_id: int,
        config: BrokerConfig,
        metadata: MetadataCache,
        controller: Controller,
        topic_configs: EffectiveTopicConfigs,
    ):
        self.node_id = node_id
        self.config = config
        self.metadata = metadata
        self.controller = controller
        self.topic_configs = topic_configs

    @handles(ApiKey.DESCRIBE_CONFIGS, "1-4", _describe_error)
    async def describe_configs(self, ctx: RequestContext, request):
        return _describe_configs(self, request)

    @handles(ApiKey.ALTER_CONFIGS, "0-2", _alter_error)
    async def alter_configs(self, ctx: RequestContext, request):
        return await _alter_all(self, request, incremental=False)

    @handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, "0-1", _alter_error)
    async def incremental_alter_configs(self, ctx: RequestContext, request):
        return await _alter_all(self, request, incremental=True)

    @handles(ApiKey.LIST_CONFIG_RESOURCES, "0-1")
    async def list_config_resources(self, ctx: RequestContext, request):
        return _list_config_resources(self.metadata.image, ctx.api_version, request)


def _list_config_resources(image, version: int, request) -> dict:
    resources: list[dict] = []
    answer = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "config_resources": resources}
    if version == 0:
        return answer  # the client metrics resources: none
    wanted = set(request.resource_types) or set(LISTED_RESOURCE_TYPES)
    if not wanted <= set(LISTED_RESOURCE_TYPES):
        return {**answer, "error_code": ErrorCode.UNSUPPORTED_VERSION}
    for resource_type in LISTED_RESOURCE_TYPES:
        if resource_type not in wanted:
            continue
        if resource_type in (BROKER_LOGGER, BROKER):
            names = [str(node_id) for node_id in image.live_broker_ids()]
        elif resource_type == TOPIC:
            names = sorted(image.topics)
        else:
            names = []  # no group or client metrics configs
        resources.extend({"resource_name": n, "resource_type": resource_type} for n in names)
    return answer
