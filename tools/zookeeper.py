#!/usr/bin/env python3
"""Run a ZooKeeper server (standalone) on a free loopback port, for Gregor clusters.

    python tools/zookeeper.py                  # prints host:port, Ctrl-C stops it
    python tools/zookeeper.py --port 2181 --dir ./data/zookeeper

    from tools.zookeeper import ZooKeeperNode
    with ZooKeeperNode() as zk:
        zk.connect                # "127.0.0.1:40123"

ZooKeeper comes from Debian's `zookeeper` package (tools/install_debian.sh
installs it): /usr/share/java/zookeeper.jar, whose manifest names its
dependencies. The server binds loopback only, keeps its data in a temporary
folder (removed at stop unless a directory is given), and is ready when it
answers the `srvr` four-letter command. Stopping sends SIGTERM, then SIGKILL.
Standard library only, like the other runners in tools/.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
# SLF4J's binding to java.util.logging (Debian's libslf4j-java, a dependency of
# the zookeeper package): without a binding ZooKeeper logs nothing at all, and
# its log is what tells why a session expired.
SLF4J_BINDING = Path("/usr/share/java/slf4j-jdk14.jar")


class ZooKeeperStartError(RuntimeError):
    """The server did not start; the message carries the end of its log."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def four_letter(host: str, port: int, command: str = "srvr", timeout: float = 2.0) -> str:
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(command.encode())
        chunks = []
        while chunk := s.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


class ZooKeeperNode:
    def __init__(
        self,
        port: int | None = None,
        directory: str | Path | None = None,
        tick_ms: int = 500,
        host: str = "127.0.0.1",
    ):
        self.host = host
        self.port = port or free_port(host)
        self._own_dir = directory is None
        self.dir = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="zookeeper-"))
        self.tick_ms = tick_ms
        self.proc: subprocess.Popen | None = None
        self.log_path = self.dir / "zookeeper.log"

    @property
    def connect(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 60.0) -> ZooKeeperNode:
        if not ZOOKEEPER_JAR.exists():
            raise ZooKeeperStartError(
                f"{ZOOKEEPER_JAR} is missing: install Debian's zookeeper package "
                "(tools/install_debian.sh, run by `make clients`)"
            )
        data = self.dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        cfg = self.dir / "zoo.cfg"
        cfg.write_text(
            f"tickTime={self.tick_ms}\n"
            f"dataDir={data}\n"
            f"clientPort={self.port}\n"
            f"clientPortAddress={self.host}\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=srvr,ruok,cons\n"
            f"minSessionTimeout={2 * self.tick_ms}\n"
            "maxSessionTimeout=60000\n"
        )
        java = shutil.which("java") or "java"
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            [
                java,
                "-Xmx256m",
                "-cp",
                os.pathsep.join(str(jar) for jar in (ZOOKEEPER_JAR, SLF4J_BINDING) if jar.exists()),
                f"-Dzookeeper.log.dir={self.dir}",
                # One line per record, with milliseconds (JUL's default is two
                # lines, to the second).
                "-Djava.util.logging.SimpleFormatter.format=%1$tF %1$tT,%1$tL %4$s %3$s: %5$s%6$s%n",
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                str(cfg),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise ZooKeeperStartError(
                    f"ZooKeeper exited {self.proc.returncode}:\n{self.tail()}"
                )
            try:
                if "Zookeeper version" in four_letter(self.host, self.port):
                    return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise ZooKeeperStartError(f"ZooKeeper did not answer in {timeout}s:\n{self.tail()}")
            time.sleep(0.1)

    def connected_sessions(self) -> set[int]:
        """The ids of the sessions connected to this server now (`cons`)."""
        return {
            int(sid, 16)
            for sid in re.findall(r"sid=0x([0-9a-f]+)", four_letter(self.host, self.port, "cons"))
        }

    def events(self, last: int = 60) -> str:
        """Its warnings (each with the exception it names), session expiries
        and refusals, the last `last` lines of them: for a failed test."""
        wanted = re.compile(r" (WARNING|SEVERE) |Expiring session|Invalid session|Refusing session")
        kept: list[str] = []
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        previous = ""
        for line in lines:
            # The line after a warning that is not a record of its own names
            # the warning's exception; the stack frames below it are left out.
            exception = not line[:1].isspace() and not line[:1].isdigit()
            if wanted.search(line) or (exception and wanted.search(previous)):
                kept.append(line)
            previous = line
        return "\n".join(kept[-last:])

    def tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def close(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> ZooKeeperNode:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int)
    parser.add_argument("--dir", help="data directory (kept); default: a temporary one")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    node = ZooKeeperNode(port=args.port, directory=args.dir).start()
    print(node.connect, flush=True)
    try:
        while True:
            signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        node.close()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
