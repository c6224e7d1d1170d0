"""Chaos under load: failures one after another while an idempotent writer and a
committing consumer group run, then the Jepsen-style checks.

Two writers, both idempotent with acks=all, each on a topic of its own
(replication factor 3, min.insync.replicas 2): confluent-kafka's (librdkafka)
and Apache Kafka's own VerifiableProducer (the Java client, from the jars
`make clients` installs).

Each round picks the next failure: kill -9 the leader of a partition (and
start it again), kill -9 the controller's broker, SIGSTOP a follower past
replica.lag.time.max.ms and resume it, restart ZooKeeper, cut the leader of
a partition off the network and heal it. `make test` runs a few rounds
(CHAOS_ROUNDS, default 5: each failure once); `make chaos` runs many. The
verdict is printed for each writer (and the README quotes one): acknowledged
records, lost, misplaced, duplicated and reordered ones (all must be 0),
committed offsets that went backwards (0), and the longest time without an
acknowledgement.

The network cut ("isolate-leader") goes through the TCP proxies of the
`cluster` fixture (tests/cluster/conftest.py): the leader's ZooKeeper
connection, every connection into it and its own connections to the other
brokers are cut, for longer than a ZooKeeper session: a symmetric partition
(clients still reach the others). It is the
classic "a leader loses ZooKeeper and its followers" case: its session
expires, the controller elects a new leader from the ISR, the old leader
cannot shrink its ISR (the conditional write fails), so it can acknowledge
no acks=all write (here no client reaches it anyway: the connections into it
are cut too); once healed it registers again, follows the new leader,
truncates any tail it alone had and rejoins the ISR. Whether a broker is
back is asked of ZooKeeper and of every broker at its own port: the healed
broker answers from its old image until it hears otherwise.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from tests.cluster.checker import VerifiableWriter, Writer, check, read_everything
from tests.cluster.conftest import SESSION_TIMEOUT_MS
from tests.cluster.test_failover import admin, create, partitions_of, wait_until

pytestmark = pytest.mark.slow

ROUNDS = int(os.environ.get("CHAOS_ROUNDS", "5"))
ALL_FAILURES = [
    "kill-leader",
    "kill-controller",
    "pause-follower",
    "restart-zookeeper",
    "isolate-leader",
]
# CHAOS_FAILURES=isolate-leader,kill-leader: only those, in that order (to chase one).
FAILURES = os.environ.get("CHAOS_FAILURES", ",".join(ALL_FAILURES)).split(",")
# Checked back in sync after every round: the writers' topics, and the group's
# committed offsets, whose replicas a failure takes down like any other.
IN_SYNC_TOPICS = ("chaos", "chaos-java", "__consumer_offsets")
# Of each writer's topic.
PARTITIONS = 3


class Committer:
    """A group member that reads and commits synchronously as it goes,
    remembering every offset a commit was acknowledged for."""

    def __init__(self, bootstrap: str, topic: str, group: str):
        self.topic = topic
        self.group = group
        self.bootstrap = bootstrap
        self.committed: dict[int, int] = {}
        # When each partition's highest acknowledged commit was answered (the
        # brokers' logs tell what happened around then).
        self.committed_at: dict[int, str] = {}
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
                    if tp.error is None and tp.offset > self.committed.get(tp.partition, -1):
                        self.committed[tp.partition] = tp.offset
                        self.committed_at[tp.partition] = time.strftime("%H:%M:%S")
        consumer.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)

    def regressions(self, partitions: int) -> list[str]:
        """Partitions whose committed offset is now below one a commit was acknowledged for."""
        reader = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group})
        try:
            now = reader.committed(
                [TopicPartition(self.topic, p) for p in range(partitions)], timeout=30
            )
        finally:
            reader.close()
        return [
            f"partition {tp.partition}: committed {tp.offset}, but {self.committed[tp.partition]} "
            f"was acknowledged at {self.committed_at[tp.partition]}"
            for tp in now
            if tp.offset < self.committed.get(tp.partition, -1)
        ]


def test_chaos_loses_nothing_acknowledged(cluster, zookeeper, tmp_path):
    create(cluster, "chaos", partitions=PARTITIONS)
    create(cluster, "chaos-java", partitions=PARTITIONS, min_insync_replicas=2)
    writer = Writer(cluster.bootstrap, "chaos").start()
    java = VerifiableWriter(cluster.bootstrap, "chaos-java", tmp_path)
    committer = Committer(cluster.bootstrap, "chaos", "chaos-group").start()
    log = []
    try:
        wait_until(lambda: len(writer.acked) > 300, "the writer to get going")
        # Every partition holds the VerifiableProducer's records before the
        # first failure. The Java client sends a partition's next batch to a
        # new leader while the batch before it may still be unanswered at the
        # old one, and a leader with no record of a producer takes any
        # sequence number from it (Kafka since KIP-360, and Gregor with it).
        # When the unanswered batch is the partition's first, the next one is
        # taken in its place, the first is refused as out of order from then
        # on, and it expires after delivery.timeout.ms: a rare client race
        # that Kafka has too (seen with a partition's first batch, sent while
        # its leader restarted). Once a partition holds the producer's
        # records, every replica in its ISR knows the producer and refuses
        # the overtaking batch instead, which the client retries behind the
        # one before it.
        wait_until(
            lambda: len(java.partitions_written()) == PARTITIONS or not java.running(),
            "the VerifiableProducer to write to every partition",
        )
        assert java.running(), java.log_tail()
        assert set(FAILURES) <= set(ALL_FAILURES), FAILURES
        for round_no in range(ROUNDS):
            failure = FAILURES[round_no % len(FAILURES)]
            before, java_before = len(writer.acked), len(java.acked)
            log.append(failure)
            _inflict(cluster, zookeeper, failure, writer)
            wait_until(
                lambda b=before: len(writer.acked) > b + 300, f"writes to go on after {failure}"
            )
            wait_until(
                lambda b=java_before: len(java.acked) > b + 100,
                f"the VerifiableProducer's writes to go on after {failure}",
            )
            wait_until(
                lambda: all(cluster.in_sync(topic) for topic in IN_SYNC_TOPICS),
                f"every replica back in sync after {failure}, as every broker sees it",
                timeout=90,
            )
    finally:
        committer.stop()
        writer.stop()
        java.stop()
    assert not writer.errors, writer.errors[:3]
    assert not java.errors, (java.errors[:3], java.log_tail())
    verdict = check(writer, read_everything(cluster.bootstrap, "chaos", PARTITIONS))
    java_verdict = check(java, read_everything(cluster.bootstrap, "chaos-java", PARTITIONS))
    regressions = committer.regressions(PARTITIONS)
    print(
        f"chaos rounds {log}:\n  confluent-kafka writer: {verdict}; committed offsets gone "
        f"backwards: {len(regressions)}\n  Kafka's VerifiableProducer: {java_verdict}"
    )
    for v in (verdict, java_verdict):
        assert (v.lost, v.inconsistent_offsets, v.duplicates) == (0, 0, 0), v
        assert v.order_violations == 0, v
    assert not regressions, regressions
    assert committer.committed, "the group committed nothing"


def _inflict(cluster, zookeeper, failure: str, writer: Writer) -> None:
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
        cluster.cut_zookeeper()  # seen again once it serves (cut_zookeeper says why)
        zookeeper.stop()
        # Down for longer than a session (this outage length is the failure
        # being simulated, not a wait for something). ZooKeeper restores the
        # sessions when it starts, and the brokers, back within a second,
        # keep them (test_failover checks that); a broker that lost its
        # session anyway registers again. Writes must go on either way.
        time.sleep(SESSION_TIMEOUT_MS / 1000 + 2)
        zookeeper.start()
        cluster.heal_zookeeper()
    elif failure == "isolate-leader":
        leader = partitions_of(cluster, "chaos")[0][0]
        cluster.isolate(leader)
        try:
            # Cut off for longer than a session: only its expiry lets the
            # controller elect another leader, and writes go on through it.
            wait_until(
                lambda: _zk_state(cluster, 0)[0] not in (leader, -1),
                f"a new leader for partition 0 while broker {leader} is cut off",
            )
            before = len(writer.acked)
            wait_until(
                lambda: len(writer.acked) > before + 100,
                f"writes to go on while broker {leader} is cut off",
            )
        finally:
            cluster.heal(leader)
        # ZooKeeper's word: the healed broker itself still serves its old
        # image (itself leading, everyone in sync) until it hears otherwise.
        wait_until(
            lambda: leader in _zk_state(cluster, 0)[2],
            f"broker {leader} back in the ISR of partition 0 once healed",
            timeout=90,
        )
    else:
        raise AssertionError(failure)


def _zk_state(cluster, index: int) -> tuple[int, int, list[int]]:
    """(leader, leader epoch, ISR) of the chaos topic's partition `index` in
    ZooKeeper; (-1, -1, []) while ZooKeeper cannot answer."""
    return (cluster.zk_partitions("chaos") or {}).get(index, (-1, -1, []))
