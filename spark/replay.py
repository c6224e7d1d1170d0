"""The batch job: replay a topic's history with `spark.read.format("kafka")`.

    read_offsets(spark, bs, "purchases", {0: 100, 1: 80}, {0: 200, 1: 160})
    read_timestamps(spark, bs, "purchases", start_ms, end_ms)
    read_timestamps_by_partition(spark, bs, "purchases", {0: t0, 1: t1}, {0: t2, 1: t3})
    purchases_of(df)   # the records' purchases, with partition, offset and timestamp

Offsets are Spark's JSON forms (startingOffsets/endingOffsets), the end
exclusive. A timestamp stands for the offset of the partition's first record
whose timestamp is at or after it (Kafka's ListOffsets by time), so on a topic
whose timestamps grow with the offsets (the producer sets each record's
timestamp to the purchase's event time) the rows are exactly the purchases made
from the start time, up to and without the end time. Where no record is at or
after a time, Spark is told to use the latest offset instead of failing.
"""

from __future__ import annotations

import json

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark.purchases import SPARK_SCHEMA_DDL


def _reader(spark: SparkSession, bootstrap: str, topic: str, options: dict[str, str] | None):
    reader = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
    )
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    return reader


def _per_partition(topic: str, values: dict[int, int]) -> str:
    return json.dumps({topic: {str(p): v for p, v in sorted(values.items())}})


def read_offsets(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    starting: dict[int, int],
    ending: dict[int, int] | None = None,
    options: dict[str, str] | None = None,
) -> DataFrame:
    """The records from each partition's starting offset up to (without) its ending one.

    -2 stands for the earliest offset and -1 (ending only) for the latest, as in
    Spark; ending=None reads every partition up to its latest offset.
    """
    return (
        _reader(spark, bootstrap, topic, options)
        .option("startingOffsets", _per_partition(topic, starting))
        .option("endingOffsets", "latest" if ending is None else _per_partition(topic, ending))
        .load()
    )


def read_timestamps(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    start_ms: int,
    end_ms: int,
    options: dict[str, str] | None = None,
) -> DataFrame:
    """Every partition's records from start_ms up to (without) end_ms."""
    return (
        _reader(spark, bootstrap, topic, options)
        .option("startingTimestamp", str(start_ms))
        .option("endingTimestamp", str(end_ms))
        .option("startingOffsetsByTimestampStrategy", "latest")
        .load()
    )


def read_timestamps_by_partition(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    starting: dict[int, int],
    ending: dict[int, int],
    options: dict[str, str] | None = None,
) -> DataFrame:
    """Each partition's records from its own start time up to (without) its end time."""
    return (
        _reader(spark, bootstrap, topic, options)
        .option("startingOffsetsByTimestamp", _per_partition(topic, starting))
        .option("endingOffsetsByTimestamp", _per_partition(topic, ending))
        .option("startingOffsetsByTimestampStrategy", "latest")
        .load()
    )


def purchases_of(records: DataFrame) -> DataFrame:
    """The purchases in Kafka records, beside each record's partition, offset and timestamp."""
    return records.select(
        "partition",
        "offset",
        "timestamp",
        F.from_json(F.col("value").cast("string"), SPARK_SCHEMA_DDL).alias("p"),
    ).select("partition", "offset", "timestamp", "p.*")
