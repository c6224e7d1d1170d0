"""Partition leaders ask the transaction coordinator before they let a producer's
first transactional batch in (KIP-890 part 1, Kafka's
`transaction.partition.verification.enable`, on by default since 3.6).

Without the question, a produce delayed past the end of its transaction (the
producer aborted on a timeout while the request was still in flight) would
open a new transaction in the partition that no coordinator knows of, and
read_committed consumers would wait behind it forever. The coordinator says
whether the partition is in the producer's open transaction; this broker's
own coordinator answers directly, another broker's through
AddPartitionsToTxn v4 with verify_only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from broker.broker_client import BrokerConnectionError, BrokerConnections
from broker.metadata.image import MetadataImage
from broker.txn_runtime import TRANSACTION_TOPIC, TransactionRuntime
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

log = logging.getLogger("gregor.txn.verify")

VERIFY_VERSION = 4
TopicPartition = tuple[str, int]


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

    async def verify(
        self, txn_id: str, producer_id: int, epoch: int, tps: list[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        """NONE for each partition in the producer's open transaction; else why not."""
        coordinator = self.txns.coordinator
        image = self.image()
        topic = image.topic(TRANSACTION_TOPIC)
        index = coordinator.partition_for(txn_id)
        leader = (
            topic.partitions[index].leader
            if topic is not None and index in topic.partitions
            else -1
        )
        if leader == self.node_id:
            status = coordinator.runtime.status_error(index)
            if status is not None:
                return dict.fromkeys(tps, status)
            return coordinator.verify(txn_id, producer_id, epoch, tps)
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
                    "verify_only": True,
                    "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()],
                }
            ]
        }
        try:
            response = await connection.request(
                ApiKey.ADD_PARTITIONS_TO_TXN, VERIFY_VERSION, body, timeout=10.0
            )
        except BrokerConnectionError as e:
            log.info("verifying with broker %d failed: %s", leader, e)
            return unavailable
        if response.error_code:
            return dict.fromkeys(tps, ErrorCode(response.error_code))
        results = dict(unavailable)
        for txn in response.results_by_transaction:
            for t in txn.topic_results:
                for r in t.results_by_partition:
                    results[(t.name, r.partition_index)] = ErrorCode(r.partition_error_code)
        return results
