"""DescribeCluster (key 60), versions 0-2: brokers, cluster id, controller id.

v1 carries endpoint_type: this is a broker endpoint (1); asking for a
controller endpoint (2) is MISMATCHED_ENDPOINT_TYPE, any other value
UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST in v0), with Kafka's messages.
v2 (KIP-1073) may ask for fenced brokers too, each answered with whether it
is fenced. A Gregor broker whose ZooKeeper session ends leaves the cluster's
metadata, as in Kafka's ZooKeeper mode, rather than stay registered and
fenced as under KRaft: the fenced brokers listed are those the image holds
as fenced, which today is none.
Without an authorizer every cluster operation is allowed, so
include_cluster_authorized_operations gets all of them, as Kafka reports.
"""

from __future__ import annotations

from broker.handlers.metadata import CLUSTER_OPERATIONS, NOT_REQUESTED, reachable_brokers
from broker.metadata.publisher import MetadataCache
from broker.registry import handles
from broker.request_context import RequestContext
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2
_ENDPOINT_NAMES = {BROKER_ENDPOINT: "BROKER", CONTROLLER_ENDPOINT: "CONTROLLER"}


class DescribeClusterHandler:
    def __init__(self, metadata: MetadataCache):
        self.metadata = metadata

    @handles(ApiKey.DESCRIBE_CLUSTER, "0-2")
    async def describe_cluster(self, ctx: RequestContext, request):
        return _describe(self.metadata.image, ctx, request)


def _describe(image, ctx, request):
    v0 = ctx.api_version == 0
    wanted = request.endpoint_type
    if wanted not in _ENDPOINT_NAMES:
        return {
            "error_code": ErrorCode.INVALID_REQUEST if v0 else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            "error_message": f"Unsupported endpoint type {wanted}",
        }
    if wanted != BROKER_ENDPOINT:
        return {
            "error_code": ErrorCode.INVALID_REQUEST if v0 else ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            "error_message": "The request was sent to an endpoint of type BROKER, but we "
            f"wanted an endpoint of type {_ENDPOINT_NAMES[wanted]}",
        }
    brokers = [
        {
            "broker_id": b.node_id,
            "host": e.host,
            "port": e.port,
            "rack": b.rack,
            "is_fenced": b.fenced,
        }
        for b, e in reachable_brokers(image, ctx.listener, request.include_fenced_brokers)
    ]
    controller = image.controller_id
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "endpoint_type": BROKER_ENDPOINT,
        "cluster_id": image.cluster_id,
        # Kafka answers -1 rather than name a controller missing from the list.
        "controller_id": controller if any(b["broker_id"] == controller for b in brokers) else -1,
        "brokers": brokers,
        "cluster_authorized_operations": (
            CLUSTER_OPERATIONS if request.include_cluster_authorized_operations else NOT_REQUESTED
        ),
    }
