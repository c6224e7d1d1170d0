"""Consumer groups and committed offsets: Kafka's classic group coordinator, sans I/O.

    coord = GroupCoordinator(CoordinatorConfig.from_properties(props))
    actions = coord.load(partition, records, now_ms)        # at leadership
    actions = coord.join_group(RequestContext(token, version, client_id, host), req, now_ms)
    actions = coord.tick(now_ms)                            # at coord.next_deadline()
    actions = coord.persisted(write_id, now_ms, error)      # after each Persist

Actions are `Reply(token, response)` and `Persist(write_id, partition, records)`;
see `coordinator.actions` for the ordering contract.

`CoordinatorRuntime` (loading, confirmed writes, timers) is not specific to
groups: another coordinator over its own internal topic is a
`CoordinatorShard` it runs (see `coordinator.runtime`).
"""

from coordinator.actions import Action, Persist, Record, Reply
from coordinator.config import CoordinatorConfig
from coordinator.coordinator import GroupCoordinator
from coordinator.hashing import coordinator_partition, java_string_hashcode, kafka_abs
from coordinator.offsets import OffsetAndMetadata
from coordinator.request_context import RequestContext
from coordinator.responses import append_error_to_response_error
from coordinator.runtime import CoordinatorRuntime, CoordinatorShard, PartitionState
from coordinator.state import Event, GroupState, IllegalTransition

__all__ = [
    "Action",
    "CoordinatorConfig",
    "CoordinatorRuntime",
    "CoordinatorShard",
    "Event",
    "GroupCoordinator",
    "GroupState",
    "IllegalTransition",
    "OffsetAndMetadata",
    "PartitionState",
    "Persist",
    "Record",
    "Reply",
    "RequestContext",
    "append_error_to_response_error",
    "coordinator_partition",
    "java_string_hashcode",
    "kafka_abs",
]
