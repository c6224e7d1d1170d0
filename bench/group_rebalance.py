"""Time for a consumer group of N members to be stable again after one more joins.

    .venv/bin/python bench/group_rebalance.py                  # Gregor and Apache Kafka
    .venv/bin/python bench/group_rebalance.py --sizes 1 10 --rounds 5 --no-kafka
    .venv/bin/python bench/group_rebalance.py --bootstrap host:port   # any running broker

For each N: N confluent-kafka (librdkafka) consumers subscribe to a
60-partition topic and settle; then one more subscribes, and the clock runs
from its subscribe() until every member's latest assignment callback has come
in and the assignments cover each partition exactly once. Members poll in
their own threads; heartbeat.interval.ms=500 (members learn of a rebalance
from a heartbeat answer, so this bounds what a broker can show), eager
`range` assignment, group.initial.rebalance.delay.ms=0 on the broker. The
median of the rounds is printed per N for each broker, and Gregor/Kafka.
Both brokers start with the compatibility runner's launchers (bench/brokers.py);
Apache Kafka 4.3.1 from the jars of `make clients`, as it ships (its JVM flags
and 1 GiB heap).
Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.brokers import launcher, run_kafka  # noqa: E402

PARTITIONS = 60
HEARTBEAT_MS = 500
SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "10",
    "offsets.topic.replication.factor": "1",
}


class Member:
    """One consumer polling in its own thread; remembers its last assignment."""

    def __init__(self, bootstrap: str, group: str, topic: str):
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "partition.assignment.strategy": "range",
                "heartbeat.interval.ms": HEARTBEAT_MS,
                "session.timeout.ms": 10000,
                "enable.auto.commit": False,
            }
        )
        self.assigned: set[int] = set()
        self.assigned_at = 0.0
        self._stop = False
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _on_assign(self, consumer, partitions):
        self.assigned = {p.partition for p in partitions}
        self.assigned_at = time.perf_counter()

    def _on_revoke(self, consumer, partitions):
        self.assigned = set()

    def _poll(self):
        while not self._stop:
            self.consumer.poll(0.05)

    def close(self):
        self._stop = True
        self.thread.join()
        self.consumer.close()


def stable(members: list[Member], since: float) -> bool:
    if any(m.assigned_at < since for m in members):
        return False
    seen: list[int] = []
    for m in members:
        seen.extend(m.assigned)
    return sorted(seen) == list(range(PARTITIONS))


def wait_stable(members: list[Member], since: float, timeout: float = 120) -> float:
    deadline = time.perf_counter() + timeout
    while not stable(members, since):
        if time.perf_counter() > deadline:
            raise TimeoutError(f"group of {len(members)} not stable after {timeout}s")
        time.sleep(0.005)
    return max(m.assigned_at for m in members) - since


def one_round(bootstrap: str, topic: str, n: int) -> float:
    group = f"bench-{uuid.uuid4().hex[:8]}"
    members: list[Member] = []
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            members.append(Member(bootstrap, group, topic))
        wait_stable(members, t0)
        time.sleep(2 * HEARTBEAT_MS / 1000)
        start = time.perf_counter()
        members.append(Member(bootstrap, group, topic))
        return wait_stable(members, start)
    finally:
        for m in members:
            m.close()


def measure(name: str, bootstrap: str, sizes: list[int], rounds: int) -> dict[int, float]:
    topic = f"bench-groups-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    results = {}
    for n in sizes:
        times = [one_round(bootstrap, topic, n) for _ in range(rounds)]
        results[n] = statistics.median(times)
        shown = ", ".join(f"{t * 1000:.0f}" for t in times)
        print(f"{name:>7}  N={n:<3} stable after a join: median {results[n] * 1000:6.0f} ms "
              f"(rounds: {shown})", flush=True)  # fmt: skip
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 50])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bootstrap", help="measure this running broker only")
    ap.add_argument("--no-kafka", action="store_true", help="skip Apache Kafka")
    args = ap.parse_args()

    if args.bootstrap:
        measure("broker", args.bootstrap, args.sizes, args.rounds)
        return 0
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        gregor = launcher.gregor_node(Path(tmp) / "gregor", SETTINGS).start()
        try:
            results["gregor"] = measure("gregor", gregor.bootstrap, args.sizes, args.rounds)
        finally:
            gregor.stop()
    if not args.no_kafka:
        with run_kafka.KafkaNode(overrides=SETTINGS, as_shipped=True) as node:
            results["kafka"] = measure("kafka", node.bootstrap, args.sizes, args.rounds)
    print()
    print("| members before the join | Gregor ms | Apache Kafka ms | Gregor / Kafka |")
    print("|---:|---:|---:|---:|")
    for n in args.sizes:
        g = results["gregor"][n] * 1000
        k = results.get("kafka", {}).get(n)
        if k is None:
            print(f"| {n} | {g:.0f} | - | - |")
        else:
            print(f"| {n} | {g:.0f} | {k * 1000:.0f} | {g / (k * 1000):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
