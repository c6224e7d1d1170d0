"""Request handlers, one module per API family; importing this registers them all."""

from broker.handlers import (  # noqa: F401
    api_versions,
    configs,
    describe_cluster,
    describe_topic_partitions,
    elect_leaders,
    fetch,
    find_coordinator,
    groups,
    log_dirs,
    metadata,
    offsets,
    produce,
    producer_ids,
    reassignments,
    topic_admin,
)
