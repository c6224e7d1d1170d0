"""One client connection: a reader that handles requests, and a writer for answers that wait.

Requests are handled one at a time in arrival order, as Kafka does (it mutes
a channel until its response is sent), so responses leave in request order
even when a client pipelines several requests. What of an answer the
socket takes at once (writev for buffers, sendfile for log ranges) the
reader sends itself; the rest, and answers behind one still waiting, go to
the writer, which runs beside the reader so that sending a large Fetch
answer overlaps with reading and handling the next request.

What closes a connection (Kafka does the same): a frame larger than
`socket.request.max.bytes`, a negative size, bytes that do not decode as a
request, an unsupported version of any API but ApiVersions, and
`connections.max.idle.ms` without a request (the broker's idle sweep, see
`close_if_idle`), and on a SASL listener what the login does not allow
(`_before_login`, `_reauthenticate`; broker/security/sasl.py). A handler that raises gets
UNKNOWN_SERVER_ERROR for that request only. Nothing a client sends stops the
broker or another connection.
"""

from __future__ import annotations

import logging
import os
import traceback
from dataclasses import dataclass
from typing import Any

import trio

from broker.registry import HANDLERS, RequestDispatcher, generic_error_response
from broker.request_context import ANONYMOUS, KafkaPrincipal, RequestContext
from broker.security.sasl import AuthenticationFailed, SaslAuthenticator
from wire.api_keys import ApiKey
from wire.buffers import Reader, Writer
from wire.error_codes import ErrorCode
from wire.errors import DecodeError, EncodeError, UnsupportedVersionError
from wire.framing import FrameSplitter, InvalidFrameSize, frame_size_prefix
from wire.protocol import (
    RequestHeader,
    api,
    decode_request_header,
    encode_response_into,
    request_codec,
    response_codec,
)
from wire.schema import unknown_keys

log = logging.getLogger("gregor.connection")

# Tests set GREGOR_STRICT_RESPONSES=1: a response dict with a key its schema
# does not declare (a misspelling would silently encode the default) is then
# an error that closes the connection, so the test sees it.
STRICT_RESPONSES = os.environ.get("GREGOR_STRICT_RESPONSES") == "1"
# Responses waiting for the writer; the reader blocks beyond this.
_MAX_QUEUED_RESPONSES = 8
_RECEIVE_SIZE = 256 * 1024
# Reads a connection makes straight from its socket before it lets the
# scheduler run the other tasks (see _read_requests).
_READS_BETWEEN_YIELDS = 8
# What a read straight into a large request's frame stands for as "data read".
_READ_INTO_FRAME = b"read into the frame"
# The most buffers one writev takes (Linux's IOV_MAX).
_MAX_PARTS_AT_ONCE = 1024


class _FileRangeRest:
    """The part of a file range (a log read) the socket did not take at once."""

    __slots__ = ("_range", "position", "_size")

    def __init__(self, file_range, position: int, size: int):
        self._range, self.position, self._size = file_range, position, size

    @property
    def fd(self) -> int:
        return self._range.fd

    def __len__(self) -> int:
        return self._size


def peer_address(stream: trio.abc.Stream) -> str:
    """ "host:port" of the client, "?" when the stream cannot tell."""
    try:
        # Only socket streams have one (a TLS stream's is its transport's);
        # the AttributeError below covers the rest.
        sock = getattr(stream, "transport_stream", stream).socket  # type: ignore[union-attr]
        host, port = sock.getpeername()[:2]
        return f"{host}:{port}"
    except (OSError, AttributeError):  # AttributeError: not a socket (tests' memory streams)
        return "?"


class CloseConnection(Exception):
    """Raised by request handling when Kafka would close the connection."""


@dataclass(frozen=True)
class ConnectionLimits:
    """The settings that bound what one connection may do."""

    socket_request_max_bytes: int
    connections_max_idle_ms: int


