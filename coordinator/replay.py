"""Rebuilding groups and offsets from `__consumer_offsets` while a partition loads.

The records come in log order, so a later record for a key replaces an
earlier one and a tombstone removes it (Kafka's GroupCoordinatorShard.replay,
which hands them to GroupMetadataManager and OffsetMetadataManager):

- an offset commit record sets the group's committed offset; offsets of a
  group without metadata form a simple group (Empty, no protocol type,
  its state timestamp the load time, as in Kafka);
- a group metadata record replaces the group, not its offsets; a group with
  members comes back Stable, without members Empty.

Record types other than offset commits and classic group metadata (KIP-848
consumer groups, share groups...) are skipped; a malformed record raises
`RecordDecodeError`.

Transactions (TxnOffsetCommit): the records of a transactional batch come as
`TransactionalRecord`s and stay pending for their producer; the batch's
transaction marker comes as a `TransactionEnd`, which makes them committed
offsets (COMMIT) or drops them (ABORT), as Kafka's replayEndTransactionMarker.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from coordinator.group import Group, Member
from coordinator.membership import Membership
from coordinator.offsets import OffsetAndMetadata, Offsets
from coordinator.records import GroupMetadataRecord, OffsetCommitRecord, decode_record
from coordinator.state import GroupState

S = GroupState


@dataclass(frozen=True, slots=True)
class TransactionalRecord:
    """A record of a transactional batch of `producer_id` (a TxnOffsetCommit)."""

    producer_id: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True, slots=True)
class TransactionEnd:
    """The COMMIT or ABORT marker of `producer_id`'s transaction."""

    producer_id: int
    commit: bool


def replay_records(
    partition: int,
    records: Iterable,
    membership: Membership,
    offsets: Offsets,
    now_ms: int,
) -> None:
    """Apply records of `partition` in log order: (key, value) pairs (value
    None: a tombstone), `TransactionalRecord`s and `TransactionEnd`s."""
    for item in records:
        if isinstance(item, TransactionEnd):
            offsets.end_transaction(partition, item.producer_id, item.commit, now_ms)
            continue
        if isinstance(item, TransactionalRecord):
            rec = decode_record(item.key, item.value)
            if isinstance(rec, OffsetCommitRecord):
                if rec.offset is None:
                    # A tombstone counts at once, in a transaction or not (Kafka).
                    _replay_offset(rec, membership, offsets, now_ms)
                    continue
                if membership.group(rec.group) is None:
                    membership.create_group(rec.group, now_ms)
                offsets.add_pending(
                    item.producer_id,
                    rec.group,
                    (rec.topic, rec.partition),
                    _offset_and_metadata(rec),
                )
            continue
        key, value = item
        rec = decode_record(key, value)
        if isinstance(rec, OffsetCommitRecord):
            _replay_offset(rec, membership, offsets, now_ms)
        elif isinstance(rec, GroupMetadataRecord):
            _replay_group(rec, membership, now_ms)


def _offset_and_metadata(rec: OffsetCommitRecord) -> OffsetAndMetadata:
    assert rec.offset is not None
    return OffsetAndMetadata(
        offset=rec.offset,
        leader_epoch=rec.leader_epoch,
        metadata=rec.metadata,
        commit_timestamp_ms=rec.commit_timestamp,
        expire_timestamp_ms=None if rec.expire_timestamp == -1 else rec.expire_timestamp,
    )


def _replay_offset(
    rec: OffsetCommitRecord, membership: Membership, offsets: Offsets, now_ms: int
) -> None:
    gid = rec.group
    key = (rec.topic, rec.partition)
    if rec.offset is None:  # a tombstone
        offsets.remove_committed(gid, key)
        return
    if membership.group(gid) is None:
        # Offsets without membership: a simple group.
        membership.create_group(gid, now_ms)
    offsets.set_committed(gid, key, _offset_and_metadata(rec))


def _replay_group(rec: GroupMetadataRecord, membership: Membership, now_ms: int) -> None:
    old = membership.group(rec.group)
    if old is not None:
        membership.forget_group(old)
    if rec.tombstone:
        return
    group = Group(
        rec.group,
        membership.partition_for(rec.group),
        state_timestamp=None if rec.current_state_timestamp == -1 else rec.current_state_timestamp,
        state=S.STABLE if rec.members else S.EMPTY,
        generation=rec.generation,
        protocol_type=rec.protocol_type or None,
        protocol_name=rec.protocol,
        leader_id=rec.leader,
    )
    for m in rec.members:
        group.add(
            Member(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                # Records older than v1 have no rebalance timeout.
                rebalance_timeout_ms=m.session_timeout
                if m.rebalance_timeout == -1
                else m.rebalance_timeout,
                session_timeout_ms=m.session_timeout,
                protocol_type=rec.protocol_type,
                protocols=[(rec.protocol or "", m.subscription)],
                assignment=m.assignment,
            )
        )
    group.subscribed_topics = group.compute_subscribed_topics()
    membership.add_group(group)
