"""A TCP proxy a test controls, to cut a process off the network and heal it
without root or network namespaces.

    proxy = TcpProxy(("127.0.0.1", broker_port)).start()   # listens on 127.0.0.1:<proxy.port>
    proxy.cut()        # live connections closed, new ones blackholed (accepted, never forwarded)
    proxy.cut(BLACKHOLE) / proxy.cut(RESET)   # ... or reset at once (a refused connection)
    proxy.heal()       # new connections are forwarded again
    proxy.close()

Threads: one accepts, two per connection copy bytes (one each way). A
connection whose target cannot be reached is closed at once, as a refused
connection would be. `cut()` closes every live connection with a reset on
both sides (SO_LINGER 0), so neither end waits for a timeout to notice.

What "cut" does to connections opened meanwhile is the mode:
- BLACKHOLE (the default): accepted and held without a byte forwarded, like
  packets dropped by a partition: the client's connect succeeds (the kernel
  completes the handshake) but nothing ever answers; it notices only by its
  own timeouts. They are closed on heal().
- RESET: accepted and reset at once; the client sees its connection reset
  rather than ECONNREFUSED (the listening socket stays bound so that its port,
  which the cluster advertises, stays this proxy's).

The target may be set after start() (`proxy.target = (host, port)`), for a
process that must be told the proxy's port before it picks its own.

Half a cut: `mute_replies()` forwards what clients send and drops what the
target answers, on live connections and new ones: requests arrive and are
acted on, their answers are lost (a write applied whose reply never came
back); the client notices only by its own timeouts. `mute_replies(after=f)`
does it from the first chunk a client sends that `f` picks (that chunk is
still forwarded): the answer to that very request is the first lost.
`heal()` ends it and resets the connections that lost bytes.

One source only: `cut_from(pid)` resets that process's connections through
the proxy and treats its new ones as `cut()` would, everyone else's still
pass; `heal_from(pid)` ends it. The proxy tells connections apart by the
process owning the peer socket (Linux's /proc: loopback only, the test's
own processes). With a proxy in front of every broker, cutting one broker
from every other broker's proxy, beside its own inbound proxy, makes a
symmetric partition.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import struct
import threading
from collections.abc import Callable

BLACKHOLE = "blackhole"
RESET = "reset"
OPEN = "open"


def _reset(sock: socket.socket) -> None:
    """Close with an RST instead of a FIN: the other end fails at once."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def _loopback_ports(address: str) -> int:
    """The port of a /proc/net/tcp address ("0100007F:1F90")."""
    return int(address.rsplit(":", 1)[1], 16)


def peer_pid(local_port: int, peer_port: int) -> int | None:
    """The process owning the other end of a loopback connection to
    `local_port` from `peer_port` (None if it is gone or not ours to see)."""
    inode = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if (
                        _loopback_ports(fields[1]) == peer_port
                        and _loopback_ports(fields[2]) == local_port
                    ):
                        inode = fields[9]
                        break
        except OSError:
            continue
        if inode is not None:
            break
    if inode is None or inode == "0":
        return None
    wanted = f"socket:[{inode}]"
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == wanted:
                    return int(pid)
            except OSError:
                continue
    return None


