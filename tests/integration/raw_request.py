"""Raw Kafka requests built and read by `wire`, for tests that need a field or a
version a client library does not expose (CreateTopics v7's topic id,
DeleteTopics v6 by id, duplicate names in one request, an idempotent
producer's exact sequence numbers)."""

from __future__ import annotations

import itertools
import socket
import struct
import time

from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.protocol import decode_response, encode_request
from wire.records import RecordInput, build_batch
from wire.schema import ZERO_UUID

_correlation = itertools.count(1)


def kafka_request(bootstrap: str, api_key: int, version: int, body: dict, timeout: float = 20):
    """Send `body` as request (api_key, version); the decoded response body."""
    host, port = bootstrap.rsplit(":", 1)
    correlation_id = next(_correlation)
    frame = encode_request(api_key, version, correlation_id, body)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        reader = sock.makefile("rb")
        (size,) = struct.unpack(">i", reader.read(4))
        got, response = decode_response(api_key, version, reader.read(size))
    assert got == correlation_id
    return response


class RawClient:
    """One connection, one request at a time, bodies built and read by `wire`."""

    PRODUCE_VERSION = 9

    def __init__(self, bootstrap: str, timeout: float = 20):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.reader = self.sock.makefile("rb")
        self.correlation_id = 0

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def request(self, api_key: int, version: int, body: dict):
        self.correlation_id += 1
        frame = encode_request(api_key, version, self.correlation_id, body)
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", self.reader.read(4))
        correlation_id, response = decode_response(api_key, version, self.reader.read(size))
        assert correlation_id == self.correlation_id
        return response

    def create_topic(self, topic: str) -> None:
        """Auto-create `topic` (one partition) with Metadata requests, as Kafka
        answers them: LEADER_NOT_AVAILABLE first, then the topic."""
        codes = []
        for _ in range(2):
            response = self.request(
                ApiKey.METADATA,
                12,
                {
                    "topics": [{"name": topic, "topic_id": ZERO_UUID}],
                    "allow_auto_topic_creation": True,
                    "include_topic_authorized_operations": False,
                },
            )
            codes.append(response.topics[0].error_code)
        assert codes == [ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NONE]

    def init_producer_id(self, producer_id: int = -1, epoch: int = -1) -> tuple[int, int]:
        response = self.request(
            ApiKey.INIT_PRODUCER_ID,
            4,
            {
                "transactional_id": None,
                "transaction_timeout_ms": 60000,
                "producer_id": producer_id,
                "producer_epoch": epoch,
            },
        )
        assert response.error_code == ErrorCode.NONE
        return response.producer_id, response.producer_epoch

    def produce(self, topic: str, batch: bytes, acks: int = -1) -> tuple[int, int]:
        """(error code, base offset) of one batch to partition 0."""
        response = self.request(
            ApiKey.PRODUCE,
            self.PRODUCE_VERSION,
            {
                "transactional_id": None,
                "acks": acks,
                "timeout_ms": 10000,
                "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
            },
        )
        [part] = response.responses[0].partition_responses
        return part.error_code, part.base_offset


def idempotent_batch(pid: int, epoch: int, seq: int, *values: bytes) -> bytes:
    """An idempotent producer's batch, stamped now as clients do (a producer
    whose last timestamp is older than producer.id.expiration.ms is forgotten,
    so batches without timestamps would expire on a restart, in Kafka too)."""
    now = int(time.time() * 1000)
    return build_batch(
        [RecordInput(b"k", v, timestamp=now) for v in values],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )
