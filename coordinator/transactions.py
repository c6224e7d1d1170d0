"""Kafka's transaction coordinator (transactions v1, KIP-98), sans I/O.

One `TransactionCoordinator` serves the `__transaction_state` partitions this
broker leads, through a `CoordinatorRuntime` (loading, confirmed writes,
timers), as the group coordinator does for `__consumer_offsets`. Each
transactional id has a `TxnMetadata`; every change of it is first written
(a TransactionLogValue, `coordinator.txn_records`) and applied only once the
write is durable, and only one change is in flight per id (`pending`):
requests meeting one in flight get CONCURRENT_TRANSACTIONS, which clients
retry.

The life of a transaction, as in Kafka's TransactionCoordinator:

- InitProducerId: a new id gets a producer id and epoch 0; a known one its
  epoch bumped (which fences the previous producer: its later requests carry
  the old epoch and get PRODUCER_FENCED). An id with a transaction still
  open has it aborted first (epoch bumped, PrepareAbort, markers), and the
  client is told CONCURRENT_TRANSACTIONS until that completes.
- AddPartitionsToTxn / AddOffsetsToTxn: the partitions join the transaction
  (Ongoing); the offsets of a group join as its `__consumer_offsets`
  partition.
- EndTxn: PrepareCommit or PrepareAbort is written, the client is answered,
  then `SendMarkers` asks the driver to write the markers to every partition
  of the transaction; `markers_written` then writes CompleteCommit or
  CompleteAbort. A coordinator that starts leading a partition resends the
  markers of every transaction it finds prepared.
- A transaction open longer than its timeout is aborted by the coordinator,
  with the epoch bumped so the producer that stalled is fenced.

Transactions v2 (KIP-890 part 2), which Kafka 4.x clients use when the
broker finalizes `transaction.version` 2: partitions join the transaction
from the partition leader, on the producer's first batch (AddPartitionsToTxn
v4+ without verify_only, from a broker) and the group's offsets partition on
TxnOffsetCommit v5; EndTxn v5 bumps the producer epoch with every
transaction (the markers carry the new epoch, so a late batch of the ended
transaction is fenced) and answers with the epoch to use next. When the
epoch is spent, the transaction ends with a new producer id instead
(`next_producer_id`), which EndTxn returns. EndTxn v0-4 keeps v1's rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import re2

from coordinator.actions import Action, Persist, Reply, SendMarkers
from coordinator.hashing import coordinator_partition
from coordinator.request_context import RequestContext
from coordinator.runtime import CoordinatorRuntime, LogRecords
from coordinator.txn_records import (
    TxnLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from coordinator.txn_state import TxnState
from wire.error_codes import ErrorCode

E = ErrorCode
S = TxnState
NONE = ErrorCode.NONE

# ListTransactions' transactional id pattern (v2, KIP-1152): Kafka compiles it
# with RE2J, so RE2's syntax (no lookaround, no backreferences) and its
# matching in linear time, which a client's pattern cannot turn into a stall
# of the coordinator. An invalid one is answered, not logged.
_PATTERN_OPTIONS = re2.Options()
_PATTERN_OPTIONS.log_errors = False
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
# Kafka's Short.MaxValue - 1: the last epoch an id may reach before the
# coordinator gives it a new producer id.
MAX_EPOCH = 32766
# Short.MaxValue: reached only by the markers of a v2 transaction that ends
# with a new producer id.
OVERFLOW_EPOCH = 32767


@dataclass(frozen=True, slots=True)
class TxnConfig:
    num_partitions: int = 50
    max_timeout_ms: int = 900_000
    # transactional.id.expiration.ms: an id idle this long (no transaction
    # open) is forgotten; checked every id_expiration_check_ms.
    id_expiration_ms: int = 7 * 24 * 60 * 60 * 1000
    id_expiration_check_ms: int = 60 * 60 * 1000
    # The finalized transaction.version: the rules of the coordinator's own
    # aborts (timeouts, fencing), as in Kafka.
    transaction_version: int = 2


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    partition: int  # of __transaction_state
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    # v2: the producer id a prepared transaction hands over to once complete
    # (its epoch is spent); -1 when none.
    next_producer_id: int = NO_PRODUCER_ID
    # 2 for a transaction of transactions v2, else 0.
    client_version: int = 0
    # The state a write in flight moves to; None when nothing is in flight.
    pending: TxnState | None = None

    def log_value(self, **changes) -> TxnLogValue:
        value = TxnLogValue(
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            transaction_timeout_ms=self.timeout_ms,
            state=self.state,
            partitions=frozenset(self.partitions),
            last_update_timestamp_ms=self.last_update_ms,
            start_timestamp_ms=self.start_ms,
            previous_producer_id=self.last_producer_id,
            next_producer_id=self.next_producer_id,
            client_transaction_version=self.client_version,
        )
        return replace(value, **changes)

    def apply(self, value: TxnLogValue) -> None:
        if value.producer_epoch != self.producer_epoch or value.producer_id != self.producer_id:
            self.last_producer_epoch = self.producer_epoch
        self.producer_id = value.producer_id
        self.producer_epoch = value.producer_epoch
        self.timeout_ms = value.transaction_timeout_ms
        self.state = value.state
        self.partitions = set(value.partitions)
        self.start_ms = value.start_timestamp_ms
        self.last_update_ms = value.last_update_timestamp_ms
        self.last_producer_id = value.previous_producer_id
        self.next_producer_id = value.next_producer_id
        self.client_version = value.client_transaction_version


def _log_write_error(error: ErrorCode) -> ErrorCode:
    """What a client is told when a __transaction_state write failed (Kafka's
    TransactionStateManager.appendTransactionToLog)."""
    if error in (
        E.UNKNOWN_TOPIC_OR_PARTITION,
        E.NOT_ENOUGH_REPLICAS,
        E.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        E.REQUEST_TIMED_OUT,
    ):
        return E.COORDINATOR_NOT_AVAILABLE
    if error in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return E.NOT_COORDINATOR
    if error in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE):
        return E.UNKNOWN_SERVER_ERROR
    return error


def _in_transition(txn: TxnMetadata) -> bool:
    """A change of the id is being written, or its transaction is prepared and
    its markers are being written until Complete is (Kafka's pending
    transition, CompleteCommit or CompleteAbort from the prepare onwards):
    requests that would move it on are told CONCURRENT_TRANSACTIONS."""
    return txn.pending is not None or txn.state.is_prepare


def _fenced(error: ErrorCode, version: int, first_version_with_fenced: int) -> ErrorCode:
    """Clients before KIP-588 do not know PRODUCER_FENCED: Kafka answers them
    INVALID_PRODUCER_EPOCH, which they handle the same way."""
    if error == E.PRODUCER_FENCED and version < first_version_with_fenced:
        return E.INVALID_PRODUCER_EPOCH
    return error


class TransactionCoordinator:
    def __init__(self, config: TxnConfig):
        self.config = config
        self.runtime = CoordinatorRuntime(self)
        self.txns: dict[str, TxnMetadata] = {}
        # The leader epoch of each __transaction_state partition served: the
        # coordinator epoch markers carry, so partitions fence older coordinators.
        self.coordinator_epochs: dict[int, int] = {}

    # --- partitions -------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        return coordinator_partition(transactional_id, self.config.num_partitions)

    def begin_loading(self, partition: int, coordinator_epoch: int) -> None:
        self.coordinator_epochs[partition] = coordinator_epoch
        self.runtime.begin_loading(partition)

    def replay(self, partition: int, records: LogRecords, now_ms: int) -> None:
        self.runtime.replay(partition, records, now_ms)

    def finish_loading(self, partition: int, now_ms: int) -> list[Action]:
        return self.runtime.finish_loading(partition, now_ms)

    def unload(self, partition: int, now_ms: int) -> list[Action]:
        actions = self.runtime.unload(partition, now_ms)
        self.coordinator_epochs.pop(partition, None)
        return actions

    def partition_state(self, partition: int):
        return self.runtime.partition_state(partition)

    def next_deadline(self) -> int | None:
        return self.runtime.next_deadline()

    def tick(self, now_ms: int) -> list[Action]:
        return self.runtime.tick(now_ms)

    def persisted(self, write_id: int, now_ms: int, error: int = NONE) -> list[Action]:
        return self.runtime.persisted(write_id, now_ms, error)

    # --- the shard's hooks --------------------------------------------------------

    def replay_records(self, partition: int, records: LogRecords, now_ms: int) -> None:
        for key, value in records:
            txn_id = decode_key(key)
            decoded = decode_value(value)
            if decoded is None:
                self.txns.pop(txn_id, None)
                continue
            txn = self.txns.get(txn_id)
            if txn is None:
                txn = self.txns[txn_id] = TxnMetadata(
                    txn_id,
                    partition,
                    decoded.producer_id,
                    decoded.producer_epoch,
                    decoded.transaction_timeout_ms,
                    decoded.state,
                )
            txn.apply(decoded)

    def on_loaded(self, partition: int, now_ms: int) -> list[Action]:
        """Finish what the previous coordinator left prepared; time the open ones."""
        actions: list[Action] = []
        for txn in list(self.txns.values()):
            if txn.partition != partition:
                continue
            if txn.state.is_prepare:
                actions.append(self._markers(txn))
            elif txn.state is S.ONGOING:
                self._schedule_timeout(txn)
        self._schedule_expiry(partition, now_ms)
        return actions

    def on_unloaded(self, partition: int, now_ms: int) -> list[Action]:
        self.runtime.cancel_timer(("expire", partition))
        for txn_id in [t for t, txn in self.txns.items() if txn.partition == partition]:
            self.runtime.cancel_timer(("timeout", txn_id))
            del self.txns[txn_id]
        return []

    # --- InitProducerId -----------------------------------------------------------------

    def init_producer_id(
        self, ctx: RequestContext, req, now_ms: int, fresh_producer_id: int
    ) -> list[Action]:
        """InitProducerId with a transactional id. `fresh_producer_id` is an id
        no producer has: used for a new transactional id, or when the epoch of
        the current one is exhausted."""

        def reply(error: ErrorCode, pid: int = NO_PRODUCER_ID, epoch: int = -1) -> Reply:
            return Reply(
                ctx.token,
                {
                    "throttle_time_ms": 0,
                    "error_code": _fenced(error, ctx.api_version, 4),
                    "producer_id": pid,
                    "producer_epoch": epoch,
                },
            )

        txn_id = req.transactional_id
        if not txn_id:
            return [reply(E.INVALID_REQUEST)]
        if not 0 < req.transaction_timeout_ms <= self.config.max_timeout_ms:
            return [reply(E.INVALID_TRANSACTION_TIMEOUT)]
        partition = self.partition_for(txn_id)
        status = self.runtime.status_error(partition)
        if status is not None:
            return [reply(status)]
        txn = self.txns.get(txn_id)
        if txn is None:
            txn = self.txns[txn_id] = TxnMetadata(
                txn_id,
                partition,
                fresh_producer_id,
                NO_PRODUCER_EPOCH,
                req.transaction_timeout_ms,
                S.EMPTY,
                last_update_ms=now_ms,
            )
        expected = (getattr(req, "producer_id", -1), getattr(req, "producer_epoch", -1))
        if _in_transition(txn):
            return [reply(E.CONCURRENT_TRANSACTIONS)]
        if expected != (-1, -1) and not self._is_valid_producer(txn, *expected):
            return [reply(E.PRODUCER_FENCED)]
        if txn.state is S.ONGOING:
            # Abort the open transaction first (fencing its producer); the
            # client retries until it is complete.
            return self._abort_timed_out(txn, now_ms) + [reply(E.CONCURRENT_TRANSACTIONS)]
        if txn.state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
            return [reply(E.CONCURRENT_TRANSACTIONS)]
        # Empty or complete: a new epoch (or a new id once the epoch is spent).
        if txn.producer_epoch >= MAX_EPOCH:
            value = txn.log_value(
                producer_id=fresh_producer_id,
                producer_epoch=0,
                previous_producer_id=txn.producer_id,
            )
        elif (
            expected != (-1, -1)
            and expected[1] == txn.last_producer_epoch
            and (expected[1] != txn.producer_epoch)
        ):
            value = txn.log_value()  # a retry of a bump already done (KIP-360)
        else:
            value = txn.log_value(producer_epoch=txn.producer_epoch + 1)
        value = replace(
            value,
            transaction_timeout_ms=req.transaction_timeout_ms,
            state=S.EMPTY,
            partitions=frozenset(),
            start_timestamp_ms=-1,
            last_update_timestamp_ms=now_ms,
        )

        def done(error: ErrorCode, _now: int) -> list[Action]:
            if error != NONE:
                return [reply(_log_write_error(error))]
            return [reply(NONE, value.producer_id, value.producer_epoch)]

        return self._write(txn, value, done)

    @staticmethod
    def _is_valid_producer(txn: TxnMetadata, producer_id: int, epoch: int) -> bool:
        """KIP-360: a producer that gives its id and epoch must be the current
        one, or retrying the bump that made the current one."""
        if epoch == NO_PRODUCER_EPOCH and producer_id == NO_PRODUCER_ID:
            return True
        if producer_id == txn.producer_id and epoch == txn.producer_epoch:
            return True
        if producer_id == txn.producer_id and epoch == txn.last_producer_epoch:
            return True
        return producer_id == txn.last_producer_id and epoch == txn.last_producer_epoch

    # --- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------

    def add_partitions(
        self,
        ctx: RequestContext,
        req,
        now_ms: int,
        unknown: Iterable[tuple[str, int]] = (),
    ) -> list[Action]:
        """AddPartitionsToTxn. v0-3: one transaction, from its producer. v4+:
        transactions from brokers, answered per transaction (verify_only:
        only check that the partitions are in the transaction). `unknown`:
        partitions that do not exist (UNKNOWN_TOPIC_OR_PARTITION for them,
        OPERATION_NOT_ATTEMPTED for the others, as in Kafka)."""
        missing = set(unknown)
        if ctx.api_version <= 3:
            topics = [(t.name, list(t.partitions)) for t in req.v3_and_below_topics]

            def answer(results: list) -> Reply:
                return Reply(
                    ctx.token,
                    {"throttle_time_ms": 0, "results_by_topic_v3_and_below": results},
                )

            return self._add_one(
                ctx,
                req.v3_and_below_transactional_id,
                req.v3_and_below_producer_id,
                req.v3_and_below_producer_epoch,
                topics,
                missing,
                False,
                now_ms,
                answer,
            )
        results: dict[str, list] = {}
        actions: list[Action] = []
        left = [len(req.transactions)]

        def collect(txn_id: str):
            def answer(topic_results: list) -> Reply | None:
                results[txn_id] = topic_results
                left[0] -= 1
                if left[0]:
                    return None
                return Reply(
                    ctx.token,
                    {
                        "throttle_time_ms": 0,
                        "error_code": NONE,
                        "results_by_transaction": [
                            {"transactional_id": t, "topic_results": r} for t, r in results.items()
                        ],
                    },
                )

            return answer

        if not req.transactions:
            return [
                Reply(
                    ctx.token,
                    {"throttle_time_ms": 0, "error_code": NONE, "results_by_transaction": []},
                )
            ]
        for t in req.transactions:
            actions += self._add_one(
                ctx,
                t.transactional_id,
                t.producer_id,
                t.producer_epoch,
                [(x.name, list(x.partitions)) for x in t.topics],
                missing,
                t.verify_only,
                now_ms,
                collect(t.transactional_id),
            )
        return actions

    def _add_one(
        self, ctx, txn_id, producer_id, epoch, topics, missing, verify_only, now_ms, answer
    ) -> list[Action]:
        """One transaction's partitions: `answer(topic results)` makes the reply
        (or None while others of the same request are outstanding)."""

        def results(code_of) -> list:
            return [
                {
                    "name": name,
                    "results_by_partition": [
                        {"partition_index": p, "partition_error_code": code_of((name, p))}
                        for p in parts
                    ],
                }
                for name, parts in topics
            ]

        def all_error(code: ErrorCode) -> list[Action]:
            code = _fenced(code, ctx.api_version, 2)
            reply = answer(results(lambda _tp: code))
            return [] if reply is None else [reply]

        tps = {(name, p) for name, parts in topics for p in parts}
        if missing & tps:
            reply = answer(
                results(
                    lambda tp: (
                        E.UNKNOWN_TOPIC_OR_PARTITION if tp in missing else E.OPERATION_NOT_ATTEMPTED
                    )
                )
            )
            return [] if reply is None else [reply]
        error, txn = self._check_producer(txn_id, producer_id, epoch, adding=not verify_only)
        if error is not None:
            return all_error(error)
        assert txn is not None
        if verify_only:
            verified = self.verify(txn_id, producer_id, epoch, tps)
            reply = answer(results(lambda tp: verified[tp]))
            return [] if reply is None else [reply]
        # Only brokers send v4+: partitions a v2 producer's batches brought.
        return self._add(txn, tps, now_ms, all_error, 2 if ctx.api_version >= 4 else 0)

    def add_or_verify(
        self,
        ctx: RequestContext,
        txn_id: str,
        producer_id: int,
        epoch: int,
        tps: Iterable[tuple[str, int]],
        verify_only: bool,
        now_ms: int,
    ) -> list[Action]:
        """What AddPartitionsToTxn v5 from a partition leader does, for this
        broker's own leaders: add the partitions (a v2 producer's first batch
        there) or verify them (v1). The Reply is {(topic, partition): error}."""
        by_topic: dict[str, list[int]] = {}
        for topic, index in sorted(set(tps)):
            by_topic.setdefault(topic, []).append(index)

        def answer(topic_results: list) -> Reply:
            return Reply(
                ctx.token,
                {
                    (t["name"], r["partition_index"]): ErrorCode(r["partition_error_code"])
                    for t in topic_results
                    for r in t["results_by_partition"]
                },
            )

        return self._add_one(
            ctx, txn_id, producer_id, epoch, list(by_topic.items()), set(), verify_only,
            now_ms, answer,
        )  # fmt: skip

    def verify(
        self, txn_id: str, producer_id: int, epoch: int, tps: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], ErrorCode]:
        """Whether each partition is in the producer's open transaction (Kafka's
        handleVerifyPartitionsInTransaction): a partition leader asks before it
        appends a producer's first transactional batch, so a batch that arrives
        after its transaction ended (a produce delayed past an abort) cannot
        open a transaction no coordinator will ever close."""
        error, txn = self._check_producer(txn_id, producer_id, epoch)
        if error is None and txn is not None and txn.state.is_prepare:
            error = E.CONCURRENT_TRANSACTIONS
        if error is not None or txn is None:
            return dict.fromkeys(tps, error or E.INVALID_TXN_STATE)
        # Kafka 4.x: TRANSACTION_ABORTABLE (the leader tells older producers
        # INVALID_TXN_STATE instead).
        return {tp: NONE if tp in txn.partitions else E.TRANSACTION_ABORTABLE for tp in tps}

    def add_offsets(
        self, ctx: RequestContext, req, now_ms: int, offsets_partition: int
    ) -> list[Action]:
        """AddOffsetsToTxn: the group's __consumer_offsets partition joins."""

        def reply(error: ErrorCode) -> list[Action]:
            code = _fenced(error, ctx.api_version, 2)
            return [Reply(ctx.token, {"throttle_time_ms": 0, "error_code": code})]

        error, txn = self._check_producer(
            req.transactional_id, req.producer_id, req.producer_epoch, adding=True
        )
        if error is not None:
            return reply(error)
        assert txn is not None
        return self._add(txn, {("__consumer_offsets", offsets_partition)}, now_ms, reply)

    def _check_producer(
        self, txn_id: str, producer_id: int, epoch: int, *, adding: bool = False
    ) -> tuple[ErrorCode | None, TxnMetadata | None]:
        """The transaction of `txn_id` if the producer is its current one.
        `adding` (AddPartitionsToTxn, AddOffsetsToTxn): a transition in
        progress is answered first, as Kafka's handleAddPartitionsToTransaction
        does, so a v2 producer handed its next epoch or producer id by EndTxn
        before that transaction completed is told to retry."""
        if not txn_id:
            return E.INVALID_REQUEST, None
        status = self.runtime.status_error(self.partition_for(txn_id))
        if status is not None:
            return status, None
        txn = self.txns.get(txn_id)
        if adding and txn is not None and _in_transition(txn):
            return E.CONCURRENT_TRANSACTIONS, None
        if txn is None or txn.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING, None
        if txn.producer_epoch != epoch:
            return E.PRODUCER_FENCED, None
        return None, txn

    def _add(
        self, txn: TxnMetadata, tps: set, now_ms: int, reply, client_version: int = 0
    ) -> list[Action]:
        """`tps` join the transaction; the caller checked the producer with
        `adding`, so no transition is in progress."""
        if txn.state is S.ONGOING and tps <= txn.partitions:
            return reply(NONE)
        if txn.state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
            return reply(E.INVALID_TXN_STATE)
        start = now_ms if txn.state is not S.ONGOING else txn.start_ms
        value = txn.log_value(
            state=S.ONGOING,
            partitions=frozenset(txn.partitions | tps),
            start_timestamp_ms=start,
            last_update_timestamp_ms=now_ms,
            client_transaction_version=client_version,
        )

        def done(error: ErrorCode, _now: int) -> list[Action]:
            if error != NONE:
                return reply(_log_write_error(error))
            self._schedule_timeout(txn)
            return reply(NONE)

        return self._write(txn, value, done)

    # --- EndTxn -----------------------------------------------------------------------------

    def epoch_exhausted(self, transactional_id: str) -> bool:
        """Whether ending the id's transaction under v2 needs a new producer id
        (the handler then fetches one before calling `end_txn`)."""
        txn = self.txns.get(transactional_id)
        return txn is not None and txn.producer_epoch >= MAX_EPOCH

    def end_txn(
        self, ctx: RequestContext, req, now_ms: int, fresh_producer_id: int = NO_PRODUCER_ID
    ) -> list[Action]:
        """EndTxn: v0-4 under transactions v1's rules, v5 under v2's.
        `fresh_producer_id`: for v2 when `epoch_exhausted`."""

        def reply(
            error: ErrorCode, pid: int = NO_PRODUCER_ID, epoch: int = NO_PRODUCER_EPOCH
        ) -> list[Action]:
            body = {
                "throttle_time_ms": 0,
                "error_code": _fenced(error, ctx.api_version, 2),
                "producer_id": pid,
                "producer_epoch": epoch,
            }
            return [Reply(ctx.token, body)]

        if ctx.api_version >= 5:
            return self._end_txn_v2(req, bool(req.committed), now_ms, fresh_producer_id, reply)
        error, txn = self._check_producer(req.transactional_id, req.producer_id, req.producer_epoch)
        if error is not None:
            return reply(error)
        assert txn is not None
        commit = bool(req.committed)
        if _in_transition(txn):
            return reply(E.CONCURRENT_TRANSACTIONS)
        state = txn.state
        if state is S.ONGOING:
            return self._prepare_end(txn, commit, now_ms, reply)
        if state is S.COMPLETE_COMMIT:
            return reply(NONE if commit else E.INVALID_TXN_STATE)
        if state is S.COMPLETE_ABORT:
            return reply(NONE if not commit else E.INVALID_TXN_STATE)
        return reply(E.INVALID_TXN_STATE)  # Empty, Dead, PrepareEpochFence

    def _end_txn_v2(self, req, commit: bool, now_ms: int, fresh: int, reply) -> list[Action]:
        """EndTxn v5 (Kafka's endTransaction for TV2): every transaction ends
        with the epoch bumped, so the epoch a request carries tells a retry
        (the epoch before the bump) from the next transaction's end."""
        txn_id, pid, epoch = req.transactional_id, req.producer_id, req.producer_epoch
        if not txn_id:
            return reply(E.INVALID_REQUEST)
        status = self.runtime.status_error(self.partition_for(txn_id))
        if status is not None:
            return reply(status)
        txn = self.txns.get(txn_id)
        if txn is None:
            return reply(E.INVALID_PRODUCER_ID_MAPPING)
        if _in_transition(txn):
            # Before the epoch check (KAFKA-18464): the end of the next
            # transaction, at the epoch the last end handed out, may arrive
            # while that end's markers are still being written; it waits
            # instead of being fenced. A retry of the last end waits too.
            return reply(E.CONCURRENT_TRANSACTIONS)
        # A retry of an end that handed over to a new producer id, or that bumped the epoch.
        retry_on_overflow = (
            txn.last_producer_id == pid and epoch == MAX_EPOCH and txn.producer_epoch == 0
        )
        retry_on_bump = txn.producer_epoch == epoch + 1
        if txn.producer_id != pid and not retry_on_overflow:
            return reply(E.INVALID_PRODUCER_ID_MAPPING)
        state = txn.state
        if state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            valid = retry_on_bump or retry_on_overflow or epoch == txn.producer_epoch
        else:
            valid = epoch == txn.producer_epoch
        if not valid:
            return reply(E.PRODUCER_FENCED)
        is_retry = retry_on_bump or retry_on_overflow
        if state is S.ONGOING:
            return self._prepare_end(txn, commit, now_ms, reply, fresh=fresh)
        if state is S.COMPLETE_COMMIT:
            if commit and is_retry:
                return reply(NONE, txn.producer_id, txn.producer_epoch)
            if commit:
                return reply(E.INVALID_TXN_STATE)
            if is_retry:
                return reply(E.INVALID_TXN_STATE)
            return self._prepare_end(txn, False, now_ms, reply, fresh=fresh, nothing_added=True)
        if state is S.COMPLETE_ABORT:
            if commit:
                return reply(E.INVALID_TXN_STATE)
            if is_retry:
                return reply(NONE, txn.producer_id, txn.producer_epoch)
            return self._prepare_end(txn, False, now_ms, reply, fresh=fresh, nothing_added=True)
        if state is S.EMPTY and not commit:
            # v2 producers may abort a transaction none of whose batches arrived.
            return self._prepare_end(txn, False, now_ms, reply, fresh=fresh, nothing_added=True)
        return reply(E.INVALID_TXN_STATE)

    def _prepare_end(
        self,
        txn: TxnMetadata,
        commit: bool,
        now_ms: int,
        reply,
        *,
        fresh: int | None = None,
        nothing_added: bool = False,
    ) -> list[Action]:
        """Write PrepareCommit/PrepareAbort; once durable, answer and send the
        markers. `fresh` is given for v2 (the epoch is bumped, and a spent
        epoch hands over to `fresh`); None for v1."""
        if fresh is None:
            value = txn.log_value(
                state=S.PREPARE_COMMIT if commit else S.PREPARE_ABORT,
                last_update_timestamp_ms=now_ms,
            )
        else:
            next_pid = NO_PRODUCER_ID
            if txn.producer_epoch >= MAX_EPOCH:
                if fresh < 0:
                    return reply(E.CONCURRENT_TRANSACTIONS)  # raced: the client retries
                next_pid = fresh
            value = txn.log_value(
                producer_epoch=min(txn.producer_epoch + 1, OVERFLOW_EPOCH),
                state=S.PREPARE_COMMIT if commit else S.PREPARE_ABORT,
                next_producer_id=next_pid,
                start_timestamp_ms=now_ms if nothing_added else txn.start_ms,
                last_update_timestamp_ms=now_ms,
                client_transaction_version=2,
            )
        self.runtime.cancel_timer(("timeout", txn.transactional_id))

        def done(error: ErrorCode, _now: int) -> list[Action]:
            if error != NONE:
                self._schedule_timeout(txn)
                return reply(_log_write_error(error))
            if fresh is None:
                return reply(NONE) + [self._markers(txn)]
            # The id and epoch the producer uses from now on: those of the
            # completed transaction.
            if txn.next_producer_id >= 0:
                return reply(NONE, txn.next_producer_id, 0) + [self._markers(txn)]
            return reply(NONE, txn.producer_id, txn.producer_epoch) + [self._markers(txn)]

        return self._write(txn, value, done)

    def _markers(self, txn: TxnMetadata) -> SendMarkers:
        return SendMarkers(
            txn.transactional_id,
            txn.producer_id,
            txn.producer_epoch,
            txn.state is S.PREPARE_COMMIT,
            self.coordinator_epochs.get(txn.partition, 0),
            tuple(sorted(txn.partitions)),
            txn.client_version,
        )

    def markers_written(
        self, transactional_id: str, producer_id: int, producer_epoch: int, now_ms: int
    ) -> list[Action]:
        """Every marker of the prepared transaction is written: complete it."""
        txn = self.txns.get(transactional_id)
        if (
            txn is None
            or not txn.state.is_prepare
            or txn.pending is not None
            or (txn.producer_id, txn.producer_epoch) != (producer_id, producer_epoch)
            or not self.runtime.is_active(txn.partition)
        ):
            return []  # unloaded or moved on meanwhile: nothing to complete
        value = txn.log_value(
            state=S.COMPLETE_COMMIT if txn.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT,
            partitions=frozenset(),
            last_update_timestamp_ms=now_ms,
            next_producer_id=NO_PRODUCER_ID,
        )
        if txn.client_version >= 2 and txn.next_producer_id >= 0:
            # The epoch is spent: the id hands over to the new producer id.
            value = replace(
                value,
                producer_id=txn.next_producer_id,
                producer_epoch=0,
                previous_producer_id=txn.producer_id,
            )

        def done(error: ErrorCode, done_ms: int) -> list[Action]:
            if error != NONE and self.runtime.is_active(txn.partition):
                # The markers are written; try the completion again shortly.
                self.runtime.schedule(
                    ("complete", transactional_id),
                    done_ms + 100,
                    lambda t: self.markers_written(
                        transactional_id, producer_id, producer_epoch, t
                    ),
                )
            return []

        return self._write(txn, value, done)

    # --- timeouts ---------------------------------------------------------------------------

    def _schedule_timeout(self, txn: TxnMetadata) -> None:
        if txn.state is not S.ONGOING:
            return
        txn_id = txn.transactional_id
        self.runtime.schedule(
            ("timeout", txn_id),
            txn.start_ms + txn.timeout_ms,
            lambda now: self._timed_out(txn_id, now),
        )

    def _timed_out(self, txn_id: str, now_ms: int) -> list[Action]:
        txn = self.txns.get(txn_id)
        if txn is None or txn.state is not S.ONGOING:
            return []
        if txn.pending is not None:
            # Something in flight (adding partitions): look again soon.
            self.runtime.schedule(
                ("timeout", txn_id), now_ms + 100, lambda t: self._timed_out(txn_id, t)
            )
            return []
        return self._abort_timed_out(txn, now_ms)

    def _abort_timed_out(self, txn: TxnMetadata, now_ms: int) -> list[Action]:
        """Abort an open transaction for the coordinator's own reasons (a
        timeout, a new producer of the same id): the epoch is bumped first, so
        the producer that left it open is fenced (Kafka's
        prepareFenceProducerEpoch, then PrepareAbort)."""
        self.runtime.cancel_timer(("timeout", txn.transactional_id))
        bumped = txn.producer_epoch + 1 if txn.producer_epoch < MAX_EPOCH else txn.producer_epoch
        # Written under the broker's transaction version, as Kafka does: at 2
        # the markers must then carry an epoch newer than the transaction's.
        value = txn.log_value(
            producer_epoch=bumped,
            state=S.PREPARE_ABORT,
            last_update_timestamp_ms=now_ms,
            client_transaction_version=(
                2 if self.config.transaction_version >= 2 and bumped > txn.producer_epoch else 0
            ),
        )

        def done(error: ErrorCode, done_ms: int) -> list[Action]:
            if error != NONE:
                if self.runtime.is_active(txn.partition):
                    self._schedule_retry_abort(txn, done_ms)
                return []
            return [self._markers(txn)]

        return self._write(txn, value, done)

    def _schedule_retry_abort(self, txn: TxnMetadata, now_ms: int) -> None:
        txn_id = txn.transactional_id
        self.runtime.schedule(
            ("timeout", txn_id), now_ms + 1000, lambda t: self._timed_out(txn_id, t)
        )

    # --- expiring idle transactional ids ---------------------------------------------------

    def _schedule_expiry(self, partition: int, now_ms: int) -> None:
        self.runtime.schedule(
            ("expire", partition),
            now_ms + self.config.id_expiration_check_ms,
            lambda t: self._expire_ids(partition, t),
        )

    def _expire_ids(self, partition: int, now_ms: int) -> list[Action]:
        """Tombstone the ids of `partition` idle past transactional.id.expiration.ms
        (Kafka's removeExpiredTransactionalIds): none with a transaction open
        or a write in flight. They are forgotten once the tombstones are durable."""
        self._schedule_expiry(partition, now_ms)
        idle = [
            txn
            for txn in self.txns.values()
            if txn.partition == partition
            and txn.pending is None
            and txn.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
            and txn.last_update_ms + self.config.id_expiration_ms <= now_ms
        ]
        if not idle:
            return []
        for txn in idle:
            txn.pending = S.DEAD
        persist = self.runtime.persist(
            partition, [(encode_key(txn.transactional_id), None) for txn in idle]
        )

        def done(error: ErrorCode, _now: int) -> list[Action]:
            for txn in idle:
                txn.pending = None
                if error == NONE and self.txns.get(txn.transactional_id) is txn:
                    del self.txns[txn.transactional_id]
            return []

        self.runtime.then(persist, done)
        return [persist]

    # --- Describe / List ---------------------------------------------------------------------

    def describe(self, ctx: RequestContext, req) -> list[Action]:
        states = []
        for txn_id in req.transactional_ids:
            status = self.runtime.status_error(self.partition_for(txn_id))
            txn = self.txns.get(txn_id)
            if status is None and txn is None:
                status = E.TRANSACTIONAL_ID_NOT_FOUND
            if status is not None or txn is None:
                states.append(
                    {
                        "error_code": status,
                        "transactional_id": txn_id,
                        "transaction_state": "",
                        "transaction_timeout_ms": 0,
                        "transaction_start_time_ms": -1,
                        "producer_id": -1,
                        "producer_epoch": -1,
                        "topics": [],
                    }
                )
                continue
            by_topic: dict[str, list[int]] = {}
            for topic, index in sorted(txn.partitions):
                by_topic.setdefault(topic, []).append(index)
            states.append(
                {
                    "error_code": NONE,
                    "transactional_id": txn_id,
                    "transaction_state": txn.state.display,
                    "transaction_timeout_ms": txn.timeout_ms,
                    "transaction_start_time_ms": txn.start_ms,
                    "producer_id": txn.producer_id,
                    "producer_epoch": txn.producer_epoch,
                    "topics": [{"topic": t, "partitions": p} for t, p in by_topic.items()],
                }
            )
        return [Reply(ctx.token, {"throttle_time_ms": 0, "transaction_states": states})]

    def list_transactions(self, ctx: RequestContext, req, now_ms: int) -> list[Action]:
        """The transactional ids of the partitions served here, filtered."""
        wanted_states = set()
        unknown = []
        for name in req.state_filters:
            state = S.from_display(name)
            if state is None:
                unknown.append(name)
            else:
                wanted_states.add(state)
        pids = set(req.producer_id_filters)
        duration = getattr(req, "duration_filter", -1)
        error = E.COORDINATOR_LOAD_IN_PROGRESS if self.runtime.any_loading() else NONE
        pattern = None
        if error == NONE and getattr(req, "transactional_id_pattern", None):
            try:
                pattern = re2.compile(req.transactional_id_pattern, _PATTERN_OPTIONS)
            except re2.error:
                error = E.INVALID_REGULAR_EXPRESSION
        states = []
        if error == NONE:
            for txn in self.txns.values():
                if not self.runtime.is_active(txn.partition) or txn.state is S.DEAD:
                    continue
                if req.state_filters and txn.state not in wanted_states:
                    continue
                if pids and txn.producer_id not in pids:
                    continue
                if duration >= 0 and (
                    txn.state is not S.ONGOING or now_ms - txn.start_ms < duration
                ):
                    continue
                if pattern is not None and pattern.fullmatch(txn.transactional_id) is None:
                    # The whole id must match, as Kafka's matcher.matches().
                    continue
                states.append(
                    {
                        "transactional_id": txn.transactional_id,
                        "producer_id": txn.producer_id,
                        "transaction_state": txn.state.display,
                    }
                )
        return [
            Reply(
                ctx.token,
                {
                    "throttle_time_ms": 0,
                    "error_code": error,
                    "unknown_state_filters": unknown,
                    "transaction_states": states,
                },
            )
        ]

    # --- writes -------------------------------------------------------------------------------

    def _write(self, txn: TxnMetadata, value: TxnLogValue, done) -> list[Action]:
        """Write `value` for `txn`; apply it once durable, then `done(error, now)`."""
        txn.pending = value.state
        persist: Persist = self.runtime.persist(
            txn.partition, [(encode_key(txn.transactional_id), encode_value(value))]
        )

        def applied(error: ErrorCode, now_ms: int) -> list[Action]:
            txn.pending = None
            if error == NONE:
                txn.apply(value)
            elif txn.state is S.EMPTY and txn.producer_epoch == NO_PRODUCER_EPOCH:
                # A new id whose first write failed: forget it, as Kafka does.
                if self.txns.get(txn.transactional_id) is txn:
                    del self.txns[txn.transactional_id]
            return done(error, now_ms)

        self.runtime.then(persist, applied)
        return [persist]
