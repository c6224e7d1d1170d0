"""The records the transaction coordinator writes to `__transaction_state`.

Kafka's own schemas (`TransactionLogKey.json`, `TransactionLogValue.json` in
Kafka's transaction-coordinator module), declared with `wire.schema`. Key and
value each start with an int16 version, then the struct at that version. One
key per transactional id; a null value (a tombstone) is an expired id.

Kafka 4.x writes value v0 for transactions v1 and value v1 (flexible, with the
tagged producer-id fields of KIP-890) for transactions v2; both decode here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator.records import decode_versioned, encode_versioned
from coordinator.txn_state import TxnState
from wire.errors import DecodeError
from wire.schema import F, message

TRANSACTION_LOG_KEY = message(
    "TransactionLogKey",
    valid="0",
    flexible="none",
    fields=[F("transactional_id", "string", "0")],
)

TRANSACTION_LOG_VALUE = message(
    "TransactionLogValue",
    valid="0-1",
    flexible="1+",
    fields=[
        F("producer_id", "int64", "0+"),
        F("previous_producer_id", "int64", "1+", tagged="1+", tag=0, default=-1),
        F("next_producer_id", "int64", "1+", tagged="1+", tag=1, default=-1),
        F("producer_epoch", "int16", "0+"),
        F("next_producer_epoch", "int16", "1+", tagged="1+", tag=3, default=-1),
        F("transaction_timeout_ms", "int32", "0+"),
        F("transaction_status", "int8", "0+"),
        F("transaction_partitions", "[]PartitionsSchema", "0+",
            F("topic", "string", "0+"),
            F("partition_ids", "[]int32", "0+"),
            nullable="0+",
        ),
        F("transaction_last_update_timestamp_ms", "int64", "0+"),
        F("transaction_start_timestamp_ms", "int64", "0+"),
        F("client_transaction_version", "int16", "1+", tagged="1+", tag=2, default=0),
    ],
)  # fmt: skip

KEY_VERSION = 0


class TxnRecordDecodeError(DecodeError):
    """A `__transaction_state` record that does not decode."""


@dataclass(frozen=True, slots=True)
class TxnLogValue:
    """What the log keeps of one transactional id (Kafka's TxnTransitMetadata)."""

    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    state: TxnState
    partitions: frozenset[tuple[str, int]] = field(default_factory=frozenset)
    last_update_timestamp_ms: int = -1
    start_timestamp_ms: int = -1
    previous_producer_id: int = -1
    next_producer_id: int = -1
    next_producer_epoch: int = -1
    client_transaction_version: int = 0


def encode_key(transactional_id: str) -> bytes:
    return encode_versioned(
        TRANSACTION_LOG_KEY, KEY_VERSION, {"transactional_id": transactional_id}
    )


def encode_value(value: TxnLogValue) -> bytes:
    """Value v0 for clients of transactions v1, v1 for v2 (as Kafka 4.x writes)."""
    version = 1 if value.client_transaction_version >= 2 else 0
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(value.partitions):
        by_topic.setdefault(topic, []).append(index)
    body = {
        "producer_id": value.producer_id,
        "previous_producer_id": value.previous_producer_id,
        "next_producer_id": value.next_producer_id,
        "producer_epoch": value.producer_epoch,
        "next_producer_epoch": value.next_producer_epoch,
        "transaction_timeout_ms": value.transaction_timeout_ms,
        "transaction_status": value.state.code,
        "transaction_partitions": [
            {"topic": t, "partition_ids": ids} for t, ids in by_topic.items()
        ],
        "transaction_last_update_timestamp_ms": value.last_update_timestamp_ms,
        "transaction_start_timestamp_ms": value.start_timestamp_ms,
        "client_transaction_version": value.client_transaction_version,
    }
    return encode_versioned(TRANSACTION_LOG_VALUE, version, body)


def _decode(msg, data):
    return decode_versioned(msg, data, TxnRecordDecodeError)[1]


def decode_key(key) -> str:
    if key is None:
        raise TxnRecordDecodeError("a __transaction_state record without a key")
    return _decode(TRANSACTION_LOG_KEY, key).transactional_id


def decode_value(value) -> TxnLogValue | None:
    """The value of a record; None for a tombstone."""
    if value is None:
        return None
    v = _decode(TRANSACTION_LOG_VALUE, value)
    try:
        state = TxnState.from_code(v.transaction_status)
    except ValueError as e:
        raise TxnRecordDecodeError(str(e)) from None
    partitions = frozenset(
        (t.topic, int(p)) for t in (v.transaction_partitions or ()) for p in t.partition_ids
    )
    return TxnLogValue(
        producer_id=v.producer_id,
        producer_epoch=v.producer_epoch,
        transaction_timeout_ms=v.transaction_timeout_ms,
        state=state,
        partitions=partitions,
        last_update_timestamp_ms=v.transaction_last_update_timestamp_ms,
        start_timestamp_ms=v.transaction_start_timestamp_ms,
        previous_producer_id=v.previous_producer_id,
        next_producer_id=v.next_producer_id,
        next_producer_epoch=v.next_producer_epoch,
        client_transaction_version=v.client_transaction_version,
    )
