#!/usr/bin/env python3
"""Run a real Apache Kafka node (single KRaft broker+controller) on free loopback ports,
or a cluster of them (KafkaCluster: a static KRaft quorum, every node broker and controller).

    python tools/run_kafka.py                      # prints the bootstrap address, Ctrl-C stops
    python tools/run_kafka.py --port 9092 --override log.retention.check.interval.ms=1000

    from tools.run_kafka import KafkaNode
    with KafkaNode(overrides={"auto.create.topics.enable": "false"}) as node:
        node.bootstrap          # "127.0.0.1:40123"
        node.start_seconds      # format + start until it answers, in seconds

sasl_port (0: a free one) adds a SASL_PLAINTEXT listener named SASL_PLAINTEXT
(node.sasl_bootstrap) beside PLAINTEXT, which stays the inter-broker listener;
its mechanisms and JAAS configs come with the overrides
(sasl.enabled.mechanisms, listener.name.sasl_plaintext.<mechanism>.sasl.jaas.config).
ssl_port (0: a free one) adds an SSL listener named SSL (node.ssl_bootstrap)
the same way; its keystore and truststore come with the overrides
(listener.name.ssl.ssl.keystore.location, ...).

The node uses the Apache Kafka jars of tools/kafka_jars.py (`make clients`) and
runs through tools/kafka_cli.py: `kafka-storage format --standalone` formats a
fresh log directory in a temporary folder (a dynamic KRaft quorum of one:
controller.quorum.bootstrap.servers, KIP-853), then `kafka.Kafka` starts with
-Xmx512m (as_shipped=True: with the JVM flags and the 1 GiB heap of Kafka's own
kafka-server-start.sh, as benchmarks want it). The node is ready when its
PLAINTEXT listener answers ApiVersions and its Metadata lists the node itself.
Stopping sends SIGTERM (a controlled shutdown), then SIGKILL after a timeout;
the temporary folder is removed unless keep_dir=True (or --keep). kill() sends
SIGKILL at once and keeps the directory; start(format_storage=False) then
starts the node again on it.

Settings for a one-node test cluster (DEFAULTS): internal topics with
replication factor 1, no initial rebalance delay, retention checked every
second from the start (log.initial.task.delay.ms), one partition for
__consumer_offsets. Every key can be overridden.
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

try:
    from . import kafka_cli
except ImportError:  # run as a plain script: python3 tools/run_kafka.py
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import kafka_cli  # type: ignore[no-redef]

KAFKA_VERSION = kafka_cli.KAFKA_VERSION
HEAP = "512m"

# Settings for a single-node test cluster; callers' overrides win.
DEFAULTS: dict[str, str] = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "log.retention.check.interval.ms": "1000",
    # Kafka waits 30 s after start before the first retention check.
    "log.initial.task.delay.ms": "0",
    "auto.create.topics.enable": "true",
}


class KafkaStartError(RuntimeError):
    """The node did not format or start; the message carries the end of its log."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def random_cluster_id() -> str:
    """A Kafka cluster id: a random UUID, base64url without padding (22 characters).

    Never one starting with "-" (Kafka's `Uuid.randomUuid` rule): `kafka-storage
    format -t -abc...` reads it as an option and refuses to format.
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


# --- a minimal Kafka protocol probe (stdlib only) ---------------------------------


def _request(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    client_id = b"run_kafka"
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    msg = header + body
    return struct.pack(">i", len(msg)) + msg


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        buf += chunk
    return bytes(buf)


def _roundtrip(sock: socket.socket, api_key: int, version: int, cid: int, body: bytes) -> bytes:
    sock.sendall(_request(api_key, version, cid, body))
    (size,) = struct.unpack(">i", _recv_exact(sock, 4))
    data = _recv_exact(sock, size)
    (got,) = struct.unpack(">i", data[:4])
    if got != cid:
        raise ConnectionError(f"correlation id {got}, expected {cid}")
    return data[4:]


def _metadata_broker_ids(sock: socket.socket) -> set[int]:
    """The node ids of the brokers a Metadata v1 (no topics) answer lists."""
    body = _roundtrip(sock, 3, 1, 2, struct.pack(">i", 0))
    (count,) = struct.unpack(">i", body[:4])
    pos = 4
    ids = set()
    for _ in range(count):
        (nid,) = struct.unpack(">i", body[pos : pos + 4])
        ids.add(nid)
        pos += 4
        (hlen,) = struct.unpack(">h", body[pos : pos + 2])
        pos += 2 + hlen + 4
        (rlen,) = struct.unpack(">h", body[pos : pos + 2])
        pos += 2 + max(rlen, 0)
    return ids


def broker_ids(host: str, port: int, timeout: float = 2.0) -> set[int] | None:
    """The brokers the broker at host:port lists in its Metadata; None if it does not answer."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            return _metadata_broker_ids(sock)
    except (OSError, struct.error):
        return None


