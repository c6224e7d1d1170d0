"""DescribeCluster (API key 60)."""

from wire.schema import F, api

DESCRIBE_CLUSTER = api(
    60,
    "DescribeCluster",
    valid="0-2",
    flexible="0+",
    request=[
        F("include_cluster_authorized_operations", "bool", "0+"),
        F("endpoint_type", "int8", "1+", default=1),
        F("include_fenced_brokers", "bool", "2+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F("endpoint_type", "int8", "1+", default=1),
        F("cluster_id", "string", "0+"),
        F("controller_id", "int32", "0+", default=-1),
        F("brokers", "[]DescribeClusterBroker", "0+",
            F("broker_id", "int32", "0+"),
            F("host", "string", "0+"),
            F("port", "int32", "0+"),
            F("rack", "string", "0+", nullable="0+", default=None),
            F("is_fenced", "bool", "2+"),
        ),
        F("cluster_authorized_operations", "int32", "0+", default=-2147483648),
    ],
)
