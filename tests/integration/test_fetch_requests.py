"""Fetch as Kafka answers it, request by request: the long poll (max_wait_ms,
min_bytes) woken by appends, the byte limits across partitions (whole batches,
at least one for the first partition with data), read_committed, and topic ids
in v13+ (UNKNOWN_TOPIC_ID)."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from compatlib.transactions import txn_producer

from tests.support.clients import TIMEOUT
from tests.support.raw import RawClient, batch, delete_records, produce
from tests.support.topics import create_topic, unique_name
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.records import iter_batches, iter_records

MIB = 1 << 20


@pytest.fixture
def port(shared_gregor):
    return shared_gregor.port


def new_topic(port: int, partitions: int = 1) -> str:
    return create_topic(port, unique_name("fetch"), partitions)


def fetch_request(
    topic,
    offsets: dict[int, int],
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    max_bytes: int = MIB,
    partition_max_bytes: int = MIB,
    isolation_level: int = 0,
    by_id: bool = False,
) -> dict:
    key = {"topic_id": topic} if by_id else {"topic": topic}
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": isolation_level,
        "topics": [
            {
                **key,
                "partitions": [
                    {"partition": p, "fetch_offset": o, "partition_max_bytes": partition_max_bytes}
                    for p, o in offsets.items()
                ],
            }
        ],
    }


def values_of(records) -> list[bytes]:
    data = bytes(records or b"")
    return [r.value for pos, _ in iter_batches(data) for r in iter_records(data, pos)]


def batch_count(records) -> int:
    return sum(1 for _ in iter_batches(bytes(records or b"")))


def produce_later(port: int, topic: str, values, delay: float) -> threading.Thread:
    def run():
        time.sleep(delay)
        with RawClient(port) as client:
            assert produce(client, topic, batch(values)).error_code == ErrorCode.NONE

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_long_poll_at_the_log_end_is_answered_by_the_next_append(port):
    topic = new_topic(port)
    with RawClient(port, timeout=60) as client:
        writer = produce_later(port, topic, [b"arrived"], delay=0.5)
        # Without the wake-up the answer would come after 30 s, empty.
        response = client.call(
            ApiKey.FETCH, 12, fetch_request(topic, {0: 0}, max_wait_ms=30_000, min_bytes=1)
        )
        writer.join()
    (p,) = response.responses[0].partitions
    assert p.error_code == ErrorCode.NONE
    assert values_of(p.records) == [b"arrived"]
    assert p.high_watermark == 1


def test_long_poll_without_data_waits_max_wait_ms_and_answers_empty(port):
    topic = new_topic(port)
    with RawClient(port) as client:
        started = time.monotonic()
        response = client.call(
            ApiKey.FETCH, 12, fetch_request(topic, {0: 0}, max_wait_ms=400, min_bytes=1)
        )
        waited = time.monotonic() - started
    (p,) = response.responses[0].partitions
    assert (p.error_code, p.high_watermark, bytes(p.records)) == (ErrorCode.NONE, 0, b"")
    assert waited >= 0.35, f"answered after {waited:.3f} s, before max_wait_ms"


def test_min_bytes_holds_the_answer_until_enough_data_arrived(port):
    topic = new_topic(port)
    with RawClient(port, timeout=60) as client:
        assert produce(client, topic, batch([b"a" * 100])).error_code == ErrorCode.NONE
        # One small batch is there, but min_bytes asks for more than it holds.
        writer = produce_later(port, topic, [b"b" * 3000], delay=0.5)
        response = client.call(
            ApiKey.FETCH, 12, fetch_request(topic, {0: 0}, max_wait_ms=30_000, min_bytes=2000)
        )
        writer.join()
    (p,) = response.responses[0].partitions
    assert values_of(p.records) == [b"a" * 100, b"b" * 3000]


def fill(port: int, topic: str, partitions: int, batches: int, size: int = 1000) -> None:
    with RawClient(port) as client:
        for partition in range(partitions):
            for i in range(batches):
                value = bytes([65 + i]) * size
                r = produce(client, topic, batch([value]), partition=partition)
                assert r.error_code == ErrorCode.NONE


def test_partition_max_bytes_limits_each_partition_to_whole_batches(port):
    topic = new_topic(port, partitions=3)
    fill(port, topic, partitions=3, batches=3)
    with RawClient(port) as client:
        response = client.call(
            ApiKey.FETCH,
            12,
            fetch_request(topic, {0: 0, 1: 0, 2: 0}, partition_max_bytes=2500),
        )
    parts = response.responses[0].partitions
    # Two ~1,070-byte batches fit in 2,500 bytes, the third does not.
    assert [batch_count(p.records) for p in parts] == [2, 2, 2]
    assert all(len(p.records) <= 2500 for p in parts)


def test_max_bytes_caps_the_whole_answer_in_partition_order(port):
    topic = new_topic(port, partitions=3)
    fill(port, topic, partitions=3, batches=3)
    with RawClient(port) as client:
        response = client.call(
            ApiKey.FETCH, 12, fetch_request(topic, {0: 0, 1: 0, 2: 0}, max_bytes=4000)
        )
    parts = response.responses[0].partitions
    # The first partition's three batches, then what still fits of the second.
    assert [batch_count(p.records) for p in parts] == [3, 0, 0]
    assert [p.high_watermark for p in parts] == [3, 3, 3]
    assert sum(len(p.records) for p in parts) <= 4000


def test_a_batch_larger_than_every_limit_still_comes_back_for_the_first_partition(port):
    topic = new_topic(port, partitions=2)
    with RawClient(port) as client:
        for partition in (0, 1):
            r = produce(client, topic, batch([b"z" * 5000]), partition=partition)
            assert r.error_code == ErrorCode.NONE
        response = client.call(
            ApiKey.FETCH,
            12,
            fetch_request(topic, {0: 0, 1: 0}, max_bytes=100, partition_max_bytes=100),
        )
    first, second = response.responses[0].partitions
    assert values_of(first.records) == [b"z" * 5000]
    assert bytes(second.records) == b""


def test_read_committed_reads_to_the_last_stable_offset(port):
    topic = new_topic(port)
    with RawClient(port) as client:
        assert produce(client, topic, batch([b"x", b"y"])).error_code == ErrorCode.NONE
        response = client.call(ApiKey.FETCH, 12, fetch_request(topic, {0: 0}, isolation_level=1))
    (p,) = response.responses[0].partitions
    assert p.error_code == ErrorCode.NONE
    assert values_of(p.records) == [b"x", b"y"]
    # No transactions: everything below the high watermark is stable.
    assert (p.high_watermark, p.last_stable_offset) == (2, 2)
    assert p.aborted_transactions == []


def test_a_read_at_the_end_answers_the_offsets_and_no_records(port):
    # What a caught-up consumer asks on every Fetch: the answer carries the
    # partition's offsets as a read would, also once DeleteRecords moved the
    # log start up to the end.
    topic = new_topic(port, partitions=2)
    fill(port, topic, partitions=2, batches=2)
    with RawClient(port) as client:
        assert delete_records(client, topic, 1, 2) == ErrorCode.NONE
        uncommitted, committed = (
            client.call(ApiKey.FETCH, 12, fetch_request(topic, {0: 2, 1: 2}, isolation_level=level))
            for level in (0, 1)
        )
        # Below the log start is still out of range, caught up or not.
        below = client.call(ApiKey.FETCH, 12, fetch_request(topic, {1: 1}))
    for response, aborted in ((uncommitted, None), (committed, [])):
        answers = [
            (p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset)
            for p in response.responses[0].partitions
        ]
        assert answers == [(ErrorCode.NONE, 2, 2, 0), (ErrorCode.NONE, 2, 2, 2)]
        assert [bytes(p.records) for p in response.responses[0].partitions] == [b"", b""]
        assert [p.aborted_transactions for p in response.responses[0].partitions] == [aborted] * 2
    assert below.responses[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_read_committed_at_the_last_stable_offset_of_an_open_transaction(port):
    topic = new_topic(port)
    producer = txn_producer(f"127.0.0.1:{port}", "txn-" + topic)
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=0)
    producer.flush(TIMEOUT)
    try:
        with RawClient(port) as client:
            committed, uncommitted = (
                client.call(ApiKey.FETCH, 12, fetch_request(topic, {0: 0}, isolation_level=level))
                for level in (1, 0)
            )
    finally:
        producer.abort_transaction(TIMEOUT)
    (p,) = committed.responses[0].partitions
    # The open transaction's record is below the high watermark, not below the LSO.
    assert (p.error_code, p.high_watermark, p.last_stable_offset) == (ErrorCode.NONE, 1, 0)
    assert (bytes(p.records), p.aborted_transactions) == (b"", [])
    (p,) = uncommitted.responses[0].partitions
    assert values_of(p.records) == [b"open"]


def topic_id_of(client: RawClient, topic: str):
    response = client.call(ApiKey.METADATA, 12, {"topics": [{"name": topic}]})
    return response.topics[0].topic_id


@pytest.mark.parametrize("version", [13, 15, 17, 18])
def test_fetch_by_topic_id_from_v13(port, version):
    topic = new_topic(port)
    with RawClient(port) as client:
        assert produce(client, topic, batch([b"by-id"])).error_code == ErrorCode.NONE
        topic_id = topic_id_of(client, topic)
        response = client.call(ApiKey.FETCH, version, fetch_request(topic_id, {0: 0}, by_id=True))
        unknown = client.call(
            ApiKey.FETCH, version, fetch_request(uuid.uuid4(), {0: 0}, by_id=True)
        )
    (t,) = response.responses
    assert t.topic_id == topic_id
    assert values_of(t.partitions[0].records) == [b"by-id"]
    (u,) = unknown.responses
    assert u.partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
