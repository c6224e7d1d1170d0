"""The workloads of `make bench`, in the order a round runs them, and what they share.

Each workload module has a `run(ctx) -> list[Figure]` and a WORKLOAD entry
here. A round starts one broker, runs every selected workload against it, and
stops it; `recovery` kills and restarts the broker, so it runs last.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from bench import pagecache
from bench.brokers import BenchBroker
from bench.clients import ClientResult
from bench.figures import GIB, Figure
from bench.procstat import Usage

MIB = 1 << 20


@dataclass
class Sizes:
    """How much each workload moves; `make bench` uses these, --scale shrinks them."""

    records: int = 1_000_000  # 1 KiB records per produce run (workloads 1, 2, 7)
    small_records: int = 2_000_000  # 100-byte records (workload 3)
    consume_bytes: int = GIB  # read back from the earliest offset (workload 4)
    latency_seconds: float = 30.0  # per load and client (workload 5)
    partitions: int = 1000  # the many-partition topic (workload 6)
    metadata_requests: int = 300  # Metadata requests timed one after another (workload 6)
    partition_records: int = 300_000  # 1 KiB records round-robin over all of them (workload 6)
    idle_connections: int = 1000  # (workload 7)
    ceiling_records: int = 3_000_000  # 1 KiB records for the one-thread ceiling
    ceiling_small_records: int = 10_000_000  # 100-byte records for the one-thread ceiling
    ceiling_clients: int = 4  # producers at once, more than one event loop can take
    recovery_bytes: int = 10 * GIB  # the log recovered after kill -9 (workload 8)
    timeout: float = 1800.0  # seconds any one client run may take

    # What --scale leaves alone: the shape of a workload rather than its length.
    UNSCALED = ("partitions", "idle_connections", "ceiling_clients", "timeout")

    def scaled(self, scale: float) -> Sizes:
        changes = {}
        for f in dataclasses.fields(self):
            if f.name in self.UNSCALED:
                continue
            value = getattr(self, f.name)
            if f.name == "latency_seconds":
                changes[f.name] = max(2.0, value * scale)
            else:  # at least a thousand (records, bytes), never more than the full size
                changes[f.name] = max(min(value, 1000), int(value * scale))
        return dataclasses.replace(self, **changes)

    @classmethod
    def smoke(cls) -> Sizes:
        """Every code path, in seconds: `make bench-smoke`."""
        return cls(
            records=2000,
            small_records=2000,
            consume_bytes=2 * MIB,
            latency_seconds=1.0,
            partitions=12,
            metadata_requests=5,
            partition_records=1200,
            idle_connections=10,
            ceiling_records=3000,
            ceiling_small_records=3000,
            ceiling_clients=2,
            recovery_bytes=4 * MIB,
            timeout=120.0,
        )

    def with_overrides(self, items: list[str]) -> Sizes:
        """`name=value` pairs from --set."""
        changes = {}
        names = {f.name: f for f in dataclasses.fields(self)}
        for item in items:
            name, sep, value = item.partition("=")
            if not sep or name not in names:
                raise ValueError(f"--set needs one of {', '.join(names)} = a number, got {item!r}")
            changes[name] = float(value) if isinstance(getattr(self, name), float) else int(value)
        return dataclasses.replace(self, **changes)


@dataclass
class Context:
    """What a workload gets: the running broker, the sizes, the client families."""

    broker: BenchBroker
    sizes: Sizes
    clients: tuple[str, ...]
    smoke: bool = False
    log: Callable[[str], None] = print
    # MB/s each family produced in workload 1 (uncompressed) this round on this broker:
    # workload 5 offers half of it.
    peaks: dict[str, float] = field(default_factory=dict)
    idle_rss: int = 0
    # Only these cases of the produce workloads (bench/profile.py --case); None: all.
    only_cases: tuple[str, ...] | None = None
    # Every run begins with create_topic: settle the page cache there first
    # (bench/pagecache.py). A smoke run's numbers mean nothing: it does not.
    settle_runs: bool = True
    _admin: tuple | None = None

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def pairs(self, cases: tuple[str, ...], shift: int = 0) -> list[tuple[str, str]]:
        """(case, client) runs: every case with every client, or in a smoke run each
        case once, the clients taking turns, so that every case and every client runs."""
        if self.only_cases is not None:
            cases = tuple(c for c in cases if c in self.only_cases)
        if not self.smoke:
            return [(case, client) for case in cases for client in self.clients]
        n = max(len(cases), len(self.clients))
        return [
            (cases[i % len(cases)], self.clients[(i + shift) % len(self.clients)]) for i in range(n)
        ]

    def admin(self):
        """One admin client per broker process (a restart gets a new one): its futures
        fail if the client is dropped before they are done."""
        from confluent_kafka.admin import AdminClient

        pid = self.broker.pid
        if self._admin is None or self._admin[0] != pid:
            self._admin = (pid, AdminClient({"bootstrap.servers": self.bootstrap}))
        return self._admin[1]

    def drop_admin(self) -> None:
        """Let go of the admin client (librdkafka destroys it) before its broker
        stops: kept, it reconnects to the stopped broker and logs each refusal."""
        self._admin = None

    def create_topic(
        self, prefix: str, partitions: int = 6, warm: bool = True
    ) -> tuple[str, float]:
        """A new topic; the seconds until every partition has a leader in Metadata.

        warm: then write one record to each partition, so that the measured run
        finds every partition writable. Kafka lists a new partition's leader a moment
        before that leader takes writes; franz-go, refused, waits out its 5 s
        metadata minimum age, which would stall a first run on Kafka by 5 s."""
        from confluent_kafka.admin import NewTopic

        if self.settle_runs:
            pagecache.settle()
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        admin = self.admin()
        t0 = time.perf_counter()
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(120)
        deadline = t0 + 120
        while time.perf_counter() < deadline:
            md = admin.list_topics(name, timeout=30).topics.get(name)
            if (
                md is not None
                and md.error is None
                and len(md.partitions) == partitions
                and all(p.leader >= 0 for p in md.partitions.values())
            ):
                created = time.perf_counter() - t0
                if warm:
                    self._warm(name, partitions)
                return name, created
            time.sleep(0.01)
        raise TimeoutError(f"topic {name}: {partitions} partitions not ready in 120 s")

    def _warm(self, topic: str, partitions: int) -> None:
        from confluent_kafka import Producer

        failed = []
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": 1, "linger.ms": 1})
        for p in range(partitions):
            producer.produce(
                topic, b"warm", partition=p, on_delivery=lambda err, _m: err and failed.append(err)
            )
        if producer.flush(60) or failed:
            raise RuntimeError(f"topic {topic}: warming writes failed: {failed[:3]}")

    def delete_topic(self, name: str) -> None:
        """Frees the disk for the next run (both brokers delete files after a delay)."""
        try:
            self.admin().delete_topics([name])[name].result(60)
        except Exception as exc:  # noqa: BLE001 - a leftover topic only costs disk
            self.log(f"    (could not delete {name}: {exc})")

    def measure(self, run: Callable[[], ClientResult]) -> tuple[ClientResult, Usage]:
        """Run a client while metering the broker."""
        with self.broker.meter() as meter:
            result = run()
        return result, meter.usage


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    run: Callable[[Context], list[Figure]]


def all_workloads() -> list[Workload]:
    from bench.workloads import (
        ceiling,
        consume,
        idle_connections,
        latency,
        many_partitions,
        produce,
        recovery,
        transactions,
    )

    return [
        Workload("produce", produce.ACKS1, produce.run_acks1),
        Workload("idempotent", produce.IDEMPOTENT, produce.run_idempotent),
        Workload("small", produce.SMALL, produce.run_small),
        Workload("consume", consume.TITLE, consume.run),
        Workload("latency", latency.TITLE, latency.run),
        Workload("partitions", many_partitions.TITLE, many_partitions.run),
        Workload("idle", idle_connections.TITLE, idle_connections.run),
        Workload("ceiling", ceiling.TITLE, ceiling.run),
        Workload("transactions", transactions.TITLE, transactions.run),
        Workload("recovery", recovery.TITLE, recovery.run),
    ]
