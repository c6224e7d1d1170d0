#!/usr/bin/env python3
"""Beyond one core: Gregor as N broker processes of one cluster on one machine.

    .venv/bin/python bench/processes.py                        # N = 1 and 2, 3 rounds
    .venv/bin/python bench/processes.py --processes 1 2 3 --records 200000
    .venv/bin/python bench/processes.py --smoke                # tiny, checks the figures exist

Python runs one event loop on one core per process, so Gregor's answer to a
many-core machine is more processes: N brokers with ZooKeeper on loopback
(`tools/run_gregor.GregorCluster`, what `make cluster` starts), a topic of 6
partitions with replication factor 1 spread over them, so every process leads
its share and clients route each partition to its leader as they would across
machines. Per N and client family (Kafka's `kafka-producer-perf-test` and
confluent-kafka, as `make bench` runs them): produce throughput (1 KiB records,
acks=1, linger 5 ms, batch 64 KiB, uncompressed), then one consumer reading it
all back, and the brokers' CPU seconds per GiB, summed over the processes. The
machine's cores are shared with ZooKeeper and the clients, so on two cores N=2
measures the cost of the split more than its gain; the per-core figures are
what a plan for a bigger machine starts from. Numbers are printed, never
asserted (--smoke only checks that each figure was produced).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import clients, pagecache  # noqa: E402
from bench.clients import ConsumeSpec, ProduceSpec  # noqa: E402
from bench.procstat import cpu_seconds  # noqa: E402
from bench.report import spread  # noqa: E402
from tools.run_gregor import GregorCluster  # noqa: E402

PARTITIONS = 6
GIB = 1 << 30
SETTINGS = {
    "default.replication.factor": 1,
    "offsets.topic.replication.factor": 1,
    "offsets.topic.num.partitions": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
    "min.insync.replicas": 1,
    "group.initial.rebalance.delay.ms": 0,
}
FAMILIES = ["java", "confluent"]


def create_topic(bootstrap: str, processes: int) -> str:
    """6 partitions, replication factor 1, waiting until each has its leader;
    the leaders are spread over the processes (round robin)."""
    name = f"procs-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        partitions = admin.list_topics(name, timeout=10).topics[name].partitions
        leaders = {p.leader for p in partitions.values()}
        if len(partitions) == PARTITIONS and -1 not in leaders:
            assert len(leaders) == min(processes, PARTITIONS), leaders
            return name
        time.sleep(0.1)
    raise RuntimeError(f"{name}: partitions without a leader after 60 s")


def brokers_cpu(cluster: GregorCluster) -> float:
    return sum(cpu_seconds(node.proc.pid) for node in cluster.nodes.values())


def one_round(
    processes: int, records: int, families: list[str], smoke: bool = False
) -> dict[str, float]:
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix=f"bench-procs-{processes}-") as tmp:
        cluster = GregorCluster(tmp, SETTINGS, n=processes).start()
        try:
            for family in families:
                if not smoke:
                    pagecache.settle()  # N=1 and N=2 each from the same page cache
                topic = create_topic(cluster.bootstrap, processes)
                cpu0 = brokers_cpu(cluster)
                produced = clients.produce(
                    family, cluster.bootstrap, ProduceSpec(topic, records), timeout=900
                )
                cpu1 = brokers_cpu(cluster)
                consumed = clients.consume(
                    family, cluster.bootstrap, ConsumeSpec(topic, records), timeout=900
                )
                cpu2 = brokers_cpu(cluster)
                gib = produced.bytes / GIB
                figures[f"produce {family} MB/s"] = produced.mb_per_s
                figures[f"produce {family} broker CPU s/GiB"] = (cpu1 - cpu0) / gib
                figures[f"consume {family} MB/s"] = consumed.mb_per_s
                figures[f"consume {family} broker CPU s/GiB"] = (cpu2 - cpu1) / gib
                print(
                    f"  N={processes} {family:<9} produce {produced.mb_per_s:7.1f} MB/s "
                    f"({(cpu1 - cpu0) / gib:5.2f} CPU s/GiB), consume "
                    f"{consumed.mb_per_s:7.1f} MB/s ({(cpu2 - cpu1) / gib:5.2f} CPU s/GiB)",
                    flush=True,
                )
        finally:
            cluster.stop(graceful=False)  # the data is thrown away
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--clients", nargs="+", choices=FAMILIES, default=FAMILIES)
    ap.add_argument("--smoke", action="store_true", help="one tiny round; checks every figure came")
    args = ap.parse_args(argv)
    rounds, records = (1, 2000) if args.smoke else (args.rounds, args.records)
    results: dict[int, dict[str, list[float]]] = {n: {} for n in args.processes}
    for r in range(rounds):
        for n in args.processes:  # alternating, as make bench alternates brokers
            print(f"round {r + 1}, N={n}", flush=True)
            for name, value in one_round(n, records, args.clients, args.smoke).items():
                results[n].setdefault(name, []).append(value)
    print(f"\nGregor as N processes of one cluster, {records} x 1 KiB, medians of {rounds}:")
    names = list(results[args.processes[0]])
    for name in names:
        cells = [f"N={n} {spread(results[n].get(name, [])):>20}" for n in args.processes]
        print(f"  {name:<36} " + "   ".join(cells))
    if args.smoke:
        missing = [n for n in args.processes for name in names if not results[n].get(name)]
        if missing:
            print(f"missing figures for N={missing}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
