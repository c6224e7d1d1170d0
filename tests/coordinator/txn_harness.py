"""The transaction coordinator's test harness, sans I/O: a clock the test
moves, writes that are durable at once (or held, or failed), requests and
replies through wire's codecs, markers reported written when the test says so."""

from __future__ import annotations

import itertools

from coordinator import Persist, Reply, RequestContext
from coordinator.actions import SendMarkers
from coordinator.transactions import TransactionCoordinator, TxnConfig
from coordinator.txn_state import TxnState
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.protocol import request_codec, response_codec

PARTITIONS = 3


def build(api_key: int, version: int, **fields):
    codec = request_codec(api_key, version)
    return codec.decode(codec.encode(fields))


class TxnHarness:
    def __init__(self, partitions=range(PARTITIONS), max_timeout_ms=900_000):
        self.coord = TransactionCoordinator(TxnConfig(PARTITIONS, max_timeout_ms))
        self.now = 1_000_000
        self.log: dict[int, list] = {p: [] for p in range(PARTITIONS)}
        self.markers: list[SendMarkers] = []
        self.replies: dict[int, dict] = {}
        self.fail_writes: ErrorCode | None = None
        self._tokens = itertools.count(1)
        self._pids = itertools.count(1000)
        for p in partitions:
            self.load(p, epoch=5)

    def load(self, partition: int, epoch: int) -> None:
        self.coord.begin_loading(partition, epoch)
        self.coord.replay(partition, list(self.log[partition]), self.now)
        self.run(self.coord.finish_loading(partition, self.now))

    def run(self, actions) -> None:
        queue = list(actions)
        while queue:
            action = queue.pop(0)
            if isinstance(action, Reply):
                self.replies[action.token] = action.response
            elif isinstance(action, Persist):
                if self.fail_writes is None:
                    self.log[action.partition].extend(action.records)
                queue += self.coord.persisted(action.write_id, self.now, self.fail_writes or 0)
            else:
                self.markers.append(action)

    def call(self, method, api_key, version, **fields) -> dict:
        token = next(self._tokens)
        request = build(api_key, version, **fields)
        ctx = RequestContext(token, version)
        if method == "init_producer_id":
            actions = self.coord.init_producer_id(ctx, request, self.now, next(self._pids))
        elif method == "add_offsets":
            actions = self.coord.add_offsets(ctx, request, self.now, 7)
        elif method == "end_txn":
            # The broker's handler fetches a new producer id when v2 needs one.
            fresh = next(self._pids) if self.coord.epoch_exhausted(request.transactional_id) else -1
            actions = self.coord.end_txn(ctx, request, self.now, fresh)
        elif method in ("describe",):
            actions = self.coord.describe(ctx, request)
        else:
            actions = getattr(self.coord, method)(ctx, request, self.now)
        self.run(actions)
        reply = self.replies.pop(token)
        codec = response_codec(api_key, version)
        codec.encode(reply)  # a malformed reply fails here
        return reply

    def init(self, txn_id="t", timeout=60_000, version=4, **fields) -> dict:
        return self.call(
            "init_producer_id",
            ApiKey.INIT_PRODUCER_ID,
            version,
            transactional_id=txn_id,
            transaction_timeout_ms=timeout,
            **fields,
        )

    def add(self, txn_id, pid, epoch, *tps, version=3) -> dict[tuple[str, int], int]:
        topics: dict[str, list[int]] = {}
        for t, p in tps:
            topics.setdefault(t, []).append(p)
        reply = self.call(
            "add_partitions",
            ApiKey.ADD_PARTITIONS_TO_TXN,
            version,
            v3_and_below_transactional_id=txn_id,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[{"name": t, "partitions": p} for t, p in topics.items()],
        )
        return {
            (t["name"], r["partition_index"]): r["partition_error_code"]
            for t in reply["results_by_topic_v3_and_below"]
            for r in t["results_by_partition"]
        }

    def end(self, txn_id, pid, epoch, commit=True, version=3) -> int:
        reply = self.call(
            "end_txn",
            ApiKey.END_TXN,
            version,
            transactional_id=txn_id,
            producer_id=pid,
            producer_epoch=epoch,
            committed=commit,
        )
        return reply["error_code"]

    def end_v2(self, txn_id, pid, epoch, commit=True) -> tuple[int, int, int]:
        """EndTxn v5: (error, the producer id and epoch to use next)."""
        reply = self.call(
            "end_txn",
            ApiKey.END_TXN,
            5,
            transactional_id=txn_id,
            producer_id=pid,
            producer_epoch=epoch,
            committed=commit,
        )
        return reply["error_code"], reply["producer_id"], reply["producer_epoch"]

    def broker_add(self, txn_id, pid, epoch, *tps, verify_only=False) -> dict:
        """A partition leader's AddPartitionsToTxn v5 for a producer's first
        batches (transactions v2), or its verification (v1)."""
        token = next(self._tokens)
        ctx = RequestContext(token, 5)
        self.run(self.coord.add_or_verify(ctx, txn_id, pid, epoch, tps, verify_only, self.now))
        return self.replies.pop(token)

    def state(self, txn_id="t") -> TxnState:
        return self.coord.txns[txn_id].state

    def deliver_markers(self) -> None:
        markers, self.markers = self.markers, []
        for m in markers:
            self.run(
                self.coord.markers_written(
                    m.transactional_id, m.producer_id, m.producer_epoch, self.now
                )
            )

    def tick(self, ms: int) -> None:
        self.now += ms
        self.run(self.coord.tick(self.now))
