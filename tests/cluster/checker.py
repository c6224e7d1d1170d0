"""What a replicated topic must show after failures, in the manner of Jepsen's Kafka checker.

The writer records every record the broker acknowledged (partition, offset,
key, value); the reader reads every partition from its start. The checker
counts: acknowledged records, lost acknowledged records (acknowledged but
not read), records read at another offset than acknowledged (inconsistent
offsets), duplicates (one value read twice: 0 with idempotence), and per-key
order violations (a key's values read out of the order they were sent).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition


@dataclass
class Written:
    partition: int
    offset: int
    key: bytes
    value: bytes


@dataclass
class Writer:
    """An idempotent acks=all producer writing numbered records until stopped."""

    bootstrap: str
    topic: str
    keys: int = 8
    acked: list[Written] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sent: int = 0
    # (start, end) of the periods with no acknowledgement for over a second.
    stalls: list[tuple[float, float]] = field(default_factory=list)

    def __post_init__(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Writer:
        self._thread.start()
        return self

    def _run(self) -> None:
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 120000,
                "retry.backoff.ms": 100,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        last_ack = time.monotonic()

        def delivered(err, msg):
            nonlocal last_ack
            if err is not None:
                self.errors.append(str(err))
                return
            now = time.monotonic()
            if now - last_ack > 1.0:
                self.stalls.append((last_ack, now))
            last_ack = now
            self.acked.append(Written(msg.partition(), msg.offset(), msg.key(), msg.value()))

        while not self._stop.is_set():
            n = self.sent
            key = f"k{n % self.keys}".encode()
            try:
                producer.produce(self.topic, key=key, value=f"{n}".encode(), on_delivery=delivered)
                self.sent += 1
            except BufferError:
                producer.poll(0.05)
                continue
            producer.poll(0)
            time.sleep(0.002)
        producer.flush(120)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(180)


def read_everything(bootstrap: str, topic: str, partitions: int, timeout: float = 60):
    """Every record of every partition from its start up to its high watermark:
    {partition: [(offset, key, value)]}."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"checker-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(partitions)
        }
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        found: dict[int, list[tuple[int, bytes, bytes]]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + timeout
        pending = {p for p in range(partitions) if ends[p] > 0}
        while pending and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                continue
            p = msg.partition()
            found[p].append((msg.offset(), msg.key(), msg.value()))
            if msg.offset() >= ends[p] - 1:
                pending.discard(p)
        return found
    finally:
        consumer.close()


@dataclass
class Verdict:
    acknowledged: int
    lost: int
    inconsistent_offsets: int
    duplicates: int
    order_violations: int
    unavailable_seconds: float

    def __str__(self) -> str:
        return (
            f"acknowledged {self.acknowledged}, lost {self.lost}, inconsistent offsets "
            f"{self.inconsistent_offsets}, duplicates {self.duplicates}, per-key order "
            f"violations {self.order_violations}, longest unavailability "
            f"{self.unavailable_seconds:.1f} s"
        )


def check(writer: Writer, read: dict[int, list[tuple[int, bytes, bytes]]]) -> Verdict:
    at = {(p, off): value for p, records in read.items() for off, _, value in records}
    lost = inconsistent = 0
    for w in writer.acked:
        got = at.get((w.partition, w.offset))
        if got is None:
            if w.value not in {v for _, _, v in read.get(w.partition, [])}:
                lost += 1
            else:
                inconsistent += 1
        elif got != w.value:
            inconsistent += 1
    values = [v for records in read.values() for _, _, v in records]
    duplicates = len(values) - len(set(values))
    violations = 0
    for records in read.values():
        last: dict[bytes, int] = {}
        for _, key, value in records:
            n = int(value)
            if key in last and n < last[key]:
                violations += 1
            last[key] = n
    longest = max((end - start for start, end in writer.stalls), default=0.0)
    return Verdict(len(writer.acked), lost, inconsistent, duplicates, violations, longest)
