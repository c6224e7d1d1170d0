"""The client families the benchmark drives, behind one interface.

- java: Apache Kafka's own kafka-producer-perf-test / kafka-consumer-perf-test
  (tools/kafka_cli.py, the jars of `make clients`), run with Kafka's own JVM flags;
- confluent: confluent-kafka (librdkafka), bench/clients/confluent_perf.py in a
  process of its own;
- franz: franz-go, bench/franz (built with the Go of tools/go_toolchain.py).

Each runs as a separate process, so its CPU is never the harness's, and reports
a ClientResult: what it moved, how long it took (from its first record, as the
Java tools count), the requests it sent, and latencies where it measures them.
Producers send one random payload of upper-case letters in every record, as
kafka-producer-perf-test does, so compression sees the same data everywhere.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field

FAMILIES = ("java", "confluent", "franz")
# Families that can run a steady-rate end-to-end latency test (Kafka's own
# kafka-e2e-latency sends one record at a time and waits for it: not a load).
E2E_FAMILIES = ("confluent", "franz")


class ClientError(RuntimeError):
    """A client run failed or moved fewer records than asked."""


@dataclass(frozen=True)
class ProduceSpec:
    topic: str
    records: int
    record_size: int = 1024
    acks: str = "1"
    idempotent: bool = False
    linger_ms: int = 5
    batch_bytes: int = 65536
    codec: str = "none"
    # Round-robin over this many partitions; 0: the client's default (sticky) partitioner.
    partitions: int = 0
    # Producers sharing the records, each with its own connection (the one-thread ceiling).
    clients: int = 1
    # Records per transaction of a transactional producer; 0: not transactional.
    transaction_records: int = 0


@dataclass(frozen=True)
class ConsumeSpec:
    topic: str
    records: int
    record_size: int = 1024
    group: str | None = None  # None: one consumer assigned every partition from the start
    members: int = 1


@dataclass(frozen=True)
class E2ESpec:
    topic: str
    rate: int  # records per second
    seconds: float
    record_size: int = 1024
    warmup: float = 1.0  # records sent in this first part are not sampled


@dataclass
class ClientResult:
    records: int
    bytes: int
    seconds: float
    requests: int | None = None
    latency_ms: dict[str, float] = field(default_factory=dict)  # p50, p99, p999
    extra: dict = field(default_factory=dict)

    @property
    def mb_per_s(self) -> float:
        return self.bytes / self.seconds / 1e6

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds


def result_from_json(text: str, what: str) -> ClientResult:
    """A ClientResult from the one JSON object confluent_perf.py and franzperf print."""
    lines = [line for line in text.splitlines() if line.startswith("{")]
    if not lines:
        raise ClientError(f"{what}: no result printed")
    out = json.loads(lines[-1])
    if out.get("error") or out.get("errors"):
        raise ClientError(f"{what}: {out.get('error') or str(out['errors']) + ' records failed'}")
    latency = {
        k: v for k, v in (out.get("latency_ms") or {}).items() if k in ("p50", "p99", "p999")
    }
    known = {"records", "bytes", "seconds", "requests", "latency_ms"}
    return ClientResult(
        records=int(out["records"]),
        bytes=int(out.get("bytes", 0)),
        seconds=float(out.get("seconds", 0.0)),
        requests=out.get("requests"),
        latency_ms=latency,
        extra={k: v for k, v in out.items() if k not in known},
    )


def run_process(argv: list[str], what: str, timeout: float, cwd=None) -> str:
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
        )
    except subprocess.TimeoutExpired as exc:
        raise ClientError(f"{what}: no result after {timeout:.0f} s") from exc
    if proc.returncode != 0:
        raise ClientError(
            f"{what}: exit {proc.returncode}\n{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}"
        )
    return proc.stdout


def family_module(family: str):
    if family == "java":
        from bench.clients import java

        return java
    if family == "confluent":
        from bench.clients import confluent

        return confluent
    if family == "franz":
        from bench.clients import franz

        return franz
    raise ValueError(f"unknown client family {family!r}")


def produce(family: str, bootstrap: str, spec: ProduceSpec, timeout: float) -> ClientResult:
    return family_module(family).produce(bootstrap, spec, timeout)


def consume(family: str, bootstrap: str, spec: ConsumeSpec, timeout: float) -> ClientResult:
    return family_module(family).consume(bootstrap, spec, timeout)


def e2e(family: str, bootstrap: str, spec: E2ESpec, timeout: float) -> ClientResult:
    return family_module(family).e2e(bootstrap, spec, timeout)


def prepare(families: list[str]) -> None:
    """Whatever a family needs before the clock runs (franz: a build)."""
    for family in families:
        module = family_module(family)
        if hasattr(module, "prepare"):
            module.prepare()
