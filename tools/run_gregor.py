#!/usr/bin/env python3
"""Run a Gregor broker process: the one way tests, the compatibility runner and the
benchmarks start Gregor.

    python tools/run_gregor.py                      # prints the bootstrap address, Ctrl-C stops
    python tools/run_gregor.py --port 9092 --override num.partitions=3 --dir /tmp/g

    from tools.run_gregor import GregorNode
    with GregorNode(tmp_path / "data", {"num.partitions": 3}) as node:
        node.bootstrap          # "127.0.0.1:40123"

It is started exactly as a user starts it: `python -m broker serve --override
listeners=PLAINTEXT://127.0.0.1:<port> --override log.dirs=<dir> --override
node.id=<n>` and the caller's overrides (which win). Port 0 (the default) lets
the broker pick a free one; the node is ready when it logs "listening on", which
it does once it serves requests, and the port is read from that line. A restart
(start() again after stop() or kill()) reuses the data directory and the port,
so clients reconnect to the same address. stop() sends SIGTERM (Gregor's
graceful shutdown) and waits, kill() SIGKILL; both return the exit status.

`python -m broker` runs the `broker` package of the directory it starts in:
this checkout, or the one GREGOR_SOURCE names (bench/run.py --brokers gregor
with GREGOR_SOURCE=<an older checkout> measures that commit).

The broker's output (stdout and stderr) is kept in memory (log(), tail(),
wait_for_log()) and, given log_path, appended to that file as it comes.
Standard library only, like tools/run_kafka.py, so that code which must not
import Gregor (compat_tests/) can start it.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

try:
    from . import run_kafka, zookeeper
except ImportError:  # run as a plain script, or imported with tools/ on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import run_kafka  # type: ignore[no-redef]
    import zookeeper  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parent.parent
# The source tree the broker runs from: this checkout, or GREGOR_SOURCE (another
# checkout of Gregor, e.g. an older commit, to benchmark one beside the other).
SOURCE = Path(os.environ.get("GREGOR_SOURCE") or REPO)
LISTENING = re.compile(r"listening on ([A-Za-z0-9_]+)://(\S+):(\d+)")


class GregorStartError(RuntimeError):
    """The broker exited, or did not report that it listens, before the timeout."""


class GregorNode:
    """One `gregor serve` process; a context manager (start, then SIGTERM)."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        overrides: Mapping[str, object] | None = None,
        *,
        node_id: int = 1,
        port: int = 0,
        host: str = "127.0.0.1",
        log_path: str | os.PathLike[str] | None = None,
        new_session: bool = False,
    ):
        self.data_dir = Path(data_dir)
        self.overrides = dict(overrides or {})
        self.node_id = node_id
        self.host = host
        # The port asked for; after the first start, the port the broker got.
        self.requested_port = port
        self.port: int | None = port or None
        # Every listener's bound port by name, after a start.
        self.ports: dict[str, int] = {}
        self.log_path = Path(log_path) if log_path is not None else None
        # A session of its own: Ctrl-C in a terminal reaches only the caller, who stops it.
        self.new_session = new_session
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []
        self.start_seconds: float | None = None
        # time.monotonic() just before the process is spawned (benchmarks time start-up from it)
        self.spawned_at: float | None = None
        self._reader: threading.Thread | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def settings(self) -> dict[str, object]:
        return {
            "listeners": f"PLAINTEXT://{self.host}:{self.requested_port}",
            "log.dirs": str(self.data_dir),
            "node.id": self.node_id,
            **self.overrides,
        }

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "broker", "serve"]
        for key, value in self.settings().items():
            cmd += ["--override", f"{key}={value}"]
        return cmd

    def start(self, timeout: float = 60) -> GregorNode:
        """Spawn the broker and wait until it listens; GregorStartError if it does not."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        t0 = time.monotonic()
        self.output = []
        listening = threading.Event()
        found: dict[str, int] = {}
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.spawned_at = time.monotonic()
        self.proc = subprocess.Popen(
            self.command(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            cwd=SOURCE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=self.new_session,
        )
        self._reader = threading.Thread(
            target=self._read, args=(self.proc, listening, found), daemon=True
        )
        self._reader.start()
        if not listening.wait(timeout):
            self.kill()
            raise GregorStartError(f"Gregor did not start in {timeout:.0f} s:\n{self.tail()}")
        if not found:
            code = self.proc.wait()
            self._reader.join(5)
            raise GregorStartError(f"Gregor exited with {code}:\n{self.tail()}")
        self.ports = dict(found)
        self.port = found.get("PLAINTEXT", next(iter(found.values())))
        self.requested_port = self.port
        self.start_seconds = time.monotonic() - t0
        return self

    def _read(
        self, proc: subprocess.Popen, listening: threading.Event, found: dict[str, int]
    ) -> None:
        """The broker's output, line by line, until it exits; `listening` is set once
        every listener has its "listening on" line, or at the end of the output,
        whichever comes first."""
        expected = len(str(self.settings()["listeners"]).split(","))
        assert proc.stdout is not None
        log = open(self.log_path, "a") if self.log_path is not None else None
        try:
            for line in proc.stdout:
                self.output.append(line)
                if log is not None:
                    log.write(line)
                    log.flush()
                if not listening.is_set():
                    match = LISTENING.search(line)
                    if match:
                        found[match.group(1)] = int(match.group(3))
                        if len(found) >= expected:
                            listening.set()
        finally:
            listening.set()
            if log is not None:
                log.close()

    def log(self) -> str:
        """Everything the current process has written so far."""
        return "".join(self.output)

    def tail(self, chars: int = 4000) -> str:
        return self.log()[-chars:]

    def wait_for_log(self, text: str, timeout: float = 10) -> bool:
        """Whether `text` appears in the output within `timeout` seconds.

        The broker writes a line before it acts (closes a socket, say), but the
        thread that reads its output may not have taken the line yet.
        """
        deadline = time.monotonic() + timeout
        while text not in self.log():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM and wait (SIGKILL after `timeout`): the exit status, 0 for a graceful stop."""
        return self._signal(signal.SIGTERM, timeout)

    def kill(self) -> int:
        """SIGKILL, as a crash: the data stays for the next start()."""
        return self._signal(signal.SIGKILL, 30)

    def _signal(self, sig: int, timeout: float) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._reader is not None:
            self._reader.join(5)
        return self.proc.returncode

    def __enter__(self) -> GregorNode:
        return self.start()

    def __exit__(self, *exc) -> None:
        if self.running():
            self.stop()


