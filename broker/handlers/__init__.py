"""Request handlers: one class per API family, one module each.

Importing this package registers every handler method (broker.registry);
`build_handlers` makes the handler objects, each with only the parts of the
broker it uses.
"""

from __future__ import annotations

from broker.fetch_sessions import FetchSessionCache
from broker.handlers.api_versions import ApiVersionsHandler
from broker.handlers.client_quotas import ClientQuotasHandler
from broker.handlers.configs import ConfigsHandler
from broker.handlers.describe_cluster import DescribeClusterHandler
from broker.handlers.describe_topic_partitions import DescribeTopicPartitionsHandler
from broker.handlers.elect_leaders import ElectLeadersHandler
from broker.handlers.fetch import FetchHandler
from broker.handlers.find_coordinator import FindCoordinatorHandler
from broker.handlers.groups import GroupsHandler
from broker.handlers.log_dirs import LogDirsHandler
from broker.handlers.metadata import MetadataHandler
from broker.handlers.offsets import OffsetsHandler
from broker.handlers.produce import ProduceHandler
from broker.handlers.producer_ids import ProducerIdsHandler
from broker.handlers.reassignments import ReassignmentsHandler
from broker.handlers.sasl import SaslHandler
from broker.handlers.scram_credentials import ScramCredentialsHandler
from broker.handlers.topic_admin import TopicAdminHandler
from broker.handlers.transactions import TransactionsHandler


def build_handlers(
    *,
    node_id,
    config,
    metadata,
    controller,
    topic_configs,
    logs,
    replicas,
    topics,
    groups,
    producer_ids,
    txns,
    markers,
    verifier,
) -> list[object]:
    return [
        ApiVersionsHandler(config["gregor.transaction.version"]),
        MetadataHandler(metadata, replicas, topics, config),
        DescribeClusterHandler(metadata),
        DescribeTopicPartitionsHandler(metadata, replicas),
        ProduceHandler(metadata, replicas, topic_configs, verifier),
        FetchHandler(
            metadata,
            replicas,
            config["replica.selector.class"],
            FetchSessionCache(config["max.incremental.fetch.session.cache.slots"]),
        ),
        OffsetsHandler(metadata, replicas),
        TopicAdminHandler(metadata, topics, config),
        ConfigsHandler(node_id, config, metadata, controller, topic_configs),
        ElectLeadersHandler(metadata, controller),
        ReassignmentsHandler(metadata, controller),
        LogDirsHandler(logs, replicas),
        FindCoordinatorHandler(groups, txns, metadata),
        GroupsHandler(groups, metadata, verifier),
        ProducerIdsHandler(producer_ids, txns),
        TransactionsHandler(txns, groups, metadata, markers, replicas, producer_ids),
        SaslHandler(),
        ClientQuotasHandler(),
        ScramCredentialsHandler(metadata, controller),
    ]
