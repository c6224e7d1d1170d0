"""The test-controlled TCP proxy (tests/support/tcp_proxy.py) against a real echo server."""

from __future__ import annotations

import multiprocessing
import os
import socket
import threading
import time

import pytest

from tests.support.tcp_proxy import RESET, TcpProxy, peer_pid


class EchoServer:
    """Echoes every byte back; counts the connections it accepted and keeps
    the bytes it received."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.received = bytearray()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    def _echo(self, conn):
        with conn:
            try:
                while data := conn.recv(65536):
                    self.received += data
                    conn.sendall(data)
            except OSError:
                pass

    def close(self):
        # shutdown() wakes the blocked accept() (Linux); close() alone leaves
        # the listening socket alive until it returns.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


@pytest.fixture
def echo():
    server = EchoServer()
    yield server
    server.close()


@pytest.fixture
def proxy(echo):
    with TcpProxy(("127.0.0.1", echo.port)) as p:
        yield p


def wait_until(condition, what, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def connect(proxy, timeout=5.0) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=timeout)


def assert_refused(proxy) -> None:
    """A connection through the proxy is refused in its handshake or reset right after."""
    with pytest.raises(OSError), connect(proxy) as sock:
        sock.sendall(b"x")
        if sock.recv(10) == b"":
            raise ConnectionResetError


def roundtrip(sock: socket.socket, payload: bytes) -> bytes:
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = sock.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


def test_bytes_flow_both_ways(proxy):
    payload = bytes(range(256)) * 4096  # 1 MiB: more than one socket buffer
    with connect(proxy) as sock:
        assert roundtrip(sock, payload) == payload
        assert roundtrip(sock, b"again") == b"again"
    assert proxy.bytes_forwarded >= 2 * len(payload)


def test_a_half_close_reaches_the_target_and_the_answer_still_comes_back(proxy):
    with connect(proxy) as sock:
        sock.sendall(b"last words")
        sock.shutdown(socket.SHUT_WR)
        got = b""
        while chunk := sock.recv(100):
            got += chunk
    assert got == b"last words"
    wait_until(lambda: proxy.live_connections == 0, "the link to be closed")


def test_cut_resets_live_connections(proxy):
    sock = connect(proxy)
    assert roundtrip(sock, b"ping") == b"ping"
    assert proxy.live_connections == 1
    proxy.cut()
    with pytest.raises(OSError):
        # The reset reaches the client: a read fails or ends at once.
        if sock.recv(10) == b"":
            raise ConnectionResetError
    sock.close()
    assert proxy.live_connections == 0


def test_blackholed_connections_are_accepted_and_never_forwarded(proxy, echo):
    proxy.cut()
    before = echo.accepted
    with connect(proxy, timeout=0.5) as sock:  # the handshake completes...
        sock.sendall(b"anyone?")
        with pytest.raises(TimeoutError):  # ...and nothing ever answers
            sock.recv(10)
        assert echo.accepted == before
        assert proxy.held_connections == 1
        proxy.heal()
        # Healing closes what the blackhole held; the client learns of it.
        sock.settimeout(5)
        with pytest.raises(OSError):
            if sock.recv(10) == b"":
                raise ConnectionResetError
    assert proxy.held_connections == 0


def test_reset_mode_refuses_new_connections_at_once(proxy, echo):
    proxy.cut(RESET)
    before = echo.accepted
    assert_refused(proxy)
    assert echo.accepted == before


def test_heal_restores_forwarding(proxy):
    proxy.cut()
    proxy.heal()
    with connect(proxy) as sock:
        assert roundtrip(sock, b"back") == b"back"


def test_muted_replies_are_lost_while_requests_still_arrive(proxy, echo):
    with connect(proxy) as sock:
        assert roundtrip(sock, b"before") == b"before"
        proxy.mute_replies()
        sock.settimeout(0.5)
        sock.sendall(b"acted on, never answered")
        wait_until(
            lambda: echo.received.endswith(b"acted on, never answered"), "the request to arrive"
        )
        with pytest.raises(TimeoutError):
            sock.recv(10)
        proxy.heal()
        # Its stream lost bytes: healing resets it, and the client learns of it.
        sock.settimeout(5)
        with pytest.raises(OSError):
            if sock.recv(10) == b"":
                raise ConnectionResetError
    with connect(proxy) as sock:
        assert roundtrip(sock, b"after") == b"after"


def test_replies_are_muted_from_the_request_picked(proxy, echo):
    with connect(proxy) as sock:
        proxy.mute_replies(after=lambda chunk: chunk.startswith(b"write"))
        assert roundtrip(sock, b"read") == b"read"
        sock.settimeout(0.5)
        sock.sendall(b"write it")
        wait_until(lambda: echo.received.endswith(b"write it"), "the request to arrive")
        with pytest.raises(TimeoutError):
            sock.recv(10)
        assert proxy.replies_muted


def test_a_target_set_after_start_and_a_target_down(echo):
    with TcpProxy() as p:
        # No target yet: a connection is refused (reset), not hung.
        assert_refused(p)
        p.target = ("127.0.0.1", echo.port)
        with connect(p) as sock:
            assert roundtrip(sock, b"late") == b"late"
        echo.close()
        assert_refused(p)


def test_many_connections_at_once(proxy):
    socks = [connect(proxy) for _ in range(20)]
    try:
        for i, sock in enumerate(socks):
            assert roundtrip(sock, f"n{i}".encode()) == f"n{i}".encode()
        assert proxy.live_connections == 20
        proxy.cut()
        wait_until(lambda: proxy.live_connections == 0, "every link to be reset")
    finally:
        for sock in socks:
            sock.close()


def _echo_from_child(port: int, ready, go, done) -> None:
    """In another process: connect through the proxy, then echo once on `go`."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=2)
    ready.set()
    go.wait(10)
    try:
        sock.sendall(b"ping")
        done.put(sock.recv(4) == b"ping")
    except OSError:
        done.put(False)


def test_cut_from_one_process_leaves_the_others(proxy):
    """A symmetric partition needs one source cut at every other proxy:
    the cut process's connections (live and new) fail, this one's pass."""
    ctx = multiprocessing.get_context("fork")
    ready, go, done = ctx.Event(), ctx.Event(), ctx.Queue()
    child = ctx.Process(target=_echo_from_child, args=(proxy.port, ready, go, done))
    child.start()
    try:
        assert ready.wait(10)
        mine = socket.create_connection(("127.0.0.1", proxy.port), timeout=2)
        deadline = time.monotonic() + 10
        while proxy.live_connections < 2:  # both admitted by the proxy's thread
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proxy.cut_from(child.pid)
        go.set()
        assert done.get(timeout=10) is False  # its live connection was reset
        mine.sendall(b"pong")
        assert mine.recv(4) == b"pong"
        # New connections: this process's pass, the child's are held.
        assert peer_pid_of_new_connection(proxy) == os.getpid()
    finally:
        child.join(10)
    proxy.heal_from(child.pid)
    assert not proxy.cut_sources


def peer_pid_of_new_connection(proxy) -> int | None:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=2) as sock:
        sock.sendall(b"x")
        assert sock.recv(1) == b"x"
        return peer_pid(sock.getpeername()[1], sock.getsockname()[1])
