"""The franz-go command-line client (compat_tests/franz), built into .cache/franz/."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

import go_toolchain  # noqa: E402  (tools/go_toolchain.py: the machine's Go, or Go 1.26 from the proxy)

SOURCE = REPO / "compat_tests" / "franz"
BUILD_DIR = REPO / ".cache" / "franz"
BINARY = BUILD_DIR / "franz"
STAMP = BUILD_DIR / ".stamp"


class FranzBuildError(RuntimeError):
    pass


def _source_hash() -> str:
    h = hashlib.sha256()
    for name in ("go.mod", "go.sum", "main.go"):
        h.update(name.encode() + b"\0" + (SOURCE / name).read_bytes())
    return h.hexdigest()


def binary() -> Path:
    """The franz binary: COMPAT_FRANZ, or .cache/franz/franz built when stale."""
    override = os.environ.get("COMPAT_FRANZ")
    if override:
        return Path(override)
    return build()


def build(quiet: bool = True) -> Path:
    """Build compat_tests/franz with Go 1.26+ (tools/go_toolchain.py) unless the stamp matches."""
    want = _source_hash()
    if BINARY.exists() and STAMP.exists() and STAMP.read_text().strip() == want:
        return BINARY
    try:
        go = go_toolchain.go_binary()
    except go_toolchain.GoUnavailable as e:
        raise FranzBuildError(f"no Go to build compat_tests/franz with: {e}") from e
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [go, "build", "-trimpath", "-o", str(BINARY), "."],
        cwd=SOURCE,
        capture_output=True,
        text=True,
        env={**os.environ, "GOFLAGS": os.environ.get("GOFLAGS", "-mod=readonly")},
    )
    if proc.returncode != 0:
        raise FranzBuildError(f"go build failed in {SOURCE}:\n{proc.stdout}{proc.stderr}")
    STAMP.write_text(want + "\n")
    return BINARY


@dataclass
class Result:
    returncode: int
    lines: list[dict] = field(default_factory=list)
    stderr: str = ""

    @property
    def errors(self) -> list[dict]:
        return [line for line in self.lines if "error" in line]

    @property
    def records(self) -> list[dict]:
        return [line for line in self.lines if "value" in line and "offset" in line]

    def __str__(self) -> str:
        return f"exit {self.returncode}; stdout: {self.lines}; stderr: {self.stderr[-2000:]}"


def run(
    command: str, *args, brokers: str, input: str | None = None, timeout: float = 60.0
) -> Result:
    argv = [str(binary()), *command.split(), "--brokers", brokers, *map(str, args)]
    proc = subprocess.run(
        argv,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = []
    for line in proc.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            lines.append(json.loads(line))
    return Result(proc.returncode, lines, proc.stderr)


def records_input(records: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)