class GregorCluster:
    """ZooKeeper and `n` Gregor brokers that find each other through it (under
    `chroot`), on loopback; a context manager. The one way bench/, the
    compatibility suite and `make cluster` start a Gregor cluster.

        with GregorCluster(tmp_path, {"min.insync.replicas": 2}) as cluster:
            cluster.bootstrap            # "127.0.0.1:40123,127.0.0.1:40125,..."
            cluster.kill(2); cluster.restart(2)

    `zookeeper` is an already running ZooKeeperNode, or None to start one in
    root/zookeeper (stopped with the cluster). Broker N keeps its data in
    root/broker-N and its output in root/broker-N.log; `ports` fixes the
    brokers' ports (default: free ones, kept across restarts). start() and
    restart() return once every broker lists all of them in its Metadata.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        overrides: Mapping[str, object] | None = None,
        *,
        n: int = 3,
        zookeeper_node: zookeeper.ZooKeeperNode | None = None,
        chroot: str = "/gregor",
        ports: list[int] | None = None,
        new_session: bool = False,
    ):
        self.root = Path(root)
        self._own_zookeeper = zookeeper_node is None
        self.zookeeper = zookeeper_node or zookeeper.ZooKeeperNode(
            directory=self.root / "zookeeper"
        )
        self.chroot = chroot
        self.overrides = dict(overrides or {})
        self.nodes = {
            node_id: GregorNode(
                self.root / f"broker-{node_id}",
                {"zookeeper.connect": f"{self.zookeeper.connect}{chroot}", **self.overrides},
                node_id=node_id,
                port=ports[node_id - 1] if ports else 0,
                log_path=self.root / f"broker-{node_id}.log",
                new_session=new_session,
            )
            for node_id in range(1, n + 1)
        }

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes.values())

    def start(self, timeout: float = 60) -> GregorCluster:
        try:
            if self._own_zookeeper:
                self.zookeeper.start()
            for node in self.nodes.values():
                node.start(timeout)
            self.wait_for_registrations()
        except BaseException:
            self.stop(graceful=False)
            raise
        return self

    def wait_for_registrations(self) -> None:
        run_kafka.wait_for_registrations([(n.host, n.port or 0) for n in self.nodes.values()])

    def kill(self, node_id: int) -> None:
        self.nodes[node_id].kill()

    def restart(self, node_id: int, timeout: float = 60) -> None:
        """Start a stopped or killed broker again on its data and port."""
        self.nodes[node_id].start(timeout)
        self.wait_for_registrations()

    def running(self, node_id: int) -> bool:
        return self.nodes[node_id].running()

    def stop(self, graceful: bool = True) -> None:
        """SIGTERM every running broker (controlled shutdowns), or kill them
        (graceful=False), then the cluster's own ZooKeeper."""
        for node in self.nodes.values():
            if node.running() and graceful:
                node.stop()
            elif node.running():
                node.kill()
        if self._own_zookeeper:
            self.zookeeper.stop()

    def __enter__(self) -> GregorCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0, help="PLAINTEXT port (default: a free one)")
    ap.add_argument("--node-id", type=int, default=1)
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--dir", default=str(REPO / "data" / "run-gregor"), help="data directory")
    ap.add_argument("--log", help="also append the broker's output to this file")
    args = ap.parse_args(argv)
    node = GregorNode(
        args.dir,
        run_kafka.parse_overrides(args.override, "run_gregor"),
        node_id=args.node_id,
        port=args.port,
        log_path=args.log,
        new_session=True,
    )
    try:
        node.start()
    except GregorStartError as exc:
        print(f"run_gregor: {exc}", file=sys.stderr)
        return 1
    print(node.bootstrap, flush=True)
    print(
        f"run_gregor: Gregor ready in {node.start_seconds:.1f}s; data {node.data_dir}. "
        "Ctrl-C stops it.",
        file=sys.stderr,
        flush=True,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.is_set() and node.running():
            stop.wait(0.5)
    except KeyboardInterrupt:
        pass
    exited = not node.running()
    if exited:
        print(f"run_gregor: Gregor exited by itself:\n{node.tail()}", file=sys.stderr)
    node.stop()
    return 1 if exited else 0


if __name__ == "__main__":
    sys.exit(main())
