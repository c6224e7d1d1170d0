"""The Spark pipeline's checks, against any Kafka-protocol broker.

compat_tests/test_spark.py runs them against Apache Kafka and Gregor side by side;
tests/spark/ runs them against a Gregor of its own, beside the tests that need to
control processes (killing the Spark driver). Each check takes a SparkSession, a
bootstrap address, and names or directories of its own, and asserts.

They use the project's `spark` package (the pipeline, which talks to a broker's
address only, through Spark's own Kafka connector) and the clients: confluent-kafka
and Apache Kafka's Java console consumer. Nothing waits by sleeping: every wait
polls a condition with a deadline.
"""

from __future__ import annotations

import collections
import concurrent.futures
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException

from compatlib.common import unique, wait_until
from spark import producer, purchases, reference, replay, stats, topics

# A whole minute an hour ago, so that the test windows line up with it. Never a
# fixed date: once it is older than retention.ms (7 days), both brokers delete
# the test's records as soon as they are written, as Kafka should.
START_MS = (time.time_ns() // 1_000_000 // 60_000 - 60) * 60_000
WINDOW_MS = stats.WINDOW_MS
DELAY_MS = stats.WATERMARK_DELAY_MS
DEADLINE = 90.0  # seconds for anything Spark does here; small data, a busy 2-core machine
# Sends purchases while a query runs.
_BACKGROUND = concurrent.futures.ThreadPoolExecutor(max_workers=1)


# --- helpers ---------------------------------------------------------------------------------


def read_topic(bootstrap: str, topic: str, timeout: float = 30.0) -> list[tuple[bytes, bytes]]:
    """Every (key, value) in `topic`, each partition from its start to its end offset now."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("spark-read"),
            "enable.auto.commit": False,
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        }
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        out = []
        done = {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + timeout
        while len(done) < len(ends):
            assert time.monotonic() < deadline, f"{topic}: read {len(out)} records in {timeout}s"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, f"consume error: {msg.error()}"
            out.append((msg.key(), msg.value()))
            if msg.offset() + 1 >= ends[msg.partition()]:
                done.add(msg.partition())
        return out
    finally:
        consumer.close()


def stats_rows(records: list[tuple[bytes, bytes]]) -> list[reference.WindowStat]:
    """The window rows in purchase-stats records; each key must be the row's country."""
    rows = []
    for key, value in records:
        row = reference.WindowStat.from_json(value)
        assert key == row.country.encode(), f"key {key!r} for a row of {row.country}"
        rows.append(row)
    return sorted(rows)


def assert_each_window_once(rows: list[reference.WindowStat], expected) -> None:
    assert rows, "no rows at all"
    assert rows == sorted(expected), _diff(rows, expected)


def assert_each_window_at_least_once(records, expected) -> int:
    """Spark's Kafka sink is at-least-once: a batch written but not committed when the
    query stopped is written again on restart. Every row must be there, and a repeat
    must be the very same record. Returns how many records were repeats."""
    counts = collections.Counter(records)
    distinct = stats_rows(list(counts))
    assert_each_window_once(distinct, expected)
    keys = collections.Counter((r.window_start_ms, r.country) for r in distinct)
    assert max(keys.values()) == 1, f"a window written with different values: {keys}"
    return sum(counts.values()) - len(counts)


def _diff(got, want) -> str:
    got_set, want_set = set(got), set(want)
    return (
        f"{len(got)} rows, {len(want)} expected; missing {sorted(want_set - got_set)[:5]}, "
        f"unexpected {sorted(got_set - want_set)[:5]}, "
        f"repeated {[r for r, n in collections.Counter(got).items() if n > 1][:5]}"
    )


def closed(events) -> list[reference.WindowStat]:
    return reference.closed_window_stats(list(events), WINDOW_MS, DELAY_MS)


# --- the streaming job -----------------------------------------------------------------------


@dataclass
class PipelineRun:
    topic: str
    stats_topic: str
    output_dir: Path
    events: list[purchases.Purchase]


def run_pipeline(spark, bootstrap: str, output_dir: Path) -> PipelineRun:
    """Four minutes of purchases (480), then the streaming job until it has read them all."""
    run = PipelineRun(
        unique("purchases"),
        unique("purchase-stats"),
        output_dir,
        list(purchases.generate(seed=11, rate=2, duration=240, start_ms=START_MS)),
    )
    topics.ensure_topics(bootstrap, [run.topic, run.stats_topic])
    producer.produce(bootstrap, run.topic, run.events)
    queries = stats.start(
        stats.window_stats(stats.purchase_events(spark, bootstrap, run.topic)),
        bootstrap=bootstrap,
        stats_topic=run.stats_topic,
        output_dir=output_dir,
        available_now=True,
    )
    queries.await_termination(DEADLINE)
    assert not any(q.isActive for q in queries.all), "the job did not finish its input"
    return run


def check_parquet_equals_python(spark, run: PipelineRun) -> None:
    expected = closed(run.events)
    # The watermark leaves the last minute open: the job must not have written it.
    assert len(reference.window_stats(run.events, WINDOW_MS)) > len(expected)
    assert_each_window_once(stats.read_table(spark, run.output_dir), expected)


def check_stats_topic_equals_python(bootstrap: str, run: PipelineRun) -> None:
    assert_each_window_once(stats_rows(read_topic(bootstrap, run.stats_topic)), closed(run.events))


def check_java_console_consumer_reads_the_same(bootstrap: str, run: PipelineRun) -> None:
    from compatlib import java

    confluent = read_topic(bootstrap, run.stats_topic)
    result = java.run(
        "kafka-console-consumer",
        "--bootstrap-server", bootstrap,
        "--topic", run.stats_topic,
        "--from-beginning",
        "--max-messages", len(confluent),
        "--timeout-ms", 30000,
        "--formatter-property", "print.key=true",
        "--formatter-property", "key.separator=\t",
        timeout=90,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    java_records = sorted(tuple(line.encode().split(b"\t", 1)) for line in lines)
    assert java_records == sorted(confluent), set(java_records) ^ set(confluent)
    assert_each_window_once(stats_rows(java_records), closed(run.events))


def check_restart_mid_stream(spark, bootstrap: str, output_dir: Path) -> None:
    """Stop the job while purchases still arrive, start it again from its checkpoint:
    every window once in Parquet, and at least once, repeats identical, in Kafka."""
    topic, stats_topic = unique("purchases"), unique("purchase-stats")
    first = list(purchases.generate(seed=21, rate=2, duration=180, start_ms=START_MS))
    second = list(purchases.generate(seed=22, rate=2, duration=180, start_ms=START_MS + 180_000))
    topics.ensure_topics(bootstrap, [topic, stats_topic])
    producer.produce(bootstrap, topic, first)

    def start(available_now: bool):
        return stats.start(
            stats.window_stats(stats.purchase_events(spark, bootstrap, topic)),
            bootstrap=bootstrap,
            stats_topic=stats_topic,
            output_dir=output_dir,
            available_now=available_now,
            trigger_seconds=0.5,
        )

    queries = start(available_now=False)
    try:
        wait_until(
            lambda: len(stats.read_table(spark, output_dir)) == len(closed(first)),
            timeout=DEADLINE,
            message="for the first purchases' windows",
        )
        # Three seconds of sending while the job runs; result() re-raises a failure.
        sending = _BACKGROUND.submit(producer.produce, bootstrap, topic, second, per_second=120)

        def read_some_of_the_second():
            progress = queries.parquet.recentProgress
            read = sum(p["numInputRows"] for p in progress)
            return len(first) < read

        wait_until(read_some_of_the_second, timeout=DEADLINE, message="for the stream")
    finally:
        queries.stop()
    sending.result(60)

    restarted = start(available_now=True)
    restarted.await_termination(DEADLINE)
    expected = closed(first + second)
    assert_each_window_once(stats.read_table(spark, output_dir), expected)
    assert_each_window_at_least_once(read_topic(bootstrap, stats_topic), expected)


# --- the batch job ---------------------------------------------------------------------------


@dataclass
class History:
    topic: str
    delivered: list[producer.Delivered]

    def partitions(self) -> dict[int, list[producer.Delivered]]:
        """Every partition's deliveries; three countries hash to two of the three
        partitions, so one is empty (Spark must still be given every partition)."""
        out: dict[int, list[producer.Delivered]] = {p: [] for p in range(topics.PARTITIONS)}
        for d in self.delivered:
            out[d.partition].append(d)
        return out


def make_history(bootstrap: str) -> History:
    """A minute of purchases (240) on three partitions, each record's timestamp its
    event time, growing with the offsets (no late purchases)."""
    topic = unique("history")
    topics.ensure_topics(bootstrap, [topic])
    events = purchases.generate(seed=31, rate=4, duration=60, start_ms=START_MS, max_lateness=0)
    return History(topic, producer.produce(bootstrap, topic, events))


def _read_back(df) -> list[tuple[int, int, str, int]]:
    from pyspark.sql import functions as F

    rows = (
        replay.purchases_of(df)
        .select("partition", "offset", "order_id", F.unix_millis("timestamp").alias("ts"))
        .collect()
    )
    return sorted((r.partition, r.offset, r.order_id, r.ts) for r in rows)


def _expected(deliveries) -> list[tuple[int, int, str, int]]:
    return sorted(
        (d.partition, d.offset, d.purchase.order_id, d.purchase.event_time_ms) for d in deliveries
    )


def check_replay_between_offsets(spark, bootstrap: str, history: History) -> None:
    parts = history.partitions()
    assert sum(1 for ds in parts.values() if ds) > 1, "the keys should spread over partitions"
    # An empty partition from its earliest (-2) to its latest (-1) offset.
    starting = {p: ds[len(ds) // 4].offset if ds else -2 for p, ds in parts.items()}
    ending = {p: ds[3 * len(ds) // 4].offset if ds else -1 for p, ds in parts.items()}
    got = _read_back(replay.read_offsets(spark, bootstrap, history.topic, starting, ending))
    want = _expected(
        d for d in history.delivered if starting[d.partition] <= d.offset < ending[d.partition]
    )
    assert want and got == want


def check_replay_between_timestamps(spark, bootstrap: str, history: History) -> None:
    # Between two records' times, so that neither bound is anyone's exact timestamp...
    start_ms, end_ms = START_MS + 15_100, START_MS + 44_900
    got = _read_back(replay.read_timestamps(spark, bootstrap, history.topic, start_ms, end_ms))
    want = _expected(d for d in history.delivered if start_ms <= d.purchase.event_time_ms < end_ms)
    assert want and got == want
    # ...and on a record's timestamp exactly: the start includes it, the end excludes it.
    on = history.delivered[40].purchase.event_time_ms
    got = _read_back(replay.read_timestamps(spark, bootstrap, history.topic, on, on + 10_000))
    want = _expected(d for d in history.delivered if on <= d.purchase.event_time_ms < on + 10_000)
    assert want and got == want


def check_replay_between_timestamps_per_partition(spark, bootstrap: str, history) -> None:
    parts = sorted(history.partitions())
    starting = {p: START_MS + 5_000 * (i + 1) for i, p in enumerate(parts)}
    ending = {p: START_MS + 30_000 + 7_000 * i for i, p in enumerate(parts)}
    got = _read_back(
        replay.read_timestamps_by_partition(spark, bootstrap, history.topic, starting, ending)
    )
    want = _expected(
        d
        for d in history.delivered
        if starting[d.partition] <= d.purchase.event_time_ms < ending[d.partition]
    )
    assert want and got == want


def check_isolation_level(spark, bootstrap: str, history: History, level: str) -> None:
    """Both levels read every record of non-transactional input (batch and stream)."""
    options = {"kafka.isolation.level": level}
    ends = {p: ds[-1].offset + 1 if ds else -1 for p, ds in history.partitions().items()}
    got = _read_back(
        replay.read_offsets(spark, bootstrap, history.topic, dict.fromkeys(ends, -2), ends, options)
    )
    assert got == _expected(history.delivered)
    events = stats.purchase_events(spark, bootstrap, history.topic, options=options)
    query_name = re.sub(r"\W", "_", unique(f"isolation_{level}"))
    query = (
        events.writeStream.format("memory").queryName(query_name).trigger(availableNow=True).start()
    )
    query.awaitTermination(DEADLINE)
    assert query.exception() is None
    streamed = {r.order_id for r in spark.table(query_name).collect()}
    assert streamed == {d.purchase.order_id for d in history.delivered}


def check_read_committed_over_transactions(spark, bootstrap: str) -> None:
    """Transactional input: read_committed (batch and stream) reads exactly the
    committed transactions' records, read_uncommitted the aborted ones too; the
    markers' offsets are gaps Spark's source steps over."""
    from confluent_kafka import Producer

    topic = unique("spark-txn")
    topics.ensure_topics(bootstrap, [topic], partitions=2)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic})
    producer.init_transactions(30)
    outcome = {"committed-1": True, "aborted": False, "committed-2": True}
    for name, commit in outcome.items():
        producer.begin_transaction()
        for i in range(10):
            producer.produce(topic, value=f"{name}-{i}".encode(), partition=i % 2)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    committed = {f"{n}-{i}" for n, c in outcome.items() if c for i in range(10)}
    everything = {f"{n}-{i}" for n in outcome for i in range(10)}
    for level, want in (("read_committed", committed), ("read_uncommitted", everything)):
        options = {"kafka.isolation.level": level}
        df = replay.read_offsets(spark, bootstrap, topic, {0: -2, 1: -2}, None, options)
        got = [r.value.decode() for r in df.select("value").collect()]
        assert sorted(got) == sorted(want), level
    query_name = re.sub(r"\W", "_", unique("txn_stream"))
    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", "read_committed")
        .load()
    )
    query = (
        stream.selectExpr("CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName(query_name)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(DEADLINE)
    assert query.exception() is None
    streamed = [r.value for r in spark.table(query_name).collect()]
    assert sorted(streamed) == sorted(committed)


# --- the Kafka source's options --------------------------------------------------------------


def _produce_values(bootstrap: str, topic: str, values: list[str], timestamp_ms=None):
    from compatlib.common import ck_produce

    records = [{"value": v.encode()} for v in values]
    if timestamp_ms is not None:
        for r in records:
            r["timestamp"] = timestamp_ms
    # One batch, so one append: the retention check counts on where segments roll.
    return ck_produce(bootstrap, topic, records, conf={"linger.ms": 1000})


def check_subscribe_pattern_finds_new_topic(spark, bootstrap: str, admin) -> None:
    from confluent_kafka.admin import NewTopic

    from compatlib.common import wait_for_leaders

    prefix = unique("pattern")
    first, later = f"{prefix}-a", f"{prefix}-b"
    admin.create_topics([NewTopic(first, 1)])[first].result(30)
    wait_for_leaders(admin, first, 1)
    _produce_values(bootstrap, first, [f"a{i}" for i in range(5)])
    query_name = re.sub(r"\W", "_", prefix)
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribePattern", re.escape(prefix) + r"-.*")
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("topic", "CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName(query_name)
        .trigger(processingTime="500 milliseconds")
        .start()
    )

    def rows():
        assert query.exception() is None, query.exception()
        return sorted((r.topic, r.value) for r in spark.table(query_name).collect())

    try:
        wait_until(lambda: len(rows()) == 5, timeout=DEADLINE, message="for the first topic")
        admin.create_topics([NewTopic(later, 1)])[later].result(30)
        wait_for_leaders(admin, later, 1)
        _produce_values(bootstrap, later, [f"b{i}" for i in range(5)])
        wait_until(lambda: len(rows()) == 10, timeout=DEADLINE, message="for the later topic")
    finally:
        query.stop()
    assert rows() == [(first, f"a{i}") for i in range(5)] + [(later, f"b{i}") for i in range(5)]


def _raw_query(spark, bootstrap: str, topic: str, out: Path, fail_on_data_loss: bool):
    """topic -> Parquet (partition, offset, value) with a checkpoint, reading what is there."""
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", str(fail_on_data_loss).lower())
        .load()
        .selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
        .writeStream.format("parquet")
        .option("path", str(out / "table"))
        .option("checkpointLocation", str(out / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )


def _offsets_read(spark, out: Path) -> list[int]:
    return sorted(r.offset for r in spark.read.parquet(str(out / "table")).collect())


def _check_data_loss(spark, bootstrap: str, topic: str, out: Path, lose) -> None:
    """Read 0..4, let `lose()` remove unread records up to offset 10 (and add 10..14):
    failOnDataLoss=true fails with Spark's data-loss error, false goes on from the
    earliest offset there is."""
    _produce_values(bootstrap, topic, [f"v{i}" for i in range(5)], _an_hour_ago())
    first = _raw_query(spark, bootstrap, topic, out, fail_on_data_loss=True)
    first.awaitTermination(DEADLINE)
    assert first.exception() is None and _offsets_read(spark, out) == [0, 1, 2, 3, 4]

    lose()
    failing = _raw_query(spark, bootstrap, topic, out, fail_on_data_loss=True)
    with pytest.raises(StreamingQueryException) as failed:
        failing.awaitTermination(DEADLINE)
    error = str(failed.value)
    assert "Some data may have been lost" in error, error
    assert "Could not read records in offset [5, 15)" in error, error
    assert _offsets_read(spark, out) == [0, 1, 2, 3, 4]

    going_on = _raw_query(spark, bootstrap, topic, out, fail_on_data_loss=False)
    going_on.awaitTermination(DEADLINE)
    assert going_on.exception() is None
    assert _offsets_read(spark, out) == [0, 1, 2, 3, 4, 10, 11, 12, 13, 14]


def _an_hour_ago() -> int:
    return int(time.time() * 1000) - 3_600_000


def check_fail_on_data_loss_after_delete_records(spark, bootstrap: str, admin, topic, out):
    from confluent_kafka import TopicPartition

    t = topic()

    def lose():
        _produce_values(bootstrap, t, [f"v{i}" for i in range(5, 15)])
        (future,) = admin.delete_records([TopicPartition(t, 0, 10)]).values()
        assert future.result(30).low_watermark == 10

    _check_data_loss(spark, bootstrap, t, out, lose)


def check_fail_on_data_loss_after_retention(spark, bootstrap: str, admin, topic, out):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    from compatlib.common import ck_watermarks

    # segment.ms=1: an append whose timestamp is past the segment's first one rolls
    # (Kafka's rule), so offsets 0..4, 5..9 and 10..14 are three segments.
    t = topic(config={"segment.ms": "1"})

    def lose():
        an_hour_ago = _an_hour_ago()
        _produce_values(bootstrap, t, [f"v{i}" for i in range(5, 10)], an_hour_ago + 1000)
        _produce_values(bootstrap, t, [f"v{i}" for i in range(10, 15)], int(time.time() * 1000))
        # Ten minutes' retention: the two segments of an hour ago go, the newest stays.
        entry = ConfigEntry("retention.ms", "600000", incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ConfigResource.Type.TOPIC, t, incremental_configs=[entry])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(30)
        wait_until(
            lambda: ck_watermarks(bootstrap, t)[0] == 10,
            timeout=60,
            message="for retention to remove offsets 0..9",
        )

    _check_data_loss(spark, bootstrap, t, out, lose)
