"""One `Connection` driven over an in-memory stream, with a real broker's handlers.

The broker is built and started in this process (its listener is bound but
unused); the test speaks Kafka's framing to the connection through
`trio.testing.memory_stream_pair`, so pipelining, ordering and closing are
seen byte for byte.
"""

from __future__ import annotations

import select
import socket
import struct

import trio
import trio.testing

from broker.config import BrokerConfig
from broker.connection import Connection
from broker.registry import BoundHandler
from broker.server import Broker
from tests.support.raw import batch, fetch_body, produce_body
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.protocol import decode_response, encode_request
from wire.records import iter_batches, iter_records

API_VERSIONS_V3 = {"client_software_name": "tests", "client_software_version": "1.0"}


def frame(api_key: int, version: int, correlation_id: int, body: dict) -> bytes:
    data = encode_request(api_key, version, correlation_id, body)
    return struct.pack(">i", len(data)) + data


class Client:
    def __init__(self, stream):
        self.stream = stream
        self.buffer = bytearray()

    async def receive_frame(self) -> bytes | None:
        """The next response frame; None once the broker has closed the stream."""
        while True:
            if len(self.buffer) >= 4:
                (size,) = struct.unpack(">i", self.buffer[:4])
                if len(self.buffer) >= 4 + size:
                    data = bytes(self.buffer[4 : 4 + size])
                    del self.buffer[: 4 + size]
                    return data
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                return None
            self.buffer += chunk

    async def call(self, api_key: int, version: int, body: dict):
        """Send one request and decode its answer (nothing else in flight)."""
        await self.stream.send_all(frame(api_key, version, 1, body))
        return decode_response(api_key, version, await self.receive_frame())[1]


async def _socket_client(broker) -> Client:
    host, port = broker.bound[0][1:]
    return Client(await trio.open_tcp_stream(host, port))


async def _topic_with_1mb(client: Client, name: str, partitions: int) -> list[bytes]:
    """Create the topic and produce 1 MB into its partition 0: five batches
    of these 200 values, which the function returns."""
    topic = {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": 1,
        "assignments": [],
        "configs": [],
    }
    create = {"topics": [topic], "timeout_ms": 30000, "validate_only": False}
    created = await client.call(ApiKey.CREATE_TOPICS, 7, create)
    assert created.topics[0].error_code == ErrorCode.NONE
    values = [bytes([i]) * 1000 for i in range(200)]
    for _ in range(5):
        produced = await client.call(ApiKey.PRODUCE, 9, produce_body(name, batch(values)))
        assert produced.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    return values


def run(tmp_path, scenario, **overrides):
    trio.run(with_connection, tmp_path, scenario, overrides)


async def with_connection(tmp_path, scenario, overrides):
    config = BrokerConfig(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(tmp_path / "data"),
            **overrides,
        }
    )
    async with trio.open_nursery() as nursery:
        broker = await nursery.start(Broker(config).serve)
        client_end, broker_end = trio.testing.memory_stream_pair()
        conn = Connection(broker.dispatcher, broker.limits, broker_end, "PLAINTEXT")
        nursery.start_soon(conn.run)
        with trio.fail_after(30):
            await scenario(broker, Client(client_end))
        await client_end.aclose()
        await broker.stop()


def test_pipelined_requests_are_answered_in_order(tmp_path):
    async def scenario(broker, client):
        requests = [
            frame(ApiKey.API_VERSIONS, 3, 1, API_VERSIONS_V3),
            frame(ApiKey.METADATA, 12, 2, {"topics": [], "allow_auto_topic_creation": False}),
            frame(ApiKey.API_VERSIONS, 0, 3, {}),
        ]
        await client.stream.send_all(b"".join(requests))
        ids = []
        for api_key, version in ((18, 3), (3, 12), (18, 0)):
            correlation_id, _ = decode_response(api_key, version, await client.receive_frame())
            ids.append(correlation_id)
        assert ids == [1, 2, 3]

    run(tmp_path, scenario)


