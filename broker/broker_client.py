"""A Kafka client connection from this broker to another, for inter-broker requests.

Followers fetch from leaders with it (Kafka's replica fetcher speaks the same
Fetch API as consumers, with its replica id), and brokers reach the
controller with it. One request at a time: the callers wait for each answer
before sending the next, which is what they need. Encoding and decoding are
`wire`'s; this is only the socket and the framing.
"""

from __future__ import annotations

import itertools
import ssl
import struct

import trio

from broker.security.login import SaslLogin
from broker.security.scram import ScramError
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.errors import DecodeError
from wire.framing import FrameSplitter
from wire.protocol import decode_response, encode_request

# Answers larger than this are a protocol error (a follower asks for at most
# replica.fetch.response.max.bytes, 10 MiB by default, plus overhead).
MAX_RESPONSE_BYTES = 256 * 1024 * 1024


class BrokerConnectionError(Exception):
    """The connection failed or the other broker answered with garbage."""


class BrokerConnection:
    """`login`: log in with these credentials once connected (the other
    broker's listener is a SASL one)."""

    def __init__(
        self,
        host: str,
        port: int,
        client_id: str,
        login: SaslLogin | None = None,
        tls: ssl.SSLContext | None = None,
    ):
        self.host = host
        self.port = port
        self.client_id = client_id
        self.login = login
        self.tls = tls
        self._stream: trio.SocketStream | trio.SSLStream | None = None
        self._splitter = FrameSplitter(MAX_RESPONSE_BYTES)
        self._ids = itertools.count(1)
        self._lock = trio.Lock()
        # When the other broker's login ends (connections.max.reauth.ms), on
        # trio's clock: the connection is made anew, and logs in again, first.
        self._login_ends: float | None = None

    async def request(self, api_key: int, version: int, body, timeout: float = 30.0):
        """Send one request and return the decoded response body."""
        async with self._lock:
            try:
                with trio.fail_after(timeout):
                    if self._login_ends is not None and trio.current_time() >= self._login_ends:
                        await self.close()
                    if self._stream is None:
                        if self.tls is None:
                            self._stream = await trio.open_tcp_stream(self.host, self.port)
                        else:
                            self._stream = await trio.open_ssl_over_tcp_stream(
                                self.host, self.port, ssl_context=self.tls
                            )
                            await self._stream.do_handshake()
                        self._splitter = FrameSplitter(MAX_RESPONSE_BYTES)
                        if self.login is not None:
                            await self._log_in(self.login)
                    response = await self._roundtrip(api_key, version, body)
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as e:
                await self.close()
                raise BrokerConnectionError(f"{self.host}:{self.port}: {e}") from e
            except trio.TooSlowError as e:
                await self.close()
                raise BrokerConnectionError(
                    f"{self.host}:{self.port}: no answer in {timeout}s"
                ) from e
            except (DecodeError, ScramError) as e:
                await self.close()
                raise BrokerConnectionError(f"{self.host}:{self.port}: bad answer: {e}") from e
            except BrokerConnectionError as e:
                await self.close()
                raise BrokerConnectionError(f"{self.host}:{self.port}: {e}") from e
            return response

    async def _roundtrip(self, api_key: int, version: int, body):
        assert self._stream is not None
        correlation_id = next(self._ids)
        data = encode_request(api_key, version, correlation_id, body, self.client_id)
        await self._stream.send_all(struct.pack(">i", len(data)) + data)
        got, response = decode_response(api_key, version, await self._receive_frame())
        if got != correlation_id:
            raise BrokerConnectionError(f"answer {got} to request {correlation_id}")
        return response

    async def _log_in(self, login: SaslLogin) -> None:
        """SaslHandshake, then SaslAuthenticate until the mechanism is done."""
        handshake = await self._roundtrip(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": login.mechanism})
        if handshake.error_code != ErrorCode.NONE:
            raise BrokerConnectionError(
                f"SASL mechanism {login.mechanism} refused: {ErrorCode(handshake.error_code).name}"
            )
        client = login.client()
        token: bytes | None = client.first()
        lifetime = 0
        while token is not None:
            answer = await self._roundtrip(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
            if answer.error_code != ErrorCode.NONE:
                raise BrokerConnectionError(
                    f"login as {login.username} failed: {answer.error_message}"
                )
            token = client.next(bytes(answer.auth_bytes))
            lifetime = answer.session_lifetime_ms
        # Renewed a little early, as clients do, so no request meets its end.
        self._login_ends = trio.current_time() + 0.85 * lifetime / 1000 if lifetime > 0 else None

    async def _receive_frame(self) -> bytearray:
        assert self._stream is not None
        while True:
            frame = self._splitter.next_frame()
            if frame is not None:
                return frame
            # A TLS stream decrypts into its own buffers: fed as it comes.
            direct = isinstance(self._stream, trio.SocketStream)
            target = self._splitter.receive_buffer() if direct else None
            if target is not None:
                # The rest of a large answer (a follower's Fetch) straight
                # into its frame, copied once (wire/framing.py).
                assert isinstance(self._stream, trio.SocketStream)
                with target:
                    received = await self._stream.socket.recv_into(target)
                if not received:
                    raise trio.BrokenResourceError("closed by the other broker")
                self._splitter.received(received)
                continue
            data = await self._stream.receive_some(1 << 20)
            if not data:
                raise trio.BrokenResourceError("closed by the other broker")
            self._splitter.feed(data)

    async def close(self) -> None:
        self._login_ends = None
        stream, self._stream = self._stream, None
        if stream is not None:
            with trio.CancelScope(shield=True):
                await stream.aclose()


class BrokerConnections:
    """One connection per other broker, found by its id in the metadata image
    on the inter-broker listener (a broker that moved to another address gets
    a new connection). For requests that go to whichever broker leads
    something: transaction markers, verifications."""

    def __init__(
        self,
        image,
        listener: str,
        client_id: str,
        login: SaslLogin | None = None,
        tls: ssl.SSLContext | None = None,
    ):
        self._image = image  # () -> MetadataImage
        self._listener = listener
        self._client_id = client_id
        self._login = login
        self._tls = tls
        self._connections: dict[tuple[int, str, int], BrokerConnection] = {}

    def to(self, node_id: int) -> BrokerConnection | None:
        """The connection to broker `node_id`; None when it has no endpoint now."""
        registration = self._image().brokers.get(node_id)
        endpoint = None if registration is None else registration.endpoint(self._listener)
        if endpoint is None:
            return None
        key = (node_id, endpoint.host, endpoint.port)
        connection = self._connections.get(key)
        if connection is None:
            connection = self._connections[key] = BrokerConnection(
                endpoint.host, endpoint.port, self._client_id, self._login, self._tls
            )
        return connection

    async def close(self) -> None:
        for connection in self._connections.values():
            await connection.close()
        self._connections.clear()
