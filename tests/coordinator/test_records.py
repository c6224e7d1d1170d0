"""`__consumer_offsets` records in Kafka's byte format.

Three kinds of evidence: values laid out by hand from the JSON specs' field
order; golden bytes produced by Kafka 4.3.1's own GroupCoordinatorRecordSerde;
and the declarations compared field by field with the reference JSON files.
"""

import json
import re
import struct
from pathlib import Path

import pytest

from coordinator.consumer_protocol import (
    decode_assignment,
    encode_assignment,
    encode_subscription,
    subscribed_topics,
)
from coordinator.records import (
    GROUP_METADATA_KEY,
    GROUP_METADATA_VALUE,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE,
    GroupMetadataRecord,
    MemberMetadataRecord,
    OffsetCommitRecord,
    RecordDecodeError,
    decode_record,
    encode_group_metadata,
    encode_group_tombstone,
    encode_offset_commit,
    encode_offset_tombstone,
)
from wire.errors import DecodeError
from wire.schema import snake_case


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def string(s):
    b = s.encode()
    return i16(len(b)) + b


def nstring(s):
    return i16(-1) if s is None else string(s)


def bytes_(b):
    return i32(len(b)) + b


MEMBER = MemberMetadataRecord(
    member_id="consumer-1-abc",
    group_instance_id="instance-1",
    client_id="consumer-1",
    client_host="/10.0.0.1",
    rebalance_timeout=300000,
    session_timeout=45000,
    subscription=b"\x00\x00sub",
    assignment=b"\x00\x00asg",
)
GROUP = GroupMetadataRecord(
    "my-group",
    protocol_type="consumer",
    generation=7,
    protocol="cooperative-sticky",
    leader="consumer-1-abc",
    current_state_timestamp=1_700_000_000_123,
    members=(MEMBER,),
)


def test_group_metadata_value_v3_is_laid_out_as_the_json_spec_says():
    key, value = encode_group_metadata(GROUP)
    # GroupMetadataKey: version 2, then "group".
    assert key == i16(2) + string("my-group")
    expected = (
        i16(3)  # value version 3, what Kafka 4.x writes
        + string("consumer")  # protocolType
        + i32(7)  # generation
        + nstring("cooperative-sticky")  # protocol (nullable)
        + nstring("consumer-1-abc")  # leader (nullable)
        + i64(1_700_000_000_123)  # currentStateTimestamp (v2+)
        + i32(1)  # members: array length
        + string("consumer-1-abc")  # memberId
        + nstring("instance-1")  # groupInstanceId (v3+, nullable)
        + string("consumer-1")  # clientId
        + string("/10.0.0.1")  # clientHost
        + i32(300000)  # rebalanceTimeout (v1+)
        + i32(45000)  # sessionTimeout
        + bytes_(b"\x00\x00sub")  # subscription
        + bytes_(b"\x00\x00asg")  # assignment
    )
    assert value == expected
    assert decode_record(key, value) == GROUP


def test_offset_commit_v3_is_laid_out_as_the_json_spec_says():
    rec = OffsetCommitRecord(
        "g", "orders", 5, offset=1234, leader_epoch=9, metadata="meta", commit_timestamp=42
    )
    key, value = encode_offset_commit(rec)
    assert key == i16(1) + string("g") + string("orders") + i32(5)
    assert value == i16(3) + i64(1234) + i32(9) + string("meta") + i64(42)
    assert decode_record(key, value) == rec


def test_offset_commit_with_expire_timestamp_is_written_as_value_v1():
    rec = OffsetCommitRecord(
        "g", "t", 0, offset=1, metadata="", commit_timestamp=10, expire_timestamp=99
    )
    _, value = encode_offset_commit(rec)
    # v1 has no leader epoch but carries expireTimestamp.
    assert value == i16(1) + i64(1) + string("") + i64(10) + i64(99)
    assert decode_record(encode_offset_commit(rec)[0], value) == rec


# Bytes printed by Kafka 4.3.1 (GroupCoordinatorRecordSerde.serializeKey/Value) for
#   OffsetCommitKey(g, t, 3) / OffsetCommitValue v3(offset 42, epoch -1, "m", ts 1000)
#   GroupMetadataKey(g) / GroupMetadataValue v3(consumer, gen 1, range, leader a, ts 5,
#     [member a, no instance, client c, host /h, rebalance 300, session 10, sub 0001, asg ""])
KAFKA_OFFSET_KEY = "000100016700017400000003"
KAFKA_OFFSET_VALUE = "0003000000000000002affffffff00016d00000000000003e8"
KAFKA_GROUP_KEY = "0002000167"
KAFKA_GROUP_VALUE = (
    "0003" "0008636f6e73756d6572" "00000001" "000572616e6765" "000161" "0000000000000005"
    "00000001" "000161" "ffff" "000163" "00022f68" "0000012c" "0000000a" "000000020001" "00000000"
)  # fmt: skip


