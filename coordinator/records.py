"""The records the group coordinator writes to `__consumer_offsets`.

Kafka's own schemas (`records/GroupMetadataKey.json` etc. in Kafka's
group-coordinator module), declared with `wire.schema`. A record's key and
value each start with an int16 version, then the struct at that version. The
key's version also says what the record is: 0 and 1 are an offset commit
(OffsetCommitKey), 2 is classic group metadata (GroupMetadataKey); higher ones
belong to the consumer/share group protocols, which this coordinator does not
implement (`decode_record` returns None for them, and `load` skips them, as
Kafka skips record types it does not know). A null value is a tombstone.

What Kafka 4.x writes (GroupCoordinatorRecordHelpers, 4.0 to 4.3):
- GroupMetadataKey v2, GroupMetadataValue v3 (the highest non-flexible version);
- OffsetCommitKey v1, OffsetCommitValue v3, or v1 when the commit carried an
  explicit retention (OffsetCommit v2-v4 with retention_time_ms != -1), as
  only v1 has expire_timestamp.
Every version 0-4 of the values decodes, so logs written by older Kafka load.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from wire.buffers import Reader
from wire.codec import message_codec
from wire.errors import DecodeError
from wire.schema import F, message
from wire.values import Struct

__all__ = [
    "GROUP_METADATA_KEY",
    "GROUP_METADATA_VALUE",
    "OFFSET_COMMIT_KEY",
    "OFFSET_COMMIT_VALUE",
    "GroupMetadataRecord",
    "MemberMetadataRecord",
    "OffsetCommitRecord",
    "decode_record",
    "encode_group_metadata",
    "encode_group_tombstone",
    "encode_offset_commit",
    "encode_offset_tombstone",
]

# --- declarations (field for field as in Kafka's JSON) -------------------------

OFFSET_COMMIT_KEY = message(
    "OffsetCommitKey",
    valid="0-1",
    flexible="none",
    fields=[
        F("group", "string", "0-1"),
        F("topic", "string", "0-1"),
        F("partition", "int32", "0-1"),
    ],
)

OFFSET_COMMIT_VALUE = message(
    "OffsetCommitValue",
    valid="0-4",
    flexible="4+",
    fields=[
        F("offset", "int64", "0+"),
        F("leader_epoch", "int32", "3+", default=-1),
        F("metadata", "string", "0+"),
        F("commit_timestamp", "int64", "0+"),
        F("expire_timestamp", "int64", "1", default=-1),
    ],
)

GROUP_METADATA_KEY = message(
    "GroupMetadataKey",
    valid="2",
    flexible="none",
    fields=[F("group", "string", "2")],
)

GROUP_METADATA_VALUE = message(
    "GroupMetadataValue",
    valid="0-4",
    flexible="4+",
    fields=[
        F("protocol_type", "string", "0+"),
        F("generation", "int32", "0+"),
        F("protocol", "string", "0+", nullable="0+"),
        F("leader", "string", "0+", nullable="0+"),
        F("current_state_timestamp", "int64", "2+", default=-1),
        F("members", "[]MemberMetadata", "0+",
            F("member_id", "string", "0+"),
            F("group_instance_id", "string", "3+", nullable="3+", default=None),
            F("client_id", "string", "0+"),
            F("client_host", "string", "0+"),
            F("rebalance_timeout", "int32", "1+", default=-1),
            F("session_timeout", "int32", "0+"),
            F("subscription", "bytes", "0+"),
            F("assignment", "bytes", "0+"),
        ),
    ],
)  # fmt: skip

# The versions Kafka 4.x writes.
OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1

_INT16 = struct.Struct(">h")


class RecordDecodeError(DecodeError):
    """A `__consumer_offsets` record of a known type that does not decode."""


# --- typed records ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetCommitRecord:
    """An OffsetCommitKey/Value pair; `offset` is None for a tombstone."""

    group: str
    topic: str
    partition: int
    offset: int | None = None
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1  # -1: none (only value v1 carries one)

    @property
    def is_tombstone(self) -> bool:
        return self.offset is None


@dataclass(frozen=True, slots=True)
class MemberMetadataRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataRecord:
    """A GroupMetadataKey/Value pair; `tombstone` when the value is null."""

    group: str
    tombstone: bool = False
    protocol_type: str = ""
    generation: int = 0
    protocol: str | None = None
    leader: str | None = None
    current_state_timestamp: int = -1
    members: tuple[MemberMetadataRecord, ...] = field(default_factory=tuple)


# --- encoding --------------------------------------------------------------------


def encode_versioned(msg, version: int, body: dict) -> bytes:
    """A coordinator record's key or value: the int16 version, then the struct."""
    return _INT16.pack(version) + message_codec(msg, version).encode(body)


