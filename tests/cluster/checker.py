"""What a replicated topic must show after failures, in the manner of Jepsen's Kafka checker.

The writer records every record the broker acknowledged (partition, offset,
key, value); the reader reads every partition from its start. The checker
counts: acknowledged records, lost acknowledged records (acknowledged but
not read), records read at another offset than acknowledged (inconsistent
offsets), duplicates (one value read twice: 0 with idempotence), and per-key
order violations (a key's values read out of the order they were sent).

Two writers: confluent-kafka's (Writer, librdkafka) and Apache Kafka's own
VerifiableProducer (VerifiableWriter, the Java client), whose acknowledged
records the same checks take. For exactly once, Kafka's own
TransactionalMessageCopier (TransactionalCopier).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from tools import kafka_cli


@dataclass
class Written:
    partition: int
    offset: int
    key: bytes | None
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


class _JavaTool:
    """One of Kafka's Java test tools in a child process. Its JSON lines on
    stdout go to `_on_event` as they come; every other line (its client's
    log, on the same pipe) is kept for `log_tail`."""

    def _start(self, tool: str, title: str, *args: str) -> None:
        self.output: list[str] = []
        try:
            kafka_cli.check_installed()
        except kafka_cli.ToolMissing as e:
            pytest.fail(f"Kafka's {title} cannot run: {e}", pytrace=False)
        self.proc = kafka_cli.popen_tool(
            tool,
            *args,
            stderr=subprocess.STDOUT,  # read by the same thread: no full pipe
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line) if line.startswith("{") else None
            except json.JSONDecodeError:
                event = None
            if event is None:
                self.output.append(line)
            else:
                self._on_event(event)

    def _on_event(self, event: dict) -> None:
        raise NotImplementedError

    def running(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        """The tool's own log (its client's warnings: the errors it retried)."""
        return "".join(self.output[-lines:])

    def wait(self, timeout: float) -> int | None:
        """Its exit code once it ends within `timeout` seconds, else None."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self._reader.join(30)
        return code

    def kill(self) -> None:
        """kill -9."""
        self.proc.kill()
        self.proc.wait()
        self._reader.join(30)

    def _terminate(self, timeout: float) -> int:
        """SIGTERM, then its exit code."""
        code = kafka_cli.stop(self.proc, timeout=timeout)
        self._reader.join(30)
        return code


class VerifiableWriter(_JavaTool):
    """Apache Kafka's VerifiableProducer (kafka-verifiable-producer, the Java
    client) writing sequential integers ("0", "1", ...) without keys, acks=all
    and idempotent, at `throughput` records a second until stopped.

    Its JSON lines on stdout are read as they come: every producer_send_success
    (topic, partition, offset, value) is an acknowledged record, every
    producer_send_error an error. It has no keys, so the checker's per-key
    order is per partition, by the sequential values."""

    def __init__(self, bootstrap: str, topic: str, workdir: Path, throughput: int = 200):
        self.bootstrap = bootstrap
        self.topic = topic
        self.acked: list[Written] = []
        self.errors: list[str] = []
        # (start, end) of the periods with no acknowledgement for over a second,
        # from the tool's own timestamps (wall clock, seconds).
        self.stalls: list[tuple[float, float]] = []
        self._last_ack: float | None = None
        config = Path(tempfile.mkstemp(suffix=".properties", dir=workdir)[1])
        # The tool sets retries=0 itself (which idempotence refuses): retry as
        # a default KafkaProducer does. Its records have no keys, and the
        # default partitioner stays on one partition for batch.size bytes:
        # 16 KiB is about a thousand of these records, five seconds at 200 a
        # second. A kilobyte moves it on within half a second, so that every
        # partition is written from the start and through every failure.
        config.write_text(
            "enable.idempotence=true\nretries=2147483647\n"
            "max.in.flight.requests.per.connection=5\nmetadata.max.age.ms=5000\n"
            "batch.size=1024\n"
        )
        self._start(
            "kafka-verifiable-producer", "VerifiableProducer",
            "--bootstrap-server", bootstrap, "--topic", topic,
            "--acks", "-1", "--throughput", str(throughput),
            "--command-config", str(config),
        )  # fmt: skip

    def _on_event(self, event: dict) -> None:
        name = event.get("name")
        if name == "producer_send_success":
            now = event["timestamp"] / 1000
            if self._last_ack is not None and now - self._last_ack > 1.0:
                self.stalls.append((self._last_ack, now))
            self._last_ack = now
            key = event.get("key")
            self.acked.append(
                Written(
                    event["partition"],
                    event["offset"],
                    key.encode() if key is not None else None,
                    event["value"].encode(),
                )
            )
        elif name == "producer_send_error":
            self.errors.append(f"{event.get('exception')}: {event.get('message')}")

    def partitions_written(self) -> set[int]:
        """The partitions at least one acknowledged record went to."""
        return {w.partition for w in self.acked}

    def stop(self) -> None:
        """SIGTERM: the tool closes its producer, which waits for what is in flight."""
        code = self._terminate(timeout=150)
        if code not in (0, 143):
            self.errors.append(f"exited with {code}: {self.log_tail(20)}")