class _Link:
    """One proxied connection: the client's socket and the target's."""

    def __init__(self, proxy: TcpProxy, client: socket.socket, upstream: socket.socket):
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        # The client's (local port, peer port) as the proxy sees them.
        self.ports = (client.getsockname()[1], client.getpeername()[1])
        self._open_directions = 2
        # Set once a reply was dropped (mute_replies): the stream is broken.
        self.lost_replies = False
        self._lock = threading.Lock()
        self.closed = False

    def start(self) -> None:
        for src, dst in ((self.client, self.upstream), (self.upstream, self.client)):
            threading.Thread(target=self._copy, args=(src, dst), daemon=True).start()

    def _copy(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if src is self.upstream:
                    if self.proxy.replies_muted:
                        self.lost_replies = True
                        continue
                else:
                    self.proxy._maybe_mute(data)
                dst.sendall(data)
                self.proxy._count(len(data))
            # A half-close travels on: the other direction may still be busy.
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)
        except OSError:
            self.reset()
            return
        with self._lock:
            self._open_directions -= 1
            done = self._open_directions == 0
        if done:
            self.close()

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
        self.client.close()
        self.upstream.close()
        self.proxy._forget(self)

    def reset(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
        _reset(self.client)
        _reset(self.upstream)
        self.proxy._forget(self)


class TcpProxy:
    """Forwards connections to 127.0.0.1:<port> to `target`, until cut."""

    def __init__(self, target: tuple[str, int] | None = None, host: str = "127.0.0.1"):
        self.target = target
        self._listener = socket.create_server((host, 0), backlog=128)
        self.host = host
        self.port: int = self._listener.getsockname()[1]
        self.mode = OPEN
        self.replies_muted = False
        # Picks the client chunk from which replies are muted (mute_replies(after=)).
        self._mute_trigger: Callable[[bytes], bool] | None = None
        # Processes cut off by cut_from(), and the mode their connections get.
        self.cut_sources: dict[int, str] = {}
        self.bytes_forwarded = 0
        self._links: set[_Link] = set()
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> TcpProxy:
        self._thread.start()
        return self

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def live_connections(self) -> int:
        with self._lock:
            return len(self._links)

    @property
    def held_connections(self) -> int:
        """Connections accepted while blackholed and not yet closed."""
        with self._lock:
            return len(self._held)

    def cut(self, mode: str = BLACKHOLE) -> None:
        """Reset every live connection; from now on connections are blackholed or reset."""
        assert mode in (BLACKHOLE, RESET), mode
        with self._lock:
            self.mode = mode
            links = list(self._links)
        for link in links:
            link.reset()

    def cut_from(self, pid: int, mode: str = BLACKHOLE) -> None:
        """cut() for the connections of process `pid` only."""
        assert mode in (BLACKHOLE, RESET), mode
        with self._lock:
            self.cut_sources[pid] = mode
            links = list(self._links)
        for link in links:
            if peer_pid(*link.ports) == pid:
                link.reset()

    def heal_from(self, pid: int) -> None:
        """End cut_from(pid); its connections held by a blackhole are closed."""
        with self._lock:
            self.cut_sources.pop(pid, None)
            held = list(self._held)
        for sock in held:
            try:
                owner = peer_pid(sock.getsockname()[1], sock.getpeername()[1])
            except OSError:
                owner = pid  # its client is gone: close it too
            if owner == pid:
                with self._lock:
                    if sock in self._held:
                        self._held.remove(sock)
                _reset(sock)

    def mute_replies(self, after: Callable[[bytes], bool] | None = None) -> None:
        """From now on (or once a client sends a chunk `after` picks) the
        target's bytes are dropped and the clients' still forwarded, on every
        connection. Muted before that chunk is forwarded, so its answer
        cannot slip through."""
        if after is None:
            self.replies_muted = True
        else:
            self._mute_trigger = after

    def _maybe_mute(self, data: bytes) -> None:
        trigger = self._mute_trigger
        if trigger is not None and trigger(data):
            self._mute_trigger = None
            self.replies_muted = True

    def heal(self) -> None:
        """Forward new connections (and replies) again; the ones held by a
        blackhole, and those that lost replies, are closed."""
        with self._lock:
            self.mode = OPEN
            self.replies_muted = False
            self._mute_trigger = None
            held, self._held = self._held, []
            broken = [link for link in self._links if link.lost_replies]
        for sock in held:
            _reset(sock)
        for link in broken:
            link.reset()

    def close(self) -> None:
        self._closing.set()
        if self._thread.is_alive():
            self._thread.join(5)
        self._listener.close()
        with self._lock:
            links = list(self._links)
            held, self._held = self._held, []
        for link in links:
            link.reset()
        for sock in held:
            _reset(sock)

    # --- the threads -----------------------------------------------------------------

    def _accept_loop(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            while not self._closing.is_set():
                if not selector.select(0.1):
                    continue
                try:
                    client, _ = self._listener.accept()
                except OSError:
                    continue
                self._admit(client)

    def _admit(self, client: socket.socket) -> None:
        with self._lock:
            mode = self.mode
            sources = dict(self.cut_sources)
        if mode == OPEN and sources:
            try:
                pid = peer_pid(client.getsockname()[1], client.getpeername()[1])
            except OSError:
                pid = None
            mode = sources.get(pid, OPEN) if pid is not None else OPEN
        with self._lock:
            if mode == BLACKHOLE:
                self._held.append(client)
                return
        if mode == RESET or self.target is None:
            _reset(client)
            return
        try:
            upstream = socket.create_connection(self.target, timeout=5)
        except OSError:
            _reset(client)  # the target is down: the client sees a refusal
            return
        upstream.settimeout(None)
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            link = _Link(self, client, upstream)
        except OSError:  # the client left meanwhile
            _reset(client)
            _reset(upstream)
            return
        with self._lock:
            if self.mode != OPEN:  # cut while connecting
                admitted = False
            else:
                self._links.add(link)
                admitted = True
        if not admitted:
            link.reset()
            return
        if self.cut_sources and peer_pid(*link.ports) in self.cut_sources:
            link.reset()  # its process was cut off while it was admitted
            return
        link.start()

    def _forget(self, link: _Link) -> None:
        with self._lock:
            self._links.discard(link)

    def _count(self, n: int) -> None:
        with self._lock:
            self.bytes_forwarded += n
