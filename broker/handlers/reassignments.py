"""ListPartitionReassignments (key 46), version 0.

Gregor never moves replicas, so no reassignment is ever in progress: Kafka
4.3.1 answers an empty topic list both for "all" (null topics) and for named
partitions with nothing in flight, existing or not.
"""

from __future__ import annotations

from broker.registry import handles
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


@handles(ApiKey.LIST_PARTITION_REASSIGNMENTS, "0")
async def list_partition_reassignments(ctx, request):
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "topics": [],
    }
