"""Chaos under load: failures one after another while an idempotent writer and a
committing consumer group run, then the Jepsen-style checks.

Each round picks the next failure: kill -9 the leader of a partition (and
start it again), kill -9 the controller's broker, SIGSTOP a follower past
replica.lag.time.max.ms and resume it, restart ZooKeeper. `make test` runs
a few rounds (CHAOS_ROUNDS, default 4: each failure once); `make chaos` runs
many. The verdict is printed (and the README quotes one): acknowledged
records, lost, misplaced, duplicated and reordered ones (all must be 0),
committed offsets that went backwards (0), and the longest time without an
acknowledgement.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from tests.cluster.checker import Writer, check, read_everything
from tests.cluster.conftest import SESSION_TIMEOUT_MS
from tests.cluster.test_failover import admin, create, partitions_of, wait_until

pytestmark = pytest.mark.slow

ROUNDS = int(os.environ.get("CHAOS_ROUNDS", "4"))
FAILURES = ["kill-leader", "kill-controller", "pause-follower", "restart-zookeeper"]


class Committer:
    """A group member that reads and commits synchronously as it goes,
    remembering every offset a commit was acknowledged for."""

    def __init__(self, bootstrap: str, topic: str, group: str):
        self.topic = topic
        self.group = group
        self.bootstrap = bootstrap
        self.committed: dict[int, int] = {}
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Committer:
        self._thread.start()
        return self

    def _run(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10000,
            }
        )
        consumer.subscribe([self.topic])
        since_commit = 0
        while not self._stop.is_set():
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            since_commit += 1
            if since_commit >= 50:
                since_commit = 0
                try:
                    done = consumer.commit(asynchronous=False)
                except KafkaException:
                    self.errors += 1
                    continue
                for tp in done or []:
                    if tp.error is None and tp.offset >= 0:
                        self.committed[tp.partition] = max(
                            self.committed.get(tp.partition, -1), tp.offset
                        )
        consumer.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)

    def regressions(self, partitions: int) -> int:
        """Partitions whose committed offset is now below one a commit was acknowledged for."""
        reader = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group})
        try:
            now = reader.committed(
                [TopicPartition(self.topic, p) for p in range(partitions)], timeout=30
            )
        finally:
            reader.close()
        return sum(1 for tp in now if tp.offset < self.committed.get(tp.partition, -1))


def test_chaos_loses_nothing_acknowledged(cluster, zookeeper):
    create(cluster, "chaos", partitions=3)
    writer = Writer(cluster.bootstrap, "chaos").start()
    committer = Committer(cluster.bootstrap, "chaos", "chaos-group").start()
    log = []
    try:
        wait_until(lambda: len(writer.acked) > 300, "the writer to get going")
        for round_no in range(ROUNDS):
            failure = FAILURES[round_no % len(FAILURES)]
            before = len(writer.acked)
            log.append(failure)
            _inflict(cluster, zookeeper, failure)
            wait_until(
                lambda b=before: len(writer.acked) > b + 300, f"writes to go on after {failure}"
            )
            wait_until(
                lambda: all(
                    len(isr) == 3 for _, _, isr in partitions_of(cluster, "chaos").values()
                ),
                f"every replica back in sync after {failure}",
                timeout=90,
            )
    finally:
        committer.stop()
        writer.stop()
    assert not writer.errors, writer.errors[:3]
    verdict = check(writer, read_everything(cluster.bootstrap, "chaos", 3))
    regressions = committer.regressions(3)
    print(f"chaos rounds {log}: {verdict}; committed offsets gone backwards: {regressions}")
    assert (verdict.lost, verdict.inconsistent_offsets, verdict.duplicates) == (0, 0, 0), verdict
    assert verdict.order_violations == 0, verdict
    assert regressions == 0
    assert committer.committed, "the group committed nothing"


def _inflict(cluster, zookeeper, failure: str) -> None:
    if failure == "kill-leader":
        leader = partitions_of(cluster, "chaos")[0][0]
        cluster.kill(leader)
        wait_until(
            lambda: partitions_of(cluster, "chaos")[0][0] not in (leader, -1),
            "a new leader for partition 0",
        )
        cluster.restart(leader)
    elif failure == "kill-controller":
        controller = admin(cluster).list_topics(timeout=10).controller_id
        cluster.kill(controller)
        wait_until(
            lambda: admin(cluster).list_topics(timeout=10).controller_id not in (controller, -1),
            "another controller",
        )
        cluster.restart(controller)
    elif failure == "pause-follower":
        leader, replicas, _ = partitions_of(cluster, "chaos")[0]
        follower = next(r for r in replicas if r != leader)
        cluster.pause(follower)
        try:
            wait_until(
                lambda: follower not in partitions_of(cluster, "chaos")[0][2],
                f"paused broker {follower} to leave the ISR",
            )
        finally:
            cluster.resume(follower)
    elif failure == "restart-zookeeper":
        zookeeper.stop()
        # Down for longer than a session: every broker's session expires and
        # each must register again once ZooKeeper is back (this outage length
        # is the failure being simulated, not a wait for something).
        time.sleep(SESSION_TIMEOUT_MS / 1000 + 2)
        zookeeper.start()
    else:
        raise AssertionError(failure)
