"""Produce (key 0), versions 0-13: append record batches to partition leaders.

v0-2 are advertised because librdkafka checks for them before enabling
compression (CLIENTS.md), as Kafka 4.x does; their magic 0/1 message sets
are refused per partition like any invalid record. acks=0 gets no answer
(a failure closes the connection, as in Kafka); acks=1 and acks=-1 are
answered once the append is done and, for -1, once the in-sync replicas have
it (at once on a single node).

Each partition goes through Kafka's checks in Kafka's order, because the
first that fails decides the answer (logstore/log_validator.py): unknown topic or
partition, one whole batch, acks, internal topic, leadership, min.insync,
then the batch and its records. Like Kafka, most errors carry no message;
those found while appending report the partition's log start offset. From
v13 topics are named by their ids (KIP-516, Kafka 4.1), and an id the broker
does not know is UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from broker.connection import CloseConnection
from broker.metadata.publisher import MetadataCache
from broker.partition import Partition, PartitionError
from broker.registry import handles
from broker.replica_manager import ReplicaManager
from broker.request_context import RequestContext
from broker.topic_configs import EffectiveTopicConfigs
from broker.txn_verifier import Operation, TxnVerifier
from logstore import InvalidProducerEpoch, LogError, OutOfOrderSequence
from logstore.log_validator import (
    RecordsError,
    check_single_batch,
    first_batch_is_transactional,
    validate_common_batch,
    validate_records,
)
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.records import read_batch_header

log = logging.getLogger("gregor.produce")


def _partition_response(
    index, code, message=None, base_offset=-1, append_time=-1, start=-1, record_errors=()
):
    return {
        "index": index,
        "error_code": code,
        "base_offset": base_offset,
        "log_append_time_ms": append_time,
        "log_start_offset": start,
        "record_errors": [
            {"batch_index": i, "batch_index_error_message": m} for i, m in record_errors
        ],
        "error_message": message,
    }


def error_response(request, code, message=None):
    """Every partition of the request fails with `code` (and `message`).
    None with acks=0: Kafka then closes the connection instead."""
    if request.acks == 0:
        return None
    return {
        "responses": [
            {
                "name": t.name,
                "topic_id": t.topic_id,
                "partition_responses": [
                    _partition_response(p.index, code, message) for p in t.partition_data
                ],
            }
            for t in request.topic_data
        ],
        "throttle_time_ms": 0,
    }


class ProduceHandler:
    def __init__(
        self,
        metadata: MetadataCache,
        replicas: ReplicaManager,
        topic_configs: EffectiveTopicConfigs,
        verifier: TxnVerifier,
    ):
        self.metadata = metadata
        self.replicas = replicas
        self.topic_configs = topic_configs
        self.verifier = verifier

    @handles(ApiKey.PRODUCE, "0-13", error_response)
    async def produce(self, ctx: RequestContext, request):
        acks = request.acks
        image = self.metadata.image
        # Each topic of the request with its name and image: from v13 the
        # request names topics by id (an unknown id has neither).
        if ctx.api_version >= 13:
            topics = []
            for t in request.topic_data:
                topic = image.topic_by_id(t.topic_id)
                topics.append((t, topic.name if topic is not None else None, topic))
        else:
            topics = [(t, t.name, image.topic(t.name)) for t in request.topic_data]
        try:
            # Kafka looks at the first batch of every partition before anything
            # else: one it cannot read fails the whole request.
            transactional = [
                (name, p)
                for t, name, _ in topics
                for p in t.partition_data
                if first_batch_is_transactional(p.records)
            ]
        except RecordsError as e:
            return _whole_request_error(request, e.code, e.message)
        if transactional and request.transactional_id is None:
            return _whole_request_error(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        # A topic id nobody knows is answered UNKNOWN_TOPIC_ID, not verified.
        transactional = [(name, p) for name, p in transactional if name is not None]
        guards = (
            await self._verify(
                request.transactional_id, transactional, Operation.for_produce(ctx.api_version)
            )
            if transactional
            else {}
        )
        now = time.time_ns() // 1_000_000
        responses = []
        waits = []  # (partition, offset the high watermark must reach, its response)
        for topic_data, name, topic in topics:
            results = []
            for pdata in topic_data.partition_data:
                if name is None:
                    results.append(_partition_response(pdata.index, ErrorCode.UNKNOWN_TOPIC_ID))
                    continue
                guard = guards.get((name, pdata.index)) if guards else None
                result, wait = self._append(ctx, topic, name, pdata, now, acks, guard)
                results.append(result)
                if wait is not None:
                    # Checked here first: two coroutines per partition to find
                    # nothing due (flush.messages is rarely set) cost 2% of
                    # a Produce across 1,000 partitions.
                    if wait[0].log.message_count_flush_due():
                        await _flush_if_due(wait[0], result)
                    if result["error_code"] == ErrorCode.NONE:
                        waits.append((*wait, result))
            responses.append(
                {
                    "name": topic_data.name,
                    "topic_id": topic_data.topic_id,
                    "partition_responses": results,
                }
            )
        if acks == 0:
            if any(r["error_code"] for t in responses for r in t["partition_responses"]):
                # The only way Kafka can tell an acks=0 producer that it failed.
                raise CloseConnection("a Produce request with acks=0 failed")
            return None
        if acks == -1 and waits:
            outcome = await self.replicas.wait_for_replication(
                [(p, offset) for p, offset, _ in waits], request.timeout_ms
            )
            for partition, _, result in waits:
                error = outcome[partition.tp]
                if error != ErrorCode.NONE:
                    result.update(error_code=error, base_offset=-1)
        return {"responses": responses, "throttle_time_ms": 0}

    async def _verify(
        self, transactional_id: str, transactional, operation: Operation
    ) -> dict[tuple[str, int], _Guard]:
        """Ask the transaction coordinator about the partitions (of the
        request's transactional ones: (topic, partition data)) where the batch
        would open the producer's transaction, or (v12, transactions v2) have
        it add them (txn_verifier.py); a guard per partition asked about."""
        asked: dict[tuple[str, int], tuple[Partition, object]] = {}
        producer = None
        for name, p in transactional:
            partition = self.replicas.get(name, p.index)
            if partition is None or not partition.is_leader:
                continue  # answered by the usual checks
            header = read_batch_header(p.records, 0)
            producer = (header.producer_id, header.producer_epoch)
            entry = partition.log.producer_entry(header.producer_id)
            if _opens_transaction(entry, header.producer_epoch):
                asked[(name, p.index)] = (partition, entry)
        if not asked or producer is None:
            return {}
        outcome = await self.verifier.add_or_verify(
            transactional_id, *producer, list(asked), operation
        )
        return {
            tp: _Guard(
                producer[0],
                producer[1],
                entry,
                _verify_error(outcome[tp], operation),
                operation is Operation.ADD,
            )
            for tp, (_, entry) in asked.items()
        }

    def _append(self, ctx, topic, name, pdata, now, acks, guard=None):
        """(partition response, wait) for one partition, its checks in Kafka's order."""
        index = pdata.index
        if topic is None or index not in topic.partitions:
            return _partition_response(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), None
        records = pdata.records
        limits = self.topic_configs.limits(topic)
        # The common batch is checked whole at once; any other is checked in
        # Kafka's stages, each where Kafka answers its errors.
        validated = None
        if ctx.api_version >= 3:
            validated = validate_common_batch(records, limits, now, ctx.api_version)
            if validated is None:
                try:
                    size = check_single_batch(records, ctx.api_version)
                except RecordsError as e:
                    return _partition_response(index, e.code), None
                records = records[:size]
        if acks not in (-1, 0, 1):
            return _partition_response(index, ErrorCode.INVALID_REQUIRED_ACKS), None
        if topic.is_internal:
            return _partition_response(index, ErrorCode.INVALID_TOPIC_EXCEPTION), None
        partition, error = self.replicas.leader_partition(topic, index)
        if error == ErrorCode.KAFKA_STORAGE_ERROR:
            return _partition_response(index, error), None
        if partition is None:
            return _partition_response(index, ErrorCode.NOT_LEADER_OR_FOLLOWER), None
        if ctx.api_version < 3:
            return (
                _partition_response(
                    index,
                    ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                    "Produce v0-2 (message format v0/v1) is not supported; use v3 or later",
                ),
                None,
            )
        if acks == -1 and partition.is_under_min_isr:
            return _failed(partition, index, ErrorCode.NOT_ENOUGH_REPLICAS), None
        if validated is not None:
            records = validated
        else:
            try:
                records = validate_records(records, limits, f"{name}-{index}", now)
            except RecordsError as e:
                if not e.reports_log_start_offset:
                    return _partition_response(
                        index, e.code, e.message, record_errors=e.record_errors
                    ), None
                return _failed(partition, index, e.code, e.message, e.record_errors), None
        if guard is not None:
            refused = guard.refusal(partition)
            if refused is not None:
                return _failed(partition, index, refused), None
        try:
            info = partition.append_as_leader(records, acks)
        except PartitionError as e:
            return _failed(partition, index, e.code), None
        except OutOfOrderSequence:
            return _failed(partition, index, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER), None
        except InvalidProducerEpoch:
            return _failed(partition, index, ErrorCode.INVALID_PRODUCER_EPOCH), None
        except LogError as e:
            log.warning("append to %r failed: %s", partition, e)
            return _partition_response(index, ErrorCode(e.error_code), str(e)), None
        return (
            _partition_response(
                index,
                ErrorCode.NONE,
                base_offset=info.first_offset,
                append_time=now if limits.log_append_time else -1,
                start=partition.log_start_offset,
            ),
            (partition, info.next_offset),
        )


# What a producer is told when the coordinator could not answer: retriable
# errors become NOT_ENOUGH_REPLICAS, which every producer retries (as Kafka does).
_RETRIABLE_VERIFY_ERRORS = {
    ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.NOT_COORDINATOR,
}


def _verify_error(error: ErrorCode, operation: Operation) -> ErrorCode:
    if error in _RETRIABLE_VERIFY_ERRORS:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    if error == ErrorCode.CONCURRENT_TRANSACTIONS and operation is not Operation.ADD:
        # Transactions v2 producers expect it (common while the previous
        # transaction completes), older ones may not retry it.
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return error


def _opens_transaction(entry, epoch: int) -> bool:
    """Whether a transactional batch at `epoch` would open its producer's
    transaction in this partition (then the coordinator must agree first)."""
    return entry is None or entry.current_txn_first_offset < 0 or entry.producer_epoch != epoch


@dataclass(frozen=True, slots=True)
class _Guard:
    """The coordinator's answer for one partition, and the producer's state it
    was given for: if a marker (or anything else) changed that state while
    the coordinator was asked, the answer no longer holds (Kafka's
    verification guard)."""

    producer_id: int
    epoch: int
    entry: object
    error: ErrorCode
    # Transactions v2: the previous transaction's marker carries the epoch
    # this batch's transaction runs at.
    epoch_bumped_by_markers: bool = False

    def refusal(self, partition: Partition) -> ErrorCode | None:
        if self.error != ErrorCode.NONE:
            return self.error
        entry = partition.log.producer_entry(self.producer_id)
        if entry is not self.entry and _opens_transaction(entry, self.epoch):
            if (
                self.epoch_bumped_by_markers
                and entry is not None
                and entry.producer_epoch == self.epoch
            ):
                # The marker ending the previous transaction came meanwhile;
                # it does not end this one (Kafka keeps the guard then too).
                return None
            return ErrorCode.INVALID_TXN_STATE
        return None


def _whole_request_error(request, code, message=None):
    response = error_response(request, code, message)
    if response is None:
        raise CloseConnection(f"a Produce request with acks=0 failed: {ErrorCode(code).name}")
    return response


async def _flush_if_due(partition, result) -> None:
    """flush.messages: Kafka fsyncs inside the append that reaches the count, so
    a failed fsync is that partition's KAFKA_STORAGE_ERROR (the log goes offline)."""
    try:
        await partition.flush_if_message_count_due()
    except LogError as e:
        log.warning("flushing %r after an append failed: %s", partition, e)
        result.update(error_code=ErrorCode(e.error_code), error_message=str(e), base_offset=-1)


def _failed(partition, index, code, message=None, record_errors=()):
    """An error Kafka finds while appending: it reports the log start offset."""
    return _partition_response(
        index, code, message, start=partition.log_start_offset, record_errors=record_errors
    )
