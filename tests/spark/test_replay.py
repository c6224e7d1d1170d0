"""The batch job against Gregor: exactly the records between offsets and between
timestamps (global and per partition), at either isolation level."""

from __future__ import annotations

import pytest
from compatlib import spark_pipeline as checks

# Slow (Spark: a JVM and a Spark session): make unit leaves the module out.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def history(bootstrap):
    return checks.make_history(bootstrap)


def test_between_offsets(spark, bootstrap, history):
    checks.check_replay_between_offsets(spark, bootstrap, history)


def test_between_timestamps(spark, bootstrap, history):
    checks.check_replay_between_timestamps(spark, bootstrap, history)


def test_between_timestamps_per_partition(spark, bootstrap, history):
    checks.check_replay_between_timestamps_per_partition(spark, bootstrap, history)


@pytest.mark.parametrize("level", ["read_uncommitted", "read_committed"])
def test_isolation_level_reads_everything(spark, bootstrap, history, level):
    checks.check_isolation_level(spark, bootstrap, history, level)


def test_read_committed_over_transactions(spark, bootstrap):
    checks.check_read_committed_over_transactions(spark, bootstrap)
