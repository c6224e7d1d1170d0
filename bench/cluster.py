#!/usr/bin/env python3
"""Replication beside Apache Kafka: three Gregor brokers (with ZooKeeper) and three
Apache Kafka 4.3.1 nodes (KRaft, every node broker and controller) on the same
machine, one cluster at a time, alternating, a fresh cluster each round.

    .venv/bin/python bench/cluster.py                          # both, 3 rounds
    .venv/bin/python bench/cluster.py --rounds 1 --records 50000 --brokers gregor
    .venv/bin/python bench/cluster.py --smoke                  # tiny, checks the figures exist

Per round and cluster:
- throughput: 1 KiB records to a topic of 6 partitions with replication factor 3
  and min.insync.replicas=2, by the idempotent producer with acks=all (linger 5 ms,
  batch 64 KiB, uncompressed), with Kafka's kafka-producer-perf-test and with
  confluent-kafka (the clients of bench/clients, as `make bench` runs them);
- failover: a confluent-kafka idempotent producer (acks=all) sends one record at a
  time to partition 0 of another such topic, each waiting for its acknowledgement;
  the leader of partition 0 is killed with SIGKILL; the failover time is from the
  kill to the first acknowledgement after it (the client finds the new leader on
  its own). Detection is bounded by each cluster's session: both get 6 s
  (Gregor's zookeeper.session.timeout.ms, Kafka's broker.session.timeout.ms; the
  defaults are 18 s and 9 s).

Both clusters keep the single-node benchmark's flush policy (no fsync by count or
time). Kafka runs with the JVM flags and heap of its own start script. Medians with
min-max per figure, and the ratio Gregor/Kafka, are printed; numbers are never
asserted (--smoke only checks that each figure was produced).
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import clients  # noqa: E402
from bench.brokers import launcher, run_kafka  # noqa: E402
from bench.clients import ProduceSpec  # noqa: E402
from bench.report import spread  # noqa: E402
from tools.run_gregor import GregorCluster  # noqa: E402

SESSION_MS = 6000
PARTITIONS = 6
GREGOR_SETTINGS = {
    "zookeeper.session.timeout.ms": SESSION_MS,
    "default.replication.factor": 3,
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 3,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "transaction.state.log.num.partitions": 3,
    "min.insync.replicas": 2,
    "group.initial.rebalance.delay.ms": 0,
}
KAFKA_SETTINGS = {"broker.session.timeout.ms": SESSION_MS, "broker.heartbeat.interval.ms": 1000}


def start_cluster(kind: str, workdir: Path, quick: bool):
    """Three brokers of `kind`, every one registered with the others."""
    if kind == "gregor":
        return GregorCluster(workdir, GREGOR_SETTINGS).start()
    overrides = {**launcher.KAFKA_ONLY, **KAFKA_SETTINGS}
    return run_kafka.KafkaCluster(3, overrides=overrides, as_shipped=not quick).start()


def create_topic(bootstrap: str, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(name, PARTITIONS, 3, config={"min.insync.replicas": "2"})
    admin.create_topics([topic])[name].result(60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # every partition has a leader with a full ISR
        partitions = admin.list_topics(name, timeout=10).topics[name].partitions
        if len(partitions) == PARTITIONS and all(
            p.leader >= 0 and len(p.isrs) == 3 for p in partitions.values()
        ):
            return name
        time.sleep(0.1)
    raise RuntimeError(f"{name}: partitions without a leader and a full ISR after 60 s")


def leader_of(bootstrap: str, topic: str, partition: int) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.list_topics(topic, timeout=10).topics[topic].partitions[partition].leader


def failover_seconds(cluster, timeout: float = 120) -> float:
    """Kill partition 0's leader while a producer waits on each record; kill-to-next-ack."""
    topic = create_topic(cluster.bootstrap, "failover")
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 0,
            "message.timeout.ms": int(timeout * 1000),
        }
    )
    acked: list[float] = []
    errors: list[str] = []
    stop = threading.Event()

    def delivered(err, _msg):
        if err is None:
            acked.append(time.monotonic())
        else:
            errors.append(str(err))

    def send_one_at_a_time():
        i = 0
        while not stop.is_set():
            producer.produce(topic, value=b"%d" % i, partition=0, on_delivery=delivered)
            i += 1
            while producer.flush(0.05) and not stop.is_set():
                pass

    sender = threading.Thread(target=send_one_at_a_time, daemon=True)
    sender.start()
    try:
        deadline = time.monotonic() + 30
        while len(acked) < 20:  # the producer is past its start-up
            if time.monotonic() > deadline:
                raise RuntimeError(f"no steady acknowledgements before the kill: {errors[:3]}")
            time.sleep(0.01)
        leader = leader_of(cluster.bootstrap, topic, 0)
        cluster.kill(leader)
        killed = time.monotonic()
        deadline = killed + timeout
        while not acked or acked[-1] <= killed:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"no acknowledgement {timeout:.0f} s after the kill: {errors[:3]}"
                )
            time.sleep(0.005)
        return min(t for t in acked if t > killed) - killed
    finally:
        stop.set()
        sender.join(timeout)


