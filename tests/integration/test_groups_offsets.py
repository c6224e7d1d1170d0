"""Committed offsets on Gregor with confluent-kafka, as on Apache Kafka: no
record is processed twice or skipped across rebalances when commits follow
processing, commits survive a broker restart (graceful or kill -9), the
__consumer_offsets topic is internal, and commits for unknown topics fail
per partition.
"""

from __future__ import annotations

import uuid

import kafka
import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from coordinator.hashing import coordinator_partition
from tests.integration.clients import (
    GROUP_OVERRIDES,
    Member,
    committed,
    poll_until,
    split_evenly,
)
from tests.support.clients import TIMEOUT, produce_ok
from tests.support.gregor import GregorNode
from tests.support.raw import kafka_request
from tests.support.topics import create_topic
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

# Slow (rebalances and broker restarts): make unit leaves the module out.
pytestmark = pytest.mark.slow

PARTITIONS = 6
PER_PARTITION = 100


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = GregorNode(tmp_path_factory.mktemp("offsets") / "data", GROUP_OVERRIDES).start()
    yield process
    process.stop()


def fill(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    create_topic(bootstrap, topic, partitions=partitions)
    for p in range(partitions):
        records = [(None, f"{p}-{i}".encode(), None) for i in range(per_partition)]
        produce_ok(bootstrap, topic, records, partition=p)


# --- exactly once across rebalances ---------------------------------------------------


class CommitAfterProcessing:
    """Members that process a record, then commit the offset after it (sync); a
    commit refused during a rebalance is retried when the partition is revoked,
    as a careful application does."""

    def __init__(self, bootstrap: str, group: str, topic: str, strategy: str):
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.strategy = strategy
        self.processed: list[tuple[int, int]] = []
        self.processed_by: dict[tuple[int, int], list[int]] = {}  # record -> member indexes
        self.revoke_commit_errors = []
        self.members: list[Member] = []

    def add_member(self) -> Member:
        member = Member(
            self.bootstrap, self.group, **{"partition.assignment.strategy": self.strategy}
        )
        member.uncommitted = {}  # partition -> offset processed but not yet committed
        member.subscribe([self.topic], on_revoke=self._commit_before_revoke)
        self.members.append(member)
        return member

    def _commit(self, member: Member, offsets: dict[int, int]) -> None:
        tps = [TopicPartition(self.topic, p, o) for p, o in offsets.items()]
        member.consumer.commit(offsets=tps, asynchronous=False)

    def _commit_before_revoke(self, member: Member, partitions) -> None:
        revoked = {tp.partition for tp in partitions}
        pending = {p: o for p, o in member.uncommitted.items() if p in revoked}
        if pending:
            try:
                self._commit(member, pending)
            except KafkaException as e:
                self.revoke_commit_errors.append(e.args[0])
        for p in revoked:
            member.uncommitted.pop(p, None)

    def step(self) -> None:
        """Poll every live member once; process and commit what arrives."""
        for member in self.live():
            msg = member.poll(0.02)
            if msg is None:
                continue
            self.processed.append((msg.partition(), msg.offset()))
            self.processed_by.setdefault((msg.partition(), msg.offset()), []).append(
                self.members.index(member)
            )
            member.uncommitted[msg.partition()] = msg.offset() + 1
            try:
                self._commit(member, dict(member.uncommitted))
                member.uncommitted.clear()
            except KafkaException:
                pass  # a rebalance is under way: committed again later or at revocation

    def live(self) -> list[Member]:
        return [m for m in self.members if not m.closed]

    def run_until(self, condition, what: str) -> None:
        def done():
            self.step()
            return condition()

        poll_until([], done, what)

    def hold(self) -> None:
        """Stop fetching (pause) so a rebalance happens while records remain."""
        for m in self.live():
            m.consumer.pause(m.consumer.assignment())

    def release(self) -> None:
        for m in self.live():
            m.consumer.resume(m.consumer.assignment())


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_every_record_is_processed_exactly_once_across_rebalances(broker, strategy):
    topic = group = f"exactly-once-{strategy}"
    total = PARTITIONS * PER_PARTITION
    fill(broker.bootstrap, topic, PARTITIONS, PER_PARTITION)
    app = CommitAfterProcessing(broker.bootstrap, group, topic, strategy)
    try:
        app.add_member()
        app.run_until(lambda: len(app.processed) >= total // 6, "the first member's share")
        app.hold()

        app.add_member()
        app.add_member()
        app.run_until(lambda: split_evenly(app.live(), PARTITIONS), "three members")
        app.release()
        app.run_until(lambda: len(app.processed) >= total // 2, "half of the records")
        app.hold()

        app.members[1].close()  # LeaveGroup after committing at revocation
        app.run_until(lambda: split_evenly(app.live(), PARTITIONS), "two members")
        app.release()
        app.run_until(lambda: len(set(app.processed)) == total, "every record")

        assert committed(broker.bootstrap, group, topic, PARTITIONS) == {
            p: PER_PARTITION for p in range(PARTITIONS)
        }
        assert sorted(app.processed) == [
            (p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION)
        ]
        assert app.revoke_commit_errors == []
        # The handovers happened in the middle of partitions: each member
        # processed records, and some partitions were processed by two members.
        workers = {p: set() for p in range(PARTITIONS)}
        for (p, _), [index] in app.processed_by.items():
            workers[p].add(index)
        assert set().union(*workers.values()) == {0, 1, 2}
        assert any(len(w) > 1 for w in workers.values())
    finally:
        for m in app.members:
            m.close()


# --- durability -------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_committed_offsets_survive_a_broker_restart(gregor_factory, how):
    broker = gregor_factory(GROUP_OVERRIDES)
    topic = group = "durable-commits"
    fill(broker.bootstrap, topic, 3, 10)
    positions = {0: 3, 1: 10, 2: 7}
    member = Member(broker.bootstrap, group, topic)
    try:
        poll_until([member], lambda: member.partitions() == {0, 1, 2}, "the member's partitions")
        member.consumer.commit(
            offsets=[
                TopicPartition(topic, p, o, metadata=f"checkpoint {p}")
                for p, o in positions.items()
            ],
            asynchronous=False,
        )
    finally:
        member.close()

    if how == "sigterm":
        assert broker.stop() == 0
    else:
        broker.kill()
    broker.start()

    resumed = Member(broker.bootstrap, group, topic)
    try:
        found = resumed.consumer.committed(
            [TopicPartition(topic, p) for p in range(3)], timeout=TIMEOUT
        )
        assert [(tp.partition, tp.offset, tp.metadata) for tp in found] == [
            (p, o, f"checkpoint {p}") for p, o in positions.items()
        ]
        first = {}
        poll_until(
            [],
            lambda: (
                (msg := resumed.poll(0.1)) is not None
                and first.setdefault(msg.partition(), msg.offset()) is not None
                and set(first) == {0, 2}
            ),
            "the first record of partitions 0 and 2",
        )
        # Partition 1 was committed at its end: nothing is read again there.
        assert first == {0: 3, 2: 7}
    finally:
        resumed.close()


def test_changing_offsets_topic_num_partitions_later_does_not_lose_any_group(tmp_path):
    """As in Kafka, the partition count of the existing __consumer_offsets wins
    over a changed setting, so every group is still found where it was."""
    broker = GregorNode(tmp_path / "data", GROUP_OVERRIDES).start()
    try:
        create_topic(broker.bootstrap, "t")
        groups = [f"moved-{i}" for i in range(10)]
        # On all three partitions now, and most elsewhere if 50 were used.
        assert {coordinator_partition(g, 3) for g in groups} == {0, 1, 2}
        assert sum(coordinator_partition(g, 3) != coordinator_partition(g, 50) for g in groups) > 5
        for i, group in enumerate(groups):
            member = Member(broker.bootstrap, group)
            member.consumer.commit(offsets=[TopicPartition("t", 0, i + 1)], asynchronous=False)
            member.close()
    finally:
        assert broker.stop() == 0
    default_partitions = {
        k: v for k, v in GROUP_OVERRIDES.items() if k != "offsets.topic.num.partitions"
    }
    with GregorNode(broker.data_dir, default_partitions, port=broker.port) as restarted:
        found = [committed(restarted.bootstrap, g, "t", 1)[0] for g in groups]
        assert found == list(range(1, 11))


# --- the internal topic and unknown topics ----------------------------------------------


def test_consumer_offsets_is_an_internal_topic_that_clients_cannot_produce_to(broker):
    # The first commit of a group creates __consumer_offsets.
    create_topic(broker.bootstrap, "internal-check")
    member = Member(broker.bootstrap, "internal-topic-check")
    member.consumer.commit(offsets=[TopicPartition("internal-check", 0, 1)], asynchronous=False)
    member.close()

    admin = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        [described] = admin.describe_topics(["__consumer_offsets"])
    finally:
        admin.close()
    assert described["error_code"] == 0
    assert described["is_internal"] is True
    assert len(described["partitions"]) == GROUP_OVERRIDES["offsets.topic.num.partitions"]
    listed = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=TIMEOUT)
    assert "__consumer_offsets" in listed.topics

    reports = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.send.max.retries": 0})
    producer.produce(
        "__consumer_offsets",
        b"not a group record",
        partition=0,
        on_delivery=lambda e, m: reports.append(e),
    )
    assert producer.flush(TIMEOUT) == 0
    [error] = reports
    assert error is not None and error.code() == KafkaError.TOPIC_EXCEPTION


def test_commit_for_a_topic_that_does_not_exist_fails_for_those_partitions(broker):
    topic = "commit-known"
    create_topic(broker.bootstrap, topic)
    member = Member(broker.bootstrap, "commit-unknown")
    try:
        with pytest.raises(KafkaException) as raised:
            member.consumer.commit(
                offsets=[TopicPartition("no-such-topic", 0, 5)], asynchronous=False
            )
        assert raised.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART

        # In one request with an existing partition, only the unknown one fails.
        with pytest.raises(KafkaException) as raised:
            member.consumer.commit(
                offsets=[TopicPartition(topic, 0, 4), TopicPartition("no-such-topic", 1, 5)],
                asynchronous=False,
            )
        assert raised.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    finally:
        member.close()
    assert committed(broker.bootstrap, "commit-unknown", topic, 1) == {0: 4}


def test_offsets_of_a_deleted_topic_are_gone_when_it_is_created_again(broker):
    topic, group = "recreated", "recreated-readers"
    fill(broker.bootstrap, topic, 1, 5)
    member = Member(broker.bootstrap, group)
    member.consumer.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)
    member.close()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics([topic], operation_timeout=TIMEOUT)[topic].result(TIMEOUT)

    create_topic(broker.bootstrap, topic)
    produce_ok(broker.bootstrap, topic, [(None, b"new", None)])

    # As on Kafka: no committed offset, so a member starts by auto.offset.reset.
    assert committed(broker.bootstrap, group, topic, 1) == {0: -1001}
    reader = Member(broker.bootstrap, group, topic)
    try:
        msg = poll_until([], lambda: reader.poll(0.1), "the new topic's record")
        assert (msg.offset(), msg.value()) == (0, b"new")
    finally:
        reader.close()


# --- topics named by id (OffsetCommit and OffsetFetch v10) ----------------------------


def test_offsets_committed_and_fetched_by_topic_id_from_v10(broker):
    """As Apache Kafka 4.3.1 answers the same requests (measured with them):
    an id the broker does not know is UNKNOWN_TOPIC_ID for each of its
    partitions, a partition the topic does not have keeps its own error, and
    offsets committed by id or by name are read back by either."""
    topic, group = "by-id", "by-id-readers"
    create_topic(broker.bootstrap, topic, partitions=2)
    topic_id = kafka_request(broker.bootstrap, ApiKey.METADATA, 12, {"topics": [{"name": topic}]})
    topic_id = topic_id.topics[0].topic_id
    unknown_id = uuid.uuid4()

    def commit(version, topics):
        body = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": ""}
        response = kafka_request(broker.bootstrap, ApiKey.OFFSET_COMMIT, version, body | topics)
        return {
            (t.topic_id if version >= 10 else t.name, p.partition_index): p.error_code
            for t in response.topics
            for p in t.partitions
        }

    def fetch(topics):
        body = {"groups": [{"group_id": group, "topics": topics}], "require_stable": False}
        (answer,) = kafka_request(broker.bootstrap, ApiKey.OFFSET_FETCH, 10, body).groups
        assert answer.error_code == ErrorCode.NONE
        return {
            (t.topic_id, p.partition_index): (p.committed_offset, p.metadata, p.error_code)
            for t in answer.topics
            for p in t.partitions
        }

    partition = {"committed_offset": 5, "committed_metadata": "m"}
    assert commit(
        10,
        {
            "topics": [
                {
                    "topic_id": topic_id,
                    "partitions": [
                        {"partition_index": 0, **partition},
                        {"partition_index": 7, **partition},
                    ],
                },
                {"topic_id": unknown_id, "partitions": [{"partition_index": 0, **partition}]},
            ]
        },
    ) == {
        (topic_id, 0): ErrorCode.NONE,
        (topic_id, 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        (unknown_id, 0): ErrorCode.UNKNOWN_TOPIC_ID,
    }
    by_name = {
        "name": topic,
        "partitions": [{"partition_index": 1, "committed_offset": 6, "committed_metadata": ""}],
    }
    assert commit(9, {"topics": [by_name]}) == {(topic, 1): ErrorCode.NONE}

    assert fetch(
        [
            {"topic_id": topic_id, "partition_indexes": [0, 1, 7]},
            {"topic_id": unknown_id, "partition_indexes": [0]},
        ]
    ) == {
        (topic_id, 0): (5, "m", ErrorCode.NONE),
        (topic_id, 1): (6, "", ErrorCode.NONE),
        (topic_id, 7): (-1, "", ErrorCode.NONE),
        (unknown_id, 0): (-1, "", ErrorCode.UNKNOWN_TOPIC_ID),
    }
    assert fetch(None) == {
        (topic_id, 0): (5, "m", ErrorCode.NONE),
        (topic_id, 1): (6, "", ErrorCode.NONE),
    }

    # A deleted topic's id is unknown from then on, and its offsets are gone.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics([topic], operation_timeout=TIMEOUT)[topic].result(TIMEOUT)
    assert fetch(None) == {}
    assert commit(
        10,
        {"topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, **partition}]}]},
    ) == {(topic_id, 0): ErrorCode.UNKNOWN_TOPIC_ID}