def wait_for_registrations(addresses: list[tuple[str, int]], timeout: float = 90.0) -> None:
    """Until the broker at each address lists as many brokers as there are addresses:
    a cluster whose nodes serve is not yet a cluster whose nodes all know each other."""
    deadline = time.monotonic() + timeout
    for host, port in addresses:
        while len(broker_ids(host, port) or ()) < len(addresses):
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{host}:{port} lists {broker_ids(host, port)} after {timeout:.0f} s, "
                    f"not {len(addresses)} brokers"
                )
            time.sleep(0.1)


def probe(host: str, port: int, node_id: int | None = None, timeout: float = 2.0) -> bool:
    """True when the broker answers ApiVersions v0 without error and (given node_id)
    its Metadata v1 lists that node."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            body = _roundtrip(sock, 18, 0, 1, b"")
            (error,) = struct.unpack(">h", body[:2])
            if error != 0:
                return False
            return node_id is None or node_id in _metadata_broker_ids(sock)
    except (OSError, struct.error):
        return False


def wait_until_ready(
    host: str,
    port: int,
    *,
    node_id: int | None = None,
    timeout: float = 90.0,
    proc: subprocess.Popen | None = None,
) -> None:
    """Poll `probe` until it succeeds; TimeoutError, or KafkaStartError if `proc` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise KafkaStartError(f"process exited with code {proc.returncode} before it was ready")
        if probe(host, port, node_id):
            return
        time.sleep(0.2)
    raise TimeoutError(f"{host}:{port} did not answer within {timeout:.0f}s")


# --- the node -------------------------------------------------------------------------


