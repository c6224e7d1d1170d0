"""Transactions v2 (KIP-890 part 2) on the wire, against a real Gregor: what
Kafka 4.x's Java client does once ApiVersions finalizes `transaction.version`
2, request by request (compat_tests/test_transactions.py runs the Java client
itself beside Apache Kafka): the partition joins the transaction with the
producer's first batch (Produce v12), the group's offsets with TxnOffsetCommit
v5, and EndTxn v5 hands out the next epoch, which fences the batches of the
transaction it ended.
"""

from __future__ import annotations

import time
import uuid

import pytest
from compatlib.transactions import read_isolated, values

from tests.integration.clients import wait_until
from tests.support import raw
from tests.support.topics import create_topic, unique_name
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.records import RecordInput, build_batch

pytestmark = pytest.mark.timeout(120)
E = ErrorCode
DEADLINE_S = 30


def txn_batch(pid: int, epoch: int, seq: int, value: bytes) -> bytes:
    return build_batch(
        [RecordInput(None, value, timestamp=int(time.time() * 1000))],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )


class V2Producer:
    """The requests of a transactions v2 producer, one by one."""

    def __init__(self, client: raw.RawClient, txn_id: str):
        self.client = client
        self.txn_id = txn_id
        self.pid, self.epoch = raw.init_transactional_producer(client, txn_id, version=5)

    def call(self, api_key, version, **body):
        return self.client.call(api_key, version, body)

    def produce(
        self, topic: str, seq: int, value: bytes, version: int = 12, epoch=None, topic_id=None
    ) -> int:
        """One batch; from v13 the topic is named by `topic_id`."""
        batch = txn_batch(self.pid, self.epoch if epoch is None else epoch, seq, value)
        body = raw.produce_body(topic, batch, acks=-1)
        body["transactional_id"] = self.txn_id
        if version >= 13:
            body["topic_data"][0]["topic_id"] = topic_id
        response = self.client.call(ApiKey.PRODUCE, version, body)
        return response.responses[0].partition_responses[0].error_code

    def end(self, commit: bool) -> None:
        """EndTxn v5, retried while the previous transaction completes."""
        deadline = time.monotonic() + DEADLINE_S
        while True:
            ended = self.call(
                ApiKey.END_TXN,
                5,
                transactional_id=self.txn_id,
                producer_id=self.pid,
                producer_epoch=self.epoch,
                committed=commit,
            )
            if ended.error_code != E.CONCURRENT_TRANSACTIONS:
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert ended.error_code == 0, ended
        assert (ended.producer_id, ended.producer_epoch) == (self.pid, self.epoch + 1)
        self.epoch = ended.producer_epoch

    def describe(self):
        return self.call(
            ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=[self.txn_id]
        ).transaction_states[0]


def test_api_versions_finalizes_transaction_version_2(gregor):
    with raw.RawClient(gregor.bootstrap) as client:
        response = client.call(ApiKey.API_VERSIONS, 3, raw.software())
    assert [(f.name, f.min_version, f.max_version) for f in response.supported_features] == [
        ("transaction.version", 0, 2)
    ]
    assert [
        (f.name, f.min_version_level, f.max_version_level) for f in response.finalized_features
    ] == [("transaction.version", 2, 2)]
    # Clients ignore finalized features whose epoch is not newer than -1.
    assert response.finalized_features_epoch >= 0
    served = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert served[ApiKey.PRODUCE][1] == 13
    assert served[ApiKey.END_TXN][1] == 5
    assert served[ApiKey.TXN_OFFSET_COMMIT][1] == 5


def test_a_broker_set_to_transactions_v1_says_so(gregor_factory):
    broker = gregor_factory({"gregor.transaction.version": "1"})
    with raw.RawClient(broker.bootstrap) as client:
        response = client.call(ApiKey.API_VERSIONS, 3, raw.software())
    assert [
        (f.name, f.min_version_level, f.max_version_level) for f in response.finalized_features
    ] == [("transaction.version", 1, 1)]


def test_produce_v12_adds_the_partition_and_end_txn_v5_bumps_the_epoch(gregor):
    topic = create_topic(gregor.bootstrap, unique_name("txn2"), partitions=1)
    with raw.RawClient(gregor.bootstrap) as client:
        p = V2Producer(client, "v2-" + topic)
        first_epoch = p.epoch
        # No AddPartitionsToTxn: the first batch brings the partition in.
        assert p.produce(topic, 0, b"committed-1") == E.NONE
        state = p.describe()
        assert state.transaction_state == "Ongoing"
        assert [(t.topic, list(t.partitions)) for t in state.topics] == [(topic, [0])]
        assert p.produce(topic, 1, b"committed-2") == E.NONE
        p.end(commit=True)
        assert p.epoch == first_epoch + 1
        # The next transaction runs at the new epoch, its sequence from 0.
        assert p.produce(topic, 0, b"aborted") == E.NONE
        p.end(commit=False)
        assert p.produce(topic, 0, b"committed-3") == E.NONE
        p.end(commit=True)
        # A batch of an ended transaction, delayed: its epoch is fenced by the
        # marker that ended it, so it cannot open a transaction nobody closes.
        assert p.produce(topic, 1, b"late", epoch=first_epoch) == E.INVALID_PRODUCER_EPOCH
        state = p.describe()
        assert (state.transaction_state, state.producer_epoch) == ("CompleteCommit", p.epoch)
    got = values(read_isolated(gregor.bootstrap, topic, 1, "read_committed", 3))
    assert got == [b"committed-1", b"committed-2", b"committed-3"]


