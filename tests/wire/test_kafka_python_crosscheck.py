"""`wire` agrees, byte for byte and value for value, with an independent
encoder: kafka-python 3.x's protocol classes (generated from Kafka 4.3's JSON
specs, while `wire` declares Kafka 4.0's).

For every request and response class kafka-python has and every version both
sides support, one test per (api, version, direction), seeded by its id:

- requests: random values (one "dense" value with every field present,
  non-null and non-default at every depth; the same with every nullable
  field null; and RANDOM_SAMPLES drawn by `samples.sample`, with empty arrays,
  nulls and absent tagged fields) are given to kafka-python, which encodes the
  body and the whole request with its header; `wire` decodes both, the
  decoded values equal what kafka-python was given, and `wire` encodes them
  back to exactly kafka-python's bytes (body, and header + body via
  `wire.protocol`).
- responses: `wire` encodes random values (body, and header + body);
  kafka-python decodes them, what it reads equals `wire`'s input (unknown
  tagged fields included), and kafka-python's re-encoding equals `wire`'s
  bytes.

Both forms of `wire`'s codecs (compiled and interpreted) are held to the same
bytes, and the two sides must agree on each field's nullability.

Versions: kafka-python encodes and decodes every version from 0 to its spec's
maximum (it ignores the spec's minimum, leaving negotiation to ApiVersions), so
versions Kafka 4.x dropped (Produce v0-2, Fetch v0-3, ...) are checked too.

Excluded, and why:

- versions only kafka-python has (added after Kafka 4.0, or after the 4.0
  snapshot `wire` follows), listed in KAFKA_PYTHON_ONLY_VERSIONS:
  InitProducerId v6, unstable in Kafka 4.3.1.
  No version is only `wire`'s.
- APIs kafka-python has no class for (inter-broker, KRaft, delegation
  tokens, KIP-848/932 groups, telemetry, share-group state), listed in
  APIS_WITHOUT_KAFKA_PYTHON: nothing independent to check them against.
- kafka-python's ApiData classes (ConsumerProtocolSubscription/Assignment):
  not requests or responses, and `wire` declares no such messages.
- fields: in the versions both sides support, the two specs carry the same
  fields (a field renamed with the same encoding would be paired by
  `kafka_python_samples.RENAMED`, empty today). Should a 4.3-only
  field appear in a shared version, it would stay at its default on both
  sides (ONE_SIDED_FIELDS, checked to be empty, lists any).
- unknown tagged fields in requests: kafka-python keeps them when decoding
  but never writes them, so the request values carry none (responses do, and
  kafka-python must read them; its re-encoding is then compared with `wire`'s
  encoding of the value without them).
- unknown tagged fields inside a tagged struct (FetchResponse's
  current_leader, node_endpoints, ...): kafka-python requires that nested
  tagged section to be empty when reading and always writes it empty, so the
  random values carry none there. (No spec has a known tagged field inside a
  tagged struct.)
- ApiVersionsResponse: kafka-python's own `decode` reads a body with a
  non-zero error code as v0 (what a broker answers to an unsupported
  version); those values are decoded with the generic `ApiMessage.decode`,
  and one extra value with error code 0 goes through the class's own decode.
"""

from __future__ import annotations

import random

import pytest

from wire.apis import ALL_APIS, APIS_BY_KEY
from wire.codec import message_codec
from wire.protocol import decode_request, decode_response, encode_request, encode_response
from wire.values import Struct

from .kafka_python_samples import (
    ApiMessage,
    compare,
    dense_sample,
    kafka_python_messages,
    kafka_python_versions,
    message_plan,
    missing,
    prepare,
    strip_unknown,
    to_kafka_python,
    with_nulls,
)
from .samples import sample

KAFKA_PYTHON_MESSAGES = kafka_python_messages()

KAFKA_PYTHON_ONLY_VERSIONS = {
    "InitProducerId": [6],
}

