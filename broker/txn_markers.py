"""Transaction markers: written here for the partitions this broker leads,
sent to their leaders for the others.

`write_local` is WriteTxnMarkers' work on a leader (Kafka's
handleWriteTxnMarkersRequest): append the COMMIT or ABORT control batch with
the coordinator's epoch, wait until the in-sync replicas have it (markers are
written with acks=all), and, for a `__consumer_offsets` partition, let the
group coordinator make the transaction's offsets visible or drop them.

`MarkerSender.send` is the transaction coordinator's side (Kafka's
TransactionMarkerChannelManager): it groups a transaction's partitions by
leader, writes its own, sends WriteTxnMarkers to the other brokers, and
retries what failed for a reason that passes (leadership moving, too few
replicas) until every partition has its marker, the topic is gone, or the
coordinator is fenced.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import trio

from broker.broker_client import BrokerConnectionError, BrokerConnections
from broker.metadata.image import MetadataImage
from broker.partition import PartitionError
from broker.replica_manager import ReplicaManager
from logstore import LogError
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

log = logging.getLogger("gregor.txn.markers")

OFFSETS_TOPIC = "__consumer_offsets"
WRITE_TXN_MARKERS_VERSION = 2
RETRY_BACKOFF_S = 0.1
# Errors after which the coordinator stops sending this transaction's markers:
# a newer coordinator or producer epoch owns it now.
_ABANDON = {ErrorCode.TRANSACTION_COORDINATOR_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH}
# A partition that cannot take a marker at all (Kafka skips it too).
_SKIP = {ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, ErrorCode.UNSUPPORTED_VERSION}

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Marker:
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: tuple[TopicPartition, ...]
    # 2 for a transaction of transactions v2: its marker must carry an epoch
    # newer than its batches' (the partition refuses a stale one).
    transaction_version: int = 0


class MarkerWriter:
    """Writes markers to partitions this broker leads."""

    def __init__(
        self,
        replicas: ReplicaManager,
        offsets_completed: Callable[[int, int, bool], None],
        timeout_ms: int,
    ):
        self.replicas = replicas
        # (partition index, producer id, commit): the group coordinator's hook.
        self.offsets_completed = offsets_completed
        self.timeout_ms = timeout_ms

    async def write_local(self, marker: Marker, image: MetadataImage) -> dict:
        """Append `marker` to each of its partitions; the error per partition."""
        results: dict[TopicPartition, ErrorCode] = {}
        waits = []
        for tp in marker.partitions:
            topic = image.topic(tp[0])
            if topic is None or tp[1] not in topic.partitions:
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            partition, error = self.replicas.leader_partition(topic, tp[1])
            if partition is None:
                results[tp] = error or ErrorCode.NOT_LEADER_OR_FOLLOWER
                continue
            try:
                info = partition.append_transaction_marker(
                    marker.producer_id,
                    marker.producer_epoch,
                    commit=marker.commit,
                    coordinator_epoch=marker.coordinator_epoch,
                    transaction_version=marker.transaction_version,
                )
            except PartitionError as e:
                results[tp] = ErrorCode(e.code)
                continue
            except LogError as e:
                results[tp] = ErrorCode(e.error_code)
                if e.error_code not in _ABANDON:
                    log.warning("marker for producer %d in %s: %s", marker.producer_id, tp, e)
                continue
            waits.append((partition, info.next_offset))
            results[tp] = ErrorCode.NONE
        if waits:
            outcome = await self.replicas.wait_for_replication(waits, self.timeout_ms)
            for partition, _ in waits:
                results[partition.tp] = ErrorCode(outcome[partition.tp])
        for (name, index), error in results.items():
            if name == OFFSETS_TOPIC and error == ErrorCode.NONE:
                self.offsets_completed(index, marker.producer_id, marker.commit)
        return results


class MarkerSender:
    """Sends a transaction's markers to its partitions' leaders until written."""

    def __init__(
        self,
        node_id: int,
        writer: MarkerWriter,
        image: Callable[[], MetadataImage],
        connections: BrokerConnections,
    ):
        self.node_id = node_id
        self.writer = writer
        self.image = image
        self.connections = connections

    async def send(self, marker: Marker, still_wanted: Callable[[], bool]) -> bool:
        """True once every partition has the marker (or is gone); False when
        abandoned (fenced, or `still_wanted()` turned false)."""
        remaining = set(marker.partitions)
        while remaining:
            if not still_wanted():
                return False
            image = self.image()
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in sorted(remaining):
                found = image.topic(tp[0])
                if found is None or tp[1] not in found.partitions:
                    remaining.discard(tp)  # deleted: nothing to end there
                    continue
                by_leader.setdefault(found.partitions[tp[1]].leader, []).append(tp)
            for leader, tps in by_leader.items():
                one = Marker(
                    marker.producer_id,
                    marker.producer_epoch,
                    marker.commit,
                    marker.coordinator_epoch,
                    tuple(tps),
                    marker.transaction_version,
                )
                results = await self._write(leader, one, image)
                for tp, error in results.items():
                    if error == ErrorCode.NONE or error in _SKIP:
                        remaining.discard(tp)
                    elif error in _ABANDON:
                        log.info(
                            "markers of producer %d abandoned: %s", marker.producer_id, error.name
                        )
                        return False
            if remaining:
                await trio.sleep(RETRY_BACKOFF_S)
        return True

    async def _write(self, leader: int, marker: Marker, image: MetadataImage) -> dict:
        if leader == self.node_id:
            return await self.writer.write_local(marker, image)
        unknown = {tp: ErrorCode.NOT_LEADER_OR_FOLLOWER for tp in marker.partitions}
        connection = self.connections.to(leader)
        if connection is None:
            return unknown
        by_topic: dict[str, list[int]] = {}
        for topic, index in marker.partitions:
            by_topic.setdefault(topic, []).append(index)
        body = {
            "markers": [
                {
                    "producer_id": marker.producer_id,
                    "producer_epoch": marker.producer_epoch,
                    "transaction_result": marker.commit,
                    "topics": [{"name": t, "partition_indexes": p} for t, p in by_topic.items()],
                    "coordinator_epoch": marker.coordinator_epoch,
                    "transaction_version": marker.transaction_version,
                }
            ]
        }
        try:
            response = await connection.request(
                ApiKey.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, body
            )
        except BrokerConnectionError as e:
            log.info("WriteTxnMarkers to broker %d failed: %s", leader, e)
            return unknown
        results = dict(unknown)
        for m in response.markers:
            for t in m.topics:
                for p in t.partitions:
                    results[(t.name, p.partition_index)] = ErrorCode(p.error_code)
        return results
