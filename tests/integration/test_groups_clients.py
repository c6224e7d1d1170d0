"""Consumer groups on Gregor with the other clients, as on Apache Kafka:
kafka-python and aiokafka members subscribe, commit and resume; Kafka's own
console consumer commits in a group, and kafka-consumer-groups lists,
describes (offsets and lag), resets and deletes groups.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import subprocess
import threading
import time

import aiokafka
import kafka
import pytest
from confluent_kafka.admin import AclOperation, AdminClient
from kafka.structs import OffsetAndMetadata

from tests.integration.clients import (
    GROUP_OVERRIDES,
    Member,
    committed,
    describe_group,
    poll_until,
    wait_until,
)
from tests.support.clients import TIMEOUT, needs_java, needs_kcat, produce_ok
from tests.support.gregor import GregorNode
from tests.support.topics import create_topic
from tools import kafka_cli

# Slow (groups of real clients, Kafka's Java consumers): make unit leaves the module out.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = GregorNode(tmp_path_factory.mktemp("clients") / "data", GROUP_OVERRIDES).start()
    yield process
    process.stop()


def fill(bootstrap, topic, partitions, per_partition, timestamps=None) -> None:
    """`per_partition` records on each partition, valued "<partition>-<offset>"."""
    create_topic(bootstrap, topic, partitions=partitions)
    for p in range(partitions):
        records = [
            (None, f"{p}-{i}".encode(), None, *([timestamps[i]] if timestamps else []))
            for i in range(per_partition)
        ]
        produce_ok(bootstrap, topic, records, partition=p)


# --- kafka-python ------------------------------------------------------------------------


def kafka_python_member(bootstrap, group, topic, **conf) -> kafka.KafkaConsumer:
    """A member subscribed to `topic` once it knows the topic's partitions.

    kafka-python 3.0.12 races when a just-created topic's metadata arrives
    after its first join: the leader assigns nothing, rejoins on the new
    metadata, and about one time in ten never completes that join: its DEBUG
    log shows the SyncGroup answer with its partitions arriving, then neither
    the assignment nor another heartbeat, until the session expires. Knowing
    the partitions first keeps the test on the behaviour it is about.
    """
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=300,
        **conf,
    )
    assert consumer.partitions_for_topic(topic), f"no metadata for {topic}"
    consumer.subscribe([topic])
    return consumer


def kafka_python_poll(consumer, count) -> list[tuple[int, int]]:
    """(partition, offset) of the next `count` records."""
    got = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < count:
        assert time.monotonic() < deadline, f"timed out with {len(got)} of {count} records"
        for records in consumer.poll(timeout_ms=200, max_records=count - len(got)).values():
            got += [(r.partition, r.offset) for r in records]
    return got


def test_kafka_python_member_commits_and_the_next_one_resumes_there(broker):
    topic = group = "kafka-python-resume"
    fill(broker.bootstrap, topic, 2, 10)
    first = kafka_python_member(broker.bootstrap, group, topic)
    try:
        got = kafka_python_poll(first, 20)
        assert sorted(got) == [(p, o) for p in range(2) for o in range(10)]
        # Commit a position in the middle of each partition, with metadata.
        first.commit(
            {
                kafka.TopicPartition(topic, 0): OffsetAndMetadata(4, "half", -1),
                kafka.TopicPartition(topic, 1): OffsetAndMetadata(7, "", -1),
            }
        )
        assert first.committed(kafka.TopicPartition(topic, 0)) == 4
        assert first.committed(kafka.TopicPartition(topic, 0), metadata=True).metadata == "half"
    finally:
        first.close()

    second = kafka_python_member(broker.bootstrap, group, topic)
    try:
        got = kafka_python_poll(second, 9)
        assert sorted(got) == [(0, o) for o in range(4, 10)] + [(1, o) for o in range(7, 10)]
        second.commit()  # the positions: the end of both partitions
    finally:
        second.close()
    assert committed(broker.bootstrap, group, topic, 2) == {0: 10, 1: 10}


def test_two_kafka_python_members_split_the_partitions(broker):
    topic = group = "kafka-python-split"
    create_topic(broker.bootstrap, topic, partitions=4)
    members = [kafka_python_member(broker.bootstrap, group, topic) for _ in range(2)]
    stop = threading.Event()

    def run(consumer):  # each kafka-python member polls in its own thread
        while not stop.is_set():
            consumer.poll(timeout_ms=100)

    threads = [threading.Thread(target=run, args=(m,), daemon=True) for m in members]
    for t in threads:
        t.start()
    try:
        # The first member may own all four for a generation before the second
        # joins: wait for the split itself.
        owned = wait_until(
            lambda: (
                assignments
                if sorted(
                    map(
                        len,
                        assignments := [{tp.partition for tp in m.assignment()} for m in members],
                    )
                )
                == [2, 2]
                else None
            ),
            "both members with two partitions",
        )
        assert owned[0] | owned[1] == {0, 1, 2, 3}
    finally:
        stop.set()
        for t in threads:
            t.join(TIMEOUT)
        for m in members:
            m.close()


# --- aiokafka ----------------------------------------------------------------------------


def test_aiokafka_member_commits_and_the_next_one_resumes_there(broker):
    topic = group = "aiokafka-resume"
    fill(broker.bootstrap, topic, 2, 10)

    async def consume(count):
        consumer = aiokafka.AIOKafkaConsumer(
            topic,
            bootstrap_servers=broker.bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=300,
        )
        await consumer.start()
        try:
            got = []
            while len(got) < count:
                batch = await consumer.getmany(timeout_ms=200, max_records=count - len(got))
                got += [(r.partition, r.offset) for rs in batch.values() for r in rs]
            return consumer, got
        except BaseException:
            await consumer.stop()
            raise

    async def scenario():
        consumer, first = await consume(20)
        try:
            await consumer.commit(
                {
                    aiokafka.TopicPartition(topic, 0): 3,
                    aiokafka.TopicPartition(topic, 1): 8,
                }
            )
            marks = [await consumer.committed(aiokafka.TopicPartition(topic, p)) for p in (0, 1)]
        finally:
            await consumer.stop()
        consumer, second = await consume(9)
        try:
            await consumer.commit()
        finally:
            await consumer.stop()
        return first, marks, second

    first, marks, second = asyncio.run(asyncio.wait_for(scenario(), 3 * TIMEOUT))
    assert sorted(first) == [(p, o) for p in range(2) for o in range(10)]
    assert marks == [3, 8]
    assert sorted(second) == [(0, o) for o in range(3, 10)] + [(1, 8), (1, 9)]
    assert committed(broker.bootstrap, group, topic, 2) == {0: 10, 1: 10}


# --- kcat ------------------------------------------------------------------------------------


@needs_kcat
def test_kcat_balanced_consumer_reads_everything_once_and_commits_at_exit(broker):
    topic = group = "kcat-group"
    fill(broker.bootstrap, topic, 2, 3)
    # No -o: with -G it would override the committed offsets.
    args = (
        "-b", broker.bootstrap, "-G", group, "-X", "auto.offset.reset=earliest",
        "-e", "-f", "%p:%o\n", topic,
    )  # fmt: skip

    first = kafka_cli.run_kcat(*args, timeout=TIMEOUT)
    assert first.returncode == 0, first.stderr
    assert sorted(first.stdout.split()) == [f"{p}:{o}" for p in range(2) for o in range(3)]
    assert committed(broker.bootstrap, group, topic, 2) == {0: 3, 1: 3}

    produce_ok(broker.bootstrap, topic, [(None, b"new", None)], partition=1)
    again = kafka_cli.run_kcat(*args, timeout=TIMEOUT)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split() == ["1:3"]  # resumed at the committed offsets


# --- confluent-kafka's AdminClient ---------------------------------------------------------


def test_describe_groups_reports_every_group_operation_when_asked(broker):
    """Without an authorizer Kafka allows everything on a group and says so
    (KIP-430) only when the client asks."""
    topic = group = "authorized-operations"
    create_topic(broker.bootstrap, topic)
    member = Member(broker.bootstrap, group, topic)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    try:
        poll_until([member], lambda: member.partitions() == {0}, "the member's partition")
        asked = admin.describe_consumer_groups(
            [group], include_authorized_operations=True, request_timeout=TIMEOUT
        )[group].result(TIMEOUT)
        plain = admin.describe_consumer_groups([group], request_timeout=TIMEOUT)[group].result(
            TIMEOUT
        )
    finally:
        member.close()
    assert set(asked.authorized_operations) == {
        AclOperation.READ,
        AclOperation.DELETE,
        AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    }
    assert plain.authorized_operations is None


# --- Kafka's Java tools --------------------------------------------------------------------


COOPERATIVE_STICKY = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"


def consumer_groups(bootstrap, *args):
    return kafka_cli.run_tool("kafka-consumer-groups", "--bootstrap-server", bootstrap, *args)


def describe_offsets(bootstrap, group) -> dict[int, tuple[int, int, int]]:
    """partition -> (CURRENT-OFFSET, LOG-END-OFFSET, LAG) from --describe."""
    result = consumer_groups(bootstrap, "--describe", "--group", group)
    assert result.returncode == 0, result.stderr
    header, *rows = [line.split() for line in result.stdout.splitlines() if line.strip()]
    assert header[:6] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
    return {int(r[2]): (int(r[3]), int(r[4]), int(r[5])) for r in rows if r[0] == group}


def reset_offsets(bootstrap, group, topic, *how) -> None:
    result = consumer_groups(
        bootstrap, "--reset-offsets", "--group", group, "--topic", topic, *how, "--execute"
    )
    assert result.returncode == 0, result.stderr


@needs_java
def test_console_consumer_in_a_group_and_kafka_consumer_groups_manage_its_offsets(broker):
    bs = broker.bootstrap
    topic = group = "java-groups"
    base = int(time.time() * 1000) - 100_000
    fill(bs, topic, 3, 10, timestamps=[base + 1000 * i for i in range(10)])

    consumed = kafka_cli.run_tool(
        "kafka-console-consumer", "--bootstrap-server", bs, "--topic", topic,
        "--group", group, "--from-beginning", "--max-messages", "30", "--timeout-ms", "20000",
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.split()) == sorted(
        f"{p}-{i}" for p in range(3) for i in range(10)
    )

    listed = consumer_groups(bs, "--list")
    assert group in listed.stdout.split()
    # The console consumer committed what it consumed when it closed.
    assert describe_offsets(bs, group) == {p: (10, 10, 0) for p in range(3)}
    produce_ok(bs, topic, [(None, b"late", None)] * 4, partition=1)
    assert describe_offsets(bs, group) == {0: (10, 10, 0), 1: (10, 14, 4), 2: (10, 10, 0)}

    reset_offsets(bs, group, topic, "--to-earliest")
    assert committed(bs, group, topic, 3) == {0: 0, 1: 0, 2: 0}
    assert describe_offsets(bs, group) == {0: (0, 10, 10), 1: (0, 14, 14), 2: (0, 10, 10)}

    # The first record at or after the time: offset 6 (base + 6000) on every
    # partition; the four late records on partition 1 are newer.
    moment = datetime.datetime.fromtimestamp((base + 5500) / 1000, tz=datetime.UTC)
    iso = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    reset_offsets(bs, group, topic, "--to-datetime", iso)
    assert committed(bs, group, topic, 3) == {0: 6, 1: 6, 2: 6}

    reset_offsets(bs, group, topic, "--shift-by", "-4")
    assert committed(bs, group, topic, 3) == {0: 2, 1: 2, 2: 2}
    # Shifting past the start stops at the log start offset.
    reset_offsets(bs, group, topic, "--shift-by", "-5")
    assert committed(bs, group, topic, 3) == {0: 0, 1: 0, 2: 0}

    # A group with an active member cannot be deleted...
    member = Member(bs, group, topic)
    try:
        poll_until([member], lambda: member.partitions() == {0, 1, 2}, "an active member")
        refused = consumer_groups(bs, "--delete", "--group", group)
        assert f"Group '{group}' could not be deleted due to:" in refused.stdout
        assert "GroupNotEmptyException: The group is not empty." in refused.stdout
        assert group in consumer_groups(bs, "--list").stdout.split()
    finally:
        member.close()

    # ...an empty one can, with its offsets.
    deleted = consumer_groups(bs, "--delete", "--group", group)
    assert deleted.returncode == 0, deleted.stderr
    assert (
        deleted.stdout.strip()
        == f"Deletion of requested consumer groups ('{group}') was successful."
    )
    assert group not in consumer_groups(bs, "--list").stdout.split()
    assert committed(bs, group, topic, 3) == {0: -1001, 1: -1001, 2: -1001}


class VerifiableConsumer:
    """Kafka's kafka-verifiable-consumer (a Java KafkaConsumer in a group),
    with the JSON events it prints read in a thread."""

    def __init__(self, bootstrap, topic, group, *extra):
        self.proc = kafka_cli.popen_tool(
            "kafka-verifiable-consumer", "--bootstrap-server", bootstrap, "--topic", topic,
            "--group-id", group, "--reset-policy", "earliest", "--session-timeout", "6000",
            *extra, stderr=subprocess.STDOUT,  # read by the same thread: no full pipe
        )  # fmt: skip
        self.events: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.events.append(json.loads(line))

    def rebalances(self) -> list[tuple[str, list[int]]]:
        """("partitions_assigned" or "partitions_revoked", partitions) in order."""
        return [
            (e["name"], sorted(p["partition"] for p in e["partitions"]))
            for e in list(self.events)
            if e["name"] in ("partitions_assigned", "partitions_revoked")
        ]

    def owned(self) -> set[int]:
        owned = set()
        for name, partitions in self.rebalances():
            owned = (
                owned | set(partitions)
                if name == "partitions_assigned"
                else owned - set(partitions)
            )
        return owned

    def stop(self) -> None:
        kafka_cli.stop(self.proc)
        self._reader.join(TIMEOUT)


@needs_java
def test_java_consumers_with_cooperative_sticky_move_only_the_partitions_that_change_hands(
    broker,
):
    topic = group = "java-cooperative"
    fill(broker.bootstrap, topic, 4, 5)
    cooperative = ("--assignment-strategy", COOPERATIVE_STICKY)
    first = VerifiableConsumer(broker.bootstrap, topic, group, *cooperative)
    second = None
    try:
        wait_until(lambda: first.owned() == {0, 1, 2, 3}, "the first member with all four")
        second = VerifiableConsumer(broker.bootstrap, topic, group, *cooperative)
        wait_until(
            lambda: len(first.owned()) == 2 and len(second.owned()) == 2, "two members with two"
        )
        assert first.owned() | second.owned() == {0, 1, 2, 3}
        # The first member gave up only the two partitions that moved.
        assert [r for r in first.rebalances() if r[1]] == [
            ("partitions_assigned", [0, 1, 2, 3]),
            ("partitions_revoked", sorted(second.owned())),
        ]
        description = describe_group(broker.bootstrap, group)
        assert (description.partition_assignor, len(description.members)) == (
            "cooperative-sticky",
            2,
        )

        moved = second.owned()
        second.stop()  # LeaveGroup: its partitions go back to the first member
        wait_until(lambda: first.owned() == {0, 1, 2, 3}, "the first member with all four again")
        assert [r for r in first.rebalances() if r[1]][-1] == ("partitions_assigned", sorted(moved))
    finally:
        first.stop()
        if second is not None:
            second.stop()
