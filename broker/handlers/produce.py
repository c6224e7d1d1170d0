"""Produce (key 0), versions 0-11: append record batches to partition leaders.

v0-2 are advertised because librdkafka checks for them before enabling
compression (CLIENTS.md), as Kafka 4.x does; their magic 0/1 message sets
are refused per partition like any invalid record. acks=0 gets no answer;
acks=1 and acks=-1 are answered once the append is done and, for -1, once the
in-sync replicas have it (at once on a single node).
"""

from __future__ import annotations

import logging
import time

import trio

from broker.registry import handles
from broker.validation import RecordsError, validate_records
from logstore import InvalidProducerEpoch, LogError, OutOfOrderSequence
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

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
    return {
        "responses": [
            {
                "name": t.name,
                "partition_responses": [
                    _partition_response(p.index, code, message) for p in t.partition_data
                ],
            }
            for t in request.topic_data
        ],
        "throttle_time_ms": 0,
    }


@handles(ApiKey.PRODUCE, "0-11", error_response)
async def produce(ctx, request):
    broker = ctx.broker
    acks = request.acks
    if acks not in (-1, 0, 1):
        return error_response(request, ErrorCode.INVALID_REQUIRED_ACKS)
    now = time.time_ns() // 1_000_000
    responses = []
    waits = []  # (partition, offset the high watermark must reach)
    for topic_data in request.topic_data:
        topic = broker.cluster.topic(topic_data.name)
        results = []
        for pdata in topic_data.partition_data:
            result, wait = _append(ctx, topic, topic_data.name, pdata, now, acks)
            results.append(result)
            if wait is not None:
                waits.append(wait)
        responses.append({"name": topic_data.name, "partition_responses": results})
    if acks == 0:
        return None
    if acks == -1 and waits:
        await _await_replication(waits, request.timeout_ms)
    return {"responses": responses, "throttle_time_ms": 0}


def _append(ctx, topic, name, pdata, now, acks):
    broker = ctx.broker
    if topic is None:
        return _partition_response(pdata.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), None
    if topic.is_internal:
        return (
            _partition_response(
                pdata.index,
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"Cannot append to internal topic {name}",
            ),
            None,
        )
    partition = broker.replicas.get(name, pdata.index)
    if partition is None:
        code = (
            ErrorCode.NOT_LEADER_OR_FOLLOWER
            if pdata.index in topic.partitions
            else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        )
        return _partition_response(pdata.index, code), None
    if not partition.is_leader:
        return _partition_response(pdata.index, ErrorCode.NOT_LEADER_OR_FOLLOWER), None
    if ctx.api_version < 3:
        return (
            _partition_response(
                pdata.index,
                ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                "Produce v0-2 (message format v0/v1) is not supported; use v3 or later",
            ),
            None,
        )
    limits = broker.topic_limits(topic)
    if acks == -1 and len(partition.isr) < limits.min_insync_replicas:
        return (
            _partition_response(
                pdata.index,
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {partition.isr} is insufficient to satisfy the "
                f"min.isr requirement of {limits.min_insync_replicas}",
            ),
            None,
        )
    try:
        validate_records(pdata.records, limits, now)
    except RecordsError as e:
        return _partition_response(
            pdata.index, e.code, e.message, record_errors=e.batch_errors
        ), None
    try:
        info = partition.append_as_leader(pdata.records)
    except OutOfOrderSequence as e:
        return _partition_response(
            pdata.index, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, str(e)
        ), None
    except InvalidProducerEpoch as e:
        return _partition_response(pdata.index, ErrorCode.INVALID_PRODUCER_EPOCH, str(e)), None
    except LogError as e:
        log.warning("append to %r failed: %s", partition, e)
        return _partition_response(pdata.index, ErrorCode(e.error_code), str(e)), None
    return (
        _partition_response(
            pdata.index,
            ErrorCode.NONE,
            base_offset=info.first_offset,
            append_time=now if limits.log_append_time else -1,
            start=partition.log_start_offset,
        ),
        (partition, info.next_offset),
    )


async def _await_replication(waits, timeout_ms: int) -> None:
    """acks=all: wait until each partition's high watermark covers the append."""
    with trio.move_on_after(max(timeout_ms, 0) / 1000):
        for partition, offset in waits:
            while partition.high_watermark < offset:
                await partition.wait_for_change()
