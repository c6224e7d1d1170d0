"""The two brokers the benchmark compares, started with the compatibility runner's
launcher (compat_tests/runner/launcher.py: tools/run_gregor.py's GregorNode,
tools/run_kafka.py's KafkaNode).

Both get the launcher's BROKER_SETTINGS (single node, the default flush
policy: no fsync by count or time, Kafka's defaults otherwise) on loopback
ports of their own. Kafka runs as its bin/kafka-server-start.sh runs it: its
own JVM flags and its default 1 GiB heap (KafkaNode(as_shipped=True)).

Start-up is timed from the spawn of the broker process (not Kafka's storage
format before it) to the first accepted TCP connection, and to the first
answered request: Kafka accepts connections some time before it serves them.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from pathlib import Path

from bench.procstat import Meter, rss_bytes

REPO = Path(__file__).resolve().parents[1]

# The launcher puts tools/ on sys.path and imports run_kafka from there; its
# `run_kafka` is the one used here too.
from compat_tests.runner import launcher  # noqa: E402

run_kafka = launcher.run_kafka

BROKERS = ("gregor", "kafka")
# quick=True (make bench-smoke, where only the code paths matter): Kafka with the
# quick-start JVM flags of tests, and a shorter broker session, which a node restarted
# after kill -9 waits out (its previous registration's, 9 s by default).
QUICK_KAFKA = {"broker.session.timeout.ms": "2500", "broker.heartbeat.interval.ms": "500"}
STARTUP_TIMEOUT = 180.0


class BrokerError(RuntimeError):
    """A broker did not start, or died under a workload."""


def api_versions_request(correlation_id: int = 1) -> bytes:
    """ApiVersions v0, which every Kafka version answers."""
    client_id = b"bench"
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    return struct.pack(">i", len(body)) + body


def read_frame(sock: socket.socket) -> bytes:
    """One size-prefixed response frame."""
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            raise ConnectionError("closed by the broker")
        head += chunk
    (size,) = struct.unpack(">i", head)
    buf = bytearray()
    while len(buf) < size:
        chunk = sock.recv(min(size - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("closed by the broker")
        buf += chunk
    return bytes(buf)


class StartWatch:
    """From a thread: when the port first accepts a connection, and when that first
    connection's ApiVersions is first answered (Kafka queues requests on sockets it
    accepted before it serves)."""

    def __init__(self, port: int):
        self.port = port
        self.accepted_at: float | None = None
        self.answered_at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                sock = socket.create_connection(("127.0.0.1", self.port), timeout=0.5)
            except OSError:
                time.sleep(0.002)
                continue
            if self.accepted_at is None:
                self.accepted_at = time.monotonic()
            try:
                with sock:
                    sock.settimeout(STARTUP_TIMEOUT)
                    sock.sendall(api_versions_request())
                    read_frame(sock)
                    self.answered_at = time.monotonic()
                    return
            except OSError:
                time.sleep(0.002)  # closed while starting: try a new connection

    def join(self, started: bool) -> None:
        """started: the broker is up, so wait for the watch to see it (its
        launcher may have seen it first, while the watch slept between two
        tries); else stop watching."""
        if not started:
            self._stop.set()
        self._thread.join()


class BenchBroker:
    """One broker for one round of workloads: started, measured, killed, restarted."""

    def __init__(self, name: str, workdir: Path, quick: bool = False):
        if name not in BROKERS:
            raise ValueError(f"unknown broker {name!r}")
        self.name = name
        self.workdir = workdir
        self.quick = quick
        self.node = None
        self.startups: list[tuple[float, float]] = []  # (to accepted, to answered) seconds
        self._lifetime: Meter | None = None

    @property
    def bootstrap(self) -> str:
        return self.node.bootstrap

    @property
    def pid(self) -> int:
        return self.node.proc.pid

    @property
    def loop_tid(self) -> int | None:
        """The thread that runs Gregor's Trio event loop: its main thread."""
        return self.pid if self.name == "gregor" else None

    def _new_node(self):
        if self.name == "gregor":
            return launcher.gregor_node(self.workdir / "gregor")
        return launcher.kafka_node(
            self.workdir / "kafka", QUICK_KAFKA if self.quick else None, as_shipped=not self.quick
        )

    def start(self, again: bool = False) -> tuple[float, float]:
        """Start (again=True: on the data of the previous, killed, process) and time it."""
        if self.node is None:
            self.node = self._new_node()
        watch = StartWatch(self.node.port)
        started = False
        try:
            if again and self.name == "kafka":
                self.node.start(format_storage=False)
            else:
                # Gregor again: the same data directory and port.
                self.node.start()
            started = True
        except Exception as exc:
            raise BrokerError(f"{self.name} did not start: {exc}") from exc
        finally:
            watch.join(started)
        spawned = self.node.spawned_at
        if watch.accepted_at is None or watch.answered_at is None:
            raise BrokerError(f"{self.name} started but its start-up was not seen")
        times = (watch.accepted_at - spawned, watch.answered_at - spawned)
        self.startups.append(times)
        self._lifetime = Meter(self.pid, self.loop_tid).start()
        return times

    def meter(self) -> Meter:
        return Meter(self.pid, self.loop_tid)

    def rss(self) -> int:
        return rss_bytes(self.pid)

    def peak_rss(self) -> int:
        """The largest RSS since the last start."""
        assert self._lifetime is not None
        return self._lifetime.peak_rss

    def alive(self) -> bool:
        return (
            self.node is not None and self.node.proc is not None and self.node.proc.poll() is None
        )

    def exit_code(self) -> int | None:
        """The process's exit status once it has ended (negative: the signal that ended it)."""
        return self.node.proc.poll() if self.node is not None and self.node.proc else None

    def kill(self) -> None:
        """SIGKILL, as a crash; the data stays for start(again=True)."""
        self._end_lifetime()
        self.node.kill()

    def stop(self) -> None:
        self._end_lifetime()
        if self.node is not None:
            self.node.stop()

    def log_tail(self, chars: int = 3000) -> str:
        return self.node.tail(chars) if self.node is not None else ""

    def _end_lifetime(self) -> None:
        if self._lifetime is not None:
            self._lifetime.stop(measure_cpu=False)
            self._lifetime = None
