"""The streaming job on a three-broker Gregor cluster rides the loss of a leader:
the leader of a `purchases` partition is killed with SIGKILL while purchases
still arrive and the query runs; Spark's connector finds the new leaders, and
the Parquet table ends with every window once and `purchase-stats` with every
window at least once (its sink is at-least-once, repeats identical).

Both topics have three replicas and min.insync.replicas=2 (the cluster's
defaults), and the purchase producer is idempotent with acks=all, so a
purchase acknowledged before the kill is on the new leader.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from compatlib import spark_pipeline as checks
from compatlib.common import unique, wait_until
from confluent_kafka.admin import AdminClient

from spark import producer, purchases, stats, topics
from tests.cluster.conftest import GregorCluster
from tools.zookeeper import ZOOKEEPER_JAR, ZooKeeperNode

pytestmark = pytest.mark.slow


@pytest.fixture
def gregor_cluster(tmp_path):
    if not ZOOKEEPER_JAR.exists():
        pytest.fail(f"{ZOOKEEPER_JAR} is missing (`make clients` installs it)", pytrace=False)
    with ZooKeeperNode() as zookeeper:
        cluster = GregorCluster(tmp_path / "cluster", zookeeper, f"spark{time.monotonic_ns()}")
        try:
            yield cluster.start()
        finally:
            cluster.close()


def leader_of(bootstrap: str, topic: str, partition: int) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.list_topics(topic, timeout=10).topics[topic].partitions[partition].leader


def test_the_streaming_job_rides_a_leader_kill(spark, gregor_cluster, tmp_path):
    bootstrap = gregor_cluster.bootstrap
    topic, stats_topic = unique("purchases"), unique("purchase-stats")
    first = list(purchases.generate(seed=31, rate=2, duration=180, start_ms=checks.START_MS))
    second = list(
        purchases.generate(seed=32, rate=2, duration=180, start_ms=checks.START_MS + 180_000)
    )
    topics.ensure_topics(bootstrap, [topic, stats_topic])
    producer.produce(bootstrap, topic, first)
    output = tmp_path / "out"
    queries = stats.start(
        stats.window_stats(stats.purchase_events(spark, bootstrap, topic)),
        bootstrap=bootstrap,
        stats_topic=stats_topic,
        output_dir=output,
        available_now=False,
        trigger_seconds=0.5,
    )
    expected = checks.closed(first + second)
    with ThreadPoolExecutor(1) as background:
        try:
            wait_until(
                lambda: len(stats.read_table(spark, output)) == len(checks.closed(first)),
                timeout=checks.DEADLINE,
                message="for the first purchases' windows",
            )
            # Purchases keep coming (about three seconds of them) while a leader dies.
            sending = background.submit(
                producer.produce, bootstrap, topic, second, per_second=120, timeout=120
            )
            victim = leader_of(bootstrap, topic, 0)
            gregor_cluster.kill(victim)
            sending.result(180)  # every purchase acknowledged (re-raises a failure)
            wait_until(
                lambda: len(stats.read_table(spark, output)) >= len(expected),
                timeout=checks.DEADLINE,
                message="for every window after the failover",
            )
            assert all(q.isActive for q in queries.all), "a query stopped on the failover"
        finally:
            queries.stop()
    gregor_cluster.restart(victim)
    checks.assert_each_window_once(stats.read_table(spark, output), expected)
    checks.assert_each_window_at_least_once(checks.read_topic(bootstrap, stats_topic), expected)
