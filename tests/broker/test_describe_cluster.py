"""DescribeCluster's broker list (broker/handlers/describe_cluster.py) on
images built by hand: v2's fenced brokers (KIP-1073), which the image of a
running Gregor cluster does not hold today (a broker whose ZooKeeper session
ends leaves it), and which the handler lists only when asked to."""

from __future__ import annotations

from broker.handlers.describe_cluster import _describe
from broker.metadata.image import BrokerRegistration, Endpoint, MetadataImage
from broker.request_context import RequestContext
from wire.api_keys import ApiKey
from wire.protocol import decode_request, encode_request


def _image() -> MetadataImage:
    brokers = {
        n: BrokerRegistration(n, (Endpoint("PLAINTEXT", "h", 9000 + n),), fenced=n == 2)
        for n in (1, 2, 3)
    }
    return MetadataImage("c", 1, brokers, {})


def _ask(version: int, **body):
    """The handler's answer to a DescribeCluster request decoded from its bytes."""
    body = {"include_cluster_authorized_operations": False, **body}
    _, request = decode_request(encode_request(ApiKey.DESCRIBE_CLUSTER, version, 7, body))
    ctx = RequestContext(ApiKey.DESCRIBE_CLUSTER, version, 7, None, "PLAINTEXT", "?")
    answer = _describe(_image(), ctx, request)
    return [(b["broker_id"], b["port"], b["is_fenced"]) for b in answer["brokers"]]


def test_fenced_brokers_are_listed_only_when_asked_for_and_say_they_are_fenced():
    assert _ask(2, include_fenced_brokers=False) == [(1, 9001, False), (3, 9003, False)]
    assert _ask(2, include_fenced_brokers=True) == [
        (1, 9001, False),
        (2, 9002, True),
        (3, 9003, False),
    ]


def test_versions_before_2_cannot_ask_for_fenced_brokers():
    assert _ask(1) == [(1, 9001, False), (3, 9003, False)]
