"""The streaming job against Gregor: its Parquet table and topic `purchase-stats` hold
what a plain-Python computation over the same purchases gives, window by window,
read back by confluent-kafka and by Kafka's Java console consumer; stopped
mid-stream and started again from its checkpoint, it writes every window once."""

from __future__ import annotations

import pytest
from compatlib import spark_pipeline as checks

# Slow (Spark: a JVM and a Spark session): make unit leaves the module out.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pipeline_run(spark, bootstrap, tmp_path_factory):
    return checks.run_pipeline(spark, bootstrap, tmp_path_factory.mktemp("pipeline"))


def test_parquet_table_equals_plain_python(spark, pipeline_run):
    checks.check_parquet_equals_python(spark, pipeline_run)


def test_stats_topic_equals_plain_python(bootstrap, pipeline_run):
    checks.check_stats_topic_equals_python(bootstrap, pipeline_run)


def test_java_console_consumer_reads_the_same_rows(bootstrap, pipeline_run):
    checks.check_java_console_consumer_reads_the_same(bootstrap, pipeline_run)


def test_stopped_mid_stream_and_restarted_writes_each_window_once(spark, bootstrap, tmp_path):
    checks.check_restart_mid_stream(spark, bootstrap, tmp_path)
