"""Every version of every declared API encodes and decodes back to itself,
in the compiled and the interpreted form alike."""

import random
import uuid

import pytest

from wire.apis import ALL_APIS, APIS_BY_KEY
from wire.codec import message_codec
from wire.errors import DecodeError, EncodeError
from wire.values import EncodeOnce, Struct

from .samples import sample

CASES = [
    pytest.param(api, direction, version, id=f"{api.name}-{direction}-v{version}")
    for api in ALL_APIS
    for direction in ("request", "response")
    for version in api.valid
]


def assert_carried(given, decoded, path="body"):
    """Everything the caller gave comes back (decoding adds defaults for the rest)."""
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
        assert given == decoded, f"{path}: {given!r} != {decoded!r}"


@pytest.mark.parametrize("api,direction,version", CASES)
def test_every_version_round_trips_in_both_forms(api, direction, version):
    message = getattr(api, direction)
    compiled = message_codec(message, version, compiled=True)
    interpreted = message_codec(message, version, compiled=False)
    rnd = random.Random(f"{api.key}/{direction}/{version}")
    for _ in range(4):
        value = sample(compiled.root, rnd)
        data = compiled.encode(value)
        assert interpreted.encode(value) == data
        decoded = compiled.decode(data)
        assert interpreted.decode(data) == decoded
        assert_carried(value, decoded)
        assert compiled.encode(decoded) == data


@pytest.mark.parametrize("api,direction,version", CASES)
def test_every_version_refuses_truncation_and_trailing_bytes_in_both_forms(api, direction, version):
    """A reader given the whole body, every (or a sample of) shorter prefix, and
    the body with a byte after it: only the whole body decodes."""
    message = getattr(api, direction)
    forms = [message_codec(message, version, compiled=c) for c in (True, False)]
    rnd = random.Random(f"cut/{api.key}/{direction}/{version}")
    data = forms[0].encode(sample(forms[0].root, rnd))
    cuts = range(len(data)) if len(data) <= 64 else rnd.sample(range(len(data)), 64)
    for codec in forms:
        for cut in cuts:
            with pytest.raises(DecodeError):
                codec.decode(data[:cut])
        with pytest.raises(DecodeError, match="left over"):
            codec.decode(data + b"\x00")


@pytest.mark.parametrize("api,direction,version", CASES)
def test_empty_body_encodes_defaults_and_decodes_them(api, direction, version):
    codec = message_codec(getattr(api, direction), version)
    data = codec.encode({})
    decoded = codec.decode(data)
    assert decoded == codec.default()
    assert codec.encode(decoded) == data


def test_fields_absent_in_a_version_decode_to_their_defaults():
    metadata = APIS_BY_KEY[3]
    codec = message_codec(metadata.response, 0)
    body = codec.decode(codec.encode({"brokers": [], "topics": []}))
    assert body.controller_id == -1
    assert body.cluster_id is None
    assert body.throttle_time_ms == 0
    request = message_codec(metadata.request, 0).decode(b"\x00\x00\x00\x00")
    assert request.topics == [] and request.allow_auto_topic_creation is True


def test_fields_not_in_the_version_are_not_written():
    produce = APIS_BY_KEY[0]
    v2 = message_codec(produce.request, 2)
    v3 = message_codec(produce.request, 3)
    body = {"transactional_id": "tx", "acks": 1, "timeout_ms": 5, "topic_data": []}
    assert len(v3.encode(body)) == len(v2.encode(body)) + 2 + len("tx")


def test_decoded_structs_are_independent_copies_of_defaults():
    codec = message_codec(APIS_BY_KEY[3].response, 1)
    a = codec.decode(codec.encode({}))
    b = codec.decode(codec.encode({}))
    a.brokers.append(1)
    assert b.brokers == []


def test_null_is_kept_apart_from_the_default_for_nullable_arrays():
    codec = message_codec(APIS_BY_KEY[3].request, 9)
    assert codec.decode(codec.encode({"topics": None})).topics is None
    assert codec.decode(codec.encode({})).topics == []


def test_unknown_tagged_fields_survive_a_round_trip():
    codec = message_codec(APIS_BY_KEY[18].request, 3)
    body = {
        "client_software_name": "x",
        "client_software_version": "1",
        "unknown_tagged_fields": [(7, b"\x01\x02"), (40000, b"")],
    }
    data = codec.encode(body)
    decoded = codec.decode(data)
    assert decoded.unknown_tagged_fields == [(7, b"\x01\x02"), (40000, b"")]
    assert codec.encode(decoded) == data


def test_known_tagged_fields_are_written_only_when_not_default():
    codec = message_codec(APIS_BY_KEY[18].response, 3)
    plain = codec.encode({"api_keys": []})
    with_tag = codec.encode({"api_keys": [], "finalized_features_epoch": 5})
    assert len(with_tag) > len(plain)
    assert codec.decode(with_tag).finalized_features_epoch == 5
    assert codec.decode(plain).finalized_features_epoch == -1


def test_uuid_fields_accept_uuid_objects_and_decode_to_them():
    codec = message_codec(APIS_BY_KEY[3].response, 12)
    tid = uuid.uuid4()
    body = codec.decode(codec.encode({"topics": [{"name": "t", "topic_id": tid}]}))
    assert body.topics[0].topic_id == tid


