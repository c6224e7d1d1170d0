"""Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete, and their expiry.

`Offsets` keeps each group's committed offsets apart from the group objects
(Kafka's OffsetMetadataManager), so replaying a group's metadata does not
touch them. A commit takes effect once its write is reported durable;
tombstones (DeleteGroups, OffsetDelete, expiry, deleted topics) take effect
at once and are undone if their write fails, as Kafka reverts to the log on
a failed append. The retention check (Kafka's cleanupGroupMetadata) runs on
a timer of the runtime: it tombstones expired offsets and deletes Empty
groups left without any.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from coordinator import responses as R
from coordinator.actions import Action, Persist, Reply
from coordinator.config import CoordinatorConfig
from coordinator.group import Group
from coordinator.membership import GroupSnapshot, Membership
from coordinator.records import OffsetCommitRecord, encode_offset_commit, encode_offset_tombstone
from coordinator.request_context import RequestContext
from coordinator.responses import append_error_to_response_error
from coordinator.runtime import CoordinatorRuntime
from coordinator.state import GroupState
from wire.error_codes import ErrorCode

log = logging.getLogger(__name__)

E = ErrorCode
NONE = ErrorCode.NONE
S = GroupState

# The timer key of the offsets retention check.
_EXPIRE = "expire"


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int  # -1: none
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None  # only commits with an explicit retention


class Offsets:
    """The committed offsets of the groups this coordinator serves."""

    def __init__(
        self, config: CoordinatorConfig, runtime: CoordinatorRuntime, membership: Membership
    ):
        self.config = config
        self._runtime = runtime
        self._membership = membership
        # Committed (durable) offsets, by group.
        self._offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        # Offset commits appended but not yet reported durable: count per partition.
        self._pending_commits: dict[str, dict[tuple[str, int], int]] = {}
        # (group, topic, partition) -> write id of the latest tombstone emitted for it;
        # a commit written before that tombstone must not resurrect the offset.
        self._tombstoned: dict[tuple[str, str, int], int] = {}
        # The value a commit made durable just before a pending tombstone of the
        # same partition: what the log holds if that tombstone fails.
        self._shadowed: dict[tuple[str, str, int], OffsetAndMetadata] = {}
        # Transactional offsets (TxnOffsetCommit) written but not yet committed
        # by their transaction's marker: producer id -> group -> partition ->
        # (offset, position). Positions order offsets as the log does, so a
        # plain commit written after a transactional one wins over it when the
        # transaction commits (Kafka compares the records' log offsets).
        # A producer's group entry stays, even emptied by a tombstone, until
        # the marker: the transaction is still open in that group.
        self._pending_txn: dict[int, dict[str, dict[tuple[str, int], tuple]]] = {}
        # Transactional offsets made durable after a pending tombstone of the
        # same partition: (producer id, offset, position), back if it fails.
        self._shadowed_pending: dict[tuple[str, str, int], list[tuple]] = {}
        self._positions: dict[tuple[str, tuple[str, int]], int] = {}
        self._last_position = 0

    def _next_position(self) -> int:
        self._last_position += 1
        return self._last_position

    # --- the committed offsets ------------------------------------------------

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], OffsetAndMetadata]:
        return dict(self._offsets.get(group_id, {}))

    def set_committed(self, group_id: str, tp: tuple[str, int], oam: OffsetAndMetadata) -> None:
        """An offset read from the log."""
        self._offsets.setdefault(group_id, {})[tp] = oam
        self._positions[(group_id, tp)] = self._next_position()

    def remove_committed(self, group_id: str, tp: tuple[str, int]) -> None:
        """An offset tombstone read from the log: it removes the transactional
        offsets pending for the partition too (Kafka's replay of a tombstone)."""
        self._drop_pending(group_id, tp)
        offsets = self._offsets.get(group_id)
        self._positions.pop((group_id, tp), None)
        if offsets is not None:
            offsets.pop(tp, None)
            if not offsets:
                del self._offsets[group_id]

    # --- transactional offsets ------------------------------------------------

    def add_pending(
        self,
        producer_id: int,
        group_id: str,
        tp: tuple[str, int],
        oam: OffsetAndMetadata,
        position: int | None = None,
    ) -> None:
        """A transactional offset read from the log (or written, at `position`):
        pending until its transaction ends."""
        groups = self._pending_txn.setdefault(producer_id, {})
        at = self._next_position() if position is None else position
        groups.setdefault(group_id, {})[tp] = (oam, at)

    def has_pending(self, group_id: str, tp: tuple[str, int]) -> bool:
        return any(tp in groups.get(group_id, {}) for groups in self._pending_txn.values())

    def _has_open_transaction(self, group_id: str) -> bool:
        """Some producer has transactional offsets pending in the group."""
        return any(groups.get(group_id) for groups in self._pending_txn.values())

    def _pending_partitions(self, group_id: str) -> set[tuple[str, int]]:
        return {tp for groups in self._pending_txn.values() for tp in groups.get(group_id, {})}

    def _drop_pending(self, group_id: str, tp: tuple[str, int]) -> list[tuple]:
        """Remove the partition's pending offsets of every producer; returns
        them as (producer id, offset, position)."""
        dropped = []
        for pid, groups in self._pending_txn.items():
            pending = groups.get(group_id)
            if pending is not None and tp in pending:
                oam, position = pending.pop(tp)
                dropped.append((pid, oam, position))
        return dropped

    def end_transaction(self, partition: int, producer_id: int, commit: bool, now_ms: int) -> None:
        """`producer_id`'s transaction ended in `partition` of __consumer_offsets:
        its offsets for the groups of that partition become committed
        (COMMIT) or are dropped (ABORT)."""
        groups = self._pending_txn.get(producer_id)
        if not groups:
            return
        partition_for = self._membership.partition_for
        for group_id in [g for g in groups if partition_for(g) == partition]:
            pending = groups.pop(group_id)
            if not commit:
                continue
            for tp, (oam, position) in pending.items():
                if self._positions.get((group_id, tp), 0) > position:
                    continue  # a plain commit written after it wins
                if self._membership.group(group_id) is None:
                    self._membership.create_group(group_id, now_ms)
                self._offsets.setdefault(group_id, {})[tp] = oam
                self._positions[(group_id, tp)] = position
        if not groups:
            del self._pending_txn[producer_id]

    def known_partitions(self, group_id: str) -> list[tuple[str, int]]:
        """The partitions the group has an offset for: committed, in flight,
        or pending in a transaction (Kafka's deleteAllOffsets and
        onTopicsDeleted tombstone those too)."""
        known = list(self._offsets.get(group_id, {}))
        for tp in self._pending_commits.get(group_id, {}):
            if tp not in known:
                known.append(tp)
        for tp in sorted(self._pending_partitions(group_id)):
            if tp not in known:
                known.append(tp)
        return known

    # --- loading and unloading ------------------------------------------------

    def on_loaded(self, partition: int, now_ms: int) -> None:
        """Offsets of the loaded partition expire from now (one check for all)."""
        if not self._runtime.has_timer((_EXPIRE,)):
            self._schedule_expiry(now_ms)

    def on_unloaded(self, partition: int, now_ms: int) -> None:
        """Forget the partition's offsets, and what tracks its commits and
        tombstones in flight (the runtime fails those writes next)."""
        partition_for = self._membership.partition_for
        for gid in [g for g in self._offsets if partition_for(g) == partition]:
            del self._offsets[gid]
        for gid in [g for g in self._pending_commits if partition_for(g) == partition]:
            del self._pending_commits[gid]
        for key in [k for k in self._tombstoned if partition_for(k[0]) == partition]:
            del self._tombstoned[key]
        for key in [k for k in self._shadowed if partition_for(k[0]) == partition]:
            del self._shadowed[key]
        for key in [k for k in self._shadowed_pending if partition_for(k[0]) == partition]:
            del self._shadowed_pending[key]
        for position_key in [k for k in self._positions if partition_for(k[0]) == partition]:
            del self._positions[position_key]
        for pid, groups in list(self._pending_txn.items()):
            for gid in [g for g in groups if partition_for(g) == partition]:
                del groups[gid]
            if not groups:
                del self._pending_txn[pid]
        if not self._runtime.has_partitions():
            self._runtime.cancel_timer((_EXPIRE,))

    # =========================================================================
    # OffsetCommit / OffsetFetch / OffsetDelete
    # =========================================================================

    def _validate_offset_commit(
        self,
        group: Group,
        member_id: str,
        instance_id: str | None,
        generation: int,
        transactional: bool = False,
    ) -> ErrorCode | None:
        """Kafka's ClassicGroup.validateOffsetCommit. A transactional commit
        without member and generation (a producer that is not a member, or a
        client before KIP-447) is taken whatever the group's state."""
        if group.state is S.DEAD:
            return E.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and group.state is S.EMPTY:
            # Admin tools and consumers without group management (assign()).
            return None
        if generation >= 0 or member_id != "" or instance_id is not None:
            err = group.member_error(member_id, instance_id)
            if err is not None:
                return err
            if generation != group.generation:
                return E.ILLEGAL_GENERATION
        elif group.state is not S.EMPTY and not transactional:
            # Without member id and generation, only an empty group takes commits.
            return E.UNKNOWN_MEMBER_ID
        if group.state is S.COMPLETING_REBALANCE and not transactional:
            # A member of the new generation that has not synced yet.
            return E.REBALANCE_IN_PROGRESS
        return None

    def _stage_commits(self, group_id: str, topics, offset_of) -> tuple[list, list, list]:
        """The commits of a request: (results per topic with each partition's
        error, the (partition, offset) to store, the records to write).
        `offset_of(partition request)` makes the OffsetAndMetadata; metadata
        above offset.metadata.max.bytes fails only its partition."""
        max_metadata = self.config.offset_metadata_max_bytes
        results: list[tuple[str, list[list]]] = []
        staged: list[tuple[tuple[str, int], OffsetAndMetadata]] = []
        records = []
        for topic in topics:
            parts: list[list] = []
            results.append((topic.name, parts))
            for p in topic.partitions:
                metadata = p.committed_metadata
                if metadata is not None and _utf16_len(metadata) > max_metadata:
                    parts.append([p.partition_index, E.OFFSET_METADATA_TOO_LARGE])
                    continue
                parts.append([p.partition_index, NONE])
                oam = offset_of(p)
                staged.append(((topic.name, p.partition_index), oam))
                expire = oam.expire_timestamp_ms
                records.append(
                    encode_offset_commit(
                        OffsetCommitRecord(
                            group_id,
                            topic.name,
                            p.partition_index,
                            offset=oam.offset,
                            leader_epoch=oam.leader_epoch,
                            metadata=oam.metadata,
                            commit_timestamp=oam.commit_timestamp_ms,
                            expire_timestamp=-1 if expire is None else expire,
                        )
                    )
                )
        return results, staged, records

    def _commit_target(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation: int,
        now_ms: int,
        *,
        unknown_group: ErrorCode,
        transactional: bool = False,
    ) -> tuple[Group | None, ErrorCode]:
        """The group an (Txn)OffsetCommit writes to, or (None, why not): a
        group this coordinator cannot serve now, an unknown group named with a
        generation (`unknown_group`), or a member check that fails. A commit
        without a generation to an unknown group creates a simple group."""
        status = self._membership.status_error(group_id)
        if status is not None:
            return None, status
        group = self._membership.group(group_id)
        if group is None:
            if generation >= 0:
                return None, unknown_group
            log.info("creating simple group %s via a manual offset commit", group_id)
            group = self._membership.create_group(group_id, now_ms)
        err = self._validate_offset_commit(
            group, member_id, instance_id, generation, transactional=transactional
        )
        if err is not None:
            return None, err
        return group, NONE

    def offset_commit(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        v = ctx.api_version
        token = ctx.token

        def all_error(code: ErrorCode) -> list[Action]:
            return _commit_all_error(token, req.topics, code)

        group_id = req.group_id
        member_id = req.member_id
        # From v9 Kafka says a group that does not exist does not; before, that
        # the generation is wrong.
        group, err = self._commit_target(
            group_id,
            member_id,
            req.group_instance_id,
            req.generation_id_or_member_epoch,
            now_ms,
            unknown_group=E.GROUP_ID_NOT_FOUND if v >= 9 else E.ILLEGAL_GENERATION,
        )
        if group is None:
            return all_error(err)
        if group.state in (S.STABLE, S.PREPARING_REBALANCE):
            # A commit keeps the member's session alive.
            self._membership.schedule_heartbeat(group, group.members[member_id], now_ms)

        retention = req.retention_time_ms
        expire_ts = None if retention == -1 else now_ms + retention
        results, staged, records = self._stage_commits(
            group_id,
            req.topics,
            lambda p: OffsetAndMetadata(
                offset=p.committed_offset,
                leader_epoch=p.committed_leader_epoch,
                metadata=p.committed_metadata or "",
                commit_timestamp_ms=now_ms if p.commit_timestamp == -1 else p.commit_timestamp,
                expire_timestamp_ms=expire_ts,
            ),
        )

        return self._write_commits(group, token, results, staged, records)

    def _write_commits(
        self,
        group: Group,
        token,
        results: list,
        staged: list,
        records: list,
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> list[Action]:
        """Write staged commits as one batch (the producer's transactional
        batch when one is given) and answer once it is durable. Each offset is
        then stored, committed or pending for the producer, unless a tombstone
        of the same partition was written after it: then it waits in that
        tombstone's shadow and comes back only if the tombstone fails."""
        if not records:
            return [_commit_reply(token, results)]
        group_id, partition = group.group_id, group.partition
        persist = self._runtime.persist(
            partition, records, producer_id=producer_id, producer_epoch=producer_epoch
        )
        position = self._next_position()
        self._track_in_flight(group_id, staged)
        write_id = persist.write_id
        transactional = producer_id >= 0

        def done(error: ErrorCode, done_ms: int) -> list[Action]:
            self._settle_in_flight(group_id, staged)
            if error != NONE:
                return [_commit_reply(token, results, append_error_to_response_error(error))]
            if not self._runtime.is_active(partition):
                return [_commit_reply(token, results)]
            for (topic, part), oam in staged:
                key = (group_id, topic, part)
                shadowed = self._tombstoned.get(key, 0) > write_id
                if transactional and shadowed:
                    # The transaction stays open in the group meanwhile.
                    self._pending_txn.setdefault(producer_id, {}).setdefault(group_id, {})
                    self._shadowed_pending.setdefault(key, []).append((producer_id, oam, position))
                elif transactional:
                    self.add_pending(producer_id, group_id, (topic, part), oam, position)
                elif shadowed:
                    self._shadowed[key] = oam
                else:
                    if self._membership.group(group_id) is None:
                        self._membership.create_group(group_id, done_ms)
                    self._offsets.setdefault(group_id, {})[(topic, part)] = oam
                    self._positions[(group_id, (topic, part))] = position
            return [_commit_reply(token, results)]

        self._runtime.then(persist, done)
        return [persist]

    def _track_in_flight(self, group_id: str, staged: list) -> None:
        """Commits written, not yet durable: deletions and retention see them
        (Kafka has them in its state from the write on)."""
        counts = self._pending_commits.setdefault(group_id, {})
        for tp, _ in staged:
            counts[tp] = counts.get(tp, 0) + 1

    def _settle_in_flight(self, group_id: str, staged: list) -> None:
        counts = self._pending_commits.get(group_id)
        if counts is None:
            return  # unloaded meanwhile
        for tp, _ in staged:
            if tp in counts:
                counts[tp] -= 1
                if counts[tp] <= 0:
                    del counts[tp]
        if not counts:
            self._pending_commits.pop(group_id, None)

    def txn_offset_commit(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        """TxnOffsetCommit: the offsets go to the log in a transactional batch
        of the producer and stay pending (invisible to OffsetFetch) until the
        transaction's marker reaches this partition (`end_transaction`)."""
        token = ctx.token

        def all_error(code: ErrorCode) -> list[Action]:
            return _commit_all_error(token, req.topics, code)

        group_id = req.group_id
        v3 = ctx.api_version >= 3  # KIP-447: the member's identity and generation
        group, err = self._commit_target(
            group_id,
            req.member_id if v3 else "",
            req.group_instance_id if v3 else None,
            req.generation_id if v3 else -1,
            now_ms,
            unknown_group=E.ILLEGAL_GENERATION,
            transactional=True,
        )
        if group is None:
            return all_error(err)
        v2 = ctx.api_version >= 2
        results, staged, records = self._stage_commits(
            group_id,
            req.topics,
            lambda p: OffsetAndMetadata(
                offset=p.committed_offset,
                leader_epoch=p.committed_leader_epoch if v2 else -1,
                metadata=p.committed_metadata or "",
                commit_timestamp_ms=now_ms,
            ),
        )

        return self._write_commits(
            group,
            token,
            results,
            staged,
            records,
            producer_id=req.producer_id,
            producer_epoch=req.producer_epoch,
        )

    def offset_fetch(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        v = ctx.api_version
        if v >= 8:
            wanted = [(g.group_id, g.topics) for g in req.groups]
        else:
            wanted = [(req.group_id, req.topics)]
        # require_stable (v7+): a partition with transactional offsets still
        # pending answers UNSTABLE_OFFSET_COMMIT, which consumers retry.
        stable = v >= 7 and req.require_stable
        groups = [self._fetch_group(gid, topics, stable) for gid, topics in wanted]
        return [Reply(ctx.token, R.offset_fetch(v, groups))]

    def _fetch_group(self, group_id: str, topics, require_stable: bool = False) -> dict:
        status = self._membership.status_error(group_id)
        if status is not None:
            # The requested partitions come along so that versions without a
            # top-level error (v0-1) can carry it per partition.
            echoed = [
                {
                    "name": t.name,
                    "partitions": [R.fetched_partition(p) for p in t.partition_indexes],
                }
                for t in topics or ()
            ]
            return R.fetched_group(group_id, echoed, error=status)
        group = self._membership.group(group_id)
        offsets = {} if group is None else self._offsets.get(group_id, {})
        if topics is None:
            by_topic: dict[str, list[dict]] = {}
            for (topic, part), oam in offsets.items():
                if require_stable and self.has_pending(group_id, (topic, part)):
                    fetched = R.fetched_partition(part, error=E.UNSTABLE_OFFSET_COMMIT)
                else:
                    fetched = R.fetched_partition(part, oam.offset, oam.leader_epoch, oam.metadata)
                by_topic.setdefault(topic, []).append(fetched)
            return R.fetched_group(
                group_id, [{"name": t, "partitions": ps} for t, ps in by_topic.items()]
            )
        out = []
        for topic in topics:
            parts = []
            for part in topic.partition_indexes:
                committed = offsets.get((topic.name, part))
                if require_stable and self.has_pending(group_id, (topic.name, part)):
                    parts.append(R.fetched_partition(part, error=E.UNSTABLE_OFFSET_COMMIT))
                elif committed is None:
                    parts.append(R.fetched_partition(part))
                else:
                    parts.append(
                        R.fetched_partition(
                            part, committed.offset, committed.leader_epoch, committed.metadata
                        )
                    )
            out.append({"name": topic.name, "partitions": parts})
        return R.fetched_group(group_id, out)

    def offset_delete(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        token = ctx.token

        def error(code: ErrorCode) -> list[Action]:
            return [Reply(token, R.offset_delete(code))]

        group_id = req.group_id
        if not group_id:
            return error(E.INVALID_GROUP_ID)
        status = self._membership.status_error(group_id)
        if status is not None:
            return error(status)
        group = self._membership.group(group_id)
        if group is None or group.state is S.DEAD:
            return error(E.GROUP_ID_NOT_FOUND)
        if (
            group.state in (S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE)
            and not group.uses_consumer_protocol
        ):
            return error(E.NON_EMPTY_GROUP)

        results = []
        to_delete: list[tuple[str, int]] = []
        for topic in req.topics:
            if group.is_subscribed_to_topic(topic.name):
                results.append(
                    (
                        topic.name,
                        [
                            (p.partition_index, E.GROUP_SUBSCRIBED_TO_TOPIC)
                            for p in topic.partitions
                        ],
                    )
                )
                continue
            results.append((topic.name, [(p.partition_index, NONE) for p in topic.partitions]))
            for p in topic.partitions:
                if self._has_offset(group_id, topic.name, p.partition_index):
                    to_delete.append((topic.name, p.partition_index))
        if not to_delete:
            return [Reply(token, R.offset_delete(topics=results))]
        records: list = []
        removed = self.tombstone_offsets(group_id, to_delete, records)
        persist = self._runtime.persist(group.partition, records)
        self.mark_tombstones(persist, removed)

        def done(error: ErrorCode, _now: int) -> list[Action]:
            if error != NONE:
                return [Reply(token, R.offset_delete(append_error_to_response_error(error)))]
            return [Reply(token, R.offset_delete(topics=results))]

        self._runtime.then(persist, done)
        return [persist]

    # =========================================================================
    # Deleted topics (Kafka's onPartitionsDeleted)
    # =========================================================================

    def partitions_deleted(self, tps: Iterable[tuple[str, int]], now_ms: int) -> list[Action]:
        """Topic partitions were deleted: every group forgets its offsets for them
        (Kafka's onPartitionsDeleted), so a topic created again under the same
        name is not read from an old position. The groups themselves stay; an
        Empty one without offsets goes at the next retention check."""
        deleted = set(tps)
        records_by_partition: dict[int, list] = {}
        removed_by_partition: dict[int, list] = {}
        for group in self._membership.groups():
            if not self._runtime.is_active(group.partition):
                continue
            group_id = group.group_id
            gone = [tp for tp in self.known_partitions(group_id) if tp in deleted]
            if not gone:
                continue
            records = records_by_partition.setdefault(group.partition, [])
            removed_by_partition.setdefault(group.partition, []).extend(
                self.tombstone_offsets(group_id, gone, records)
            )
        actions: list[Action] = []
        for partition, records in records_by_partition.items():
            persist = self._runtime.persist(partition, records)
            self.mark_tombstones(persist, removed_by_partition[partition])
            actions.append(persist)
        return actions

    # =========================================================================
    # Offset retention (Kafka's cleanupGroupMetadata)
    # =========================================================================

    def _schedule_expiry(self, now_ms: int) -> None:
        """The next offsets retention check."""
        self._runtime.schedule(
            (_EXPIRE,),
            now_ms + self.config.offsets_retention_check_interval_ms,
            self._cleanup_group_metadata,
        )

    def _expiration_base(self, group: Group) -> Callable[[OffsetAndMetadata], int] | None:
        if group.protocol_type is not None:
            if group.state is S.EMPTY:
                # Members all gone: retention counts from when the group emptied
                # (from each commit if that time is unknown).
                ts = group.state_timestamp
                return (lambda o: o.commit_timestamp_ms) if ts is None else (lambda o: ts)
            if (
                group.uses_consumer_protocol
                and group.subscribed_topics is not None
                and (group.state is S.STABLE)
            ):
                # Stable consumers: offsets of topics nobody subscribes to anymore.
                return lambda o: o.commit_timestamp_ms
            return None
        # A simple group (offsets only): from each commit.
        return lambda o: o.commit_timestamp_ms

    def _cleanup_expired_offsets(self, group: Group, records: list, now_ms: int) -> tuple:
        """Tombstone the group's expired offsets; (all expired?, what was removed)."""
        group_id = group.group_id
        offsets = self._offsets.get(group_id, {})
        pending = self._pending_commits.get(group_id, {})
        # A group with an open transaction is not deleted, and an offset with
        # transactional offsets pending does not expire (as Kafka).
        open_txn = self._has_open_transaction(group_id)
        if not offsets:
            return not pending and not open_txn, []
        base = self._expiration_base(group)
        if base is None:
            return False, []
        retention = self.config.offsets_retention_ms
        all_expired = not pending and not open_txn
        expired = []
        for (topic, part), oam in offsets.items():
            if (
                group.is_subscribed_to_topic(topic)
                or (topic, part) in pending
                or self.has_pending(group_id, (topic, part))
            ):
                all_expired = False
                continue
            if oam.expire_timestamp_ms is not None:
                is_expired = now_ms >= oam.expire_timestamp_ms
            else:
                is_expired = now_ms - base(oam) >= retention
            if is_expired:
                expired.append((topic, part))
            else:
                all_expired = False
        if expired:
            log.info("group %s: %d offsets expired", group_id, len(expired))
        return all_expired, self.tombstone_offsets(group_id, expired, records) if expired else []

    def _cleanup_group_metadata(self, now_ms: int) -> list[Action]:
        self._schedule_expiry(now_ms)
        records_by_partition: dict[int, list] = {}
        removed_by_partition: dict[int, list] = {}
        groups_by_partition: dict[int, list] = {}
        for group in self._membership.groups():
            if not self._runtime.is_active(group.partition):
                continue
            records = records_by_partition.setdefault(group.partition, [])
            all_expired, removed = self._cleanup_expired_offsets(group, records, now_ms)
            removed_by_partition.setdefault(group.partition, []).extend(removed)
            if all_expired and group.state is S.EMPTY:
                # Empty and without offsets: the group is gone.
                log.info("group %s is empty and has no offsets: deleting it", group.group_id)
                groups_by_partition.setdefault(group.partition, []).append(
                    self._membership.remove_empty_group(group, records, now_ms)
                )
        actions: list[Action] = []
        for partition, records in records_by_partition.items():
            if records:
                persist = self._runtime.persist(partition, records)
                self.mark_tombstones(
                    persist,
                    removed_by_partition.get(partition, []),
                    groups_by_partition.get(partition, []),
                )
                actions.append(persist)
        return actions

    # =========================================================================
    # Tombstones: applied at once, undone if their write fails
    # =========================================================================

    def _has_offset(self, group_id: str, topic: str, part: int) -> bool:
        """Committed, being committed, or pending in a transaction (Kafka's
        OffsetDelete tombstones a partition with only pending offsets too)."""
        tp = (topic, part)
        return (
            tp in self._offsets.get(group_id, {})
            or tp in self._pending_commits.get(group_id, {})
            or self.has_pending(group_id, tp)
        )

    def tombstone_offsets(
        self, group_id: str, tps: list[tuple[str, int]], records: list
    ) -> list[_Removed]:
        """Forget offsets now, committed and pending in transactions, and add
        their tombstones; returns what was removed."""
        offsets = self._offsets.get(group_id, {})
        removed = []
        for topic, part in tps:
            old = offsets.pop((topic, part), None)
            pending = self._drop_pending(group_id, (topic, part))
            records.append(encode_offset_tombstone(group_id, topic, part))
            removed.append(((group_id, topic, part), old, pending))
        if not offsets:
            self._offsets.pop(group_id, None)
        return removed

    def mark_tombstones(
        self, persist: Persist, removed: list[_Removed], groups: Sequence[GroupSnapshot] = ()
    ) -> None:
        """Tombstones are applied when emitted; if their write fails, what they
        removed comes back (Kafka reverts to the log on a failed append)."""
        write_id = persist.write_id
        partition = persist.partition
        for key, _, _ in removed:
            self._tombstoned[key] = write_id

        def done(error: ErrorCode, done_ms: int) -> list[Action]:
            # Writes of a partition complete in order: every commit emitted
            # before this tombstone is settled now.
            revert = error != NONE and self._runtime.is_active(partition)
            if revert:
                for snap in groups:
                    self._membership.restore_group(snap, done_ms)
            for key, old, pending in removed:
                if self._tombstoned.get(key) != write_id:
                    # A later tombstone of the same offset decides what comes
                    # back if it fails: what the log holds before it, which
                    # this one's outcome settles (writes complete in order).
                    if self._runtime.is_active(partition):
                        self._hand_over(key, old, pending, failed=error != NONE)
                    continue
                del self._tombstoned[key]
                value = self._shadowed.pop(key, None) or old
                pending = pending + self._shadowed_pending.pop(key, [])
                if not revert:
                    continue
                group_id, topic, part = key
                if value is not None:
                    if self._membership.group(group_id) is None:
                        self._membership.create_group(group_id, done_ms)
                    self._offsets.setdefault(group_id, {}).setdefault((topic, part), value)
                for producer_id, oam, position in pending:
                    open_groups = self._pending_txn.get(producer_id, {})
                    if group_id in open_groups:  # its transaction is still open
                        open_groups[group_id].setdefault((topic, part), (oam, position))
            return []

        self._runtime.then(persist, done)

    def _hand_over(self, key, old, pending: list[tuple], failed: bool) -> None:
        """A tombstone completed while a later one of the same offset is
        pending. Written, the log forgets what came before it; failed, the log
        still holds what it removed, under what commits made durable since
        (already in the shadow: they completed before it)."""
        if not failed:
            self._shadowed.pop(key, None)
            self._shadowed_pending.pop(key, None)
            return
        if old is not None:
            self._shadowed.setdefault(key, old)
        if pending:
            self._shadowed_pending[key] = pending + self._shadowed_pending.get(key, [])


# ((group, topic, partition), the committed value removed or None, the
# transactional offsets removed as (producer id, offset, position))
_Removed = tuple[tuple[str, str, int], "OffsetAndMetadata | None", list[tuple]]


def _commit_all_error(token, topics, code: ErrorCode) -> list[Action]:
    """Every partition of an (Txn)OffsetCommit fails with `code`."""
    return [
        Reply(
            token,
            R.offset_commit(
                (t.name, [(p.partition_index, code) for p in t.partitions]) for t in topics
            ),
        )
    ]


def _commit_reply(token, results: list, error: ErrorCode = NONE) -> Reply:
    """The answer to an (Txn)OffsetCommit: each partition's own error, else `error`."""
    return Reply(
        token,
        R.offset_commit(
            (name, [(pi, error if e == NONE else e) for pi, e in parts]) for name, parts in results
        ),
    )


def _utf16_len(s: str) -> int:
    """Java's String.length()."""
    return len(s.encode("utf-16-le", "surrogatepass")) // 2
