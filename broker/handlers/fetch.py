"""Fetch (key 1), versions 4-18: read whole batches from partition leaders.

Long poll: when fewer than min_bytes are ready the request waits, up to
max_wait_ms, for an append (or a high watermark move) on any partition it
reads, then reads again. Limits: max_bytes for the whole response and
partition_max_bytes per partition, but the first partition with data always
returns at least one whole batch (KIP-74) so a large record never blocks a
consumer. Topic ids replace names from v13. A follower's high watermark
(v18, KIP-1166) is for KRaft's own fetches, and is not read here. From v7 a
client may open a fetch session (KIP-227, broker/fetch_sessions.py): its later
Fetches list only what changed, and are answered with only the partitions
that have something new.

Who is asking decides how far a read goes: a consumer (replica id -1) reads
up to the high watermark (the last stable offset for read_committed); a
follower (replica id >= 0, in ReplicaState from v15) reads up to the log end,
and its fetch offset tells the leader how far it has got (the high watermark
and the ISR move with it).

Records leave as file ranges that the connection sends with os.sendfile.
"""

from __future__ import annotations

import time
from typing import Any

import trio

from broker.fetch_sessions import (
    INVALID_SESSION_ID,
    CachedPartition,
    FetchContext,
    FetchSessionCache,
)
from broker.metadata.publisher import MetadataCache
from broker.partition import PartitionError
from broker.registry import handles
from broker.replica_manager import ReplicaManager
from broker.request_context import RequestContext
from logstore import LogError, OffsetOutOfRange
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.schema import ZERO_UUID

READ_COMMITTED = 1


def _partition_error(index: int, code, partition=None) -> dict:
    return {
        "partition_index": index,
        "error_code": code,
        "high_watermark": partition.high_watermark if partition else -1,
        "last_stable_offset": partition.last_stable_offset if partition else -1,
        "log_start_offset": partition.log_start_offset if partition else -1,
        "aborted_transactions": None,
        # Empty, never null: Kafka sends MemoryRecords.EMPTY with an error and
        # librdkafka rejects a null record set ("invalid MessageSetSize -1").
        "records": b"",
    }


def error_response(request, code, message=None):
    return {
        "error_code": code,
        "session_id": 0,
        "responses": [],
    }


class _Target:
    """One partition of the request, resolved."""

    __slots__ = (
        "topic_key",
        "request",
        "partition",
        "error",
        "diverging",
        "read_replica",
        "cached",
    )

    def __init__(self, topic_key, request, partition, error, cached=None):
        self.topic_key = topic_key
        self.request = request
        self.partition = partition
        self.error = error
        # What the fetch session last answered for it (incremental Fetches).
        self.cached: CachedPartition | None = cached
        # A follower's (epoch, end offset) to truncate to, instead of records.
        self.diverging: tuple[int, int] | None = None
        # KIP-392: the replica the consumer should read from instead (no records here).
        self.read_replica: int | None = None


def _replica_id(ctx, request) -> int:
    """The fetching replica's id, -1 for a consumer (ReplicaState from v15)."""
    if ctx.api_version >= 15:
        return request.replica_state.replica_id
    return request.replica_id


