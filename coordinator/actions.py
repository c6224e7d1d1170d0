"""What the coordinator asks its driver to do.

Every coordinator method returns a list of actions, in the order to carry
them out:

- `Reply(token, response)`: send `response` (a response body for the
  request's api version, in `wire`'s field names) to the request the caller
  tagged with `token`. A reply may answer a request from an earlier call: a
  parked JoinGroup is answered when the join phase completes, a parked
  SyncGroup when the leader's assignment is stored.
- `Persist(write_id, partition, records)`: append `records` to partition
  `partition` of the coordinator's topic (`__consumer_offsets` for groups),
  as one batch, in order (a transactional batch of `producer_id` when it is
  set), then report the outcome with the coordinator's
  `persisted(write_id, now_ms, error)`.
- `SendMarkers(...)` (the transaction coordinator only): write a transaction's
  markers to its partitions, then report `markers_written`.

"Reply after persisted": a reply that depends on records being durable (an
offset commit's, the SyncGroups of a new generation, a LeaveGroup that emptied
the group, DeleteGroups, OffsetDelete, a static member's rejoin) is never in
the same list as its Persist; it comes out of `persisted()` for that write,
with an error code if the write failed. So the driver may send every Reply as
soon as it sees it, and must report every Persist's outcome, for one partition
in the order the Persists were emitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple


class Record(NamedTuple):
    """One record of the coordinator's topic: serialized key, value (None: tombstone)."""

    key: bytes
    value: bytes | None


@dataclass(frozen=True, slots=True)
class Reply:
    token: Any
    response: dict


@dataclass(frozen=True, slots=True)
class Persist:
    write_id: int
    partition: int
    records: tuple[Record, ...]
    # A transactional batch of this producer (TxnOffsetCommit), or -1: the
    # records count only once the transaction's COMMIT marker follows them.
    producer_id: int = -1
    producer_epoch: int = -1

    @property
    def transactional(self) -> bool:
        return self.producer_id >= 0


@dataclass(frozen=True, slots=True)
class SendMarkers:
    """Write the COMMIT (or ABORT) marker of `producer_id`'s transaction to
    every one of `partitions` (to each partition's leader), then report with
    the transaction coordinator's `markers_written(transactional_id, ...)`. Until
    then the transaction stays prepared. A partition whose topic is gone
    counts as written."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: tuple[tuple[str, int], ...]
    # 2: a transaction of transactions v2, whose markers carry a bumped epoch
    # (WriteTxnMarkers v2's TransactionVersion, KIP-1228).
    transaction_version: int = 0


Action = Reply | Persist | SendMarkers
