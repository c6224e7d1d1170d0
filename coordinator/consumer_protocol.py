"""The embedded "consumer" protocol: what a consumer puts in JoinGroup's
protocol metadata (its subscription) and what the leader puts in SyncGroup's
assignments. The coordinator is protocol-agnostic except for one thing: to
refuse OffsetDelete on a topic a consumer group is subscribed to, and to keep
those topics' offsets from expiring, it reads the topics out of each member's
subscription, as Kafka does (parsing with the v0 layout, which every later
version extends, after the int16 version).

Declared from Kafka's `ConsumerProtocolSubscription.json` and
`ConsumerProtocolAssignment.json` (non-flexible, versions 0-3).
"""

from __future__ import annotations

import struct

from wire.buffers import Reader
from wire.codec import message_codec
from wire.errors import DecodeError
from wire.schema import F, message

PROTOCOL_TYPE = "consumer"

CONSUMER_PROTOCOL_SUBSCRIPTION = message(
    "ConsumerProtocolSubscription",
    valid="0-3",
    flexible="none",
    fields=[
        F("topics", "[]string", "0+"),
        F("user_data", "bytes", "0+", nullable="0+", default=None),
        F("owned_partitions", "[]TopicPartition", "1+",
            F("topic", "string", "1+"),
            F("partitions", "[]int32", "1+"),
        ),
        F("generation_id", "int32", "2+", default=-1),
        F("rack_id", "string", "3+", nullable="3+", default=None),
    ],
)  # fmt: skip

CONSUMER_PROTOCOL_ASSIGNMENT = message(
    "ConsumerProtocolAssignment",
    valid="0-3",
    flexible="none",
    fields=[
        F("assigned_partitions", "[]TopicPartition", "0+",
            F("topic", "string", "0+"),
            F("partitions", "[]int32", "0+"),
        ),
        F("user_data", "bytes", "0+", nullable="0+", default=None),
    ],
)  # fmt: skip

_INT16 = struct.Struct(">h")


def subscribed_topics(metadata: bytes) -> frozenset[str]:
    """The topics of a consumer's subscription; raises DecodeError if it is not one.

    Like Kafka: read the int16 version, then the v0 fields (topics, user data)
    whatever the version, ignoring what follows.
    """
    r = Reader(metadata)
    if r.remaining < 2:
        raise DecodeError("consumer subscription shorter than its version")
    version = _INT16.unpack(bytes(r.read(2)))[0]
    if version < 0:
        raise DecodeError(f"unsupported consumer subscription version {version}")
    body = message_codec(CONSUMER_PROTOCOL_SUBSCRIPTION, 0).read(r)
    return frozenset(body.topics)


def encode_subscription(topics, version: int = 0, **fields) -> bytes:
    """A consumer's JoinGroup metadata (for tests and tools)."""
    body = {"topics": list(topics), **fields}
    return _INT16.pack(version) + message_codec(CONSUMER_PROTOCOL_SUBSCRIPTION, version).encode(
        body
    )


def encode_assignment(partitions: dict[str, list[int]], version: int = 0) -> bytes:
    """A consumer's SyncGroup assignment (for tests and tools)."""
    body = {
        "assigned_partitions": [{"topic": t, "partitions": list(p)} for t, p in partitions.items()]
    }
    return _INT16.pack(version) + message_codec(CONSUMER_PROTOCOL_ASSIGNMENT, version).encode(body)


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    r = Reader(data)
    if r.remaining < 2:
        raise DecodeError("consumer assignment shorter than its version")
    version = _INT16.unpack(bytes(r.read(2)))[0]
    body = message_codec(CONSUMER_PROTOCOL_ASSIGNMENT, min(max(version, 0), 3)).read(r)
    return {tp.topic: list(tp.partitions) for tp in body.assigned_partitions}
