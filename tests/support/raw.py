"""A raw Kafka client for tests: requests built and read by Gregor's own `wire`.

For what a client library does not let a test send: a field or a version it
does not expose (CreateTopics v7's topic id, DeleteTopics by id, duplicate
names in one request), an idempotent producer's exact sequence numbers, and
what a broken or hostile client sends (garbage bytes, bad frame sizes,
corrupt record batches, requests abandoned half-way).

    with RawClient(broker.port) as client:          # or RawClient("host:port")
        response = client.call(ApiKey.METADATA, 12, {"topics": None})
    kafka_request(broker.bootstrap, ApiKey.METADATA, 12, {"topics": None})  # one-shot

RawClient is one connection (send, receive, call, wait_closed); the functions
below build and send the requests tests make again and again.
"""

from __future__ import annotations

import socket
import struct
import time

import pytest

from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.framing import FrameSplitter, encode_frame
from wire.protocol import decode_response, encode_request
from wire.records import RecordInput, build_batch, iter_batches, iter_records, write_crc

PRODUCE_VERSION = 9


class Closed(Exception):
    """The broker closed the connection."""


class RawClient:
    """A blocking socket speaking Kafka frames; `address` is a port on 127.0.0.1
    or "host:port"."""

    def __init__(self, address: int | str, timeout: float = 20):
        if isinstance(address, int):
            host, port = "127.0.0.1", address
        else:
            host, _, port_text = address.rpartition(":")
            port = int(port_text)
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.splitter = FrameSplitter(2**31 - 1)
        self.next_correlation_id = 1

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, api_key: int, version: int, body, correlation_id: int | None = None) -> int:
        """Send one request; its correlation id (the next one unless given)."""
        if correlation_id is None:
            correlation_id = self.next_correlation_id
            self.next_correlation_id += 1
        self.send_raw(encode_frame(encode_request(api_key, version, correlation_id, body)))
        return correlation_id

    def receive_frame(self) -> bytes:
        while True:
            frame = self.splitter.next_frame()
            if frame is not None:
                return bytes(frame)
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:
                raise Closed
            self.splitter.feed(data)

    def receive(self, api_key: int, version: int):
        """(correlation id, body) of the next response."""
        return decode_response(api_key, version, self.receive_frame())

    def call(self, api_key: int, version: int, body):
        """Send a request and return its response body."""
        sent = self.send(api_key, version, body)
        correlation_id, response = self.receive(api_key, version)
        assert correlation_id == sent
        return response

    def wait_closed(self, timeout: float = 5) -> bytes:
        """Read until the broker closes the connection; what it sent before.
        Fails if it is still open after `timeout` seconds."""
        received = bytearray()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"the broker did not close the connection within {timeout}s")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                return bytes(received)
            except TimeoutError:
                continue
            if not data:
                return bytes(received)
            received += data


def kafka_request(address: int | str, api_key: int, version: int, body, timeout: float = 20):
    """One request on a connection of its own; the decoded response body."""
    with RawClient(address, timeout) as client:
        return client.call(api_key, version, body)


def raw_header(api_key: int, version: int, correlation_id: int, client_id: bytes = b"raw") -> bytes:
    """A request header v1 for keys and versions `encode_request` refuses to encode."""
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


def software(name: str = "gregor-tests", version: str = "1.0") -> dict:
    """ApiVersions v3+'s body: the client's software name and version."""
    return {"client_software_name": name, "client_software_version": version}


# --- records ------------------------------------------------------------------------------


def batch(values, **kwargs) -> bytearray:
    """A writable v2 batch of (key None, value) records stamped now."""
    now = int(time.time() * 1000)
    return bytearray(build_batch([RecordInput(None, v, timestamp=now) for v in values], **kwargs))


def idempotent_batch(pid: int, epoch: int, seq: int, *values: bytes) -> bytes:
    """An idempotent producer's batch of (b"k", value) records, stamped now as
    clients do (a producer whose last timestamp is older than
    producer.id.expiration.ms is forgotten, so batches without timestamps would
    expire on a restart, in Kafka too)."""
    now = int(time.time() * 1000)
    return build_batch(
        [RecordInput(b"k", v, timestamp=now) for v in values],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )


def patch(buf: bytearray, fmt: str, pos: int, value: int, *, fix_crc: bool = True) -> bytearray:
    """Overwrite a field of a batch in place (and its CRC unless told not to)."""
    struct.pack_into(fmt, buf, pos, value)
    if fix_crc:
        write_crc(buf)
    return buf


