"""confluent-kafka (librdkafka): the harness side, and the load program it runs.

The harness calls produce/consume/e2e, which run this module as a program in a
process of its own (`python -m bench.clients.confluent produce ...`) that
prints one JSON object, as bench/franz does. Settings are librdkafka's defaults
except what the workload sets (acks, linger, batch size, compression,
idempotence) and, for the consumer reading from the earliest offset,
`fetch.queue.backoff.ms` (see QUEUE_FULL_BACKOFF_MS); requests are counted
from librdkafka's statistics (the `tx` of every broker handle).
"""

from __future__ import annotations

import argparse
import json
import random
import string
import struct
import sys
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STATS_MS = 500
# librdkafka stops fetching a partition for fetch.queue.backoff.ms (1,000 by
# default) when its local queue holds queued.max.messages.kbytes (64 MiB). A
# consumer reading 1 GiB from the earliest offset fills that queue faster
# than this Python program drains it, so the default turned each such moment
# into a one-second stall of the client, whichever broker it read from: one
# consumer's figure ranged 332-862 MB/s on Gregor and 258-482 on Kafka in one
# run, and reading from two Gregor processes at once (bench/processes.py, N=2)
# gave 118 MB/s in one round, against 627 with this setting. Ten ms keeps the
# queue bounded and lets the figure measure the broker; both brokers get the
# same setting.
QUEUE_FULL_BACKOFF_MS = 10


# --- the harness side ---------------------------------------------------------------


# The program stops itself at the workload's timeout and prints what it got;
# the harness waits this much longer before it gives up on it (as for franz).
HARNESS_GRACE_S = 30
# How long closing a consumer may take before the program stops waiting for it.
CLOSE_TIMEOUT_S = 10


def _call(command: str, bootstrap: str, args: list, timeout: float):
    from bench.clients import result_from_json, run_process

    argv = [sys.executable, "-m", "bench.clients.confluent", command, "--brokers", bootstrap]
    argv += [str(a) for a in args]
    what = f"confluent {command}"
    # `-m bench.clients.confluent` finds the package from the repository's directory.
    return result_from_json(run_process(argv, what, timeout + HARNESS_GRACE_S, cwd=REPO), what)


def produce(bootstrap: str, spec, timeout: float):
    args = ["--topic", spec.topic, "--records", spec.records, "--record-size", spec.record_size]
    args += ["--acks", spec.acks, "--linger-ms", spec.linger_ms, "--batch-bytes", spec.batch_bytes]
    args += ["--codec", spec.codec, "--partitions", spec.partitions]
    if spec.idempotent:
        args.append("--idempotent")
    if spec.clients != 1:
        raise ValueError("the confluent family runs one producer per process")
    if spec.transaction_records:
        args += ["--transaction-records", spec.transaction_records]
        return _call("txn", bootstrap, args, timeout)
    return _call("produce", bootstrap, args, timeout)


def consume(bootstrap: str, spec, timeout: float):
    args = ["--topic", spec.topic, "--records", spec.records, "--record-size", spec.record_size]
    args += ["--timeout", timeout]
    if spec.group:
        args += ["--group", spec.group, "--members", spec.members]
    return _call("consume", bootstrap, args, timeout)


def e2e(bootstrap: str, spec, timeout: float):
    args = ["--topic", spec.topic, "--rate", spec.rate, "--record-size", spec.record_size]
    args += ["--seconds", spec.seconds, "--warmup", spec.warmup]
    return _call("e2e", bootstrap, args, timeout)


# --- the load program -----------------------------------------------------------------


class Stats:
    """The requests librdkafka sent, from its periodic statistics, and the
    last statistics whole."""

    def __init__(self):
        self.requests = 0
        self.updates = 0
        self.last: dict = {}

    def __call__(self, text: str) -> None:
        stats = self.last = json.loads(text)
        self.requests = sum(b.get("tx", 0) for b in stats.get("brokers", {}).values())
        self.updates += 1

    def settle(self, client) -> int:
        """Wait for statistics taken after the work ended."""
        seen = self.updates
        deadline = time.monotonic() + 3 * STATS_MS / 1000
        while self.updates < seen + 2 and time.monotonic() < deadline:
            client.poll(0.05)
        return self.requests