def test_records_decode_as_views_without_copying():
    codec = message_codec(APIS_BY_KEY[0].request, 9)
    payload = b"x" * 100
    data = codec.encode(
        {
            "acks": 1,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": payload}]}],
        }
    )
    records = codec.decode(data).topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records == payload
    assert records.obj is not None


@pytest.mark.parametrize(
    "body, message",
    [
        ({"acks": "one"}, "int"),
        ({"acks": 1 << 20}, "range"),
        ({"topic_data": [{"name": None}]}, "None"),
        ({"topic_data": 5}, ""),
    ],
)
def test_bad_values_raise_encode_error(body, message):
    for compiled in (True, False):
        with pytest.raises(EncodeError):
            message_codec(APIS_BY_KEY[0].request, 3, compiled).encode(body)


def test_trailing_bytes_after_a_body_are_an_error():
    codec = message_codec(APIS_BY_KEY[18].request, 0)
    with pytest.raises(DecodeError, match="left over"):
        codec.decode(b"\x00")


def test_struct_values_read_as_attributes_and_items():
    s = Struct(a=1)
    s.b = 2
    assert s.a == 1 and s["b"] == 2
    with pytest.raises(AttributeError):
        _ = s.c


def test_only_known_field_names_are_shadowed_by_dict_methods():
    # Such fields are read as items (entry["values"]), never as attributes.
    shadowed = set(dir(dict)) | {"unknown_tagged_fields"}
    found = set()

    def walk(api, fields):
        for f in fields:
            if f.name in shadowed:
                found.add((api.name, f.name))
            walk(api, f.fields)

    for api in ALL_APIS:
        walk(api, api.request.fields)
        walk(api, api.response.fields)
    assert found == {("DescribeClientQuotas", "values")}


def test_every_api_the_issue_requires_is_declared_with_its_versions():
    required = {
        "ApiVersions": (0, 4), "Metadata": (0, 12), "Produce": (0, 11), "Fetch": (4, 17),
        "ListOffsets": (1, 10), "OffsetCommit": (2, 9), "OffsetFetch": (1, 9),
        "FindCoordinator": (0, 6), "JoinGroup": (0, 9), "SyncGroup": (0, 5),
        "Heartbeat": (0, 4), "LeaveGroup": (0, 5), "DescribeGroups": (0, 5),
        "ListGroups": (0, 5), "DeleteGroups": (0, 2), "OffsetDelete": (0, 0),
        "CreateTopics": (2, 7), "DeleteTopics": (1, 6), "CreatePartitions": (0, 3),
        "DeleteRecords": (0, 2), "InitProducerId": (0, 5), "OffsetForLeaderEpoch": (2, 4),
        "DescribeConfigs": (1, 4), "AlterConfigs": (0, 2), "IncrementalAlterConfigs": (0, 1),
        "DescribeCluster": (0, 1), "DescribeLogDirs": (1, 4), "SaslHandshake": (0, 1),
        "SaslAuthenticate": (0, 2), "AddPartitionsToTxn": (0, 5), "AddOffsetsToTxn": (0, 4),
        "EndTxn": (0, 5), "TxnOffsetCommit": (0, 4), "WriteTxnMarkers": (1, 1),
    }  # fmt: skip
    declared = {a.name: a.valid for a in ALL_APIS}
    for name, (lo, hi) in required.items():
        assert name in declared, name
        assert lo in declared[name] and hi in declared[name], name


def _encode_once_arrays(value):
    """`value` with every array made an EncodeOnce (the same elements, converted too)."""
    if isinstance(value, dict):
        return Struct({k: _encode_once_arrays(v) for k, v in value.items()})
    if isinstance(value, list):
        return EncodeOnce(_encode_once_arrays(v) for v in value)
    return value


@pytest.mark.parametrize("api,direction,version", CASES)
def test_encode_once_arrays_encode_as_plain_lists_in_both_forms(api, direction, version):
    message = getattr(api, direction)
    forms = [message_codec(message, version, compiled=c) for c in (True, False)]
    value = sample(forms[0].root, random.Random(f"once/{api.key}/{direction}/{version}"))
    data = forms[0].encode(value)
    once = _encode_once_arrays(value)
    for form in forms:
        assert form.encode(once) == data
        assert form.encode(once) == data  # the second time from the kept bytes


def test_an_encode_once_array_is_encoded_once_per_version():
    """Metadata answers reuse each topic's partition entries: each version's
    codec encodes them once and writes the same bytes afterwards."""
    metadata = APIS_BY_KEY[3].response
    partitions = EncodeOnce(
        [{"partition_index": 0, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}]
    )
    body = {"topics": [{"name": "t", "partitions": partitions}]}

    def leaders(version: int, compiled: bool) -> list[int]:
        codec = message_codec(metadata, version, compiled=compiled)
        decoded = codec.decode(codec.encode(body))
        return [p.leader_id for p in decoded.topics[0].partitions]

    assert leaders(12, True) == [1]
    # Changing a kept array breaks its contract: the old bytes are written.
    partitions[0]["leader_id"] = 2
    assert leaders(12, True) == [1]
    # Each codec keeps its own: another version, or the interpreted form.
    assert leaders(9, True) == [2]
    assert leaders(12, False) == [2]
    body["topics"][0]["partitions"] = list(partitions)
    assert leaders(12, True) == [2]  # a plain list is encoded every time