def _offset_key(group: str, topic: str, partition: int) -> bytes:
    body = {"group": group, "topic": topic, "partition": partition}
    return encode_versioned(OFFSET_COMMIT_KEY, OFFSET_COMMIT_KEY_VERSION, body)


def encode_offset_commit(rec: OffsetCommitRecord) -> tuple[bytes, bytes]:
    """(key, value) of an offset commit, in the versions Kafka 4.x writes."""
    if rec.offset is None:
        raise ValueError("use encode_offset_tombstone for a tombstone")
    version = (
        OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
        if rec.expire_timestamp != -1
        else OFFSET_COMMIT_VALUE_VERSION
    )
    value = {
        "offset": rec.offset,
        "leader_epoch": rec.leader_epoch,
        "metadata": rec.metadata,
        "commit_timestamp": rec.commit_timestamp,
        "expire_timestamp": rec.expire_timestamp,
    }
    key = _offset_key(rec.group, rec.topic, rec.partition)
    return key, encode_versioned(OFFSET_COMMIT_VALUE, version, value)


def encode_offset_tombstone(group: str, topic: str, partition: int) -> tuple[bytes, None]:
    return _offset_key(group, topic, partition), None


def _group_key(group: str) -> bytes:
    return encode_versioned(GROUP_METADATA_KEY, GROUP_METADATA_KEY_VERSION, {"group": group})


def encode_group_metadata(rec: GroupMetadataRecord) -> tuple[bytes, bytes]:
    """(key, value) of a group's metadata, GroupMetadataValue v3 as Kafka 4.x writes."""
    value = {
        "protocol_type": rec.protocol_type,
        "generation": rec.generation,
        "protocol": rec.protocol,
        "leader": rec.leader,
        "current_state_timestamp": rec.current_state_timestamp,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "rebalance_timeout": m.rebalance_timeout,
                "session_timeout": m.session_timeout,
                "subscription": m.subscription,
                "assignment": m.assignment,
            }
            for m in rec.members
        ],
    }
    return _group_key(rec.group), encode_versioned(
        GROUP_METADATA_VALUE, GROUP_METADATA_VALUE_VERSION, value
    )


def encode_group_tombstone(group: str) -> tuple[bytes, None]:
    return _group_key(group), None


# --- decoding --------------------------------------------------------------------


def decode_versioned(msg, data, error: type[DecodeError] = RecordDecodeError) -> tuple[int, Struct]:
    """(version, struct) of a coordinator record's key or value; `error` when
    it is too short, of an unknown version, or malformed."""
    r = Reader(data)
    if r.remaining < 2:
        raise error(f"{msg.name}: {r.remaining} bytes, no version")
    version = _INT16.unpack(bytes(r.read(2)))[0]
    if version not in msg.valid:
        raise error(f"{msg.name} has no version {version}")
    try:
        return version, message_codec(msg, version).decode(r)
    except DecodeError as e:
        raise error(f"{msg.name} v{version}: {e}") from None


def key_version(key) -> int:
    """The record type of a `__consumer_offsets` key (its int16 version)."""
    if key is None or len(key) < 2:
        raise RecordDecodeError("record key too short for a version")
    return _INT16.unpack(bytes(key[:2]))[0]


def decode_record(key, value) -> OffsetCommitRecord | GroupMetadataRecord | None:
    """Decode one `__consumer_offsets` record; None for record types other than
    offset commits and classic group metadata. Raises RecordDecodeError."""
    kv = key_version(key)
    if kv in (0, 1):
        _, k = decode_versioned(OFFSET_COMMIT_KEY, key)
        if value is None:
            return OffsetCommitRecord(k.group, k.topic, k.partition)
        _, v = decode_versioned(OFFSET_COMMIT_VALUE, value)
        return OffsetCommitRecord(
            k.group,
            k.topic,
            k.partition,
            offset=v.offset,
            leader_epoch=v.leader_epoch,
            metadata=v.metadata,
            commit_timestamp=v.commit_timestamp,
            expire_timestamp=v.expire_timestamp,
        )
    if kv == 2:
        _, k = decode_versioned(GROUP_METADATA_KEY, key)
        if value is None:
            return GroupMetadataRecord(k.group, tombstone=True)
        _, v = decode_versioned(GROUP_METADATA_VALUE, value)
        members = tuple(
            MemberMetadataRecord(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout,
                session_timeout=m.session_timeout,
                subscription=bytes(m.subscription),
                assignment=bytes(m.assignment),
            )
            for m in v.members
        )
        return GroupMetadataRecord(
            k.group,
            protocol_type=v.protocol_type,
            generation=v.generation,
            protocol=v.protocol,
            leader=v.leader,
            current_state_timestamp=v.current_state_timestamp,
            members=members,
        )
    return None
