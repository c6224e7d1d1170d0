"""Apache Kafka's Java tools, through tools/kafka_cli.py (loaded by path, not as a package)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_TOOLS = REPO / "tools"


def _load():
    if "kafka_cli" in sys.modules:
        return sys.modules["kafka_cli"]
    if str(_TOOLS) not in sys.path:
        sys.path.insert(0, str(_TOOLS))  # kafka_cli imports its sibling kafka_jars
    spec = importlib.util.spec_from_file_location("kafka_cli", _TOOLS / "kafka_cli.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["kafka_cli"] = module
    spec.loader.exec_module(module)
    return module


kafka_cli = _load()
ToolMissing = kafka_cli.ToolMissing


def run(tool: str, *args, input: str | None = None, timeout: float = 60.0):
    """Run a Kafka tool; CompletedProcess with text stdout/stderr."""
    return kafka_cli.run_tool(tool, *map(str, args), input=input, timeout=timeout)


def popen(tool: str, *args, **kwargs) -> subprocess.Popen:
    return kafka_cli.popen_tool(tool, *map(str, args), **kwargs)


def stop(proc: subprocess.Popen, timeout: float = 15.0) -> int:
    return kafka_cli.stop(proc, timeout=timeout)


def console_round_trip(bootstrap: str, topic: str, config: str, lines: list[str]) -> None:
    """Kafka's console producer writes `lines`, with the client settings of
    the properties file `config`, and its console consumer reads them back
    from the beginning; each must end cleanly."""
    common = ("--bootstrap-server", bootstrap, "--command-config", config, "--topic", topic)
    text = "".join(f"{line}\n" for line in lines)
    proc = run("kafka-console-producer", *common, input=text)
    assert proc.returncode == 0, proc.stderr
    assert "ERROR" not in proc.stderr, proc.stderr
    proc = run(
        "kafka-console-consumer",
        *common,
        "--from-beginning",
        "--max-messages",
        str(len(lines)),
        "--timeout-ms",
        "20000",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == text
    assert f"Processed a total of {len(lines)} messages" in proc.stderr


def properties_file(props: dict[str, object], directory: str | Path | None = None) -> str:
    """Write a .properties file (a producer/consumer/command config) and return its path."""
    fd = tempfile.NamedTemporaryFile(
        "w", suffix=".properties", prefix="compat-", dir=directory, delete=False
    )
    with fd:
        for k, v in props.items():
            fd.write(f"{k}={v}\n")
    return fd.name


def table(text: str) -> list[dict[str, str]]:
    """The rows of a tool's tab-separated table (kafka-transactions.sh), by header."""
    lines = [line for line in text.splitlines() if "\t" in line]
    if not lines:
        return []
    header = [h.strip() for h in lines[0].split("\t")]
    return [
        dict(zip(header, (c.strip() for c in line.split("\t")), strict=False)) for line in lines[1:]
    ]


def json_lines(text: str) -> list[dict]:
    """The JSON objects among a tool's output lines (VerifiableProducer/Consumer events)."""
    events = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return events


def kcat(*args, input: str | bytes | None = None, timeout: float = 30.0, text: bool = True):
    return kafka_cli.run_kcat(*map(str, args), input=input, timeout=timeout, text=text)


class EventStream:
    """A long-running Java tool printing JSON events (VerifiableConsumer/Producer).

    A thread collects the events; wait_for() polls them. stop() sends SIGTERM (the
    tool shuts down cleanly: a consumer leaves its group) and returns all output.
    """

    def __init__(self, tool: str, *args):
        import threading

        self.proc = popen(tool, *args)
        self.events: list[dict] = []
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._stderr: list[str] = []
        threading.Thread(target=self._read, args=(self.proc.stdout, True), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, False), daemon=True).start()

    def _read(self, stream, is_stdout):
        for line in stream:
            with self._cond:
                if not is_stdout:
                    self._stderr.append(line)
                    continue
                self.lines.append(line)
                line = line.strip()
                if line.startswith("{"):
                    try:
                        self.events.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass
                self._cond.notify_all()

    @property
    def stderr(self) -> str:
        with self._cond:
            return "".join(self._stderr)

    def named(self, name: str) -> list[dict]:
        with self._cond:
            return [e for e in self.events if e.get("name") == name]

    def wait_for(self, predicate, timeout: float = 30.0, what: str = ""):
        """Until predicate(self) is truthy (returned); AssertionError with the output if not."""
        import time

        deadline = time.monotonic() + timeout
        while True:
            result = predicate(self)
            if result:
                return result
            if time.monotonic() > deadline or self.proc.poll() is not None:
                result = predicate(self)
                if result:
                    return result
                raise AssertionError(
                    f"timed out waiting for {what or predicate} (exit {self.proc.poll()}); "
                    f"events: {self.events[-10:]}; stderr: {self.stderr[-3000:]}"
                )
            with self._cond:
                self._cond.wait(0.2)

    def stop(self, timeout: float = 20.0) -> int:
        return stop(self.proc, timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
