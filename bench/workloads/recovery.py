"""Workload 8: memory, start-up, and recovery after kill -9. Runs last in a round.

- RSS idle (two seconds after the start, before any load) and the peak RSS of
  the whole round so far (sampled every 20 ms by bench/brokers.py);
- start-up: from the spawn of the broker process to its first accepted
  connection, and to its first answered request;
- recovery: a 6-partition topic gets 10 GiB of 1 KiB records (acks=1, no
  fsync: both brokers' default flush policy), the broker is killed with
  SIGKILL and started on the same data; timed from the new process's spawn to
  its first answered request, and to the moment every partition's high
  watermark is back where it was (every acknowledged record readable).
"""

from __future__ import annotations

import time

from bench import clients
from bench.clients import ProduceSpec
from bench.figures import LOWER, Figure
from bench.workloads import Context

TITLE = "8 memory, start-up, recovery"
PARTITIONS = 6
RECORD_SIZE = 1024
WRITERS = ("franz", "confluent", "java")
RECOVERY_TIMEOUT = 900.0


def high_watermarks(bootstrap: str, topic: str, timeout: float) -> list[int] | None:
    """Every partition's high watermark, or None while the broker cannot say."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-recovery"})
    try:
        marks = [
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout, cached=False)
            for p in range(PARTITIONS)
        ]
        return [high for _low, high in marks]
    except KafkaException:
        return None
    finally:
        consumer.close()


def recover(ctx: Context) -> list[Figure]:
    size = ctx.sizes.recovery_bytes
    case = f"{size / (1 << 30):g} GiB log" if size >= 1 << 30 else f"{size / (1 << 20):g} MiB log"
    records = ctx.sizes.recovery_bytes // RECORD_SIZE
    topic, _ = ctx.create_topic("recovery", PARTITIONS)
    writer = next(w for w in WRITERS if w in ctx.clients)
    spec = ProduceSpec(topic, records, record_size=RECORD_SIZE, partitions=PARTITIONS)
    clients.produce(writer, ctx.bootstrap, spec, ctx.sizes.timeout)
    before = high_watermarks(ctx.bootstrap, topic, 30)
    if before is None or sum(before) != records + PARTITIONS:  # and create_topic's records
        raise RuntimeError(f"high watermarks {before} before the kill, {records} records sent")
    ctx.drop_admin()
    ctx.broker.kill()
    accepted, answered = ctx.broker.start(again=True)
    spawned = ctx.broker.node.spawned_at
    deadline = time.monotonic() + RECOVERY_TIMEOUT
    while (now := high_watermarks(ctx.bootstrap, topic, 5)) != before:
        if time.monotonic() > deadline:
            raise RuntimeError(f"after the restart: high watermarks {now}, before {before}")
        time.sleep(0.02)
    readable = time.monotonic() - spawned
    ctx.log(
        f"    {case}: after kill -9, first answer in {answered:.2f} s, "
        f"every record readable in {readable:.2f} s"
    )
    return [
        Figure(TITLE, case, "-", "restart to first answered request s", answered, LOWER),
        Figure(TITLE, case, "-", "restart to every record readable s", readable, LOWER),
    ]


def run(ctx: Context) -> list[Figure]:
    accepted, answered = ctx.broker.startups[0]
    figures = [
        Figure(TITLE, "start-up", "-", "to first accepted connection ms", accepted * 1000, LOWER),
        Figure(TITLE, "start-up", "-", "to first answered request ms", answered * 1000, LOWER),
        Figure(TITLE, "memory", "-", "idle RSS MB", ctx.idle_rss / 1e6, LOWER),
        Figure(TITLE, "memory", "-", "peak RSS MB", ctx.broker.peak_rss() / 1e6, LOWER),
    ]
    ctx.log(
        f"    start-up {accepted * 1000:.0f} ms to accept, {answered * 1000:.0f} ms to answer; "
        f"RSS idle {ctx.idle_rss / 1e6:.1f} MB, peak {ctx.broker.peak_rss() / 1e6:.1f} MB"
    )
    return figures + recover(ctx)