APIS_WITHOUT_KAFKA_PYTHON = [
    "LeaderAndIsr", "StopReplica", "UpdateMetadata", "ControlledShutdown",
    "CreateDelegationToken", "RenewDelegationToken", "ExpireDelegationToken",
    "DescribeDelegationToken", "Vote", "BeginQuorumEpoch", "EndQuorumEpoch",
    "AlterPartition", "Envelope", "FetchSnapshot", "BrokerRegistration",
    "BrokerHeartbeat", "UnregisterBroker", "AllocateProducerIds",
    "ConsumerGroupHeartbeat", "ConsumerGroupDescribe", "ControllerRegistration",
    "GetTelemetrySubscriptions", "PushTelemetry", "AssignReplicasToDirs",
    "ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge",
    "AddRaftVoter", "RemoveRaftVoter", "UpdateRaftVoter",
    "InitializeShareGroupState", "ReadShareGroupState", "WriteShareGroupState",
    "DeleteShareGroupState", "ReadShareGroupStateSummary",
]  # fmt: skip

# (message, version, field path, side) carried by one side only; see above.
ONE_SIDED_FIELDS: list[tuple[str, int, str, str]] = []

RANDOM_SAMPLES = 6


def _cases(direction: str):
    for cls in KAFKA_PYTHON_MESSAGES:
        if cls.type != direction:
            continue
        api = APIS_BY_KEY[cls.API_KEY]
        for version in kafka_python_versions(cls):
            if version in api.valid:
                yield pytest.param(cls, api, version, id=f"{api.name}-{direction}-v{version}")


REQUEST_CASES = list(_cases("request"))
RESPONSE_CASES = list(_cases("response"))


# --- helpers -------------------------------------------------------------------


def assert_same_bytes(expected: bytes, actual: bytes, what: str) -> None:
    expected, actual = bytes(expected), bytes(actual)
    if expected == actual:
        return
    at = next(
        (i for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b),
        min(len(expected), len(actual)),
    )
    lo = max(0, at - 16)
    raise AssertionError(
        f"{what}: bytes differ at offset {at} (lengths {len(expected)} vs {len(actual)})\n"
        f"  expected ...{expected[lo : at + 16].hex(' ')}\n"
        f"  actual   ...{actual[lo : at + 16].hex(' ')}"
    )


def assert_no_diffs(diffs: list[str], what: str) -> None:
    assert not diffs, f"{what}:\n  " + "\n  ".join(diffs[:25])


def assert_carried(given, decoded, path="body"):
    """Everything in `given` is in `decoded` (which may add defaults)."""
    if isinstance(given, dict):
        assert isinstance(decoded, dict), path
        for key, value in given.items():
            assert key in decoded, f"{path}.{key} missing"
            assert_carried(value, decoded[key], f"{path}.{key}")
    elif isinstance(given, list):
        assert isinstance(decoded, list) and len(decoded) == len(given), path
        for i, (a, b) in enumerate(zip(given, decoded, strict=True)):
            assert_carried(a, b, f"{path}[{i}]")
    else:
        if isinstance(decoded, memoryview):
            decoded = bytes(decoded)
        assert given == decoded, f"{path}: {given!r} != {decoded!r}"


def values(codec, rnd: random.Random, keep_unknown: bool, plan) -> list[Struct]:
    """One dense value (every field present and non-default), the same with
    every nullable field null, then random ones."""
    assert plan.nullability_differences() == []
    dense = prepare(plan, dense_sample(codec.root, rnd), keep_unknown)
    assert not missing(plan, dense), missing(plan, dense)
    drawn = [sample(codec.root, rnd) for _ in range(RANDOM_SAMPLES)]
    return [dense, with_nulls(plan, dense)] + [prepare(plan, v, keep_unknown) for v in drawn]


def client_id(rnd: random.Random) -> str | None:
    return rnd.choice([None, "", "kafka-python", "clïent-€-" + str(rnd.randint(0, 10**6))])


def kafka_python_decode(cls, data, version, header=False):
    if cls.__name__ == "ApiVersionsResponse":
        error_code = int.from_bytes(data[4:6] if header else data[:2], "big", signed=True)
        if error_code != 0:
            # Skip kafka-python's "an error body is v0" fallback (see docstring).
            return ApiMessage.decode.__func__(cls, data, version=version, header=header)
    return cls.decode(data, version=version, header=header)


# --- the cross-check -----------------------------------------------------------


