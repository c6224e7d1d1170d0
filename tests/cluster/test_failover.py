"""A three-broker Gregor cluster loses no acknowledged record when brokers fail.

Real processes, ZooKeeper started for the session, confluent-kafka clients.
Each test names the failure it makes; the checker (tests/cluster/checker.py)
reads every partition afterwards and counts lost, misplaced, duplicated and
reordered records, all of which must be zero.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.checker import Writer, check, read_everything
from tests.cluster.conftest import SESSION_TIMEOUT_MS

pytestmark = pytest.mark.slow

TIMEOUT = 60


def admin(cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def wait_until(condition, what: str, timeout: float = TIMEOUT):
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def partitions_of(cluster, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """{partition: (leader, replicas, isr)} as a client sees it."""
    md = admin(cluster).list_topics(topic, timeout=10)
    t = md.topics[topic]
    if t.error is not None:
        return {}
    return {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in t.partitions.values()}


def create(cluster, topic: str, partitions: int = 3, rf: int = 3, **configs) -> None:
    client = admin(cluster)  # kept alive until its future completes
    client.create_topics(
        [
            NewTopic(
                topic,
                partitions,
                rf,
                config={k.replace("_", "."): str(v) for k, v in configs.items()},
            )
        ]
    )[topic].result(TIMEOUT)
    wait_until(
        lambda: (
            (p := partitions_of(cluster, topic))
            and len(p) == partitions
            and all(leader >= 0 and len(isr) == rf for leader, _, isr in p.values())
        ),
        "every partition led with its whole ISR",
    )


def test_every_broker_keeps_its_session_through_a_zookeeper_restart(cluster, zookeeper):
    """ZooKeeper restores its sessions when it restarts, each for one session
    timeout. A broker retries ZooKeeper at most a second apart however long
    it was away (as ZooKeeper's Java client does), so after an outage long
    enough for kazoo's own doubling backoff to wait many seconds between
    attempts, every broker is connected in its old session before that
    session could expire: its registration and leaderships stay, and no
    broker serves from a stale image meanwhile."""
    sessions = cluster.broker_sessions()
    assert sorted(sessions) == sorted(cluster.brokers)
    # Seen again only once it serves (cut_zookeeper says why): what is tested
    # is how soon a broker tries again, not ZooKeeper's own start-up.
    cluster.cut_zookeeper()
    zookeeper.stop()
    # The outage being simulated (not a wait for something): long enough
    # that kazoo's default backoff would be 6-13 s between attempts.
    time.sleep(15)
    zookeeper.start()
    cluster.heal_zookeeper()
    wait_until(
        lambda: set(sessions.values()) <= zookeeper.connected_sessions(),
        "every broker connected in its old session",
        timeout=SESSION_TIMEOUT_MS / 1000,
    )
    assert cluster.broker_sessions() == sessions
    create(cluster, "after-zookeeper-restart", partitions=3)


def test_the_cluster_lists_every_broker_and_a_controller(cluster):
    md = admin(cluster).list_topics(timeout=10)
    assert sorted(md.brokers) == [1, 2, 3]
    assert md.controller_id in (1, 2, 3)
    # Replicas spread as Kafka spreads them: each broker leads one of three.
    create(cluster, "spread")
    leaders = sorted(leader for leader, _, _ in partitions_of(cluster, "spread").values())
    assert leaders == [1, 2, 3]


def test_a_replication_factor_above_the_live_brokers_is_refused(cluster):
    client = admin(cluster)
    future = client.create_topics([NewTopic("too-many", 1, 4)])["too-many"]
    with pytest.raises(KafkaException) as info:
        future.result(TIMEOUT)
    assert info.value.args[0].name() == "INVALID_REPLICATION_FACTOR"


def test_killing_leaders_loses_no_acknowledged_record(cluster):
    create(cluster, "ledger", partitions=3)
    writer = Writer(cluster.bootstrap, "ledger").start()
    try:
        wait_until(lambda: len(writer.acked) > 200, "the writer to get going")
        for victim in (1, 2):
            leader_of_0 = partitions_of(cluster, "ledger")[0][0]
            target = leader_of_0 if leader_of_0 >= 0 else victim
            before = len(writer.acked)
            cluster.kill(target)
            wait_until(
                lambda t=target: all(
                    leader not in (t, -1)
                    for leader, _, _ in partitions_of(cluster, "ledger").values()
                ),
                f"new leaders after broker {target} died",
            )
            wait_until(lambda b=before: len(writer.acked) > b + 200, "writes to go on")
            cluster.restart(target)
            wait_until(
                lambda: all(
                    len(isr) == 3 for _, _, isr in partitions_of(cluster, "ledger").values()
                ),
                f"broker {target} back in every ISR",
            )
    finally:
        writer.stop()
    assert not writer.errors, writer.errors[:3]
    verdict = check(writer, read_everything(cluster.bootstrap, "ledger", 3))
    print(verdict)
    assert verdict.acknowledged > 600
    assert (verdict.lost, verdict.inconsistent_offsets, verdict.duplicates) == (0, 0, 0), verdict
    assert verdict.order_violations == 0, verdict


def _zookeeper_set_data(chunk: bytes) -> bool:
    """A ZooKeeper setData request: (length, xid, opcode 5, ...), as a client
    sends it in one piece."""
    return len(chunk) >= 12 and int.from_bytes(chunk[8:12], "big", signed=True) == 5


# A session long enough that the leader's ZooKeeper client notices the lost
# answers only seconds after the write went out (kazoo pings after a third of
# it, and gives up a third later).
@pytest.mark.cluster_settings(**{"zookeeper.session.timeout.ms": 10000})
def test_an_isr_change_whose_answer_was_lost_still_counts(cluster):
    """An ISR change the leader wrote to ZooKeeper but whose answer never came
    back may have been taken, and a leader elected from that ISR must hold
    every acknowledged record. So the leader keeps waiting for the replica it
    proposed to add, sending the change again, until it knows.

    Broker 1 leads a two-replica partition (min.insync.replicas=1), broker 2
    follows. Broker 2 is cut off broker 1 until it leaves the ISR. Then
    broker 2 fetches again, and from broker 1's next ZooKeeper write on (the
    ISR expansion) its ZooKeeper answers are dropped while its requests
    still arrive: the expansion lands in ZooKeeper, its answer is lost.
    Broker 2 is cut off again, broker 1 gets acks=all writes, and dies; the
    controller elects broker 2 from the ISR ZooKeeper holds. Every write
    acknowledged must be on broker 2. (A leader that took the lost answer
    for a refusal acknowledged writes alone once broker 2's catch-up grew
    old: 139 of 139 were gone in one run.)"""
    leader, follower, topic = 1, 2, "lost-answer"
    client = admin(cluster)
    client.create_topics(
        [
            NewTopic(
                topic,
                1,
                replica_assignment=[[leader, follower]],
                config={"min.insync.replicas": "1"},
            )
        ]
    )[topic].result(TIMEOUT)

    def zk_state() -> tuple[int, int, list[int]]:
        return (cluster.zk_partitions(topic) or {}).get(0, (-1, -1, []))

    wait_until(
        lambda: zk_state()[0] == leader and sorted(zk_state()[2]) == [leader, follower],
        "the partition led with both replicas in sync",
    )
    cluster.cut_link(follower, leader)
    # A follower with nothing to fetch stays in sync: give it something.
    first = Producer({"bootstrap.servers": cluster.inbound[leader].address, "acks": "1"})
    first.produce(topic, b"before the cut", partition=0)
    assert first.flush(30) == 0
    wait_until(lambda: zk_state()[2] == [leader], f"broker {follower} to leave the ISR")
    cluster.zk_proxies[leader].mute_replies(after=_zookeeper_set_data)
    cluster.heal_link(follower, leader)
    wait_until(
        lambda: sorted(zk_state()[2]) == [leader, follower],
        f"broker {leader}'s ISR expansion to reach ZooKeeper",
        timeout=10,
    )
    cluster.cut_link(follower, leader)
    acked: list[bytes] = []

    def delivered(err, msg):
        if err is None:
            acked.append(msg.value())

    producer = Producer(
        {
            "bootstrap.servers": cluster.inbound[leader].address,
            "acks": "all",
            "linger.ms": 0,
            "message.timeout.ms": 4000,
        }
    )
    # Past replica.lag.time.max.ms since broker 2 last caught up, and past
    # the leader's ZooKeeper client giving up on the lost answer.
    start = time.monotonic()
    sent = 0
    while (now := time.monotonic()) < start + 16:
        if now >= start + sent * 0.1:  # ten writes a second
            producer.produce(topic, f"write-{sent}".encode(), partition=0, on_delivery=delivered)
            sent += 1
        producer.poll(0.05)
    producer.flush(10)
    cluster.kill(leader)
    wait_until(lambda: zk_state()[0] == follower, f"broker {follower} elected", timeout=60)
    cluster.zk_proxies[leader].heal()
    cluster.heal_link(follower, leader)
    on_new_leader = {value for _, _, value in read_everything(cluster.bootstrap, topic, 1)[0]}
    missing = [value for value in acked if value not in on_new_leader]
    print(f"{sent} writes sent to broker {leader}, {len(acked)} acknowledged")
    assert not missing, f"{len(missing)} of {len(acked)} acknowledged writes lost: {missing[:3]}"


def test_the_controller_moves_when_its_broker_dies(cluster):
    first = admin(cluster).list_topics(timeout=10).controller_id
    cluster.kill(first)
    survivor = next(b for n, b in cluster.brokers.items() if n != first)
    other = AdminClient({"bootstrap.servers": survivor.bootstrap})
    wait_until(
        lambda: other.list_topics(timeout=10).controller_id not in (first, -1),
        "another controller",
    )
    # The new controller does a controller's work: a topic created now gets leaders.
    create(cluster, "after-controller", partitions=2, rf=2)


def test_a_graceful_stop_hands_leadership_over_first(cluster):
    create(cluster, "handover", partitions=1)
    leader = partitions_of(cluster, "handover")[0][0]
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    producer.produce("handover", b"before")
    assert producer.flush(TIMEOUT) == 0
    assert cluster.stop(leader) == 0
    # Moved before the broker left (no session timeout to wait for).
    new_leader, _, isr = partitions_of(cluster, "handover")[0]
    assert new_leader not in (leader, -1) and leader not in isr
    producer.produce("handover", b"after")
    assert producer.flush(TIMEOUT) == 0
    values = [v for _, _, v in read_everything(cluster.bootstrap, "handover", 1)[0]]
    assert values == [b"before", b"after"]


def test_a_broker_stops_cleanly_while_zookeeper_is_away(cluster, zookeeper):
    """With ZooKeeper gone the controlled shutdown cannot be made: the broker
    gives up on it after its grace period (Kafka gives up after its retries)
    and still stops gracefully, its logs flushed and checkpointed, and its
    data is all there when it starts again."""
    create(cluster, "stop-alone", partitions=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    producer.produce("stop-alone", b"kept")
    assert producer.flush(TIMEOUT) == 0
    cluster.cut_zookeeper()
    zookeeper.stop()
    try:
        assert cluster.stop(1) == 0
    finally:
        zookeeper.start()
        cluster.heal_zookeeper()
    assert "stopped: logs flushed and checkpointed" in cluster.brokers[1].log()
    assert (cluster.brokers[1].data_dir / ".kafka_cleanshutdown").exists()
    cluster.restart(1)
    wait_until(lambda: cluster.in_sync("stop-alone"), "broker 1 back in sync")
    values = [v for _, _, v in read_everything(cluster.bootstrap, "stop-alone", 1)[0]]
    assert values == [b"kept"]


def test_committed_offsets_survive_the_death_of_their_coordinator(cluster):
    create(cluster, "work", partitions=1)
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "survivors",
            "enable.auto.commit": False,
        }
    )
    consumer.commit(offsets=[TopicPartition("work", 0, 42)], asynchronous=False)
    consumer.close()
    client = admin(cluster)
    described = client.describe_consumer_groups(["survivors"])["survivors"].result(TIMEOUT)
    # The group's own coordinator dies; a follower of its __consumer_offsets
    # partition takes over and must load the commit (acknowledged with acks=all).
    cluster.kill(described.coordinator.id)
    fresh = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "survivors"})
    try:
        committed = wait_until(
            lambda: _committed(fresh, "work"),
            "the committed offset from the new coordinator",
        )
    finally:
        fresh.close()
    assert committed == 42


def _committed(consumer, topic):
    try:
        (tp,) = consumer.committed([TopicPartition(topic, 0)], timeout=5)
    except KafkaException:
        return None
    return tp.offset if tp.offset >= 0 else None


@pytest.mark.cluster_settings(**{"auto.leader.rebalance.enable": "false"})
def test_preferred_leaders_take_leadership_back_on_request(cluster):
    from confluent_kafka import ElectionType

    create(cluster, "preferred", partitions=3)
    preferred = {
        p: replicas[0] for p, (_, replicas, _) in partitions_of(cluster, "preferred").items()
    }
    victim = preferred[0]
    cluster.kill(victim)
    wait_until(
        lambda: partitions_of(cluster, "preferred")[0][0] not in (victim, -1),
        "a new leader for partition 0",
    )
    cluster.restart(victim)
    wait_until(
        lambda: all(len(isr) == 3 for _, _, isr in partitions_of(cluster, "preferred").values()),
        f"broker {victim} back in every ISR",
    )
    # Back in sync, but not leading: leadership does not move by itself here.
    assert partitions_of(cluster, "preferred")[0][0] != victim
    client = admin(cluster)
    tps = [TopicPartition("preferred", p) for p in range(3)]
    result = client.elect_leaders(ElectionType.PREFERRED, tps).result(TIMEOUT)
    errors = {tp.partition: err for tp, err in result.items()}
    assert errors[0] is None  # elected
    wait_until(
        lambda: (
            {p: leader for p, (leader, _, _) in partitions_of(cluster, "preferred").items()}
            == preferred
        ),
        "every partition led by its preferred replica",
    )


@pytest.mark.cluster_settings(**{"leader.imbalance.check.interval.seconds": 1})
def test_the_controller_rebalances_leadership_back_by_itself(cluster):
    create(cluster, "rebalanced", partitions=3)
    preferred = {
        p: replicas[0] for p, (_, replicas, _) in partitions_of(cluster, "rebalanced").items()
    }
    victim = preferred[0]
    cluster.kill(victim)
    wait_until(
        lambda: partitions_of(cluster, "rebalanced")[0][0] not in (victim, -1),
        "a new leader for partition 0",
    )
    cluster.restart(victim)
    wait_until(
        lambda: (
            {p: leader for p, (leader, _, _) in partitions_of(cluster, "rebalanced").items()}
            == preferred
        ),
        "auto.leader.rebalance.enable to give leadership back",
    )