class KafkaNode:
    """One Apache Kafka KRaft node (broker and controller) for tests; a context manager."""

    def __init__(
        self,
        *,
        port: int = 0,
        controller_port: int = 0,
        host: str = "127.0.0.1",
        node_id: int = 1,
        overrides: Mapping[str, object] | None = None,
        directory: str | os.PathLike[str] | None = None,
        keep_dir: bool = False,
        heap: str = HEAP,
        start_timeout: float = 120.0,
        as_shipped: bool = False,
        voters: str | None = None,
        cluster_id: str | None = None,
        sasl_port: int | None = None,
        ssl_port: int | None = None,
    ):
        self.host = host
        self.port = port or free_port(host)
        self.controller_port = controller_port or free_port(host)
        while self.controller_port == self.port:
            self.controller_port = free_port(host)
        # The SASL_PLAINTEXT listener's port, None without one.
        self.sasl_port = sasl_port
        while self.sasl_port is not None and self.sasl_port in (0, self.port, self.controller_port):
            self.sasl_port = free_port(host)
        # The SSL listener's port, None without one.
        self.ssl_port = ssl_port
        while self.ssl_port is not None and self.ssl_port in (
            0,
            self.port,
            self.controller_port,
            self.sasl_port,
        ):
            self.ssl_port = free_port(host)
        self.node_id = node_id
        self.overrides = {k: str(v) for k, v in (overrides or {}).items()}
        self._given_dir = Path(directory) if directory else None
        self.keep_dir = keep_dir or directory is not None
        self.heap = heap
        self.as_shipped = as_shipped
        self.start_timeout = start_timeout
        self.dir: Path | None = None
        self.proc: subprocess.Popen | None = None
        # A static quorum ("1@host:port,2@host:port,...", KafkaCluster's), or None:
        # a dynamic quorum of this node alone.
        self.voters = voters
        self.cluster_id = cluster_id or random_cluster_id()
        self.start_seconds: float | None = None
        self.format_seconds: float | None = None
        # time.monotonic() just before kafka.Kafka is spawned (benchmarks time start-up from it)
        self.spawned_at: float | None = None
        self._log = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def sasl_bootstrap(self) -> str | None:
        """The SASL_PLAINTEXT listener's address, if the node has one."""
        return None if self.sasl_port is None else f"{self.host}:{self.sasl_port}"

    @property
    def ssl_bootstrap(self) -> str | None:
        """The SSL listener's address, if the node has one."""
        return None if self.ssl_port is None else f"{self.host}:{self.ssl_port}"

    @property
    def log_path(self) -> Path:
        assert self.dir is not None
        return self.dir / "kafka.log"

    @property
    def config_path(self) -> Path:
        assert self.dir is not None
        return self.dir / "server.properties"

    def properties(self) -> dict[str, str]:
        assert self.dir is not None
        listeners = (
            f"PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.controller_port}"
        )
        protocols = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
        if self.sasl_port is not None:
            listeners += f",SASL_PLAINTEXT://{self.host}:{self.sasl_port}"
            protocols += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
        if self.ssl_port is not None:
            listeners += f",SSL://{self.host}:{self.ssl_port}"
            protocols += ",SSL:SSL"
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            **(
                {"controller.quorum.voters": self.voters}
                if self.voters
                else {"controller.quorum.bootstrap.servers": f"{self.host}:{self.controller_port}"}
            ),
            "listeners": listeners,
            "advertised.listeners": listeners,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": protocols,
            "log.dirs": str(self.dir / "data"),
            **DEFAULTS,
        }
        props.update(self.overrides)
        return props

    def tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except (OSError, AssertionError):
            return ""

    def start(self, format_storage: bool = True) -> KafkaNode:
        """Format a log directory and start the node on it; format_storage=False
        starts it again on the directory of an earlier start (after kill())."""
        t0 = time.monotonic()
        if format_storage:
            self.format()
        else:
            assert self.dir is not None, "start(format_storage=False) needs an earlier start()"
        self.launch()
        self.wait_ready(t0)
        return self

    def format(self) -> None:
        """Write server.properties into a fresh directory and format it (kafka-storage)."""
        kafka_cli.check_installed()
        t0 = time.monotonic()
        if self._given_dir is not None:
            self.dir = self._given_dir
            self.dir.mkdir(parents=True, exist_ok=True)
        else:
            self.dir = Path(tempfile.mkdtemp(prefix="kafka-node-"))
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        # A static quorum is formatted as is; a node alone forms a dynamic one.
        quorum = [] if self.voters else ["--standalone"]
        fmt = kafka_cli.run_tool(
            "kafka-storage",
            "format",
            "-t",
            self.cluster_id,
            "-c",
            str(self.config_path),
            *quorum,
            timeout=120,
        )
        self.format_seconds = time.monotonic() - t0
        if fmt.returncode != 0:
            self._cleanup()
            raise KafkaStartError(
                f"kafka-storage format failed (exit {fmt.returncode}):\n{fmt.stdout}{fmt.stderr}"
            )

    def launch(self) -> None:
        """Spawn kafka.Kafka on the formatted directory, without waiting for it."""
        assert self.dir is not None
        self._log = open(self.log_path, "a")
        self.spawned_at = time.monotonic()
        self.proc = kafka_cli.popen_tool(
            "kafka-server",
            str(self.config_path),
            heap=None if self.as_shipped else self.heap,
            as_shipped=self.as_shipped,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C in a terminal reaches only us; we stop it
        )

    def wait_ready(self, t0: float | None = None) -> None:
        """Wait until the launched node serves; KafkaStartError (the node stopped) if not."""
        assert self.proc is not None and self.spawned_at is not None
        t0 = self.spawned_at if t0 is None else t0
        try:
            wait_until_ready(
                self.host,
                self.port,
                node_id=self.node_id,
                timeout=self.start_timeout,
                proc=self.proc,
            )
        except (TimeoutError, KafkaStartError) as exc:
            log = self.tail()
            self.stop()
            raise KafkaStartError(f"Apache Kafka did not start: {exc}\n--- log ---\n{log}") from exc
        self.start_seconds = time.monotonic() - t0

    def kill(self) -> None:
        """SIGKILL the node, as a crash would; its directory stays for start(format_storage=False)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def stop(self, timeout: float = 20.0) -> int | None:
        code = None
        if self.proc is not None:
            code = kafka_cli.stop(self.proc, timeout=timeout)
            self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None
        self._cleanup()
        return code

    def _cleanup(self) -> None:
        if self.dir is not None and not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> KafkaNode:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# --- a cluster --------------------------------------------------------------------------

# Settings for a three-node test cluster: internal topics replicated as in
# production, and everything else as DEFAULTS.
CLUSTER_DEFAULTS: dict[str, str] = {
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "min.insync.replicas": "2",
}


class KafkaCluster:
    """Apache Kafka nodes (each broker and controller) in one KRaft quorum of
    static voters, on free loopback ports; a context manager.

        with KafkaCluster(3) as cluster:
            cluster.bootstrap            # "127.0.0.1:40123,127.0.0.1:40125,..."
            cluster.kill(2); cluster.restart(2)

    Every node is formatted with the same cluster id and voters, all are
    spawned before any is awaited (a quorum needs a majority to elect its
    first leader), then each is ready when it answers Metadata listing itself.
    """

    def __init__(
        self,
        n: int = 3,
        *,
        host: str = "127.0.0.1",
        overrides: Mapping[str, object] | None = None,
        heap: str = HEAP,
        as_shipped: bool = False,
        start_timeout: float = 180.0,
    ):
        cluster_id = random_cluster_id()
        ports = {node_id: (free_port(host), free_port(host)) for node_id in range(1, n + 1)}
        while len({p for pair in ports.values() for p in pair}) < 2 * n:
            ports = {node_id: (free_port(host), free_port(host)) for node_id in range(1, n + 1)}
        voters = ",".join(f"{i}@{host}:{c}" for i, (_, c) in ports.items())
        settings = {**CLUSTER_DEFAULTS, **{k: str(v) for k, v in (overrides or {}).items()}}
        self.nodes = {
            node_id: KafkaNode(
                port=port,
                controller_port=controller_port,
                host=host,
                node_id=node_id,
                overrides=settings,
                heap=heap,
                as_shipped=as_shipped,
                start_timeout=start_timeout,
                voters=voters,
                cluster_id=cluster_id,
            )
            for node_id, (port, controller_port) in ports.items()
        }
        self.start_seconds: float | None = None

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes.values())

    def start(self) -> KafkaCluster:
        t0 = time.monotonic()
        try:
            for node in self.nodes.values():
                node.format()
            for node in self.nodes.values():
                node.launch()
            for node in self.nodes.values():
                node.wait_ready(t0)
            self.wait_for_registrations()
        except BaseException:
            self.stop(graceful=False)
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def wait_for_registrations(self) -> None:
        wait_for_registrations([(n.host, n.port) for n in self.nodes.values()])

    def kill(self, node_id: int) -> None:
        self.nodes[node_id].kill()

    def restart(self, node_id: int) -> None:
        """Start a killed node again on its directory."""
        node = self.nodes[node_id]
        node.launch()
        node.wait_ready()
        self.wait_for_registrations()

    def running(self, node_id: int) -> bool:
        proc = self.nodes[node_id].proc
        return proc is not None and proc.poll() is None

    def stop(self, graceful: bool = True) -> None:
        """SIGTERM each node (a controlled shutdown), or with graceful=False kill
        them all first (tests and benchmarks throw the data away)."""
        for node in self.nodes.values():
            if not graceful:
                node.kill()
            node.stop()

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def parse_overrides(items: list[str], tool: str = "run_kafka") -> dict[str, str]:
    """--override KEY=VALUE arguments as a dict (tools/run_gregor.py's too)."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"{tool}: --override needs KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0, help="PLAINTEXT port (default: a free one)")
    ap.add_argument("--controller-port", type=int, default=0)
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--dir", help="node directory (kept; default: a temporary one, removed)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args(argv)
    node = KafkaNode(
        port=args.port,
        controller_port=args.controller_port,
        overrides=parse_overrides(args.override),
        directory=args.dir,
        keep_dir=args.keep,
    )
    try:
        node.start()
    except (KafkaStartError, kafka_cli.ToolMissing) as exc:
        print(f"run_kafka: {exc}", file=sys.stderr)
        return 1
    print(node.bootstrap, flush=True)
    print(
        f"run_kafka: Apache Kafka {KAFKA_VERSION} ready in {node.start_seconds:.1f}s "
        f"(format {node.format_seconds:.1f}s); dir {node.dir}; log {node.log_path}. "
        "Ctrl-C stops it.",
        file=sys.stderr,
        flush=True,
    )
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    try:
        while not stop and node.proc is not None and node.proc.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    exited = node.proc is not None and node.proc.poll() is not None
    if exited:
        print(f"run_kafka: Kafka exited by itself:\n{node.tail()}", file=sys.stderr)
    node.stop()
    return 1 if exited else 0


if __name__ == "__main__":
    sys.exit(main())