def test_records_match_kafka_4_3_serde_bytes():
    key, value = encode_offset_commit(
        OffsetCommitRecord("g", "t", 3, offset=42, metadata="m", commit_timestamp=1000)
    )
    assert (key.hex(), value.hex()) == (KAFKA_OFFSET_KEY, KAFKA_OFFSET_VALUE)
    member = MemberMetadataRecord("a", None, "c", "/h", 300, 10, b"\x00\x01", b"")
    key, value = encode_group_metadata(
        GroupMetadataRecord(
            "g",
            protocol_type="consumer",
            generation=1,
            protocol="range",
            leader="a",
            current_state_timestamp=5,
            members=(member,),
        )
    )
    assert (key.hex(), value.hex()) == (KAFKA_GROUP_KEY, KAFKA_GROUP_VALUE)


def test_tombstones_have_a_key_and_no_value():
    key, value = encode_group_tombstone("g")
    assert value is None
    assert decode_record(key, None) == GroupMetadataRecord("g", tombstone=True)
    key, value = encode_offset_tombstone("g", "t", 1)
    assert value is None
    assert decode_record(key, None).is_tombstone


def test_older_value_versions_written_by_old_kafka_still_decode():
    # GroupMetadataValue v0: no timestamps, no rebalance timeout, no instance id.
    v0 = (
        i16(0)
        + string("consumer")
        + i32(3)
        + nstring("range")
        + nstring("m1")
        + i32(1)
        + string("m1")
        + string("c")
        + string("/h")
        + i32(10000)
        + bytes_(b"s")
        + bytes_(b"a")
    )
    rec = decode_record(i16(2) + string("g"), v0)
    assert rec.generation == 3
    assert rec.current_state_timestamp == -1
    (m,) = rec.members
    assert (m.rebalance_timeout, m.group_instance_id, m.session_timeout) == (-1, None, 10000)
    # OffsetCommitKey v0 and OffsetCommitValue v0 (offset, metadata, timestamp).
    key0 = i16(0) + string("g") + string("t") + i32(0)
    rec = decode_record(key0, i16(0) + i64(5) + string("x") + i64(7))
    assert (rec.offset, rec.metadata, rec.commit_timestamp, rec.leader_epoch) == (5, "x", 7, -1)
    # OffsetCommitValue v4 is flexible: compact string and a tagged-field section.
    v4 = i16(4) + i64(5) + i32(2) + b"\x02x" + i64(7) + b"\x00"
    assert decode_record(key0, v4).leader_epoch == 2


def test_other_record_types_are_skipped_and_garbage_is_an_error():
    # Key version 3 is ConsumerGroupMetadataKey (KIP-848 groups): not ours.
    assert decode_record(i16(3) + string("g"), b"\x00\x00\x00\x00\x00\x00") is None
    with pytest.raises(RecordDecodeError):
        decode_record(b"\x00", None)
    with pytest.raises(RecordDecodeError):
        decode_record(i16(2) + string("g"), i16(3) + b"\x00")
    with pytest.raises(RecordDecodeError):
        decode_record(i16(2) + string("g"), i16(9) + b"")  # unknown value version


# --- the declarations against the reference JSON specs -------------------------------

SPECS = Path(__file__).resolve().parents[3] / "shared" / "kafka-protocol" / "records"


def _load_spec(name):
    path = SPECS / f"{name}.json"
    if not path.exists():
        pytest.skip("reference specs not present")
    text = re.sub(r"//.*", "", path.read_text())
    return json.loads(text)


def _fields(spec_fields, common):
    out = []
    for f in spec_fields:
        nested = f.get("fields")
        if nested is None and f["type"].lstrip("[]") in common:
            nested = common[f["type"].lstrip("[]")]
        out.append(
            (
                snake_case(f["name"]),
                f["versions"],
                f.get("nullableVersions", "none"),
                _fields(nested, common) if nested else [],
            )
        )
    return out


def _declared(fields):
    return [
        (f.name, str(f.versions), str(f.nullable), _declared(f.fields) if f.fields else [])
        for f in fields
    ]


@pytest.mark.parametrize(
    "decl",
    [GROUP_METADATA_KEY, GROUP_METADATA_VALUE, OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE],
    ids=lambda d: d.name,
)
def test_declarations_match_the_reference_json(decl):
    spec = _load_spec(decl.name)
    common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
    assert str(decl.valid) == spec["validVersions"]
    assert str(decl.flexible) == spec["flexibleVersions"]

    def norm(fields):
        # The JSON writes "0-1"/"2" etc.; normalise both sides through Versions.
        from wire.schema import Versions

        return [
            (n, str(Versions.parse(v)), str(Versions.parse(nv)), norm(sub))
            for n, v, nv, sub in fields
        ]

    assert _declared(decl.fields) == norm(_fields(spec["fields"], common))


# --- the consumer protocol --------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscribed_topics_read_from_every_subscription_version(version):
    data = encode_subscription(["a", "b"], version=version)
    assert subscribed_topics(data) == {"a", "b"}


def test_a_subscription_that_is_not_the_consumer_protocol_is_a_decode_error():
    for junk in (b"", b"\x00", b"\xff\xff\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05ab"):
        with pytest.raises(DecodeError):
            subscribed_topics(junk)


def test_assignment_round_trips():
    assert decode_assignment(encode_assignment({"t": [0, 2], "u": [1]})) == {
        "t": [0, 2],
        "u": [1],
    }