# --- requests -----------------------------------------------------------------------------


def produce_body(topic: str, records, partition: int = 0, acks: int = 1) -> dict:
    return {
        "acks": acks,
        "timeout_ms": 5000,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": records}]}
        ],
    }


def produce(
    client: RawClient,
    topic: str,
    records,
    partition: int = 0,
    *,
    acks: int = 1,
    version: int = PRODUCE_VERSION,
):
    """The partition response of a one-partition Produce."""
    response = client.call(ApiKey.PRODUCE, version, produce_body(topic, records, partition, acks))
    (topic_response,) = response.responses
    (partition_response,) = topic_response.partition_responses
    return partition_response


def error_and_offset(partition_response) -> tuple[int, int]:
    """(error code, base offset): what a produce tells the producer of its batch."""
    return partition_response.error_code, partition_response.base_offset


def init_producer_id(client: RawClient, producer_id: int = -1, epoch: int = -1) -> tuple[int, int]:
    """(producer id, epoch) of an idempotent producer (given the current ones: KIP-360's bump)."""
    response = client.call(
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


def init_transactional_producer(
    client: RawClient, txn_id: str, version: int = 3, timeout: float = 30.0
) -> tuple[int, int]:
    """(producer id, epoch) for `txn_id` from its transaction coordinator, this
    broker's own: asked again while the coordinator's partition loads, which
    starts at the first FindCoordinator."""
    deadline = time.monotonic() + timeout
    while True:
        client.call(ApiKey.FIND_COORDINATOR, 1, {"key": txn_id, "key_type": 1})
        init = client.call(
            ApiKey.INIT_PRODUCER_ID,
            version,
            {
                "transactional_id": txn_id,
                "transaction_timeout_ms": 60000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        if init.error_code == ErrorCode.NONE:
            return init.producer_id, init.producer_epoch
        assert init.error_code in (
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ), init
        assert time.monotonic() < deadline, "the transaction coordinator never loaded"
        time.sleep(0.1)


def latest_offset(client: RawClient, topic: str, partition: int = 0) -> int:
    response = client.call(
        ApiKey.LIST_OFFSETS,
        7,
        {
            "replica_id": -1,
            "topics": [
                {"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}
            ],
        },
    )
    (p,) = response.topics[0].partitions
    assert p.error_code == ErrorCode.NONE, p
    return p.offset


def delete_records(client: RawClient, topic: str, partition: int, offset: int) -> int:
    """DeleteRecords v2 of one partition below `offset`: its error code."""
    response = client.call(
        ApiKey.DELETE_RECORDS,
        2,
        {
            "topics": [
                {"name": topic, "partitions": [{"partition_index": partition, "offset": offset}]}
            ],
            "timeout_ms": 5000,
        },
    )
    return response.topics[0].partitions[0].error_code


def fetch_body(topic: str, partition: int = 0, offset: int = 0) -> dict:
    """A Fetch v12 request for one partition from `offset`, not waiting."""
    return {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                ],
            }
        ],
    }


def fetch_values(client: RawClient, topic: str, partition: int = 0) -> list[bytes | None]:
    """Every record value of the partition from offset 0 up to the high watermark."""
    values: list[bytes | None] = []
    offset = 0
    while True:
        response = client.call(ApiKey.FETCH, 12, fetch_body(topic, partition, offset))
        (p,) = response.responses[0].partitions
        assert p.error_code == ErrorCode.NONE, p
        records = bytes(p.records or b"")
        before = offset
        for pos, header in iter_batches(records, partial_tail=True):
            for record in iter_records(records, pos):
                record_offset = header.base_offset + record.offset_delta
                if record_offset >= offset:
                    values.append(record.value)
                    offset = record_offset + 1
        if offset >= p.high_watermark or offset == before:
            assert offset == p.high_watermark, f"stuck at {offset} below {p.high_watermark}"
            return values


def assert_serves_requests(port: int) -> None:
    """ApiVersions and Metadata answer on a new connection."""
    with RawClient(port) as client:
        response = client.call(ApiKey.API_VERSIONS, 3, software())
        assert response.error_code == ErrorCode.NONE
        served = {k.api_key for k in response.api_keys}
        assert {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA} <= served
        metadata = client.call(ApiKey.METADATA, 12, {"topics": None})
        assert [b.port for b in metadata.brokers] == [port]