def test_a_frame_over_the_request_limit_closes_after_what_came_before(tmp_path):
    async def scenario(broker, client):
        oversized = struct.pack(">i", 10_000) + b"\x00" * 16
        await client.stream.send_all(frame(ApiKey.API_VERSIONS, 0, 7, {}) + oversized)
        correlation_id, _ = decode_response(18, 0, await client.receive_frame())
        assert correlation_id == 7
        assert await client.receive_frame() is None

    run(tmp_path, scenario, **{"socket.request.max.bytes": 1000})


def test_a_failing_handler_answers_unknown_server_error_and_the_connection_goes_on(tmp_path):
    async def scenario(broker, client):
        # The fault hook: the dispatcher's entry for ListOffsets, replaced.
        bound = broker.dispatcher.handlers[ApiKey.LIST_OFFSETS]

        async def fail(ctx, request):
            raise RuntimeError("injected")

        broker.dispatcher.handlers[ApiKey.LIST_OFFSETS] = BoundHandler(bound.spec, fail)
        body = {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        }
        await client.stream.send_all(frame(ApiKey.LIST_OFFSETS, 7, 1, body))
        _, response = decode_response(2, 7, await client.receive_frame())
        assert response.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        await client.stream.send_all(frame(ApiKey.API_VERSIONS, 0, 2, {}))
        correlation_id, response = decode_response(18, 0, await client.receive_frame())
        assert (correlation_id, response.error_code) == (2, ErrorCode.NONE)

    run(tmp_path, scenario)


def test_an_unsupported_api_versions_version_gets_a_v0_answer(tmp_path):
    async def scenario(broker, client):
        header = struct.pack(">hhih", ApiKey.API_VERSIONS, 99, 5, 5) + b"tests"
        await client.stream.send_all(struct.pack(">i", len(header)) + header)
        correlation_id, response = decode_response(18, 0, await client.receive_frame())
        assert (correlation_id, response.error_code) == (5, ErrorCode.UNSUPPORTED_VERSION)
        assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [
            (18, 0, 4)
        ]
        # Any other API at a version it does not serve closes the connection.
        header = struct.pack(">hhih", ApiKey.METADATA, 99, 6, 5) + b"tests"
        await client.stream.send_all(struct.pack(">i", len(header)) + header)
        assert await client.receive_frame() is None

    run(tmp_path, scenario)


def test_an_idle_connection_is_closed(tmp_path):
    async def scenario(broker, client):
        await client.stream.send_all(frame(ApiKey.API_VERSIONS, 0, 1, {}))
        assert await client.receive_frame() is not None
        assert await client.receive_frame() is None  # connections.max.idle.ms passed

    run(tmp_path, scenario, **{"connections.max.idle.ms": 300})


