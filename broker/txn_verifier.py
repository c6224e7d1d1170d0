"""Partition leaders ask the transaction coordinator before they let a producer's
first transactional batch in: transactions v1 verify (KIP-890 part 1, Kafka's
`transaction.partition.verification.enable`, on by default since 3.6),
transactions v2 add the partition to the transaction (KIP-890 part 2: the
producer no longer sends AddPartitionsToTxn itself).

Without the question, a produce delayed past the end of its transaction (the
producer aborted on a timeout while the request was still in flight) would
open a new transaction in the partition that no coordinator knows of, and
read_committed consumers would wait behind it forever. This broker's own
coordinator answers directly, another broker's through AddPartitionsToTxn v5
(verify_only for v1). What the request's version allows decides (Kafka's
AddPartitionsToTxnManager.TransactionSupportedOperation): Produce v12 and
TxnOffsetCommit v5 add; Produce v11 and TxnOffsetCommit v4 verify and may be
told TRANSACTION_ABORTABLE; older ones verify and are told INVALID_TXN_STATE
instead.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable

import trio

from broker.broker_client import BrokerConnectionError, BrokerConnections
from broker.metadata.image import MetadataImage
from broker.txn_runtime import TRANSACTION_TOPIC, TransactionRuntime
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

log = logging.getLogger("gregor.txn.verify")

ADD_PARTITIONS_VERSION = 5
# Kafka's add.partitions.to.txn.retry.backoff.ms and .max.ms: an add that meets
# the previous transaction still completing is retried here, not by the client.
ADD_RETRY_BACKOFF_S = 0.02
ADD_RETRY_MAX_S = 0.1
TopicPartition = tuple[str, int]


class Operation(enum.Enum):
    """What the producer's request version lets the leader do."""

    VERIFY = "verify"  # and answer INVALID_TXN_STATE for TRANSACTION_ABORTABLE
    VERIFY_ABORTABLE = "verify, TRANSACTION_ABORTABLE known"
    ADD = "add"

    @classmethod
    def for_produce(cls, version: int) -> Operation:
        return cls.ADD if version > 11 else cls.VERIFY_ABORTABLE if version > 10 else cls.VERIFY

    @classmethod
    def for_txn_offset_commit(cls, version: int) -> Operation:
        return cls.ADD if version > 4 else cls.VERIFY_ABORTABLE if version > 3 else cls.VERIFY


class TxnVerifier:
    def __init__(
        self,
        node_id: int,
        txns: TransactionRuntime,
        image: Callable[[], MetadataImage],
        connections: BrokerConnections,
    ):
        self.node_id = node_id
        self.txns = txns
        self.image = image
        self.connections = connections

    async def add_or_verify(
        self,
        txn_id: str,
        producer_id: int,
        epoch: int,
        tps: list[TopicPartition],
        operation: Operation = Operation.VERIFY,
    ) -> dict[TopicPartition, ErrorCode]:
        """NONE for each partition in (or now added to) the producer's open
        transaction; else why not, in the terms the producer's version knows."""
        outcome = await self._ask(txn_id, producer_id, epoch, tps, operation)
        if operation is Operation.ADD:
            deadline = trio.current_time() + ADD_RETRY_MAX_S
            while (
                ErrorCode.CONCURRENT_TRANSACTIONS in outcome.values()
                and trio.current_time() < deadline
            ):
                await trio.sleep(ADD_RETRY_BACKOFF_S)
                outcome = await self._ask(txn_id, producer_id, epoch, tps, operation)
        return {tp: _for_producer(error, operation) for tp, error in outcome.items()}

    async def _ask(
        self,
        txn_id: str,
        producer_id: int,
        epoch: int,
        tps: list[TopicPartition],
        operation: Operation,
    ) -> dict[TopicPartition, ErrorCode]:
        coordinator = self.txns.coordinator
        image = self.image()
        topic = image.topic(TRANSACTION_TOPIC)
        index = coordinator.partition_for(txn_id)
        leader = (
            topic.partitions[index].leader
            if topic is not None and index in topic.partitions
            else -1
        )
        verify_only = operation is not Operation.ADD
        if leader == self.node_id:
            status = coordinator.runtime.status_error(index)
            if status is not None:
                return dict.fromkeys(tps, status)
            if verify_only:
                return coordinator.verify(txn_id, producer_id, epoch, tps)
            return await self.txns.ask(
                ADD_PARTITIONS_VERSION,
                lambda rctx, now: coordinator.add_or_verify(
                    rctx, txn_id, producer_id, epoch, tps, False, now
                ),
            )
        unavailable = dict.fromkeys(tps, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        connection = self.connections.to(leader)
        if connection is None:
            return unavailable
        by_topic: dict[str, list[int]] = {}
        for name, p in tps:
            by_topic.setdefault(name, []).append(p)
        body = {
            "transactions": [
                {
                    "transactional_id": txn_id,
                    "producer_id": producer_id,
                    "producer_epoch": epoch,
                    "verify_only": verify_only,
                    "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()],
                }
            ]
        }
        try:
            response = await connection.request(
                ApiKey.ADD_PARTITIONS_TO_TXN, ADD_PARTITIONS_VERSION, body, timeout=10.0
            )
        except BrokerConnectionError as e:
            log.info("asking broker %d about a transaction failed: %s", leader, e)
            return dict.fromkeys(tps, ErrorCode.NETWORK_EXCEPTION)
        if response.error_code:
            return dict.fromkeys(tps, ErrorCode(response.error_code))
        results = dict(unavailable)
        for txn in response.results_by_transaction:
            for t in txn.topic_results:
                for r in t.results_by_partition:
                    results[(t.name, r.partition_index)] = ErrorCode(r.partition_error_code)
        return results


def _for_producer(error: ErrorCode, operation: Operation) -> ErrorCode:
    """Kafka's AddPartitionsToTxnManager: producers expect INVALID_PRODUCER_EPOCH
    where the coordinator says PRODUCER_FENCED, and those before KIP-890 do
    not know TRANSACTION_ABORTABLE."""
    if error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if error == ErrorCode.TRANSACTION_ABORTABLE and operation is Operation.VERIFY:
        return ErrorCode.INVALID_TXN_STATE
    return error
