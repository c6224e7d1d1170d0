"""Rows per second through Spark's Kafka connector: Gregor beside Apache Kafka, one run.

    .venv/bin/python bench/spark_pipeline.py                    # both brokers, defaults
    .venv/bin/python bench/spark_pipeline.py --records 50000 --purchases 20000 --rounds 1
    .venv/bin/python bench/spark_pipeline.py --no-kafka

Two measures, each on both brokers, which run side by side (Gregor from this
checkout, Apache Kafka 4.3.1 from the jars of `make clients`), with one local
SparkSession (local[2], the connector from .cache/) reading from each in turn:

- batch read: `spark.read.format("kafka")` of a 6-partition topic holding
  --records records of 1 KiB (written beforehand by confluent-kafka), every row
  read (Spark's noop sink);
- streaming job: spark/stats.py's job (per-country, per-minute stats to a
  Parquet table and to a Kafka topic) over --purchases purchases already in
  topic `purchases`, with Trigger.AvailableNow, from its start until it has
  read them all.

A first, unmeasured round on each broker warms the JVM; then the rounds
alternate brokers, and the median of the rounds is printed with Gregor/Kafka.
Numbers are printed, never asserted; the machine has 2 cores, which Spark, the
brokers and the benchmark share.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.brokers import launcher, run_kafka  # noqa: E402
from spark import producer, purchases, session, stats, topics  # noqa: E402

PARTITIONS = 6
VALUE = b"x" * 1024


def fill_topic(bootstrap: str, records: int) -> str:
    topic = f"bench-spark-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000})
    for i in range(records):
        while True:
            try:
                p.produce(topic, value=VALUE, key=str(i % 64).encode())
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(120) == 0
    return topic


def fill_purchases(bootstrap: str, count: int) -> str:
    topic = f"bench-purchases-{uuid.uuid4().hex[:8]}"
    topics.ensure_topics(bootstrap, [topic])
    # A million purchases a day, a bit faster: count of them over count/12 seconds,
    # ending an hour ago (times within retention.ms, none in the future).
    duration_s = count / 12
    start_ms = time.time_ns() // 1_000_000 - int(duration_s * 1000) - 3_600_000
    events = purchases.generate(seed=5, rate=12, duration=duration_s, start_ms=start_ms)
    producer.produce(bootstrap, topic, events)
    return topic


def batch_read_seconds(spark, bootstrap: str, topic: str, records: int) -> float:
    t0 = time.perf_counter()
    df = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
    )
    df.write.format("noop").mode("overwrite").save()
    seconds = time.perf_counter() - t0
    # Checked apart from the clock: every record was there to read.
    assert df.count() == records
    return seconds


def stream_seconds(spark, bootstrap: str, topic: str, out: Path) -> float:
    stats_topic = f"bench-stats-{uuid.uuid4().hex[:8]}"
    t0 = time.perf_counter()
    queries = stats.start(
        stats.window_stats(stats.purchase_events(spark, bootstrap, topic)),
        bootstrap=bootstrap,
        stats_topic=stats_topic,
        output_dir=out,
        available_now=True,
    )
    queries.await_termination(600)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000, help="1 KiB records, batch read")
    ap.add_argument("--purchases", type=int, default=100_000, help="purchases, streaming job")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-kafka", action="store_true", help="Gregor only")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        gregor = launcher.gregor_node(tmp_path / "gregor", {"num.partitions": str(PARTITIONS)})
        gregor.start()
        kafka = None
        try:
            brokers = {"gregor": gregor.bootstrap}
            if not args.no_kafka:
                kafka = run_kafka.KafkaNode(overrides={"num.partitions": PARTITIONS}).start()
                brokers["kafka"] = kafka.bootstrap
            spark = session.local_session(
                "bench", log_dir=tmp_path / "spark-logs", scratch_dir=tmp_path / "spark-scratch"
            )
            data = {}
            for name, bs in brokers.items():
                data[name] = (
                    fill_topic(bs, args.records),
                    fill_purchases(bs, args.purchases),
                )
                print(f"{name}: {args.records:,} records and {args.purchases:,} purchases written")
            batch: dict[str, list[float]] = {n: [] for n in brokers}
            stream: dict[str, list[float]] = {n: [] for n in brokers}
            for round_ in range(args.rounds + 1):  # round 0 warms up
                for name, bs in brokers.items():
                    records_topic, purchases_topic = data[name]
                    b = batch_read_seconds(spark, bs, records_topic, args.records)
                    s = stream_seconds(spark, bs, purchases_topic, tmp_path / f"{name}-{round_}")
                    label = "warm-up" if round_ == 0 else f"round {round_}"
                    print(
                        f"{label:>8} {name:>6}: batch read {args.records / b:10,.0f} rows/s "
                        f"({b:.1f} s); streaming job {args.purchases / s:8,.0f} rows/s ({s:.1f} s)",
                        flush=True,
                    )
                    if round_:
                        batch[name].append(args.records / b)
                        stream[name].append(args.purchases / s)
            spark.stop()
        finally:
            gregor.stop()
            if kafka is not None:
                kafka.stop()

    print()
    print("| measure | Gregor rows/s | Apache Kafka rows/s | Gregor / Kafka |")
    print("|---|---:|---:|---:|")
    for label, results in (
        (f"batch read, {args.records:,} x 1 KiB", batch),
        (f"streaming job, {args.purchases:,} purchases", stream),
    ):
        g = statistics.median(results["gregor"])
        if "kafka" in results:
            k = statistics.median(results["kafka"])
            print(f"| {label} | {g:,.0f} | {k:,.0f} | {g / k:.2f} |")
        else:
            print(f"| {label} | {g:,.0f} | - | - |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
