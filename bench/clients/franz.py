"""franz-go: bench/franz (franzperf), built into .cache/bench-franz/ when its source changes."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from bench.clients import ClientResult, ConsumeSpec, E2ESpec, ProduceSpec, result_from_json
from bench.clients import run_process as _run

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

import go_toolchain  # noqa: E402  (tools/go_toolchain.py: the machine's Go, or Go 1.26 from the proxy)

SOURCE = REPO / "bench" / "franz"
BUILD_DIR = REPO / ".cache" / "bench-franz"
BINARY = BUILD_DIR / "franzperf"
STAMP = BUILD_DIR / ".stamp"


class FranzBuildError(RuntimeError):
    pass


def _source_hash() -> str:
    h = hashlib.sha256()
    for name in ("go.mod", "go.sum", "main.go"):
        h.update(name.encode() + b"\0" + (SOURCE / name).read_bytes())
    return h.hexdigest()


def prepare() -> Path:
    """Build franzperf unless the stamp says the binary is of this source."""
    want = _source_hash()
    if BINARY.exists() and STAMP.exists() and STAMP.read_text().strip() == want:
        return BINARY
    try:
        go = go_toolchain.go_binary()
    except go_toolchain.GoUnavailable as exc:
        raise FranzBuildError(f"no Go to build bench/franz with: {exc}") from exc
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


def _call(command: str, bootstrap: str, args: list, timeout: float) -> ClientResult:
    argv = [str(BINARY), command, "--brokers", bootstrap, "--timeout", f"{timeout:.0f}s"]
    argv += [str(a) for a in args]
    return result_from_json(_run(argv, f"franz {command}", timeout + 30), f"franz {command}")


def produce(bootstrap: str, spec: ProduceSpec, timeout: float) -> ClientResult:
    args = ["--topic", spec.topic, "--records", spec.records, "--record-size", spec.record_size]
    args += ["--acks", spec.acks, "--linger", f"{spec.linger_ms}ms"]
    args += ["--batch-bytes", spec.batch_bytes, "--codec", spec.codec]
    args += ["--partitions", spec.partitions, "--clients", spec.clients]
    if spec.idempotent:
        args.append("--idempotent")
    return _call("produce", bootstrap, args, timeout)


def consume(bootstrap: str, spec: ConsumeSpec, timeout: float) -> ClientResult:
    args = ["--topic", spec.topic, "--records", spec.records]
    if spec.group:
        args += ["--group", spec.group, "--members", spec.members]
    return _call("consume", bootstrap, args, timeout)


def e2e(bootstrap: str, spec: E2ESpec, timeout: float) -> ClientResult:
    args = ["--topic", spec.topic, "--rate", spec.rate, "--record-size", spec.record_size]
    args += ["--seconds", f"{spec.seconds}s", "--warmup", f"{spec.warmup}s"]
    return _call("e2e", bootstrap, args, timeout)