def one_round(kind: str, records: int, families: list[str], quick: bool) -> dict[str, float]:
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix=f"bench-cluster-{kind}-") as tmp:
        t0 = time.monotonic()
        cluster = start_cluster(kind, Path(tmp), quick)
        print(f"  {kind}: three brokers registered in {time.monotonic() - t0:.1f} s", flush=True)
        try:
            for family in families:
                topic = create_topic(cluster.bootstrap, "rf3")
                spec = ProduceSpec(topic, records, acks="all", idempotent=True)
                result = clients.produce(family, cluster.bootstrap, spec, timeout=900)
                figures[f"produce RF3 acks=all {family} MB/s"] = result.mb_per_s
                print(f"  {kind}: {family:<9} {result.mb_per_s:7.1f} MB/s", flush=True)
            seconds = failover_seconds(cluster)
            figures["failover after kill -9 of a leader, s"] = seconds
            print(f"  {kind}: failover {seconds:.2f} s", flush=True)
        finally:
            cluster.stop(graceful=False)  # the data is thrown away
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument(
        "--brokers", nargs="+", choices=("gregor", "kafka"), default=["gregor", "kafka"]
    )
    ap.add_argument(
        "--clients", nargs="+", choices=("java", "confluent"), default=["java", "confluent"]
    )
    ap.add_argument("--smoke", action="store_true", help="one tiny round; checks every figure came")
    args = ap.parse_args(argv)
    if args.smoke:
        args.rounds, args.records = 1, 2000
    # SIGTERM (a CI timeout) unwinds like Ctrl-C, so every cluster is stopped.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    results: dict[str, dict[str, list[float]]] = {b: {} for b in args.brokers}
    failures = []
    for round_no in range(1, args.rounds + 1):
        order = args.brokers if round_no % 2 else list(reversed(args.brokers))
        print(f"round {round_no}: {' then '.join(order)}", flush=True)
        for kind in order:
            try:
                for name, value in one_round(kind, args.records, args.clients, args.smoke).items():
                    results[kind].setdefault(name, []).append(value)
            except (RuntimeError, KafkaException, clients.ClientError) as exc:
                failures.append(f"{kind} round {round_no}: {exc}")
                print(f"  {kind}: FAILED: {exc}", flush=True)
    names = sorted({name for per in results.values() for name in per})
    print(f"\nreplication, three brokers each, {args.records:,} records, medians of {args.rounds}:")
    for name in names:
        cells = [f"{kind} {spread(results[kind].get(name, [])):>20}" for kind in args.brokers]
        ratio = ""
        if (
            all(results[k].get(name) for k in ("gregor", "kafka") if k in results)
            and len(results) == 2
        ):
            g, k = (statistics.median(results[b][name]) for b in ("gregor", "kafka"))
            ratio = f"  G/K {g / k:.2f}"
        print(f"  {name:<42} {'   '.join(cells)}{ratio}")
    if args.smoke:
        missing = [
            f"{kind}: {name}"
            for kind in args.brokers
            for name in [f"produce RF3 acks=all {f} MB/s" for f in args.clients]
            + ["failover after kill -9 of a leader, s"]
            if not results[kind].get(name)
        ]
        failures += [f"missing figure {m}" for m in missing]
    if failures:
        print("bench/cluster.py: FAILED:\n  " + "\n  ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