def payload(size: int) -> bytes:
    # One random payload of upper-case letters, as kafka-producer-perf-test sends.
    return "".join(random.choices(string.ascii_uppercase, k=size)).encode()


def percentiles(latencies_ms: list[float]) -> dict[str, float]:
    if not latencies_ms:
        return {}
    latencies_ms.sort()
    n = len(latencies_ms)
    return {
        "p50": latencies_ms[n // 2],
        "p99": latencies_ms[min(int(n * 0.99), n - 1)],
        "p999": latencies_ms[min(int(n * 0.999), n - 1)],
    }


def producer_config(args, stats: Stats, on_delivery=None) -> dict:
    config = {
        "bootstrap.servers": args.brokers,
        "acks": "all" if args.acks in ("all", "-1") else args.acks,
        "enable.idempotence": args.idempotent,
        "linger.ms": args.linger_ms,
        "batch.size": args.batch_bytes,
        "compression.type": args.codec,
        "statistics.interval.ms": STATS_MS,
        "stats_cb": stats,
    }
    if on_delivery is not None:
        config["on_delivery"] = on_delivery
    return config


def run_produce(args) -> dict:
    from confluent_kafka import Producer

    stats = Stats()
    latencies: list[float] = []
    failed = []

    def delivered(err, msg):
        if err is not None:
            failed.append(str(err))
        else:
            latencies.append(msg.latency() * 1000)

    producer = Producer(producer_config(args, stats, delivered))
    producer.list_topics(args.topic, timeout=30)  # metadata before the clock starts
    value = payload(args.record_size)
    send = producer.produce
    topic = args.topic
    partitions = args.partitions
    start = time.perf_counter()
    for i in range(args.records):
        while True:
            try:
                if partitions:
                    send(topic, value, partition=i % partitions)
                else:
                    send(topic, value)
                break
            except BufferError:
                producer.poll(0.005)  # the local queue is full: let deliveries drain it
        if not i & 1023:
            producer.poll(0)
    left = producer.flush(600)
    seconds = time.perf_counter() - start
    out = {
        "records": args.records,
        "bytes": args.records * args.record_size,
        "seconds": seconds,
        "requests": stats.settle(producer),
        "latency_ms": percentiles(latencies),
    }
    if left or failed:
        out["error"] = f"{left} records not delivered, {len(failed)} failed: {failed[:3]}"
    return out


def run_txn(args) -> dict:
    """Transactions of --transaction-records records each, one after the other;
    latency_ms holds the commit latencies (commit_transaction's duration)."""
    from confluent_kafka import Producer

    stats = Stats()
    config = producer_config(args, stats)
    config.pop("enable.idempotence")  # implied by the transactional id
    config["acks"] = "all"
    config["transactional.id"] = f"bench-{uuid.uuid4().hex[:12]}"
    producer = Producer(config)
    producer.init_transactions(60)
    producer.list_topics(args.topic, timeout=30)  # metadata before the clock starts
    value = payload(args.record_size)
    send = producer.produce
    topic = args.topic
    partitions = args.partitions or 1
    commits: list[float] = []
    sent = 0
    start = time.perf_counter()
    while sent < args.records:
        producer.begin_transaction()
        for _ in range(min(args.transaction_records, args.records - sent)):
            while True:
                try:
                    send(topic, value, partition=sent % partitions)
                    break
                except BufferError:
                    producer.poll(0.005)
            sent += 1
        t0 = time.perf_counter()
        producer.commit_transaction(120)
        commits.append((time.perf_counter() - t0) * 1000)
    seconds = time.perf_counter() - start
    return {
        "records": sent,
        "bytes": sent * args.record_size,
        "seconds": seconds,
        "requests": stats.settle(producer),
        "latency_ms": percentiles(commits),
        "transactions": len(commits),
    }


def run_consume(args) -> dict:
    from confluent_kafka import Consumer

    group = args.group or f"bench-{uuid.uuid4().hex[:12]}"
    members = args.members if args.group else 1
    # Rebalance events per member: what a consume that never finishes says about itself.
    events: list[list[str]] = [[] for _ in range(members)]
    lock = threading.Lock()
    next_offset: dict[int, int] = {}  # partition -> one past the highest offset read
    progress = {"total": 0}
    done = threading.Event()
    stats = [Stats() for _ in range(members)]
    consumers = [
        Consumer(
            {
                "bootstrap.servers": args.brokers,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "fetch.queue.backoff.ms": QUEUE_FULL_BACKOFF_MS,
                "statistics.interval.ms": STATS_MS,
                "stats_cb": member_stats,
            }
        )
        for member_stats in stats
    ]

    def member(consumer) -> None:
        while not done.is_set():
            batch = consumer.consume(10_000, timeout=0.2)
            high: dict[int, int] = {}
            for m in batch:
                if m.error() is None:
                    high[m.partition()] = m.offset() + 1
            if not high:
                continue
            with lock:
                for p, o in high.items():
                    if o > next_offset.get(p, 0):
                        progress["total"] += o - next_offset.get(p, 0)
                        next_offset[p] = o
                if progress["total"] >= args.records:
                    done.set()

    def rebalance_log(i: int):
        def on_assign(_consumer, partitions) -> None:
            events[i].append(f"{time.perf_counter() - start:.1f}s assigned {_parts(partitions)}")

        def on_revoke(_consumer, partitions) -> None:
            events[i].append(f"{time.perf_counter() - start:.1f}s revoked {_parts(partitions)}")

        return on_assign, on_revoke

    start = time.perf_counter()
    for i, c in enumerate(consumers):
        on_assign, on_revoke = rebalance_log(i)
        c.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke)
    threads = [threading.Thread(target=member, args=(c,), daemon=True) for c in consumers]
    for t in threads:
        t.start()
    done.wait(args.timeout)
    seconds = time.perf_counter() - start
    done.set()
    for t in threads:
        t.join()
    requests = sum(s.settle(c) for s, c in zip(stats, consumers, strict=True))
    unclosed = _close_all(consumers)
    out = {
        "records": progress["total"],
        "bytes": progress["total"] * args.record_size,
        "seconds": seconds,
        "requests": requests,
    }
    if progress["total"] < args.records:
        out["error"] = (
            f"read {progress['total']} of {args.records} records in {seconds:.0f} s; "
            f"next offsets {dict(sorted(next_offset.items()))}; rebalances: {events}"
            + (f"; {unclosed} consumers did not close" if unclosed else "")
        )
    return out


