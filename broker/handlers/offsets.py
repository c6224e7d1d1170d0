"""Offsets of partitions: ListOffsets (key 2) 1-11, DeleteRecords (21) 0-2,
OffsetForLeaderEpoch (23) 2-4.

ListOffsets timestamps: -2 earliest (log start), -1 latest (high watermark, or
last stable offset for read_committed), -3 the record with the largest
timestamp (v7+), -4 earliest local (v8+, the log start here: no tiered
storage), -5 latest tiered (v9+) and -6 earliest pending upload (v11+), both
-1 as Kafka answers them for a topic without tiered storage; otherwise the
first offset whose timestamp is at or after the one given, or -1 when none
is. A negative timestamp that is none of these, or one sent in a version
older than the one that brought it, is UNSUPPORTED_VERSION for that
partition (Kafka's ReplicaManager.isListOffsetsTimestampUnsupported).
"""

from __future__ import annotations

import trio

from broker.metadata.publisher import MetadataCache
from broker.registry import handles
from broker.replica_manager import ReplicaManager
from broker.request_context import RequestContext
from logstore import LogError, OffsetOutOfRange
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -2, -1, -3, -4
LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -5, -6
# The first ListOffsets version that may carry each sentinel timestamp.
_SENTINEL_SINCE = {
    EARLIEST: 1,
    LATEST: 1,
    MAX_TIMESTAMP: 7,
    EARLIEST_LOCAL: 8,
    LATEST_TIERED: 9,
    EARLIEST_PENDING_UPLOAD: 11,
}


def _list_offsets_error(request, code, message=None):
    return {
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": code} for p in t.partitions
                ],
            }
            for t in request.topics
        ]
    }


def _unsupported_timestamp(timestamp: int, version: int) -> bool:
    return timestamp < 0 and version < _SENTINEL_SINCE.get(timestamp, 1 << 15)


def _list_offsets(image, replicas, request, version: int):
    read_committed = request.isolation_level == 1
    topics = []
    for t in request.topics:
        topic = image.topic(t.name)
        results = []
        for p in t.partitions:
            if _unsupported_timestamp(p.timestamp, version):
                # Before the partition is looked up, as in Kafka.
                results.append(
                    {
                        "partition_index": p.partition_index,
                        "error_code": ErrorCode.UNSUPPORTED_VERSION,
                    }
                )
                continue
            partition, error = replicas.leader_partition(
                topic, p.partition_index, p.current_leader_epoch
            )
            entry = {"partition_index": p.partition_index, "error_code": error}
            if error == ErrorCode.NONE:
                try:
                    entry.update(_lookup(partition, p.timestamp, read_committed))
                except LogError as e:
                    entry["error_code"] = ErrorCode(e.error_code)
            results.append(entry)
        topics.append({"name": t.name, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}


def _lookup(partition, timestamp: int, read_committed: bool) -> dict:
    epoch = partition.leader_epoch
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return {"timestamp": -1, "offset": partition.log_start_offset, "leader_epoch": epoch}
    if timestamp == LATEST:
        return {
            "timestamp": -1,
            "offset": partition.fetch_limit(read_committed),
            "leader_epoch": epoch,
        }
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        # Nothing is tiered: Kafka's answer for a log without remote storage.
        return {"timestamp": -1, "offset": -1, "leader_epoch": -1}
    if timestamp == MAX_TIMESTAMP:
        found = partition.log.max_timestamp_offset()
    else:
        found = partition.log.offset_for_timestamp(timestamp)
    limit = partition.fetch_limit(read_committed)
    if found is None or found.offset >= limit:
        return {"timestamp": -1, "offset": -1, "leader_epoch": -1}
    return {
        "timestamp": found.timestamp,
        "offset": found.offset,
        "leader_epoch": found.leader_epoch if found.leader_epoch is not None else -1,
    }


def _delete_records_error(request, code, message=None):
    return {
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p.partition_index, "low_watermark": -1, "error_code": code}
                    for p in t.partitions
                ],
            }
            for t in request.topics
        ]
    }


async def _delete_records(image, replicas, request):
    topics = []
    for t in request.topics:
        topic = image.topic(t.name)
        results = []
        for p in t.partitions:
            partition, error = replicas.leader_partition(topic, p.partition_index)
            entry = {"partition_index": p.partition_index, "low_watermark": -1, "error_code": error}
            if error == ErrorCode.NONE:
                # -1 means "up to the high watermark".
                offset = partition.high_watermark if p.offset == -1 else p.offset
                try:
                    # Whole segments below the new start are deleted: off the event loop.
                    entry["low_watermark"] = await trio.to_thread.run_sync(
                        partition.delete_records_before, offset
                    )
                    partition.notify()
                except OffsetOutOfRange:
                    entry["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
                except LogError as e:
                    entry["error_code"] = ErrorCode(e.error_code)
            results.append(entry)
        topics.append({"name": t.name, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}


def _epoch_error(request, code, message=None):
    return {
        "topics": [
            {
                "topic": t.topic,
                "partitions": [
                    {"partition": p.partition, "error_code": code} for p in t.partitions
                ],
            }
            for t in request.topics
        ]
    }


def _offset_for_leader_epoch(image, replicas, request):
    topics = []
    for t in request.topics:
        topic = image.topic(t.topic)
        results = []
        for p in t.partitions:
            partition, error = replicas.leader_partition(topic, p.partition, p.current_leader_epoch)
            entry = {"partition": p.partition, "error_code": error}
            if error == ErrorCode.NONE:
                try:
                    epoch, end_offset = partition.log.end_offset_for_epoch(p.leader_epoch)
                    entry.update(leader_epoch=epoch, end_offset=end_offset)
                except LogError as e:
                    entry["error_code"] = ErrorCode(e.error_code)
            results.append(entry)
        topics.append({"topic": t.topic, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}


class OffsetsHandler:
    def __init__(self, metadata: MetadataCache, replicas: ReplicaManager):
        self.metadata = metadata
        self.replicas = replicas

    @handles(ApiKey.LIST_OFFSETS, "1-11", _list_offsets_error)
    async def list_offsets(self, ctx: RequestContext, request):
        return _list_offsets(self.metadata.image, self.replicas, request, ctx.api_version)

    @handles(ApiKey.DELETE_RECORDS, "0-2", _delete_records_error)
    async def delete_records(self, ctx: RequestContext, request):
        return await _delete_records(self.metadata.image, self.replicas, request)

    @handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, "2-4", _epoch_error)
    async def offset_for_leader_epoch(self, ctx: RequestContext, request):
        return _offset_for_leader_epoch(self.metadata.image, self.replicas, request)
