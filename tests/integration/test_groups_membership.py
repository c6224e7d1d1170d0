"""Consumer groups on Gregor with confluent-kafka (librdkafka) members, as on
Apache Kafka: every assignor splits the partitions, members that leave, die or
restart hand their partitions over, static members come back without a
rebalance, and a group stays whole through heavy churn.

One broker per module, set up for quick groups (clients.GROUP_OVERRIDES);
each test uses its own topic and group.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest
from confluent_kafka import KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions

from coordinator.hashing import coordinator_partition
from tests.integration.clients import (
    GROUP_OVERRIDES,
    Member,
    committed,
    describe_group,
    described_assignment,
    poll_until,
    split_evenly,
    wait_until,
)
from tests.support.clients import TIMEOUT, produce_ok
from tests.support.gregor import GregorNode
from tests.support.topics import create_topic

# Slow (groups rebalancing in real time, session timeouts): make unit leaves the module out.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = GregorNode(tmp_path_factory.mktemp("groups") / "data", GROUP_OVERRIDES).start()
    yield process
    process.stop()


def close_all(members) -> None:
    for m in members:
        m.close()


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_three_members_split_six_partitions_two_each_with_every_assignor(broker, strategy):
    topic = group = f"split-{strategy}"
    create_topic(broker.bootstrap, topic, partitions=6)
    members = [
        Member(broker.bootstrap, group, topic, **{"partition.assignment.strategy": strategy})
        for _ in range(3)
    ]
    try:
        poll_until(members, lambda: split_evenly(members, 6), "three members with two each")
        assert sorted(len(m.partitions()) for m in members) == [2, 2, 2]

        description = describe_group(broker.bootstrap, group)
        assert description.state.name == "STABLE"
        assert description.partition_assignor == strategy
        assignment = described_assignment(description)
        assert sorted(assignment.values(), key=sorted) == sorted(
            ({(topic, p) for p in m.partitions()} for m in members), key=sorted
        )
        assert [m.errors for m in members] == [[], [], []]
    finally:
        close_all(members)


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_member_that_closes_hands_its_partitions_to_the_others(broker, strategy):
    topic = group = f"close-{strategy}"
    create_topic(broker.bootstrap, topic, partitions=6)
    conf = {"partition.assignment.strategy": strategy}
    members = [Member(broker.bootstrap, group, topic, **conf) for _ in range(3)]
    try:
        poll_until(members, lambda: split_evenly(members, 6), "three members with two each")
        leaving, staying = members[0], members[1:]
        leaving.close()  # sends LeaveGroup

        poll_until(staying, lambda: split_evenly(staying, 6), "two members with three each")
        assert sorted(len(m.partitions()) for m in staying) == [3, 3]
        description = describe_group(broker.bootstrap, group)
        assert len(description.members) == 2
    finally:
        close_all(members)


def test_partitions_added_to_the_topic_are_assigned_to_the_group(broker):
    topic = group = "grown"
    create_topic(broker.bootstrap, topic, partitions=4)
    conf = {"topic.metadata.refresh.interval.ms": 500}  # the leader notices sooner
    members = [Member(broker.bootstrap, group, topic, **conf) for _ in range(2)]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    try:
        poll_until(members, lambda: split_evenly(members, 4), "two members with two each")
        admin.create_partitions([NewPartitions(topic, 6)])[topic].result(TIMEOUT)
        poll_until(members, lambda: split_evenly(members, 6), "two members with three each")
        assert describe_group(broker.bootstrap, group).state.name == "STABLE"
    finally:
        close_all(members)


_CHILD_MEMBER = textwrap.dedent(
    """
    import sys
    from confluent_kafka import Consumer

    bootstrap, group, topic = sys.argv[1:]
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "session.timeout.ms": 3000, "heartbeat.interval.ms": 300,
    })
    consumer.subscribe([topic], on_assign=lambda c, ps: print(
        "assigned", sorted(p.partition for p in ps), flush=True))
    while True:
        consumer.poll(0.1)
    """
)


def test_killed_member_loses_its_partitions_after_its_session_timeout(broker):
    topic = group = "killed-member"
    create_topic(broker.bootstrap, topic, partitions=6)
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD_MEMBER, broker.bootstrap, group, topic],
        stdout=subprocess.PIPE,
        text=True,
    )
    lines = []

    def read():  # in a thread, so that every wait stays bounded
        for line in child.stdout:
            lines.append(line)

    threading.Thread(target=read, daemon=True).start()
    members = []
    try:
        wait_until(lambda: lines, "the child's first assignment")
        assert lines[0] == "assigned [0, 1, 2, 3, 4, 5]\n"
        members = [Member(broker.bootstrap, group, topic) for _ in range(2)]
        # The child keeps polling, so it rejoins and keeps two partitions.
        poll_until(
            members,
            lambda: (
                sum(len(m.partitions()) for m in members) == 4
                and len(describe_group(broker.bootstrap, group).members) == 3
            ),
            "the child and two members with two partitions each",
        )
        child_partitions = set(range(6)) - members[0].partitions() - members[1].partitions()
        assert len(child_partitions) == 2

        os.kill(child.pid, signal.SIGKILL)  # no LeaveGroup: only its session can end it
        child.wait()

        poll_until(members, lambda: split_evenly(members, 6), "the survivors with three each")
        taken_over = (members[0].partitions() | members[1].partitions()) & child_partitions
        assert taken_over == child_partitions
        assert len(describe_group(broker.bootstrap, group).members) == 2
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        close_all(members)


def test_static_member_restart_gets_its_partitions_back_without_a_rebalance(broker):
    topic = group = "static-restart"
    create_topic(broker.bootstrap, topic, partitions=6)
    conf = {"session.timeout.ms": 10000}
    members = [
        Member(broker.bootstrap, group, topic, **{"group.instance.id": f"instance-{i}", **conf})
        for i in range(3)
    ]
    restarted = None
    try:
        poll_until(members, lambda: split_evenly(members, 6), "three static members")
        before = {m: m.partitions() for m in members}
        leaving, others = members[0], members[1:]
        calls = [(m.assigned_calls, m.revoked_calls) for m in others]
        # librdkafka's static members do not send LeaveGroup on close.
        leaving.close()
        assert len(describe_group(broker.bootstrap, group).members) == 3

        restarted = Member(
            broker.bootstrap, group, topic, **{"group.instance.id": "instance-0", **conf}
        )
        poll_until(
            [restarted, *others],
            lambda: restarted.partitions(),
            "the restarted static member's assignment",
        )
        assert restarted.partitions() == before[leaving]
        # The others were never asked to rejoin: no revocation, no new assignment.
        assert [(m.assigned_calls, m.revoked_calls) for m in others] == calls
        assert [m.partitions() for m in others] == [before[m] for m in others]
        description = describe_group(broker.bootstrap, group)
        assert description.state.name == "STABLE"
        assert sorted(m.group_instance_id for m in description.members) == [
            "instance-0",
            "instance-1",
            "instance-2",
        ]
    finally:
        close_all(members)
        if restarted is not None:
            restarted.close()


def test_second_live_consumer_with_the_same_instance_id_fences_the_first(broker):
    topic = group = "static-fenced"
    create_topic(broker.bootstrap, topic, partitions=2)
    conf = {"group.instance.id": "twin", "session.timeout.ms": 10000}
    first = Member(broker.bootstrap, group, topic, **conf)
    second = None
    try:
        poll_until([first], lambda: first.partitions() == {0, 1}, "the first twin's assignment")
        second = Member(broker.bootstrap, group, topic, **conf)
        fatal = poll_until(
            [first, second],
            lambda: [e for e in first.errors + second.errors if e.code() == KafkaError._FATAL],
            "a fatal error for one of the twins",
        )
        # librdkafka turns the broker's FENCED_INSTANCE_ID into a fatal error:
        # the fenced consumer stops, the other keeps both partitions.
        assert "fenced by other consumer with same group.instance.id" in fatal[0].str()
        # As on Kafka, the newcomer takes the instance over and the first is fenced.
        assert fatal == [e for e in first.errors if e.code() == KafkaError._FATAL]
        poll_until([second], lambda: second.partitions() == {0, 1}, "the newcomer's partitions")
    finally:
        first.close()
        if second is not None:
            second.close()


def test_fifty_members_join_and_leave_and_the_rest_form_a_stable_group(broker):
    topic = group = "churn"
    partitions = 24
    create_topic(broker.bootstrap, topic, partitions=partitions)
    members: list[Member] = []
    try:
        for wave in range(5):  # ten join at a time...
            members += [Member(broker.bootstrap, group, topic) for _ in range(10)]
            for m in members[wave * 10 : wave * 10 + 6]:  # ...and six of them leave
                poll_until(members, lambda: True, "one round of polls")
                m.close()
        remaining = [m for m in members if not m.closed]
        assert len(remaining) == 20

        def settled():
            owned = [m.partitions() for m in remaining]
            if sum(len(p) for p in owned) != partitions:
                return None
            description = describe_group(broker.bootstrap, group)
            if description.state.name != "STABLE" or len(description.members) != 20:
                return None
            return description

        description = poll_until(remaining, settled, "a stable group of twenty")
        assigned = [tp for tps in described_assignment(description).values() for tp in tps]
        assert sorted(assigned) == [(topic, p) for p in range(partitions)]
        owned = sorted(p for m in remaining for p in m.partitions())
        assert owned == list(range(partitions))
    finally:
        close_all(members)


def _group_on_partition(index: int, partitions: int = 50) -> str:
    return next(
        g
        for n in itertools.count()
        if coordinator_partition(g := f"group-{n}", partitions) == index
    )


def test_groups_on_the_default_fifty_offsets_partitions_commit_where_kafka_puts_them(tmp_path):
    """__consumer_offsets with Kafka's default of 50 partitions: groups at both
    ends of it work, and each one's commits go to its own partition."""
    overrides = {k: v for k, v in GROUP_OVERRIDES.items() if k != "offsets.topic.num.partitions"}
    with GregorNode(tmp_path / "data", overrides) as default_broker:
        bootstrap = default_broker.bootstrap
        topic = "default-offsets"
        create_topic(bootstrap, topic, partitions=2)
        groups = {index: _group_on_partition(index) for index in (0, 49)}
        members = [Member(bootstrap, group, topic) for group in groups.values()]
        try:
            poll_until(
                members,
                lambda: all(m.partitions() == {0, 1} for m in members),
                "each lone member with both partitions",
            )
            for n, m in enumerate(members):
                offsets = [TopicPartition(topic, 0, 10 + n), TopicPartition(topic, 1, 20 + n)]
                m.consumer.commit(offsets=offsets, asynchronous=False)
        finally:
            close_all(members)
        for n, group in enumerate(groups.values()):
            assert committed(bootstrap, group, topic, 2) == {0: 10 + n, 1: 20 + n}
        for index in groups:
            segment = default_broker.data_dir / f"__consumer_offsets-{index}" / ("0" * 20 + ".log")
            assert segment.stat().st_size > 0


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_live_members_keep_their_partitions_through_a_broker_restart(gregor_factory, how):
    """The group's generation and members come back from __consumer_offsets:
    the members' heartbeats after the restart find them, with no rebalance."""
    broker = gregor_factory(GROUP_OVERRIDES)
    topic = group = "through-restart"
    create_topic(broker.bootstrap, topic, partitions=4)
    members = [Member(broker.bootstrap, group, topic) for _ in range(2)]
    processed = []

    def consume():
        for m in members:
            msg = m.poll(0.05)
            if msg is not None:
                processed.append((msg.partition(), msg.offset()))
                m.consumer.commit(message=msg, asynchronous=False)

    try:
        poll_until(members, lambda: split_evenly(members, 4), "two members with two each")
        owned = [m.partitions() for m in members]
        calls = [(m.assigned_calls, m.revoked_calls) for m in members]
        for p in range(4):
            produce_ok(broker.bootstrap, topic, [(None, b"before", None)] * 3, partition=p)
        wait_until(lambda: consume() or len(processed) == 12, "the records before", step=0)

        if how == "sigterm":
            assert broker.stop() == 0
        else:
            broker.kill()
        broker.start()
        for p in range(4):
            produce_ok(broker.bootstrap, topic, [(None, b"after", None)] * 3, partition=p)
        wait_until(lambda: consume() or len(processed) == 24, "the records after", step=0)

        assert sorted(processed) == [(p, o) for p in range(4) for o in range(6)]
        assert [m.partitions() for m in members] == owned
        assert [(m.assigned_calls, m.revoked_calls) for m in members] == calls
        description = describe_group(broker.bootstrap, group)
        assert (description.state.name, len(description.members)) == ("STABLE", 2)
        assert committed(broker.bootstrap, group, topic, 4) == {p: 6 for p in range(4)}
    finally:
        close_all(members)
