"""The Spark pipeline on Spark's own Kafka connector (spark-sql-kafka-0-10), against
the broker under test: the streaming job's output against a plain-Python
computation, in Parquet and in Kafka (read back by confluent-kafka and Kafka's
Java console consumer), a restart from its checkpoint, the batch replay by
offsets and by timestamps, isolation levels, subscribePattern and failOnDataLoss.

The checks are compatlib/spark_pipeline.py's; tests/spark/ runs them against a
Gregor of its own too. One local SparkSession serves the module (a JVM start
costs seconds); Spark's log goes to a file in the module's temporary folder.
"""

from __future__ import annotations

import pytest
from compatlib import spark_pipeline as checks

pytestmark = pytest.mark.client("spark")


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from spark.session import local_session

    session = local_session(
        "compat",
        log_dir=tmp_path_factory.mktemp("spark-logs"),
        scratch_dir=tmp_path_factory.mktemp("spark-scratch"),
    )
    yield session
    session.stop()


@pytest.fixture(scope="module")
def pipeline_run(spark, bootstrap, tmp_path_factory):
    return checks.run_pipeline(spark, bootstrap, tmp_path_factory.mktemp("pipeline"))


@pytest.fixture(scope="module")
def history(bootstrap):
    return checks.make_history(bootstrap)


@pytest.mark.api("Spark Kafka source (stream)", "file sink", "watermark")
def test_stream_parquet_equals_plain_python(spark, pipeline_run):
    checks.check_parquet_equals_python(spark, pipeline_run)


@pytest.mark.api("Spark Kafka source (stream)", "Spark Kafka sink", "InitProducerId")
def test_stream_stats_topic_equals_plain_python(bootstrap, pipeline_run):
    checks.check_stats_topic_equals_python(bootstrap, pipeline_run)


@pytest.mark.api("Spark Kafka sink", "Fetch (Java console consumer)")
def test_stream_stats_topic_read_by_java_console_consumer(bootstrap, pipeline_run):
    checks.check_java_console_consumer_reads_the_same(bootstrap, pipeline_run)


@pytest.mark.api("Spark Kafka source (stream)", "checkpoint restart")
def test_stream_restarted_from_checkpoint(spark, bootstrap, tmp_path):
    checks.check_restart_mid_stream(spark, bootstrap, tmp_path)


@pytest.mark.api("Spark Kafka source (batch)", "ListOffsets")
def test_batch_between_offsets(spark, bootstrap, history):
    checks.check_replay_between_offsets(spark, bootstrap, history)


@pytest.mark.api("Spark Kafka source (batch)", "ListOffsets by timestamp")
def test_batch_between_timestamps(spark, bootstrap, history):
    checks.check_replay_between_timestamps(spark, bootstrap, history)


@pytest.mark.api("Spark Kafka source (batch)", "ListOffsets by timestamp")
def test_batch_between_timestamps_per_partition(spark, bootstrap, history):
    checks.check_replay_between_timestamps_per_partition(spark, bootstrap, history)


# Non-transactional input: both levels read everything.
@pytest.mark.api("Spark Kafka source", "isolation level")
@pytest.mark.parametrize("level", ["read_uncommitted", "read_committed"])
def test_isolation_level(spark, bootstrap, history, level):
    checks.check_isolation_level(spark, bootstrap, history, level)


@pytest.mark.api("Spark Kafka source", "isolation level", "transactions")
def test_read_committed_over_transactions(spark, bootstrap):
    checks.check_read_committed_over_transactions(spark, bootstrap)


@pytest.mark.api("Spark Kafka source (stream)", "subscribePattern", "Metadata")
def test_subscribe_pattern_finds_a_topic_created_later(spark, bootstrap, admin):
    checks.check_subscribe_pattern_finds_new_topic(spark, bootstrap, admin)


@pytest.mark.api("Spark Kafka source (stream)", "failOnDataLoss", "DeleteRecords")
def test_fail_on_data_loss_after_delete_records(spark, bootstrap, admin, topic, tmp_path):
    checks.check_fail_on_data_loss_after_delete_records(spark, bootstrap, admin, topic, tmp_path)


@pytest.mark.api("Spark Kafka source (stream)", "failOnDataLoss", "retention")
def test_fail_on_data_loss_after_retention(spark, bootstrap, admin, topic, tmp_path):
    checks.check_fail_on_data_loss_after_retention(spark, bootstrap, admin, topic, tmp_path)
