"""FindCoordinator answers per version."""

import pytest

from coordinator.find_coordinator import NO_NODE, Node, find_coordinator, group_partition
from tests.coordinator.harness import build_request
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode as E
from wire.protocol import response_codec

LEADERS = {12: Node(1, "broker-1", 9092)}  # __consumer_offsets-12 is led by broker 1


def locate(key_type, key):
    leader = LEADERS.get(group_partition(key, 50))
    return (E.NONE, leader) if leader else (E.COORDINATOR_NOT_AVAILABLE, NO_NODE)


def answer(version, **fields):
    req = build_request(ApiKey.FIND_COORDINATOR, version, **fields)
    body = find_coordinator(version, req, locate)
    response_codec(ApiKey.FIND_COORDINATOR, version).encode(body)
    return body


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_versions_before_4_answer_one_key_at_the_top_level(version):
    body = answer(version, key="my-group", key_type=0)  # partition 12 of 50
    assert (body["error_code"], body["node_id"], body["host"], body["port"]) == (
        E.NONE,
        1,
        "broker-1",
        9092,
    )
    assert body["error_message"] == "NONE"  # Kafka's Errors.NONE.message()


def test_an_unavailable_coordinator_has_no_node():
    body = answer(3, key="test", key_type=0)  # partition 48: no leader
    assert (body["error_code"], body["node_id"], body["host"], body["port"]) == (
        E.COORDINATOR_NOT_AVAILABLE,
        -1,
        "",
        -1,
    )


def test_version_4_and_later_answer_every_key():
    body = answer(4, key_type=0, coordinator_keys=["my-group", "test"])
    assert [(c["key"], c["error_code"], c["node_id"]) for c in body["coordinators"]] == [
        ("my-group", E.NONE, 1),
        ("test", E.COORDINATOR_NOT_AVAILABLE, -1),
    ]


def test_unknown_key_types_and_share_keys_before_v6_are_invalid():
    assert answer(3, key="g", key_type=7)["error_code"] == E.INVALID_REQUEST
    body = answer(5, key_type=2, coordinator_keys=["g"])
    assert body["coordinators"][0]["error_code"] == E.INVALID_REQUEST
