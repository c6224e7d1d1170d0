"""A TCP proxy between Kafka clients and a broker that can lose Produce responses.

    with LossyProxy(drop_produce_responses=1) as proxy:
        broker = gregor_factory({"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"})
        proxy.upstream = ("127.0.0.1", broker.port)
        Producer({"bootstrap.servers": proxy.bootstrap, "enable.idempotence": True})

Every byte passes through unchanged, except that the responses to the first
`drop_produce_responses` Produce requests (acks 1 or -1: acks=0 has no
response) are swallowed and the connection that carried each is cut, both
ways, right after. The broker has then appended the records but the client
never hears so: it must retry, and an idempotent producer's retry must be
written once, at the offsets of the first append.

Frames are Kafka's: an int32 size, then the body. A request starts with its
int16 api key, int16 version and int32 correlation id; a response starts with
the correlation id. Responses come back in request order on a connection, so
each response is matched to the oldest request still waiting for one (and
checked against its correlation id). Nothing is rewritten: the broker must
advertise the proxy's address (`advertised.listeners`) so that clients stay
on the proxy after their first Metadata request.

Threads: one accepting, two per connection (client->broker, broker->client);
all are daemons and `close()` (or leaving the `with` block) stops them.
"""

from __future__ import annotations

import collections
import socket
import struct
import threading

from wire.api_keys import ApiKey
from wire.protocol import decode_request

_SIZE = struct.Struct(">i")
_REQUEST_START = struct.Struct(">hhi")  # api key, api version, correlation id
_CORRELATION = struct.Struct(">i")


class Dropped:
    """A Produce response the proxy swallowed."""

    def __init__(self, correlation_id: int, api_version: int, response: bytes):
        self.correlation_id = correlation_id
        self.api_version = api_version
        self.response = response  # the response frame body, undelivered

    def __repr__(self) -> str:
        return f"Dropped(correlation_id={self.correlation_id}, v{self.api_version})"


class _Closed(Exception):
    pass


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise _Closed
        buf += chunk
    return bytes(buf)


def _read_frame(sock: socket.socket) -> bytes:
    (size,) = _SIZE.unpack(_recv_exact(sock, 4))
    if size < 0:
        raise _Closed
    return _recv_exact(sock, size)


class _Link:
    """One client connection and its broker connection."""

    def __init__(self, proxy: LossyProxy, client: socket.socket, broker: socket.socket):
        self.proxy = proxy
        self.client = client
        self.broker = broker
        # (api key, api version, correlation id) of requests awaiting a response, oldest first.
        self.pending: collections.deque[tuple[int, int, int]] = collections.deque()
        self.lock = threading.Lock()
        self.closed = False

    def start(self) -> None:
        for target in (self._client_to_broker, self._broker_to_client):
            threading.Thread(target=target, daemon=True).start()

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
        for s in (self.client, self.broker):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _client_to_broker(self) -> None:
        try:
            while True:
                frame = _read_frame(self.client)
                api_key, api_version, correlation_id = _REQUEST_START.unpack_from(frame)
                if _expects_response(frame, api_key):
                    with self.lock:
                        self.pending.append((api_key, api_version, correlation_id))
                self.proxy._note_request(api_key)
                self.broker.sendall(_SIZE.pack(len(frame)) + frame)
        except (_Closed, OSError):
            pass
        finally:
            self.close()

    def _broker_to_client(self) -> None:
        try:
            while True:
                frame = _read_frame(self.broker)
                (correlation_id,) = _CORRELATION.unpack_from(frame)
                with self.lock:
                    api_key, api_version, expected = self.pending.popleft()
                assert correlation_id == expected, (
                    f"response {correlation_id} arrived while {expected} was the oldest request"
                )
                if api_key == ApiKey.PRODUCE and self.proxy._take_drop():
                    self.proxy._record_drop(Dropped(correlation_id, api_version, frame))
                    return  # `finally` cuts the connection: the client never sees this answer
                self.client.sendall(_SIZE.pack(len(frame)) + frame)
        except (_Closed, OSError, IndexError):
            pass
        finally:
            self.close()


def _expects_response(frame: bytes, api_key: int) -> bool:
    """Every request is answered except Produce with acks=0."""
    if api_key != ApiKey.PRODUCE:
        return True
    _, body = decode_request(frame)
    return body.acks != 0


class LossyProxy:
    def __init__(self, upstream: tuple[str, int] | None = None, *, drop_produce_responses: int = 1):
        self.upstream = upstream  # may be set after construction, before clients connect
        self._drops_left = drop_produce_responses
        self.dropped: list[Dropped] = []
        self.requests: collections.Counter[int] = collections.Counter()  # api key -> count
        self.connections = 0
        self._lock = threading.Lock()
        self._links: list[_Link] = []
        self._closed = False
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)  # accept() wakes up to notice close()
        self.port: int = self._listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue  # look at self._closed again
            except OSError:
                return  # listener closed
            client.settimeout(None)
            if self.upstream is None:
                client.close()
                continue
            try:
                broker = socket.create_connection(self.upstream, timeout=10)
                broker.settimeout(None)
            except OSError:
                client.close()
                continue
            for s in (client, broker):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link = _Link(self, client, broker)
            with self._lock:
                if self._closed:
                    link.close()
                    return
                self._links.append(link)
                self.connections += 1
            link.start()

    def _note_request(self, api_key: int) -> None:
        with self._lock:
            self.requests[api_key] += 1

    def _take_drop(self) -> bool:
        with self._lock:
            if self._drops_left > 0:
                self._drops_left -= 1
                return True
            return False

    def _record_drop(self, dropped: Dropped) -> None:
        with self._lock:
            self.dropped.append(dropped)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            links = list(self._links)
        self._acceptor.join(5)
        self._listener.close()
        for link in links:
            link.close()

    def __enter__(self) -> LossyProxy:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