class TransactionalCopier(_JavaTool):
    """Apache Kafka's TransactionalMessageCopier (the Java client), as Kafka's
    own system tests run it (transactions_test.py): it reads one partition of
    the input topic (read_committed) and copies its records to the output
    topic in transactions of `transaction_size`, committing its consumer's
    offsets inside each (sendOffsetsToTransaction with the group's metadata),
    until it has copied what the partition held when it started; then it
    exits 0. On any error but a fenced producer it aborts the transaction and
    rewinds to its group's committed offset: a failure may make it copy a
    record again, never show it twice to a read_committed reader. With
    `random_aborts` it also aborts a third of its transactions on purpose.

    Its JSON lines on stdout give its progress: "totalProcessed", the records
    in transactions it committed."""

    def __init__(
        self,
        bootstrap: str,
        input_topic: str,
        partition: int,
        output_topic: str,
        group: str,
        transaction_size: int,
        random_aborts: bool = False,
    ):
        self.transactional_id = f"{group}-{partition}"
        self.processed = 0
        self._start(
            "transactional-message-copier", "TransactionalMessageCopier",
            "--broker-list", bootstrap,
            "--input-topic", input_topic, "--input-partition", str(partition),
            "--output-topic", output_topic,
            "--transactional-id", self.transactional_id, "--consumer-group", group,
            "--transaction-size", str(transaction_size),
            # As Kafka's system test: the transaction a killed copier left open
            # is aborted within seconds. Its successor cannot even look up its
            # position until then (read_committed waits for the group's
            # transactional offsets to settle), and looks it up before it
            # fences the killed one.
            "--transaction-timeout", "10000",
            "--use-group-metadata",
            *(["--enable-random-aborts"] if random_aborts else []),
        )  # fmt: skip

    def _on_event(self, event: dict) -> None:
        if "totalProcessed" in event:
            self.processed = event["totalProcessed"]

    def stop(self) -> None:
        self._terminate(timeout=30)


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
        deadline = time.monotonic() + timeout
        ends = {p: _high_watermark(consumer, topic, p, deadline) for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        found: dict[int, list[tuple[int, bytes, bytes]]] = {p: [] for p in range(partitions)}
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


# What librdkafka says of a partition whose leader it has not learned yet.
_LEADER_NOT_KNOWN_YET = (
    KafkaError._UNKNOWN_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.NOT_LEADER_FOR_PARTITION,
)


def _high_watermark(consumer: Consumer, topic: str, partition: int, deadline: float) -> int:
    """The partition's high watermark, asked again (until `deadline`, the
    read's) while the client has not learned the partition's leader: read
    right after a failover, its first metadata may come before the new leader
    is known to every broker."""
    while True:
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)[1]
        except KafkaException as e:
            if e.args[0].code() not in _LEADER_NOT_KNOWN_YET or time.monotonic() > deadline:
                raise
        # A metadata request (not a sleep) before asking again.
        consumer.list_topics(topic, timeout=5)


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


def check(
    writer: Writer | VerifiableWriter, read: dict[int, list[tuple[int, bytes, bytes]]]
) -> Verdict:
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
