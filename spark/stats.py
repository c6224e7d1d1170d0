"""The streaming job: purchases per country and per minute, from Kafka to Kafka and Parquet.

    events = purchase_events(spark, bootstrap, "purchases")
    queries = start(window_stats(events), bootstrap=..., stats_topic="purchase-stats",
                    output_dir=Path("spark-output"))

It reads topic `purchases` with `spark.readStream.format("kafka")`, parses each
value's JSON, and counts purchases and sums revenue per country and per
one-minute event-time window, with a watermark that lets events arrive up to
30 seconds late. Each window is written once, when the watermark passes its end
(append mode), by two queries with their own checkpoints:

- Spark's file sink into a Parquet table, `<output>/table/`: the sink's metadata
  log and the checkpoint make a restart neither lose nor repeat a row, even
  after the driver was killed;
- Spark's Kafka sink into topic `purchase-stats`: key the country, value the
  row as JSON. A restart loses nothing; a batch that was written but not yet
  committed when the driver died is written again after the restart, with
  identical rows (Spark's Kafka sink is at-least-once).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from spark.purchases import SPARK_SCHEMA_DDL
from spark.reference import WindowStat

WINDOW = "1 minute"
WINDOW_MS = 60_000
WATERMARK_DELAY = "30 seconds"
WATERMARK_DELAY_MS = 30_000
STATS_COLUMNS = ["window_start", "window_end", "country", "purchases", "revenue"]
# The table's schema, as the job writes it (a sum of DECIMAL(10,2) is DECIMAL(20,2)).
TABLE_SCHEMA_DDL = (
    "window_start TIMESTAMP, window_end TIMESTAMP, country STRING, "
    "purchases BIGINT, revenue DECIMAL(20,2)"
)


def purchase_events(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    *,
    starting_offsets: str = "earliest",
    options: dict[str, str] | None = None,
) -> DataFrame:
    """The purchases in `topic` as a streaming DataFrame (SPARK_SCHEMA_DDL's columns).

    starting_offsets ("earliest", "latest" or Spark's JSON form) counts only for a
    new checkpoint; a restarted query goes on from its checkpoint. A value that is
    not a purchase's JSON is left out.
    """
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", starting_offsets)
    )
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    parsed = reader.load().select(
        F.from_json(F.col("value").cast("string"), SPARK_SCHEMA_DDL).alias("p")
    )
    return parsed.select("p.*").where(F.col("event_time").isNotNull())


def window_stats(events: DataFrame) -> DataFrame:
    """Purchases and revenue per (country, one-minute window), final once the watermark passes."""
    return (
        events.withWatermark("event_time", WATERMARK_DELAY)
        .groupBy(F.window("event_time", WINDOW), F.col("country"))
        .agg(F.count("*").alias("purchases"), F.sum("amount").alias("revenue"))
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "country",
            "purchases",
            "revenue",
        )
    )


@dataclass
class StatsQueries:
    parquet: StreamingQuery
    kafka: StreamingQuery

    @property
    def all(self) -> list[StreamingQuery]:
        return [self.parquet, self.kafka]

    def stop(self) -> None:
        for query in self.all:
            query.stop()

    def await_termination(self, timeout: float | None = None) -> None:
        for query in self.all:
            query.awaitTermination(timeout)
            if query.exception() is not None:
                raise query.exception()


def table_dir(output_dir: Path) -> Path:
    return Path(output_dir) / "table"


def checkpoint_dir(output_dir: Path) -> Path:
    return Path(output_dir) / "checkpoints"


def start(
    stats: DataFrame,
    *,
    bootstrap: str,
    stats_topic: str,
    output_dir: Path,
    available_now: bool = False,
    trigger_seconds: float = 2.0,
) -> StatsQueries:
    """Start both sinks; available_now=True reads what is there and stops by itself."""
    trigger = (
        {"availableNow": True}
        if available_now
        else {"processingTime": f"{trigger_seconds} seconds"}
    )
    checkpoints = checkpoint_dir(output_dir)
    parquet = (
        stats.writeStream.format("parquet")
        .queryName("purchase_stats_parquet")
        .outputMode("append")
        .option("path", str(table_dir(output_dir)))
        .option("checkpointLocation", str(checkpoints / "parquet"))
        .trigger(**trigger)
        .start()
    )
    kafka = (
        stats.select(
            F.col("country").alias("key"),
            F.to_json(F.struct(*STATS_COLUMNS)).alias("value"),
        )
        .writeStream.format("kafka")
        .queryName("purchase_stats_kafka")
        .outputMode("append")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", stats_topic)
        .option("checkpointLocation", str(checkpoints / "kafka"))
        .trigger(**trigger)
        .start()
    )
    return StatsQueries(parquet, kafka)


def read_table(spark: SparkSession, output_dir: Path) -> list[WindowStat]:
    """The rows the file sink has committed to the Parquet table, sorted."""
    table = table_dir(output_dir)
    if not (table / "_spark_metadata").is_dir():
        return []  # no batch has committed yet
    rows = (
        # With the schema given, a table whose batches have written no file yet reads
        # as empty instead of failing to infer one.
        spark.read.schema(TABLE_SCHEMA_DDL)
        .parquet(str(table))
        .select(
            F.unix_millis("window_start").alias("start"),
            "country",
            F.unix_millis("window_end").alias("end"),
            "purchases",
            "revenue",
        )
        .collect()
    )
    return sorted(WindowStat(r.start, r.country, r.end, r.purchases, r.revenue) for r in rows)