class Connection:
    def __init__(
        self,
        dispatcher: RequestDispatcher,
        limits: ConnectionLimits,
        stream: trio.abc.Stream,
        listener: str,
        authenticator: SaslAuthenticator | None = None,
        principal: KafkaPrincipal = ANONYMOUS,
    ):
        self.dispatcher = dispatcher
        self.limits = limits
        self.stream = stream
        self.listener = listener
        # On a SASL listener, until the client has logged in; then None, and
        # the principal is who it logged in as.
        self.authenticator = authenticator
        # Who the client is before any SASL login: its TLS certificate's
        # subject, or ANONYMOUS.
        self.principal: KafkaPrincipal = principal
        # With connections.max.reauth.ms: the login that holds, when it ends
        # (trio's clock), and when the last re-authentication began.
        self._login: SaslAuthenticator | None = None
        self._login_failed = False
        self._session_expires: float | None = None
        self._reauthenticated_at: float | None = None
        max_frame = limits.socket_request_max_bytes
        if authenticator is not None:
            # Kafka's sasl.server.max.receive.size: before login a client may
            # not make the broker buffer a large request.
            max_frame = min(max_frame, authenticator.settings.max_receive_size)
        self._splitter = FrameSplitter(max_frame)
        self.peer = peer_address(stream)
        self._stop_requested = False
        # Since when the reader has been waiting for the socket to become
        # readable (trio's clock), None while it is not waiting.
        self.waiting_since: float | None = None
        self._closed_as_idle = False
        # An in-memory stream's receive (tests) is cancelled instead.
        self._receive_scope: trio.CancelScope | None = None
        # Responses handed to the writer and not yet sent: while any are, a
        # new one must queue behind them to keep the order.
        self._queued = 0
        # Made by run(); the writer's queue and task only once an answer waits.
        self._nursery: trio.Nursery | None = None
        self._writer_queue: trio.MemorySendChannel[list] | None = None
        # The socket's descriptor for sending at once (None: not a socket).
        self._fd: int | None = (
            stream.socket.fileno() if isinstance(stream, trio.SocketStream) else None
        )

    def stop_when_idle(self) -> None:
        """Close after the request in hand (if any) is answered."""
        self._stop_requested = True
        self._wake_waiting_reader()

    def close_if_idle(self, now: float) -> None:
        """Close the connection when its reader has waited for a request for
        `connections.max.idle.ms` (once: the reader may not have run yet
        when the next sweep comes)."""
        since = self.waiting_since
        if since is None or self._fd is None or self._closed_as_idle:
            return
        if now - since < self.limits.connections_max_idle_ms / 1000:
            return
        self._closed_as_idle = True
        log.info("closing idle connection %s", self.peer)
        trio.lowlevel.notify_closing(self.stream.socket)  # type: ignore[attr-defined]

    def _wake_waiting_reader(self) -> None:
        """Stop a reader that waits for the socket, unless answers are still
        queued for the writer: a socket being closed would fail the writer's
        wait too, so the writer wakes the reader once they are out."""
        if self._receive_scope is not None:
            self._receive_scope.cancel()
        elif self.waiting_since is not None and self._queued == 0:
            trio.lowlevel.notify_closing(self.stream.socket)  # type: ignore[attr-defined]

    async def run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                try:
                    await self._read_requests()
                finally:
                    if self._writer_queue is not None:
                        # The writer sends what is queued, then ends.
                        await self._writer_queue.aclose()
        except* (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as group:
            log.debug("connection %s ended: %s", self.peer, group.exceptions[0])
        finally:
            with trio.CancelScope(shield=True):
                await self.stream.aclose()

    # --- reading ----------------------------------------------------------

    async def _read_requests(self) -> None:
        splitter = self._splitter
        idle_seconds = self.limits.connections_max_idle_ms / 1000
        unyielded = 0
        while not self._stop_requested:
            data: bytes | bytearray | None = None
            if self._fd is not None and unyielded < _READS_BETWEEN_YIELDS:
                # Bytes already there are read at once: waiting for the
                # socket yields to the scheduler every time (a task switch
                # and an epoll round), which a client that keeps requests
                # coming paid per read. Every few reads the task still
                # waits, so that one busy client cannot keep the others
                # waiting.
                target = splitter.receive_buffer()
                try:
                    if target is None:
                        data = os.read(self._fd, _RECEIVE_SIZE)
                    else:
                        # The rest of a large request goes straight into the
                        # frame it becomes, copied once (wire/framing.py).
                        with target:
                            received = os.readv(self._fd, [target])
                        if received:
                            splitter.received(received)
                        data = _READ_INTO_FRAME if received else b""
                    unyielded += 1
                except BlockingIOError:
                    pass
            if data is None:
                unyielded = 0
                if self._fd is not None:
                    # Wait for the socket, then os.read above. Not trio's
                    # receive_some in a move_on_after: its recv that finds
                    # nothing, and a cancel scope per wait, cost a small
                    # request a sixth of its time. The broker's idle sweep
                    # and a stop end the wait by notify_closing instead.
                    self.waiting_since = trio.current_time()
                    try:
                        await trio.lowlevel.wait_readable(self.stream.socket)  # type: ignore[attr-defined]
                    except trio.ClosedResourceError:
                        if self._closed_as_idle or self._stop_requested:
                            return
                        raise
                    finally:
                        self.waiting_since = None
                    continue
                with trio.move_on_after(idle_seconds) as idle:
                    self._receive_scope = idle
                    data = await self.stream.receive_some(_RECEIVE_SIZE)
                self._receive_scope = None
                if idle.cancelled_caught:
                    if not self._stop_requested:
                        log.info("closing idle connection %s", self.peer)
                    return
            if not data:
                return
            if data is not _READ_INTO_FRAME:
                try:
                    splitter.feed(data)
                except InvalidFrameSize:
                    # Requests wholly before the bad size are still answered,
                    # as Kafka does (it reads the next size only after
                    # answering); next_frame raises the error once they are
                    # taken.
                    pass
            while True:
                try:
                    frame = splitter.next_frame()
                except InvalidFrameSize as e:
                    log.warning("closing connection %s: %s", self.peer, e)
                    return
                if frame is None:
                    break
                try:
                    response = await self.handle_frame(frame)
                except CloseConnection as e:
                    log.warning("closing connection %s: %s", self.peer, e)
                    return
                if response is None:
                    continue
                if self._queued == 0 and self._fd is not None:
                    # Nothing ahead of it: send it now, from this task. Most
                    # answers fit the socket buffer at once, and handing each
                    # to the writer task cost a fifth of a small request's
                    # time (the channel, a task switch, trio's send_all).
                    response = self._send_now(response)
                    if response is None:
                        continue
                self._queued += 1
                await self._queue_for_writer(response)

    async def _queue_for_writer(self, response: list) -> None:
        if self._writer_queue is None:
            # The writer task and its queue are made for the first answer
            # that has to wait: most connections never need them, and an
            # idle one kept both (about 4 KB of a connection's 10).
            assert self._nursery is not None  # answers come only from run()
            send, receive = trio.open_memory_channel[list](_MAX_QUEUED_RESPONSES)
            self._writer_queue = send
            self._nursery.start_soon(self._write_responses, receive)
        await self._writer_queue.send(response)

    async def handle_frame(self, frame: bytes | bytearray) -> list | None:
        """Handle one request; the encoded response as parts, or None (acks=0)."""
        if self.authenticator is not None:
            settings = self.authenticator.settings
            answer = self._before_login(frame)
            if answer is not None:
                if self._login_failed and settings.failed_authentication_delay_ms:
                    # Kafka's KIP-306: the answer to a failed login (and the
                    # close after it) waits, to slow down password guessing.
                    await trio.sleep(settings.failed_authentication_delay_ms / 1000)
                return answer
        r = Reader(frame)
        try:
            header = decode_request_header(r)
        except UnsupportedVersionError as e:
            return self._unsupported_version(e.api_key, e.version, e.correlation_id)
        except DecodeError as e:
            raise CloseConnection(f"malformed request header: {e}") from None
        bound = self.dispatcher.get(header.api_key)
        if bound is None or header.api_version not in bound.spec.versions:
            return self._unsupported_version(
                header.api_key, header.api_version, header.correlation_id
            )
        try:
            # Like Kafka, bytes after the body are ignored: librdkafka sends
            # some (Metadata v12 carries three) and Kafka accepts them.
            body = request_codec(header.api_key, header.api_version).read(r)
            if r.pos != r.end:
                log.debug(
                    "%s v%d from %s: ignoring %d bytes after the body: %s",
                    ApiKey(header.api_key).display_name,
                    header.api_version,
                    self.peer,
                    r.end - r.pos,
                    bytes(frame[r.pos : r.pos + 64]).hex(),
                )
        except DecodeError as e:
            raise CloseConnection(
                f"malformed {ApiKey(header.api_key).display_name} v{header.api_version} "
                f"request: {e}"
            ) from None
        ctx = RequestContext(
            api_key=header.api_key,
            api_version=header.api_version,
            correlation_id=header.correlation_id,
            client_id=header.client_id,
            listener=self.listener,
            client_address=self.peer,
            principal=self.principal,
        )
        if self._session_expires is not None and (
            header.api_key == ApiKey.SASL_HANDSHAKE or trio.current_time() >= self._session_expires
        ):
            answer = self._reauthenticate(header, frame)
            if answer is not None:
                return answer
        try:
            response = await bound.call(ctx, body)
        except CloseConnection:
            raise
        except Exception:
            log.error(
                "%s v%d from %s failed:\n%s",
                ApiKey(header.api_key).display_name,
                header.api_version,
                self.peer,
                traceback.format_exc(),
            )
            response = self._error_response(bound.spec, header, body)
        if response is None:
            return None
        return self._encode(header.api_key, header.api_version, header.correlation_id, response)

    # --- SASL, before login -------------------------------------------------

    def _before_login(self, frame: bytes | bytearray) -> list | None:
        """A frame on a SASL listener before the client has logged in, as
        Kafka's SaslServerAuthenticator takes it: the answer, or None for the
        first ApiVersions, which is handled as usual. What the state does not
        allow closes the connection, some of it after an answer."""
        auth = self.authenticator
        assert auth is not None
        if auth.state == auth.FAILED:
            raise CloseConnection("request after a failed SASL authentication")
        if auth.raw_tokens:
            # After a v0 handshake: a bare token, answered by a bare frame.
            try:
                challenge = auth.evaluate(bytes(frame))
            except AuthenticationFailed as e:
                raise CloseConnection(f"SASL authentication failed: {e}") from None
            self._maybe_logged_in()
            return [frame_size_prefix(len(challenge)), challenge]
        r = Reader(frame)
        try:
            header = decode_request_header(r)
        except UnsupportedVersionError as e:
            if e.api_key == ApiKey.API_VERSIONS and auth.state == auth.VERSIONS_OR_HANDSHAKE:
                # Answered so the client can retry at a version we serve.
                return self._unsupported_version(e.api_key, e.version, e.correlation_id)
            raise CloseConnection(f"unexpected request during SASL authentication: {e}") from None
        except DecodeError as e:
            raise CloseConnection(f"malformed request header: {e}") from None
        key, version = header.api_key, header.api_version
        try:
            name = ApiKey(key).name
        except ValueError:
            name = str(key)
        if auth.state == auth.AUTHENTICATE:
            if key != ApiKey.SASL_AUTHENTICATE:
                # Kafka answers it with ILLEGAL_SASL_STATE, then closes.
                self._stop_requested = True
                auth.state = auth.FAILED
                return self._illegal_sasl_state(key, version, header.correlation_id)
            body = self._sasl_body(header, r)
            try:
                response, close = auth.authenticate(body.auth_bytes)
            except AuthenticationFailed as e:
                raise CloseConnection(f"SASL authentication failed: {e}") from None
        elif key == ApiKey.API_VERSIONS:
            if version not in HANDLERS[key].versions and auth.state == auth.VERSIONS_OR_HANDSHAKE:
                # As Kafka: the client may ask again at a version we serve.
                return self._unsupported_version(key, version, header.correlation_id)
            if auth.api_versions():
                return None
            raise CloseConnection(f"Unexpected Kafka request of type {name} during SASL handshake.")
        elif key == ApiKey.SASL_HANDSHAKE:
            body = self._sasl_body(header, r)
            try:
                response, close = auth.handshake(version, body.mechanism)
            except AuthenticationFailed as e:
                raise CloseConnection(f"SASL authentication failed: {e}") from None
        else:
            raise CloseConnection(f"Unexpected Kafka request of type {name} during SASL handshake.")
        if close:
            # Kafka logs a failed authentication at INFO, and so do we.
            log.info(
                "failed authentication with %s: %s",
                self.peer,
                response.get("error_message") or ErrorCode(response["error_code"]).name,
            )
            self._stop_requested = True
            self._login_failed = True
        self._maybe_logged_in()
        return self._encode(key, version, header.correlation_id, response)

    def _sasl_body(self, header: RequestHeader, r: Reader):
        if header.api_version not in HANDLERS[header.api_key].versions:
            raise CloseConnection(
                f"{ApiKey(header.api_key).display_name} v{header.api_version} is not supported"
            )
        try:
            return request_codec(header.api_key, header.api_version).read(r)
        except DecodeError as e:
            raise CloseConnection(f"malformed SASL request: {e}") from None

    def _illegal_sasl_state(self, api_key: int, version: int, correlation_id: int) -> list:
        handler = HANDLERS.get(api_key)
        if handler is None or version not in handler.versions:
            raise CloseConnection("unexpected request during SASL authentication")
        body = response_codec(api_key, version).default()
        if "error_code" in body:
            body["error_code"] = ErrorCode.ILLEGAL_SASL_STATE
        return self._encode(api_key, version, correlation_id, body)

    def _maybe_logged_in(self) -> None:
        auth = self.authenticator
        if auth is not None and auth.complete:
            assert auth.principal is not None
            self.principal = auth.principal
            self.authenticator = None
            self._splitter.max_frame_size = self.limits.socket_request_max_bytes
            if auth.settings.max_reauth_ms > 0:
                self._login = auth
                self._session_expires = trio.current_time() + auth.settings.max_reauth_ms / 1000
            log.debug("%s logged in as %s", self.peer, self.principal)

    def _reauthenticate(self, header: RequestHeader, frame: bytes | bytearray) -> list | None:
        """A logged-in connection whose login expires (KIP-368), as Kafka
        takes it: a SaslHandshake begins a new login (at most one a second;
        sooner, the handler answers ILLEGAL_SASL_STATE), and any other request
        once the login has expired closes the connection unanswered."""
        if header.api_key != ApiKey.SASL_HANDSHAKE:
            raise CloseConnection(f"the SASL login of {self.principal} expired")
        now = trio.current_time()
        if self._reauthenticated_at is not None and now - self._reauthenticated_at < 1.0:
            return None
        assert self._login is not None
        self._reauthenticated_at = now
        self.authenticator = self._login.reauthentication()
        return self._before_login(frame)

    def _error_response(self, handler, header: RequestHeader, body) -> Any:
        code = ErrorCode.UNKNOWN_SERVER_ERROR
        if handler.error_response is not None:
            response = handler.error_response(body, code, None)
        else:
            response = generic_error_response(header.api_key, header.api_version, code)
        if response is None:
            raise CloseConnection("handler failed and the response has no error code")
        return response

    def _unsupported_version(self, api_key: int, version: int, correlation_id: int | None):
        if api_key != ApiKey.API_VERSIONS:
            raise CloseConnection(f"api key {api_key} version {version} is not supported")
        # Answer in v0, which every client can read: the error and the
        # versions of ApiVersions itself, so the client retries with one of them.
        served = HANDLERS[ApiKey.API_VERSIONS].versions
        body = {
            "error_code": ErrorCode.UNSUPPORTED_VERSION,
            "api_keys": [
                {"api_key": ApiKey.API_VERSIONS, "min_version": served.lo, "max_version": served.hi}
            ],
        }
        return self._encode(ApiKey.API_VERSIONS, 0, correlation_id or 0, body)

    @staticmethod
    def _encode(api_key: int, version: int, correlation_id: int, body) -> list:
        if STRICT_RESPONSES:
            unknown = unknown_keys(api(api_key).response, body)
            if unknown:
                log.error(
                    "%s v%d response has keys its schema does not declare: %s",
                    ApiKey(api_key).display_name,
                    version,
                    ", ".join(unknown),
                )
                raise CloseConnection(f"response keys not in the schema: {unknown}")
        w = Writer()
        try:
            encode_response_into(w, api_key, version, correlation_id, body)
        except EncodeError as e:
            raise CloseConnection(f"could not encode the response: {e}") from e
        return [frame_size_prefix(len(w)), *w.parts()]

    # --- writing ----------------------------------------------------------

    def _send_now(self, parts: list) -> list | None:
        """Write a response straight to the (non-blocking) socket, buffers
        with writev and file ranges with sendfile: None when all of it went,
        else what is left (then wait until the socket is writable)."""
        fd = self._fd
        i, n = 0, len(parts)
        while i < n:
            j, limit = i, min(n, i + _MAX_PARTS_AT_ONCE)
            while j < limit and isinstance(parts[j], bytes | bytearray | memoryview):
                j += 1
            if j == i:
                rest = self._send_file_range_now(parts[i])
                if rest is not None:
                    return [rest, *parts[i + 1 :]]
                i += 1
                continue
            run = parts if (i, j) == (0, n) else parts[i:j]
            try:
                sent = os.writev(fd, run)  # type: ignore[arg-type]
            except BlockingIOError:
                return parts[i:]
            if sent < sum(len(part) for part in run):
                return [b"".join(run)[sent:], *parts[j:]]
            i = j
        return None

    def _send_file_range_now(self, part) -> _FileRangeRest | None:
        """sendfile what the socket takes of a file range: None when all of
        it went, else the rest of it."""
        position, remaining = part.position, len(part)
        if remaining == 0:
            return None
        try:
            # Inside the try: a log deleted since the read closes the fd (ValueError).
            source = part.fd
            while remaining > 0:
                try:
                    sent = os.sendfile(self._fd, source, position, remaining)  # type: ignore[arg-type]
                except BlockingIOError:
                    return _FileRangeRest(part, position, remaining)
                if sent == 0:
                    # The file shrank under us: the frame cannot be completed.
                    raise trio.BrokenResourceError("file range ended early")
                position += sent
                remaining -= sent
        except (ValueError, OSError) as e:
            # The segment was closed or removed under us: the frame cannot be completed.
            raise trio.BrokenResourceError(f"sending a file range failed: {e}") from e
        return None

    async def _write_responses(self, receive) -> None:
        async with receive:
            async for parts in receive:
                await self._write_response(parts)
                self._queued -= 1
                if self._stop_requested and self._queued == 0:
                    self._wake_waiting_reader()

    async def _write_response(self, parts: list) -> None:
        if self._fd is None:
            # A TLS stream (or a test's in-memory one): no descriptor to
            # writev or sendfile to, so log ranges are read, in a worker
            # thread (a read may wait for the disk), and sent encrypted.
            chunks = [
                part
                if isinstance(part, bytes | bytearray | memoryview)
                else await trio.to_thread.run_sync(part.read_bytes)
                for part in parts
            ]
            await self.stream.send_all(b"".join(chunks))
            return
        rest = self._send_now(parts)
        while rest is not None:
            await trio.lowlevel.wait_writable(self.stream.socket)  # type: ignore[attr-defined]
            rest = self._send_now(rest)
