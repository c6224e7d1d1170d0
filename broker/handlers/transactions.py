"""The transaction APIs: the coordinator's (AddPartitionsToTxn, AddOffsetsToTxn,
EndTxn, DescribeTransactions, ListTransactions, served by the transaction
coordinator in broker/txn_runtime.py) and the partition leader's
(WriteTxnMarkers, from a coordinator; DescribeProducers, what
`kafka-transactions.sh describe-producers`, `find-hanging` and `abort` read).

InitProducerId with a transactional id is in handlers/producer_ids.py, and
TxnOffsetCommit with the group APIs. Versions: all of Kafka 4.3's, transactions
v1 and v2 (EndTxn v5 bumps the epoch; AddPartitionsToTxn v4+ come from
partition leaders, adding a v2 producer's partitions or verifying a v1's).
"""

from __future__ import annotations

from broker.group_runtime import GroupRuntime
from broker.metadata.publisher import MetadataCache
from broker.producer_id_manager import ProducerIdManager
from broker.registry import handles
from broker.replica_manager import ReplicaManager
from broker.request_context import RequestContext
from broker.txn_markers import Marker, MarkerWriter
from broker.txn_runtime import TransactionRuntime
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


class TransactionsHandler:
    def __init__(
        self,
        txns: TransactionRuntime,
        groups: GroupRuntime,
        metadata: MetadataCache,
        markers: MarkerWriter,
        replicas: ReplicaManager,
        producer_ids: ProducerIdManager,
    ):
        self.replicas = replicas
        self.producer_ids = producer_ids
        self.txns = txns
        self.groups = groups
        self.metadata = metadata
        self.markers = markers

    @handles(ApiKey.ADD_PARTITIONS_TO_TXN, "0-5")
    async def add_partitions_to_txn(self, ctx: RequestContext, request):
        image = self.metadata.image
        if ctx.api_version <= 3:
            topic_lists = [request.v3_and_below_topics]
        else:
            topic_lists = [t.topics for t in request.transactions]
        unknown = set()
        for topics in topic_lists:
            for t in topics:
                topic = image.topic(t.name)
                for p in t.partitions:
                    if topic is None or p not in topic.partitions:
                        unknown.add((t.name, p))
        coordinator = self.txns.coordinator
        return await self.txns.call(
            ctx, lambda rctx, now: coordinator.add_partitions(rctx, request, now, unknown)
        )

    @handles(ApiKey.ADD_OFFSETS_TO_TXN, "0-4")
    async def add_offsets_to_txn(self, ctx: RequestContext, request):
        offsets_partition = self.groups.coordinator.partition_for(request.group_id)
        coordinator = self.txns.coordinator
        return await self.txns.call(
            ctx,
            lambda rctx, now: coordinator.add_offsets(rctx, request, now, offsets_partition),
        )

    @handles(ApiKey.END_TXN, "0-5")
    async def end_txn(self, ctx: RequestContext, request):
        coordinator = self.txns.coordinator
        fresh = -1
        if ctx.api_version >= 5 and coordinator.epoch_exhausted(request.transactional_id):
            # v2 ends this transaction by handing the id over to a new producer id.
            fresh = await self.producer_ids.next_id()
        return await self.txns.call(
            ctx, lambda rctx, now: coordinator.end_txn(rctx, request, now, fresh)
        )

    @handles(ApiKey.DESCRIBE_TRANSACTIONS, "0")
    async def describe_transactions(self, ctx: RequestContext, request):
        coordinator = self.txns.coordinator
        return await self.txns.call(ctx, lambda rctx, _now: coordinator.describe(rctx, request))

    @handles(ApiKey.LIST_TRANSACTIONS, "0-2")
    async def list_transactions(self, ctx: RequestContext, request):
        coordinator = self.txns.coordinator
        return await self.txns.call(
            ctx, lambda rctx, now: coordinator.list_transactions(rctx, request, now)
        )

    @handles(ApiKey.WRITE_TXN_MARKERS, "0-2")
    async def write_txn_markers(self, ctx: RequestContext, request):
        image = self.metadata.image
        answers = []
        for m in request.markers:
            marker = Marker(
                m.producer_id,
                m.producer_epoch,
                m.transaction_result,
                m.coordinator_epoch,
                tuple((t.name, p) for t in m.topics for p in t.partition_indexes),
                m.transaction_version,
            )
            results = await self.markers.write_local(marker, image)
            by_topic: dict[str, list] = {}
            for (topic, index), error in results.items():
                by_topic.setdefault(topic, []).append(
                    {"partition_index": index, "error_code": int(error)}
                )
            answers.append(
                {
                    "producer_id": m.producer_id,
                    "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()],
                }
            )
        return {"markers": answers}

    @handles(ApiKey.DESCRIBE_PRODUCERS, "0")
    async def describe_producers(self, ctx: RequestContext, request):
        image = self.metadata.image
        topics = []
        for t in request.topics:
            topic = image.topic(t.name)
            partitions = []
            for index in t.partition_indexes:
                entry = {"partition_index": index, "error_message": None, "active_producers": []}
                partition, error = (
                    (None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                    if topic is None or index not in topic.partitions
                    else self.replicas.leader_partition(topic, index)
                )
                if partition is None:
                    entry["error_code"] = error or ErrorCode.NOT_LEADER_OR_FOLLOWER
                else:
                    entry["error_code"] = ErrorCode.NONE
                    entry["active_producers"] = [
                        {
                            "producer_id": p.producer_id,
                            "producer_epoch": p.producer_epoch,
                            "last_sequence": p.last_seq,
                            "last_timestamp": p.last_timestamp,
                            "coordinator_epoch": p.coordinator_epoch,
                            "current_txn_start_offset": p.current_txn_first_offset,
                        }
                        for p in partition.log.active_producers()
                    ]
                partitions.append(entry)
            topics.append({"name": t.name, "partitions": partitions})
        return {"throttle_time_ms": 0, "topics": topics}
