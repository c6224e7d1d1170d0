"""Produce/consume throughput, end-to-end latency, RSS and start-up time of a broker.

    .venv/bin/python bench/broker_throughput.py                 # Gregor, defaults below
    .venv/bin/python bench/broker_throughput.py --records 200000 --skip-latency
    .venv/bin/python bench/broker_throughput.py --bootstrap host:port   # any running broker

Measures with confluent-kafka (librdkafka):
- produce: N records of 1 KiB to a 6-partition topic, acks=1, without and with lz4;
  MB/s and records/s from the first produce() to the end of flush();
- consume: the same records read back with assign() from offset 0;
- end-to-end latency p50/p99 at a steady 5 MB/s (5,000 records/s of 1 KiB);
- the broker's RSS idle, and its peak while each load runs (sampled from /proc
  every 20 ms by a thread, Gregor only);
- the time from starting the broker process to its first accepted connection.
Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parents[1]
RECORD_SIZE = 1024
PARTITIONS = 6


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class PeakRss:
    """The broker's largest RSS while the `with` block runs, sampled every 20 ms."""

    def __init__(self, pid: int | None):
        self.pid = pid
        self.peak = float("nan")
        self._done = threading.Event()

    def __enter__(self) -> PeakRss:
        if self.pid is not None:
            self.peak = rss_mb(self.pid)
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._done.wait(0.02):
            self.peak = max(self.peak, rss_mb(self.pid))

    def __exit__(self, *exc) -> None:
        self._done.set()
        if self.pid is not None:
            self._thread.join()

    def __str__(self) -> str:
        return f"{self.peak:.1f} MB"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gregor(data_dir: str, overrides=()) -> tuple[subprocess.Popen, str, float]:
    port = free_port()
    extra = [arg for kv in overrides for arg in ("--override", kv)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "broker", "serve",
            "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
            "--override", f"log.dirs={data_dir}",
            "--override", "node.id=1",
            "--override", f"num.partitions={PARTITIONS}",
            "--log-level", "WARNING",
            *extra,
        ],
        cwd=REPO,
    )  # fmt: skip
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.05):
                break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("broker exited during start-up") from None
            time.sleep(0.005)
    return proc, f"127.0.0.1:{port}", time.perf_counter() - t0


def create_topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(30)
    except Exception:
        # Brokers without CreateTopics: auto-creation through Metadata.
        admin.list_topics(name, timeout=30)
    deadline = time.time() + 30
    while time.time() < deadline:
        md = admin.list_topics(name, timeout=10).topics.get(name)
        if md and len(md.partitions) == PARTITIONS and md.error is None:
            return
        time.sleep(0.1)
    raise RuntimeError(f"topic {name} not ready")


def produce(bootstrap: str, topic: str, records: int, compression: str) -> float:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "compression.type": compression,
            "queue.buffering.max.messages": 500_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "enable.idempotence": False,
        }
    )
    payload = os.urandom(RECORD_SIZE // 2).hex().encode()  # compressible like real data
    t0 = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, payload, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10_000 == 0:
            producer.poll(0)
    left = producer.flush(120)
    elapsed = time.perf_counter() - t0
    if left:
        raise RuntimeError(f"{left} records not delivered")
    return elapsed


def consume(bootstrap: str, topic: str, records: int) -> float:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = 0
    t0 = time.perf_counter()
    while got < records:
        batch = consumer.consume(10_000, timeout=10)
        if not batch:
            raise RuntimeError(f"consumer stalled at {got} of {records}")
        got += sum(1 for m in batch if m.error() is None)
    elapsed = time.perf_counter() - t0
    consumer.close()
    return elapsed


def latency(
    bootstrap: str, topic: str, seconds: float, rate_bytes: int
) -> tuple[float, float, int]:
    """Produce at a steady rate with send times in the payload; consumer measures."""
    per_second = rate_bytes // RECORD_SIZE
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5})
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "lat",
            "fetch.wait.max.ms": 100,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    consumer.consume(1, timeout=1)
    filler = b"x" * (RECORD_SIZE - 8)
    samples = []
    sent = 0
    start = time.perf_counter()
    interval = 1.0 / per_second
    while time.perf_counter() - start < seconds:
        target = start + sent * interval
        now = time.perf_counter()
        if now < target:
            for m in consumer.consume(1000, timeout=0):
                if m.error() is None:
                    samples.append(time.perf_counter() - struct.unpack(">d", m.value()[:8])[0])
            continue
        producer.produce(
            topic, struct.pack(">d", time.perf_counter()) + filler, partition=sent % PARTITIONS
        )
        producer.poll(0)
        sent += 1
    producer.flush(30)
    deadline = time.perf_counter() + 10
    while len(samples) < sent and time.perf_counter() < deadline:
        for m in consumer.consume(1000, timeout=0.1):
            if m.error() is None:
                samples.append(time.perf_counter() - struct.unpack(">d", m.value()[:8])[0])
    consumer.close()
    samples.sort()
    p50 = samples[len(samples) // 2] * 1000
    p99 = samples[int(len(samples) * 0.99)] * 1000
    return p50, p99, len(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--bootstrap", help="measure an already running broker instead")
    parser.add_argument("--latency-seconds", type=float, default=20)
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()

    proc = None
    with tempfile.TemporaryDirectory() as data:
        if args.bootstrap:
            bootstrap = args.bootstrap
        else:
            proc, bootstrap, startup = start_gregor(data)
            print(f"start-up to first accepted connection: {startup * 1000:.0f} ms")
            time.sleep(1)
            print(f"broker RSS idle: {rss_mb(proc.pid):.1f} MB")
        pid = proc.pid if proc else None
        try:
            mb = args.records * RECORD_SIZE / 1e6
            for compression in ("none", "lz4"):
                topic = f"bench-{compression}-{uuid.uuid4().hex[:8]}"
                create_topic(bootstrap, topic)
                with PeakRss(pid) as peak:
                    p = produce(bootstrap, topic, args.records, compression)
                print(
                    f"produce {compression:5}: {args.records:,} x {RECORD_SIZE} B in {p:.2f} s = "
                    f"{mb / p:.1f} MB/s, {args.records / p:,.0f} records/s"
                    + (f"; broker peak RSS {peak}" if proc else "")
                )
                with PeakRss(pid) as peak:
                    c = consume(bootstrap, topic, args.records)
                print(
                    f"consume {compression:5}: {args.records:,} records in {c:.2f} s = "
                    f"{mb / c:.1f} MB/s, {args.records / c:,.0f} records/s"
                    + (f"; broker peak RSS {peak}" if proc else "")
                )
            if not args.skip_latency:
                topic = f"bench-latency-{uuid.uuid4().hex[:8]}"
                create_topic(bootstrap, topic)
                with PeakRss(pid) as peak:
                    p50, p99, n = latency(bootstrap, topic, args.latency_seconds, 5_000_000)
                print(
                    f"end-to-end latency at 5 MB/s: p50 {p50:.1f} ms, p99 {p99:.1f} ms ({n:,} records)"
                    + (f"; broker peak RSS {peak}" if proc else "")
                )
        finally:
            if proc:
                proc.terminate()
                proc.wait(30)


if __name__ == "__main__":
    main()
