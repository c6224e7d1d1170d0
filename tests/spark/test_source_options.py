"""Options of Spark's Kafka source against Gregor: subscribePattern finds a topic
created after the query started; failOnDataLoss after DeleteRecords and after
retention removed records the query had not read."""

from __future__ import annotations

import pytest
from compatlib import spark_pipeline as checks

# Slow (Spark: a JVM and a Spark session): make unit leaves the module out.
pytestmark = pytest.mark.slow


def test_subscribe_pattern_finds_a_topic_created_later(spark, bootstrap, admin):
    checks.check_subscribe_pattern_finds_new_topic(spark, bootstrap, admin)


def test_fail_on_data_loss_after_delete_records(spark, bootstrap, admin, topic, tmp_path):
    checks.check_fail_on_data_loss_after_delete_records(spark, bootstrap, admin, topic, tmp_path)


def test_fail_on_data_loss_after_retention(spark, bootstrap, admin, topic, tmp_path):
    checks.check_fail_on_data_loss_after_retention(spark, bootstrap, admin, topic, tmp_path)