def test_a_v1_producers_late_batch_is_told_what_its_version_knows(gregor):
    """Produce v11 knows TRANSACTION_ABORTABLE (KIP-890 part 1); older ones
    are told INVALID_TXN_STATE (as in test_transactions.py)."""
    topic = create_topic(gregor.bootstrap, unique_name("txn2"), partitions=1)
    with raw.RawClient(gregor.bootstrap) as client:
        p = V2Producer(client, "v1-" + topic)
        assert p.produce(topic, 0, b"never added", version=11) == E.TRANSACTION_ABORTABLE
        assert p.produce(topic, 0, b"never added", version=10) == E.INVALID_TXN_STATE


def test_txn_offset_commit_v5_adds_the_groups_offsets(gregor):
    topic = create_topic(gregor.bootstrap, unique_name("txn2"), partitions=1)
    group = "g-" + topic
    with raw.RawClient(gregor.bootstrap) as client:
        p = V2Producer(client, "offsets-" + topic)
        assert p.produce(topic, 0, b"out") == E.NONE
        wait_until(
            lambda: p.call(ApiKey.FIND_COORDINATOR, 1, key=group, key_type=0).error_code == 0,
            "the group's coordinator",
            DEADLINE_S,
        )

        def commit_offset():
            """The partition's answer, or None while the offsets partition
            loads: as in Kafka, the coordinator is found while its partition
            may still be loading, and producers retry until it is loaded."""
            committed = p.call(
                ApiKey.TXN_OFFSET_COMMIT,
                5,
                transactional_id=p.txn_id,
                group_id=group,
                producer_id=p.pid,
                producer_epoch=p.epoch,
                generation_id=-1,
                member_id="",
                group_instance_id=None,
                topics=[
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 42,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                        ],
                    }
                ],
            )
            partition = committed.topics[0].partitions[0]
            return None if partition.error_code == E.COORDINATOR_LOAD_IN_PROGRESS else partition

        committed = wait_until(commit_offset, "the offsets partition to load", DEADLINE_S)
        assert committed.error_code == E.NONE
        state = p.describe()
        assert sorted(t.topic for t in state.topics) == ["__consumer_offsets", topic]
        p.end(commit=True)

        def offset_visible():
            fetched = p.call(
                ApiKey.OFFSET_FETCH,
                7,
                group_id=group,
                topics=[{"name": topic, "partition_indexes": [0]}],
                require_stable=True,
            )
            partition = fetched.topics[0].partitions[0]
            assert partition.error_code in (0, E.UNSTABLE_OFFSET_COMMIT), partition
            return partition.error_code == 0 and partition.committed_offset == 42

        # Visible once the marker reached the offsets partition.
        wait_until(offset_visible, "the committed offset", DEADLINE_S, step=0.05)


def _topic_id(client: raw.RawClient, topic: str):
    response = client.call(ApiKey.METADATA, 12, {"topics": [{"name": topic}]})
    return response.topics[0].topic_id


def test_produce_v13_names_the_topic_by_id_inside_a_transaction(gregor):
    """Kafka 4.1's producer names topics by id (Produce v13); under
    transactions v2 the first batch still brings the partition into the
    transaction. A transactional batch for an id nobody knows is told so,
    and the transaction goes on."""
    topic = create_topic(gregor.bootstrap, unique_name("txn2-ids"), partitions=1)
    with raw.RawClient(gregor.bootstrap) as client:
        topic_id = _topic_id(client, topic)
        p = V2Producer(client, "v2-ids-" + topic)
        assert p.produce(topic, 0, b"by-id-1", version=13, topic_id=topic_id) == E.NONE
        state = p.describe()
        assert [(t.topic, list(t.partitions)) for t in state.topics] == [(topic, [0])]
        unknown = uuid.uuid4()
        assert p.produce(topic, 1, b"lost", version=13, topic_id=unknown) == E.UNKNOWN_TOPIC_ID
        assert p.produce(topic, 1, b"by-id-2", version=13, topic_id=topic_id) == E.NONE
        p.end(commit=True)
        # Without a transactional id, a transactional batch fails the whole
        # request first, whatever its topic id (Kafka checks that before topics).
        body = raw.produce_body(topic, txn_batch(p.pid, p.epoch, 0, b"x"), acks=-1)
        body["topic_data"][0]["topic_id"] = unknown
        response = client.call(ApiKey.PRODUCE, 13, body)
        (answered,) = response.responses
        assert answered.topic_id == unknown
        (partition,) = answered.partition_responses
        assert partition.error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    got = values(read_isolated(gregor.bootstrap, topic, 1, "read_committed", 2))
    assert got == [b"by-id-1", b"by-id-2"]