def _read_all(targets, request, read_committed: bool, replica_id: int):
    """Read every partition once; (per-target results, bytes read). A result
    is None for a partition of an incremental Fetch read at its end whose
    offsets its session has already answered: the answer leaves it out."""
    remaining = request.max_bytes
    total = 0
    results: list[dict | None] = []
    for target in targets:
        p = target.request
        partition = target.partition
        if target.error != ErrorCode.NONE:
            results.append(_partition_error(p.partition, target.error, partition))
            continue
        if target.diverging is not None:
            epoch, end_offset = target.diverging
            result = _partition_error(p.partition, ErrorCode.NONE, partition)
            result["diverging_epoch"] = {"epoch": epoch, "end_offset": end_offset}
            results.append(result)
            continue
        if target.read_replica is not None:
            result = _partition_error(p.partition, ErrorCode.NONE, partition)
            result["preferred_read_replica"] = target.read_replica
            results.append(result)
            continue
        if (
            p.fetch_offset == _read_end(partition, read_committed, replica_id)
            and partition.log_start_offset <= p.fetch_offset
        ):
            # Caught up: nothing to read, and a session's answer most often
            # leaves the partition out. The log's own read would check the same
            # offsets again under its locks and make an empty file range: a
            # consumer of 1,000 partitions spent a quarter of each Fetch there.
            # (Whether the log is offline, _resolve has just looked; one that
            # fails during a long poll is answered so at the next Fetch.)
            cached = target.cached
            if cached is not None and cached.has_seen(
                partition.high_watermark, partition.log_start_offset
            ):
                results.append(None)
                continue
            # What an empty read answers.
            result = _partition_error(p.partition, ErrorCode.NONE, partition)
            if read_committed:
                result["aborted_transactions"] = []
            results.append(result)
            continue
        try:
            max_bytes = max(0, min(p.partition_max_bytes, remaining))
            if replica_id >= 0:
                data = partition.read_for_replica(p.fetch_offset, max_bytes, min_one=total == 0)
            else:
                data = partition.read(p.fetch_offset, max_bytes, read_committed, min_one=total == 0)
        except OffsetOutOfRange:
            results.append(_partition_error(p.partition, ErrorCode.OFFSET_OUT_OF_RANGE, partition))
            continue
        except LogError as e:
            results.append(_partition_error(p.partition, ErrorCode(e.error_code), partition))
            continue
        size = len(data)
        total += size
        remaining -= size
        results.append(
            {
                "partition_index": p.partition,
                "error_code": ErrorCode.NONE,
                "high_watermark": partition.high_watermark,
                "last_stable_offset": partition.last_stable_offset,
                "log_start_offset": partition.log_start_offset,
                "aborted_transactions": _aborted(partition, data) if read_committed else None,
                "records": data if size else b"",
            }
        )
    return results, total


def _read_end(partition, read_committed: bool, replica_id: int) -> int:
    """Where the asker's reads stop: the log end for a follower, else the high
    watermark (the last stable offset for read_committed)."""
    if replica_id >= 0:
        return partition.log_end_offset
    return partition.fetch_limit(read_committed)


def _aborted(partition, data) -> list[dict]:
    """AbortedTransactions of a read_committed answer: producer id and first
    offset of each aborted transaction overlapping the records sent."""
    return [
        {"producer_id": t.producer_id, "first_offset": t.first_offset}
        for t in partition.aborted_transactions(data)
    ]


RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