def test_answers_larger_than_the_socket_takes_arrive_whole_and_in_order(tmp_path):
    """Over a real socket: answers go out at once while the socket takes them,
    and queue behind each other once it is full (the client reads nothing
    until it has sent every request). Metadata answers are buffers; Fetch
    answers carry the log's bytes as file ranges (sendfile)."""

    async def scenario(broker, _):
        client = await _socket_client(broker)
        values = await _topic_with_1mb(client, "wide", 200)
        metadata = {
            "topics": [{"name": "wide"}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        }
        # About 6 KiB a Metadata answer and 1 MiB a Fetch answer: far more
        # than the socket buffers hold, whether the first answer that does
        # not fit is of buffers (first round) or a file range (second).
        for fetches in (range(0), range(5, 100, 10)):
            requests = [
                frame(ApiKey.FETCH, 12, 100 + i, fetch_body("wide"))
                if i in fetches
                else frame(ApiKey.METADATA, 12, 100 + i, metadata)
                for i in range(100)
            ]
            await client.stream.send_all(b"".join(requests))
            fetched = []
            for i in range(100):
                if i in fetches:
                    correlation_id, response = decode_response(
                        ApiKey.FETCH, 12, await client.receive_frame()
                    )
                    (partition,) = response.responses[0].partitions
                    assert partition.error_code == ErrorCode.NONE
                    fetched.append(bytes(partition.records))
                else:
                    correlation_id, response = decode_response(
                        ApiKey.METADATA, 12, await client.receive_frame()
                    )
                    assert len(response.topics[0].partitions) == 200
                assert correlation_id == 100 + i
            for records in fetched:
                assert len(records) > 1_000_000
                assert [
                    v for pos, _ in iter_batches(records) for v in batch_values(records, pos)
                ] == (values * 5)
        await client.stream.send_all(frame(ApiKey.API_VERSIONS, 3, 1000, API_VERSIONS_V3))
        correlation_id, response = decode_response(18, 3, await client.receive_frame())
        assert (correlation_id, response.error_code) == (1000, ErrorCode.NONE)
        await client.stream.aclose()

    run(tmp_path, scenario)


def test_requests_larger_than_a_read_arrive_whole_between_pipelined_ones(tmp_path):
    """Over a real socket: a Produce of about 900 KB (more than one read of
    the socket takes, so it is read straight into its own frame) between
    small requests sent in the same write; every answer comes in order and
    the records read back are the ones sent."""

    async def scenario(broker, _):
        client = await _socket_client(broker)
        await _topic_with_1mb(client, "large", 1)
        big = [bytes([i % 256]) * 3000 for i in range(300)]
        small = [b"after the large one"]
        await client.stream.send_all(
            frame(ApiKey.API_VERSIONS, 3, 1, API_VERSIONS_V3)
            + frame(ApiKey.PRODUCE, 9, 2, produce_body("large", batch(big)))
            + frame(ApiKey.PRODUCE, 9, 3, produce_body("large", batch(small)))
            + frame(ApiKey.FETCH, 12, 4, fetch_body("large", offset=1000))
        )
        answers = []
        for api_key, version in ((18, 3), (0, 9), (0, 9), (1, 12)):
            answers.append(decode_response(api_key, version, await client.receive_frame()))
        assert [correlation_id for correlation_id, _ in answers] == [1, 2, 3, 4]
        for _, produced in answers[1:3]:
            assert produced.responses[0].partition_responses[0].error_code == ErrorCode.NONE
        assert [a.responses[0].partition_responses[0].base_offset for _, a in answers[1:3]] == [
            1000,
            1300,
        ]
        records = bytes(answers[3][1].responses[0].partitions[0].records)
        assert [v for pos, _ in iter_batches(records) for v in batch_values(records, pos)] == (
            big + small
        )
        await client.stream.aclose()

    run(tmp_path, scenario)


def batch_values(records: bytes, pos: int) -> list[bytes | None]:
    return [record.value for record in iter_records(records, pos)]


# --- over a real socket: idle connections and a stop ------------------------------------


async def _api_versions(client: Client, correlation_id: int) -> None:
    await client.stream.send_all(frame(ApiKey.API_VERSIONS, 3, correlation_id, API_VERSIONS_V3))
    got, response = decode_response(18, 3, await client.receive_frame())
    assert (got, response.error_code) == (correlation_id, ErrorCode.NONE)


def test_an_idle_socket_is_closed_after_the_idle_time_and_not_before(tmp_path):
    """The broker's idle sweep closes a socket that waited
    connections.max.idle.ms for a request, counted from its last bytes."""

    async def scenario(broker, _):
        client = await _socket_client(broker)
        await _api_versions(client, 1)
        # Half a request: the wait for the rest counts from these bytes.
        await client.stream.send_all(struct.pack(">i", 100) + b"\x00\x12")
        started = trio.current_time()
        assert await client.receive_frame() is None
        assert trio.current_time() - started >= 0.3

    run(tmp_path, scenario, **{"connections.max.idle.ms": 300})


def test_a_stop_closes_a_waiting_socket_at_once(tmp_path):
    async def scenario(broker, _):
        client = await _socket_client(broker)
        await _api_versions(client, 1)
        # The default idle time is ten minutes: only the stop can end this wait.
        with trio.fail_after(5):
            await broker.stop()
            assert await client.receive_frame() is None

    run(tmp_path, scenario)


def test_a_stop_sends_the_answers_still_queued_before_closing(tmp_path):
    """Answers larger than the socket takes wait for the writer while the
    reader waits for more requests; a stop then must not close the socket
    under the writer: every answer arrives whole, then the end."""

    async def scenario(broker, _):
        client = await _socket_client(broker)
        await _topic_with_1mb(client, "big", 1)
        # Four 1 MB answers, unread: the writer holds them, the reader waits.
        await client.stream.send_all(
            b"".join(frame(ApiKey.FETCH, 12, 100 + i, fetch_body("big")) for i in range(4))
        )
        await trio.testing.wait_all_tasks_blocked()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(broker.stop)
            await trio.testing.wait_all_tasks_blocked()
            for i in range(4):
                correlation_id, response = decode_response(
                    ApiKey.FETCH, 12, await client.receive_frame()
                )
                assert correlation_id == 100 + i
                (partition,) = response.responses[0].partitions
                assert len(bytes(partition.records)) > 1_000_000
            assert await client.receive_frame() is None

    run(tmp_path, scenario)


def _kernel_size(option: int, requested: int) -> int:
    """What the kernel makes of a socket buffer size asked for (Linux doubles it)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, option, requested)
        return probe.getsockopt(socket.SOL_SOCKET, option)


def test_the_socket_buffer_settings_apply_to_the_clients_sockets(tmp_path):
    """socket.send.buffer.bytes and socket.receive.buffer.bytes set the
    SO_SNDBUF and SO_RCVBUF of every accepted connection, as in Kafka."""

    async def scenario(broker, _):
        client = await _socket_client(broker)
        await _api_versions(client, 1)
        (conn,) = broker._connections
        accepted = conn.stream.socket
        assert accepted.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == _kernel_size(
            socket.SO_SNDBUF, 50_000
        )
        assert accepted.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) == _kernel_size(
            socket.SO_RCVBUF, 60_000
        )
        await client.stream.aclose()

    run(
        tmp_path,
        scenario,
        **{"socket.send.buffer.bytes": 50_000, "socket.receive.buffer.bytes": 60_000},
    )


def _handshakes_while_the_loop_is_busy(broker, count: int) -> int:
    """Connect `count` clients at once while the broker's event loop cannot
    accept (this test holds it): how many the kernel completes, which is
    what the listen backlog holds."""
    host, port = broker.bound[0][1:]
    clients = [socket.socket() for _ in range(count)]
    try:
        for client in clients:
            client.setblocking(False)
            client.connect_ex((host, port))
        # On loopback a handshake completes, or its SYN is dropped, within the
        # connect; a dropped SYN is retried only after a second. (poll, not
        # select: after other tests in the process these descriptors may be
        # above select's 1,024.)
        poller = select.poll()
        by_fd = {client.fileno(): client for client in clients}
        for fd in by_fd:
            poller.register(fd, select.POLLOUT)
        connected = [by_fd[fd] for fd, _ in poller.poll(200)]
        return sum(1 for c in connected if c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0)
    finally:
        for client in clients:
            client.close()


def test_a_burst_of_clients_is_taken_while_the_loop_is_busy(tmp_path):
    """Gregor accepts on the event loop that serves requests: by default its
    listen backlog (4096, Kafka's is 50) holds a burst of clients the loop
    has not accepted yet, and socket.listen.backlog.size sets it."""

    async def scenario(broker, _):
        assert _handshakes_while_the_loop_is_busy(broker, 100) == 100

    run(tmp_path, scenario)

    async def small_backlog(broker, _):
        # Linux takes one more than the backlog.
        assert _handshakes_while_the_loop_is_busy(broker, 100) <= 3

    run(tmp_path / "small", small_backlog, **{"socket.listen.backlog.size": 2})