def _parts(partitions) -> list[int]:
    return sorted(p.partition for p in partitions)


def _close_all(consumers) -> int:
    """Close every consumer, each bounded (a close stuck in a rebalance must not
    eat the workload's budget): how many did not finish closing."""
    threads = [threading.Thread(target=c.close, daemon=True) for c in consumers]
    for t in threads:
        t.start()
    deadline = time.monotonic() + CLOSE_TIMEOUT_S
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    return sum(t.is_alive() for t in threads)


# What librdkafka's statistics say of a partition the e2e consumer fell short on.
_PARTITION_STATS = (
    "fetch_state",
    "next_offset",
    "app_offset",
    "hi_offset",
    "fetchq_cnt",
    "fetchq_size",
    "rxmsgs",
)


def run_e2e(args) -> dict:
    from confluent_kafka import Consumer, Producer, TopicPartition

    stats = Stats()
    args.idempotent = False
    failed: list[str] = []

    def delivery_failed(err, msg):
        failed.append(str(err))

    config = producer_config(args, stats, delivery_failed)
    # Only failures are reported: a callback per record would tax the loop.
    config["delivery.report.only.error"] = True
    producer = Producer(config)
    md = producer.list_topics(args.topic, timeout=30).topics[args.topic]
    # The consumer's statistics: when records go missing, librdkafka's own
    # view of each partition (what it fetched, what it holds queued) tells a
    # broker that did not serve them from a client that did not ask.
    consumer_stats = Stats()
    consumer = Consumer(
        {
            "bootstrap.servers": args.brokers,
            "group.id": f"bench-e2e-{uuid.uuid4().hex[:12]}",
            "enable.auto.commit": False,
            "statistics.interval.ms": STATS_MS,
            "stats_cb": consumer_stats,
        }
    )
    consumer.assign([TopicPartition(args.topic, p, 0) for p in md.partitions])
    filler = payload(args.record_size - 8)
    latencies: list[float] = []
    received = [0]
    # The next offset the consumer expects in each partition, so that a
    # shortfall can be told apart: records the broker has (high watermark
    # beyond it) but did not serve, or records it never had.
    consumed_to: dict[int, int] = {}
    stop = threading.Event()
    start = time.perf_counter_ns()
    keep_from = start + int(args.warmup * 1e9)

    def read() -> None:
        while not stop.is_set():
            batch = consumer.consume(10_000, timeout=0.05)
            now = time.perf_counter_ns()
            for m in batch:
                # (shorter values are not ours: the harness's warming records)
                if m.error() is None and len(m.value()) == args.record_size:
                    received[0] += 1
                    consumed_to[m.partition()] = m.offset() + 1
                    (sent,) = struct.unpack_from(">q", m.value())
                    if sent >= keep_from:
                        latencies.append((now - sent) / 1e6)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    sent = 0
    pack = struct.Struct(">q").pack
    end = start + int(args.seconds * 1e9)
    while (now := time.perf_counter_ns()) < end:
        due = int((now - start) / 1e9 * args.rate)
        while sent < due:
            try:
                producer.produce(args.topic, pack(time.perf_counter_ns()) + filler)
                sent += 1
            except BufferError:
                producer.poll(0.001)
        producer.poll(0)
        time.sleep(0.001)
    achieved = sent / ((time.perf_counter_ns() - start) / 1e9)
    undelivered = producer.flush(30)
    deadline = time.monotonic() + 10
    while received[0] < sent and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    reader.join()
    shortfall = ""
    if received[0] < sent:
        ends = []
        seen = consumer_stats.last.get("topics", {}).get(args.topic, {})
        for p in sorted(md.partitions):
            _, high = consumer.get_watermark_offsets(TopicPartition(args.topic, p), timeout=10)
            client = seen.get("partitions", {}).get(str(p), {})
            view = ", ".join(f"{k} {client.get(k)}" for k in _PARTITION_STATS if k in client)
            ends.append(
                f"{p}: high watermark {high}, consumed to {consumed_to.get(p, 0)}"
                + (f" (librdkafka: {view})" if view else "")
            )
        shortfall = (
            f"; {undelivered} undelivered after flush, {len(failed)} failed {failed[:3]}; "
            + "; ".join(ends)
        )
    consumer.close()
    out = {
        "records": sent,
        "received": received[0],
        "achieved_rate": achieved,
        "samples": len(latencies),
        "latency_ms": percentiles(latencies),
        "requests": stats.settle(producer),
    }
    if received[0] < sent:
        out["error"] = f"received {received[0]} of {sent} records{shortfall}"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="confluent-kafka load for make bench")
    ap.add_argument("command", choices=("produce", "txn", "consume", "e2e"))
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--records", type=int, default=0)
    ap.add_argument("--record-size", type=int, default=1024)
    ap.add_argument("--acks", default="1")
    ap.add_argument("--idempotent", action="store_true")
    ap.add_argument("--linger-ms", type=int, default=5)
    ap.add_argument("--batch-bytes", type=int, default=65536)
    ap.add_argument("--codec", default="none")
    ap.add_argument("--partitions", type=int, default=0)
    ap.add_argument("--group")
    ap.add_argument("--members", type=int, default=1)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--transaction-records", type=int, default=100)
    args = ap.parse_args(argv)
    run = {"produce": run_produce, "txn": run_txn, "consume": run_consume, "e2e": run_e2e}[
        args.command
    ]
    print(json.dumps(run(args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