class FetchHandler:
    def __init__(
        self,
        metadata: MetadataCache,
        replicas: ReplicaManager,
        replica_selector: str | None,
        sessions: FetchSessionCache,
    ):
        self.metadata = metadata
        self.replicas = replicas
        self.rack_aware = replica_selector == RACK_AWARE_SELECTOR
        self.sessions = sessions

    @handles(ApiKey.FETCH, "4-18", error_response)
    async def fetch(self, ctx: RequestContext, request):
        replica_id = _replica_id(ctx, request)
        context = self._session_context(ctx, request)
        if context.error != ErrorCode.NONE:
            return error_response(request, context.error)
        targets = self._resolve(ctx, context.partitions, replica_id, context.session)
        if replica_id >= 0:
            self._record_follower_positions(targets, replica_id)
        elif self.rack_aware and ctx.api_version >= 11 and request.rack_id:
            self._choose_read_replicas(targets, request.rack_id)
        read_committed = request.isolation_level == READ_COMMITTED and replica_id < 0
        results, total = _read_all(targets, request, read_committed, replica_id)
        has_error = any(
            t.error != ErrorCode.NONE or t.diverging is not None or t.read_replica is not None
            for t in targets
        )
        if request.max_wait_ms > 0 and total < request.min_bytes and not has_error:
            waitable = [t.partition for t in targets if t.partition is not None]
            if waitable:
                with trio.move_on_after(request.max_wait_ms / 1000):
                    # A stopping broker answers with what it has (it wakes us).
                    while total < request.min_bytes and not self.replicas.stopping:
                        await _any_change(waitable)
                        results, total = _read_all(targets, request, read_committed, replica_id)
        session_id = INVALID_SESSION_ID
        if context.session is not None:
            session_id = context.session.id
            pruned = _prune(context, targets, results)
            if pruned is None:
                stale = error_response(request, ErrorCode.INVALID_FETCH_SESSION_EPOCH)
                return {**stale, "session_id": session_id}
            targets, results = pruned
        elif context.open_session:
            session_id = self.sessions.open(
                [
                    ((t.topic_key, t.request.partition), t.request, r)
                    for t, r in zip(targets, results, strict=True)
                ],
                follower=replica_id >= 0,
                uses_topic_ids=ctx.api_version >= 13,
                now_ms=_now_ms(),
            )
        return _response(ctx, targets, results, session_id)

    def _session_context(self, ctx, request) -> FetchContext:
        """The partitions to read ((topic key, index), partition entry) as the
        request's fetch session (v7+) makes them: a full Fetch's own, or every
        partition of the session it goes on with."""
        by_id = ctx.api_version >= 13
        requested = [
            ((t.topic_id if by_id else t.topic, p.partition), p)
            for t in request.topics
            for p in t.partitions
        ]
        if ctx.api_version < 7:
            return FetchContext(partitions=requested)
        forgotten = [
            (t.topic_id if by_id else t.topic, index)
            for t in request.forgotten_topics_data
            for index in t.partitions
        ]
        return self.sessions.context(
            request.session_id,
            request.session_epoch,
            requested,
            forgotten,
            uses_topic_ids=by_id,
            now_ms=_now_ms(),
        )

    def _resolve(self, ctx, partitions, replica_id: int, session) -> list[_Target]:
        """A _Target for each ((topic key, index), partition entry), with what
        `session` (an incremental Fetch's, else None) last answered for it."""
        image = self.metadata.image
        by_id = ctx.api_version >= 13
        missing = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        cache = session.partitions if session is not None else {}
        # Consumers with client metadata (v11+) may read from a follower (KIP-392).
        from_follower = replica_id < 0 and ctx.api_version >= 11
        targets = []
        current_key, topic = object(), None
        for key, p in partitions:
            topic_key = key[0]
            if topic_key != current_key:
                current_key = topic_key
                topic = image.topic_by_id(topic_key) if by_id else image.topic(topic_key)
            if topic is None:
                partition, error = None, missing
            else:
                partition, error = self.replicas.readable_partition(
                    topic, p.partition, p.current_leader_epoch, allow_follower=from_follower
                )
            targets.append(_Target(topic_key, p, partition, error, cache.get(key)))
        return targets

    def _choose_read_replicas(self, targets, client_rack: str) -> None:
        image = self.metadata.image

        def rack_of(node_id: int) -> str | None:
            registration = image.brokers.get(node_id)
            return None if registration is None else registration.rack

        for target in targets:
            if target.error == ErrorCode.NONE and target.partition.is_leader:
                target.read_replica = target.partition.preferred_read_replica(
                    client_rack, target.request.fetch_offset, rack_of
                )

    def _record_follower_positions(self, targets, replica_id: int) -> None:
        for target in targets:
            if target.error != ErrorCode.NONE:
                continue
            p = target.request
            target.diverging = target.partition.diverging_epoch(
                p.last_fetched_epoch, p.fetch_offset
            )
            if target.diverging is not None:
                continue  # its position is not the leader's: it truncates first
            try:
                self.replicas.follower_fetched(
                    target.partition, replica_id, p.fetch_offset, p.log_start_offset
                )
            except PartitionError as e:  # not a replica of this partition
                target.error = e.code


async def _any_change(partitions) -> None:
    """Return when any of the partitions changes after the caller's last read.

    The partitions are watched now, before the first checkpoint: an append in
    between (a producer's, which a follower's fetch waits for) would otherwise
    be missed and the fetch answered only at max_wait_ms, which held every
    acks=all produce for replica.fetch.wait.max.ms. One event watches them
    all: a task per partition, as this was, cost a consumer's every wait a
    nursery, its tasks and their cancellation, 15% of a light load's loop.
    """
    changed = trio.Event()
    for partition in partitions:
        partition.watch(changed)
    try:
        await changed.wait()
    finally:
        for partition in partitions:
            partition.unwatch(changed)


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def _prune(context: FetchContext, targets, results):
    """An incremental answer's (targets, results): only the partitions with
    something new; None when a later Fetch of its session came first."""
    pairs = list(zip(targets, results, strict=True))
    chosen = context.answered([((t.topic_key, t.request.partition), r) for t, r in pairs])
    if chosen is None:
        return None
    kept = [pair for pair, keep in zip(pairs, chosen, strict=True) if keep]
    return [t for t, _ in kept], [r for _, r in kept]


def _response(ctx, targets, results, session_id: int) -> dict:
    by_id = ctx.api_version >= 13
    topics = []
    current_key = object()
    for target, result in zip(targets, results, strict=True):
        if target.topic_key != current_key:
            current_key = target.topic_key
            entry: dict[str, Any] = {"partitions": []}
            if by_id:
                entry["topic_id"] = target.topic_key or ZERO_UUID
            else:
                entry["topic"] = target.topic_key
            topics.append(entry)
        topics[-1]["partitions"].append(result)
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "session_id": session_id,
        "responses": topics,
    }
