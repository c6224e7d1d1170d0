"""A real Gregor broker in a child process, for tests that talk to it with real clients.

    with GregorProcess(tmp_path) as broker:
        Producer({"bootstrap.servers": broker.bootstrap})

It is started exactly as tools outside the project start it:
`gregor serve --override listeners=PLAINTEXT://127.0.0.1:<port>
--override log.dirs=<dir> --override node.id=<n>`, on port 0 by default (the
port is read from the broker's "listening on" log line). `stop()` sends
SIGTERM, `kill()` SIGKILL; `start()` again reuses the same data directory.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

_LISTENING = re.compile(r"listening on PLAINTEXT://([^:\s]+):(\d+)")


class GregorProcess:
    def __init__(
        self,
        data_dir: Path,
        overrides: dict[str, object] | None = None,
        node_id: int = 1,
        port: int = 0,
    ):
        self.data_dir = Path(data_dir)
        self.overrides = dict(overrides or {})
        self.node_id = node_id
        self.requested_port = port
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []
        self._reader: threading.Thread | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        args = [
            sys.executable, "-m", "broker", "serve",
            "--override", f"listeners=PLAINTEXT://127.0.0.1:{self.requested_port}",
            "--override", f"log.dirs={self.data_dir}",
            "--override", f"node.id={self.node_id}",
        ]  # fmt: skip
        for key, value in self.overrides.items():
            args += ["--override", f"{key}={value}"]
        return args

    def start(self, timeout: float = 30) -> GregorProcess:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.output = []
        self.port = None
        ready = threading.Event()
        self.proc = subprocess.Popen(
            self.command(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

        def read(proc=self.proc):
            for line in proc.stdout:
                self.output.append(line)
                m = _LISTENING.search(line)
                if m and not ready.is_set():
                    self.port = int(m.group(2))
                    ready.set()
            ready.set()

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while not ready.wait(0.05):
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError("Gregor did not start in time:\n" + self.log())
        if self.port is None:
            raise RuntimeError(f"Gregor exited with {self.proc.wait()}:\n{self.log()}")
        # Later restarts keep the port, so clients can reconnect to the same address.
        self.requested_port = self.port
        return self

    def log(self) -> str:
        return "".join(self.output)

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

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM and wait: the exit code (0 for a graceful stop)."""
        return self._signal(signal.SIGTERM, timeout)

    def kill(self) -> int:
        return self._signal(signal.SIGKILL, 30)

    def _signal(self, sig, timeout: float) -> int:
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

    def __enter__(self) -> GregorProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.stop()
