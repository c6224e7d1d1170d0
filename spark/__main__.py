"""The pipeline's command line: `python -m spark <command> --bootstrap-servers host:port`.

    python -m spark pipeline    # everything: topics, stream, purchases, replay, the table
    python -m spark produce     # send generated purchases to topic `purchases`
    python -m spark stream      # the streaming job alone, until Ctrl-C (or --available-now)
    python -m spark replay      # the batch job: purchases between offsets or timestamps

`make pipeline` runs the first against `make run`'s broker (BOOTSTRAP=host:port for
another). Spark's own log goes to <output>/logs/spark.log.
"""

from __future__ import annotations

import argparse
import datetime
import json
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

DEFAULT_BOOTSTRAP = "localhost:9092"
DEFAULT_OUTPUT = Path("spark-output")


def _parse_time_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO 8601 time (UTC unless it says otherwise)."""
    if text.lstrip("-").isdigit():
        return int(text)
    moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def _partition_map(text: str) -> dict[int, int]:
    """'{"0": 100, "1": 80}' -> {0: 100, 1: 80}"""
    return {int(p): int(v) for p, v in json.loads(text).items()}


def _session(output_dir: Path, use_packages: bool, purpose: str):
    from spark import session

    return session.local_session(
        f"gregor-{purpose}",
        log_dir=Path(output_dir) / "logs",
        scratch_dir=Path(output_dir) / "scratch",
        use_packages=use_packages,
    )


class _Progress:
    """One line about every second: purchases sent, batches run, window rows written."""

    def __init__(self, queries=None, total: int | None = None):
        self.started = time.monotonic()
        self.queries = queries
        self.total = total
        self.sent = 0
        self.rows_written: dict[int, int] = {}
        self.rows_read: dict[int, int] = {}

    def update_from_queries(self) -> None:
        if self.queries is None:
            return
        for progress in self.queries.parquet.recentProgress:
            self.rows_read[progress["batchId"]] = progress["numInputRows"]
        # Spark's file sink does not count its rows (-1); the Kafka sink does, and the
        # two write the same rows.
        for progress in self.queries.kafka.recentProgress:
            self.rows_written[progress["batchId"]] = max(progress["sink"]["numOutputRows"], 0)

    def line(self) -> str:
        self.update_from_queries()
        parts = [f"[{time.monotonic() - self.started:6.1f}s]"]
        if self.total is not None:
            parts.append(f"produced {self.sent:,}/{self.total:,} purchases")
        if self.queries is not None:
            batches = len(self.rows_read)
            parts.append(
                f"stream: {batches} batches, {sum(self.rows_read.values()):,} purchases read, "
                f"{sum(self.rows_written.values()):,} window rows written"
            )
        return " | ".join(parts)

    def on_sent(self, sent: int) -> None:
        self.sent = sent
        print(self.line(), flush=True)


def _generate(args):
    from spark import purchases

    if args.start is not None:
        start_ms = _parse_time_ms(args.start)
    else:
        # History that ends about now, from a whole minute on, so that every window
        # but the last is whole.
        now_ms = int(time.time() * 1000)
        start_ms = now_ms - now_ms % 60_000 - int(args.duration * 1000)
    return list(
        purchases.generate(
            seed=args.seed,
            rate=args.rate,
            duration=args.duration,
            start_ms=start_ms,
            max_lateness=args.max_lateness,
        )
    )


def _send(args, events, on_progress: Callable[[int], None] | None):
    from spark import producer

    per_second = args.rate * args.speedup if args.speedup > 0 else 0.0
    return producer.produce(
        args.bootstrap_servers, args.topic, events, per_second=per_second, on_progress=on_progress
    )


# --- commands -------------------------------------------------------------------------------


def cmd_produce(args) -> int:
    from spark import topics

    topics.ensure_topics(args.bootstrap_servers, [args.topic])
    events = _generate(args)
    progress = _Progress(total=len(events))
    delivered = _send(args, events, progress.on_sent)
    by_partition: dict[int, list[int]] = {}
    for d in delivered:
        by_partition.setdefault(d.partition, []).append(d.offset)
    for p, offsets in sorted(by_partition.items()):
        print(f"partition {p}: offsets {min(offsets)}..{max(offsets)}")
    return 0


def cmd_stream(args) -> int:
    from spark import stats

    spark = _session(args.output_dir, args.packages, "stream")
    events = stats.purchase_events(
        spark, args.bootstrap_servers, args.topic, starting_offsets=args.starting_offsets
    )
    queries = stats.start(
        stats.window_stats(events),
        bootstrap=args.bootstrap_servers,
        stats_topic=args.stats_topic,
        output_dir=Path(args.output_dir),
        available_now=args.available_now,
        trigger_seconds=args.trigger_seconds,
    )
    stopping = []

    def stop(signum, _frame):
        stopping.append(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    progress = _Progress(queries)
    print(f"streaming {args.topic} -> {args.stats_topic} and {args.output_dir}", flush=True)
    while not stopping and any(q.isActive for q in queries.all):
        time.sleep(1)
        print(progress.line(), flush=True)
    queries.stop()
    for q in queries.all:
        if q.exception() is not None:
            print(f"query {q.name} failed: {q.exception()}", file=sys.stderr)
            return 1
    print(progress.line(), flush=True)
    return 0


def cmd_replay(args) -> int:
    from pyspark.sql import functions as F

    from spark import replay

    spark = _session(args.output_dir, args.packages, "replay")
    if args.from_offsets is not None:
        records = replay.read_offsets(
            spark,
            args.bootstrap_servers,
            args.topic,
            _partition_map(args.from_offsets),
            _partition_map(args.to_offsets) if args.to_offsets else None,
        )
    else:
        records = replay.read_timestamps(
            spark,
            args.bootstrap_servers,
            args.topic,
            _parse_time_ms(args.from_time),
            _parse_time_ms(args.to_time),
        )
    summary = (
        replay.purchases_of(records)
        .groupBy("country")
        .agg(F.count("*").alias("purchases"), F.sum("amount").alias("revenue"))
        .orderBy("country")
    )
    summary.show(truncate=False)
    spark.stop()
    return 0


def _hhmm(ms: int) -> str:
    return f"{datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC):%H:%M}"


def cmd_pipeline(args) -> int:
    from spark import reference, replay, stats, topics

    run_dir = Path(args.output_dir) / datetime.datetime.now().strftime("run-%Y%m%d-%H%M%S")
    bs = args.bootstrap_servers
    print(f"pipeline: broker {bs}; output {run_dir}", flush=True)
    topics.ensure_topics(bs, [args.topic, args.stats_topic])
    # The stream starts where the topic ends now: this run's purchases, and only those.
    purchases_from = topics.end_offsets(bs, args.topic)
    stats_from = topics.end_offsets(bs, args.stats_topic)
    events = _generate(args)
    expected = reference.closed_window_stats(events, stats.WINDOW_MS, stats.WATERMARK_DELAY_MS)

    spark = _session(run_dir, args.packages, "pipeline")
    started = (
        json.dumps({args.topic: {str(p): o for p, o in purchases_from.items()}})
        if purchases_from
        else "earliest"
    )
    queries = stats.start(
        stats.window_stats(stats.purchase_events(spark, bs, args.topic, starting_offsets=started)),
        bootstrap=bs,
        stats_topic=args.stats_topic,
        output_dir=run_dir,
        trigger_seconds=args.trigger_seconds,
    )
    progress = _Progress(queries, total=len(events))
    table = stats.table_dir(run_dir)
    try:
        pace = f"{args.speedup:g}x real time" if args.speedup > 0 else "at once"
        print(
            f"pipeline: sending {len(events):,} purchases ({args.rate:g}/s for "
            f"{args.duration:g} s of event time, {pace}) to {args.topic}",
            flush=True,
        )
        _send(args, events, progress.on_sent)
        # Every window the watermark has closed is written once the stream has read
        # the last purchase; the last minute stays open (later purchases would close it).
        deadline = time.monotonic() + args.timeout
        while len(stats.read_table(spark, run_dir)) < len(expected):
            for q in queries.all:
                if q.exception() is not None:
                    raise q.exception()
            if time.monotonic() > deadline:
                print(f"pipeline: windows not all written in {args.timeout} s", file=sys.stderr)
                return 1
            time.sleep(2)
            print(progress.line(), flush=True)
    finally:
        queries.stop()

    rows = stats.read_table(spark, run_dir)
    print(f"\npurchases and revenue per country and minute ({table}):")
    print(f"{'window (UTC)':<13} {'country':<7} {'purchases':>9} {'revenue':>10}")
    for row in rows:
        window = f"{_hhmm(row.window_start_ms)}-{_hhmm(row.window_end_ms)}"
        print(f"{window:<13} {row.country:<7} {row.purchases:>9,} {row.revenue:>10,.2f}")
    verdict = "the same" if rows == expected else "DIFFERENT"
    print(
        f"\ncheck: {len(rows)} rows in Parquet, {len(expected)} computed in plain Python "
        f"from the same purchases: {verdict}"
    )

    # The batch job: the stats this run wrote, by offsets, and its first whole minute
    # of purchases again, by timestamps.
    stats_read = replay.read_offsets(spark, bs, args.stats_topic, stats_from).count()
    print(f"replay by offsets: {stats_read} records in {args.stats_topic} from this run")
    starts = sorted({s.window_start_ms for s in expected})
    if len(starts) > 1:
        # The first whole minute (the first window also holds purchases made late before it).
        first = starts[1]
        minute = replay.purchases_of(
            replay.read_timestamps(spark, bs, args.topic, first, first + stats.WINDOW_MS)
        ).count()
        in_table = sum(s.purchases for s in expected if s.window_start_ms == first)
        span = f"{_hhmm(first)}-{_hhmm(first + stats.WINDOW_MS)}"
        # Kafka finds the first record at or after each time; late purchases make
        # timestamps go back a little, so the two counts need not agree exactly.
        print(
            f"replay by timestamps {span} UTC: {minute} records in {args.topic} "
            f"(this run made {in_table} purchases in that minute)"
        )
    spark.stop()
    return 0 if verdict == "the same" else 1


# --- arguments ------------------------------------------------------------------------------


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap-servers", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT")
    p.add_argument("--topic", default="purchases", help="the purchases topic")


def _spark_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output-dir", default=str(DEFAULT_OUTPUT), help="table, checkpoints, logs")
    p.add_argument(
        "--packages",
        action="store_true",
        help="let Spark fetch the connector from Maven Central (--packages) "
        "instead of using the jars resolved into .cache/",
    )


def _generator_options(p: argparse.ArgumentParser, duration: float, speedup: float) -> None:
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rate", type=float, default=12.0, help="purchases per second of event time")
    p.add_argument(
        "--duration", type=float, default=duration, help="seconds of event time to generate"
    )
    p.add_argument(
        "--speedup",
        type=float,
        default=speedup,
        help="seconds of event time sent per second (0: as fast as possible)",
    )
    p.add_argument("--start", help="event time of the first purchase (default: duration ago)")
    p.add_argument("--max-lateness", type=float, default=5.0, help="seconds")


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m spark", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("pipeline", help="topics, stream, purchases, replay and the final table")
    _common(p)
    _spark_options(p)
    _generator_options(p, duration=600, speedup=60)
    p.add_argument("--stats-topic", default="purchase-stats")
    p.add_argument("--trigger-seconds", type=float, default=2.0)
    p.add_argument("--timeout", type=float, default=180, help="seconds to wait for the windows")
    p.set_defaults(run=cmd_pipeline)

    p = sub.add_parser("produce", help="send generated purchases")
    _common(p)
    _generator_options(p, duration=60, speedup=1)
    p.set_defaults(run=cmd_produce)

    p = sub.add_parser("stream", help="the streaming job, until Ctrl-C or SIGTERM")
    _common(p)
    _spark_options(p)
    p.add_argument("--stats-topic", default="purchase-stats")
    p.add_argument("--starting-offsets", default="earliest", help="for a new checkpoint")
    p.add_argument("--trigger-seconds", type=float, default=2.0)
    p.add_argument("--available-now", action="store_true", help="read what is there, then stop")
    p.set_defaults(run=cmd_stream)

    p = sub.add_parser("replay", help="purchases between offsets or between timestamps")
    _common(p)
    _spark_options(p)
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--from-offsets", help='JSON: {"0": 100, "1": 80}')
    group.add_argument("--from-time", help="ISO 8601 or epoch ms")
    p.add_argument("--to-offsets", help="JSON, each exclusive (default: latest)")
    p.add_argument("--to-time", help="ISO 8601 or epoch ms, exclusive")
    p.set_defaults(run=cmd_replay)

    args = ap.parse_args(argv)
    if getattr(args, "from_time", None) and not args.to_time:
        ap.error("--from-time needs --to-time")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from spark import connector

    try:
        return args.run(args)
    except connector.ConnectorUnavailable as exc:
        print(f"spark: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