@pytest.mark.parametrize("cls,api,version", REQUEST_CASES)
def test_request_encoded_by_kafka_python_decodes_and_re_encodes_in_wire(cls, api, version):
    rnd = random.Random(f"kafka-python/{api.name}/request/{version}")
    codec = message_codec(api.request, version)
    interpreted = message_codec(api.request, version, compiled=False)
    plan = message_plan(cls, codec)
    for i, value in enumerate(values(codec, rnd, keep_unknown=False, plan=plan)):
        what = f"{cls.__name__} v{version} value #{i}"
        request = to_kafka_python(plan, value, version)
        assert_no_diffs(compare(plan, value, request), f"{what}: conversion to kafka-python")

        body = request.encode(version=version)
        assert_same_bytes(body, codec.encode(value), f"{what}: wire's encoding of the same value")
        decoded = codec.decode(body)
        assert_carried(value, decoded)
        assert_no_diffs(compare(plan, decoded, request), f"{what}: wire decoded")
        assert_same_bytes(body, codec.encode(decoded), f"{what}: wire re-encoded")
        assert interpreted.decode(body) == decoded, what
        assert_same_bytes(body, interpreted.encode(decoded), f"{what}: interpreted wire")

        correlation_id = rnd.randint(-(2**31), 2**31 - 1)
        cid = client_id(rnd)
        request.with_header(correlation_id=correlation_id, client_id=cid)
        frame = request.encode(header=True)
        header, decoded = decode_request(frame)
        assert (header.api_key, header.api_version) == (api.key, version), what
        assert (header.correlation_id, header.client_id) == (correlation_id, cid), what
        assert header.tagged == (), what
        assert_no_diffs(compare(plan, decoded, request), f"{what}: wire decoded with header")
        again = encode_request(api.key, version, correlation_id, decoded, client_id=cid)
        assert_same_bytes(frame, again, f"{what}: wire re-encoded with header")


@pytest.mark.parametrize("cls,api,version", RESPONSE_CASES)
def test_response_encoded_by_wire_decodes_and_re_encodes_in_kafka_python(cls, api, version):
    rnd = random.Random(f"kafka-python/{api.name}/response/{version}")
    codec = message_codec(api.response, version)
    interpreted = message_codec(api.response, version, compiled=False)
    plan = message_plan(cls, codec)
    drawn = values(codec, rnd, keep_unknown=True, plan=plan)
    if cls.__name__ == "ApiVersionsResponse":
        drawn.append(Struct(drawn[0], error_code=0))
    for i, value in enumerate(drawn):
        what = f"{cls.__name__} v{version} value #{i}"
        body = codec.encode(value)
        assert_same_bytes(body, interpreted.encode(value), f"{what}: interpreted wire")
        expected = codec.encode(strip_unknown(value))  # what kafka-python can write back
        response = kafka_python_decode(cls, body, version)
        assert_no_diffs(compare(plan, value, response), f"{what}: kafka-python decoded")
        # (encode() without version=: a decoded message has no _header slot set,
        # which encode(version=...) trips over in kafka-python 3.0.12.)
        assert response.version == version, what
        assert_same_bytes(expected, response.encode(), f"{what}: re-encoded")
        # And kafka-python's object, given back to wire, is the same value.
        assert_no_diffs(compare(plan, codec.decode(body), response), f"{what}: wire decoded")

        correlation_id = rnd.randint(-(2**31), 2**31 - 1)
        frame = encode_response(api.key, version, correlation_id, value)
        response = kafka_python_decode(cls, frame, version, header=True)
        assert response.header.correlation_id == correlation_id, what
        assert_no_diffs(compare(plan, value, response), f"{what}: decoded with header")
        expected = encode_response(api.key, version, correlation_id, strip_unknown(value))
        assert_same_bytes(expected, response.encode(header=True), f"{what}: re-encoded w/ header")
        got_id, decoded = decode_response(api.key, version, frame)
        assert got_id == correlation_id, what
        assert_no_diffs(compare(plan, decoded, response), f"{what}: wire decoded with header")


# --- what the cross-check covers ---------------------------------------------------


def test_every_kafka_python_message_has_a_wire_declaration():
    assert len(KAFKA_PYTHON_MESSAGES) == 104
    ours = {
        cls.__name__: APIS_BY_KEY[cls.API_KEY].name + cls.type.title()
        for cls in KAFKA_PYTHON_MESSAGES
    }
    assert {k: v for k, v in ours.items() if k != v} == {}


def test_exclusions_are_the_documented_ones():
    only_kafka_python, only_wire = {}, {}
    for cls in KAFKA_PYTHON_MESSAGES:
        api = APIS_BY_KEY[cls.API_KEY]
        ours, theirs = set(api.valid), set(kafka_python_versions(cls))
        if theirs - ours:
            only_kafka_python[api.name] = sorted(theirs - ours)
        if ours - theirs:
            only_wire[api.name] = sorted(ours - theirs)
    assert only_kafka_python == KAFKA_PYTHON_ONLY_VERSIONS
    assert only_wire == {}

    covered = {cls.API_KEY for cls in KAFKA_PYTHON_MESSAGES}
    assert [a.name for a in ALL_APIS if a.key not in covered] == APIS_WITHOUT_KAFKA_PYTHON

    one_sided = []
    for cls in KAFKA_PYTHON_MESSAGES:
        api = APIS_BY_KEY[cls.API_KEY]
        for version in kafka_python_versions(cls):
            if version in api.valid:
                plan = message_plan(cls, message_codec(getattr(api, cls.type), version))
                one_sided += [(cls.__name__, version, *entry) for entry in plan.one_sided()]
    assert one_sided == ONE_SIDED_FIELDS


def test_case_count():
    assert len(REQUEST_CASES) == len(RESPONSE_CASES) == 261


# --- the checks can fail ---------------------------------------------------------


def _metadata_response(version=12):
    cls = next(c for c in KAFKA_PYTHON_MESSAGES if c.__name__ == "MetadataResponse")
    api = APIS_BY_KEY[3]
    codec = message_codec(api.response, version)
    plan = message_plan(cls, codec)
    value = prepare(plan, dense_sample(codec.root, random.Random(1)), keep_unknown=False)
    return cls, codec, plan, value


def test_compare_sees_a_changed_nested_value():
    cls, codec, plan, value = _metadata_response()
    response = cls.decode(codec.encode(value), version=12)
    assert compare(plan, value, response) == []
    response.topics[0].partitions[0].leader_epoch += 1
    diffs = compare(plan, value, response)
    assert len(diffs) == 1 and "topics[0].partitions[0].leader_epoch" in diffs[0]


@pytest.mark.parametrize(
    "field,new",
    [("topic_id", None), ("authorized_operations", {0, 3}), ("is_internal", 1)],
)
def test_compare_sees_translated_values_that_differ(field, new):
    cls, codec, plan, value = _metadata_response()
    response = cls.decode(codec.encode(value), version=12)
    setattr(response.topics[0], field, new)
    assert compare(plan, value, response), field


def test_compare_sees_a_field_left_out_and_unknown_tags():
    cls, codec, plan, value = _metadata_response()
    partial = Struct(value)
    del partial["cluster_id"]
    assert compare(plan, value, to_kafka_python(plan, partial, 12))
    value["unknown_tagged_fields"] = [(9, b"x")]
    response = cls.decode(codec.encode(value), version=12)
    assert compare(plan, value, response) == []
    assert compare(plan, strip_unknown(value), response)


def test_the_byte_check_sees_one_changed_byte():
    _, codec, _, value = _metadata_response()
    data = codec.encode(value)
    with pytest.raises(AssertionError, match="offset 5"):
        assert_same_bytes(data, data[:5] + bytes([data[5] ^ 1]) + data[6:], "x")


def test_dense_values_leave_no_field_at_its_default():
    _, codec, plan, value = _metadata_response()
    for name, _, default in codec.root.regular:
        assert value[name] != default, name
    topic = value.topics[0]
    assert topic.topic_id.int != 0 and topic.partitions and topic.partitions[0].offline_replicas
    assert missing(plan, value) == []
    value.topics[0].partitions[0].offline_replicas = []
    assert missing(plan, value) == [
        "MetadataResponse.topics[0].partitions[0].offline_replicas (empty)"
    ]
