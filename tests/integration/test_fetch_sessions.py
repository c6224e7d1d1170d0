"""Fetch sessions (KIP-227), request by request, and a client that keeps one.

A full Fetch with session id 0 and epoch 0 opens a session; later Fetches name
it with the next epoch, list only the partitions whose fetch position changed
(and the ones to forget), and are answered with only the partitions that have
something new. The same requests run against Apache Kafka in
compat_tests/test_fetch_sessions.py.
"""

from __future__ import annotations

import time

import pytest

from tests.integration.test_fetch_requests import values_of
from tests.support.raw import RawClient, batch, delete_records, produce
from tests.support.topics import create_topic, unique_name
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

MIB = 1 << 20


@pytest.fixture
def port(shared_gregor):
    return shared_gregor.port


def session_fetch(client: RawClient, *args, version: int = 12, **kwargs):
    """A Fetch (no wait) in a session, built by `session_fetch_body`; the response."""
    body = session_fetch_body(*args, version=version, **kwargs)
    return client.call(ApiKey.FETCH, version, body)


def session_fetch_body(
    topic,
    offsets: dict[int, int],
    session_id: int,
    epoch: int,
    *,
    forget: list[int] = (),
    version: int = 12,
    max_wait_ms: int = 0,
) -> dict:
    """A Fetch in the session, listing `offsets` {partition: fetch offset}
    and forgetting `forget`; with `max_wait_ms` it waits for one byte."""
    key = "topic_id" if version >= 13 else "topic"
    topics = []
    if offsets:
        topics.append(
            {
                key: topic,
                "partitions": [
                    {"partition": p, "fetch_offset": o, "partition_max_bytes": MIB}
                    for p, o in offsets.items()
                ],
            }
        )
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1 if max_wait_ms else 0,
        "max_bytes": MIB,
        "isolation_level": 0,
        "session_id": session_id,
        "session_epoch": epoch,
        "topics": topics,
        "forgotten_topics_data": [{key: topic, "partitions": list(forget)}] if forget else [],
    }


def answered(response) -> dict[int, tuple[int, list[bytes]]]:
    """{partition: (high watermark, record values)} of every partition answered."""
    out = {}
    for t in response.responses:
        for p in t.partitions:
            assert p.error_code == ErrorCode.NONE, p
            out[p.partition_index] = (p.high_watermark, values_of(p.records))
    return out


def put(client: RawClient, topic: str, partition: int, *values: bytes) -> None:
    assert produce(client, topic, batch(list(values)), partition=partition).error_code == 0


def test_a_session_answers_only_the_partitions_with_something_new(port):
    topic = create_topic(port, unique_name("session"), 3)
    with RawClient(port) as client:
        put(client, topic, 0, b"a", b"b")
        full = session_fetch(client, topic, {0: 0, 1: 0, 2: 0}, 0, 0)
        assert full.error_code == ErrorCode.NONE
        session = full.session_id
        assert session > 0, "a full Fetch with epoch 0 opens a session"
        assert answered(full) == {0: (2, [b"a", b"b"]), 1: (0, []), 2: (0, [])}

        # Partition 0 moved on; nothing is new anywhere: an empty answer.
        moved = session_fetch(client, topic, {0: 2}, session, 1)
        assert (moved.error_code, moved.session_id) == (ErrorCode.NONE, session)
        assert answered(moved) == {}

        # A record in partition 1: only it is answered, though the request names none.
        put(client, topic, 1, b"c")
        news = session_fetch(client, topic, {}, session, 2)
        assert answered(news) == {1: (1, [b"c"])}
        # Read from where the session keeps it (offset 0), until the client moves it.
        again = session_fetch(client, topic, {}, session, 3)
        assert answered(again) == {1: (1, [b"c"])}
        assert answered(session_fetch(client, topic, {1: 1}, session, 4)) == {}


def test_a_caught_up_partition_is_answered_again_when_its_log_start_moves(port):
    topic = create_topic(port, unique_name("session"), 2)
    with RawClient(port) as client:
        put(client, topic, 0, b"a", b"b")
        full = session_fetch(client, topic, {0: 2, 1: 0}, 0, 0)
        session = full.session_id
        assert answered(full) == {0: (2, []), 1: (0, [])}
        assert answered(session_fetch(client, topic, {}, session, 1)) == {}
        assert delete_records(client, topic, 0, 2) == ErrorCode.NONE
        # Nothing to read at offset 2, but the log start moved: the client hears it once.
        moved = session_fetch(client, topic, {}, session, 2)
        ((p,),) = [t.partitions for t in moved.responses]
        assert (p.partition_index, p.high_watermark, p.log_start_offset) == (0, 2, 2)
        assert bytes(p.records) == b""
        assert answered(session_fetch(client, topic, {}, session, 3)) == {}


def test_an_unknown_session_or_an_epoch_out_of_step_is_an_error(port):
    topic = create_topic(port, unique_name("session"), 1)
    with RawClient(port) as client:
        # A session closed at once (epoch -1): its id is unknown from then on.
        closed_id = session_fetch(client, topic, {0: 0}, 0, 0).session_id
        assert session_fetch(client, topic, {0: 0}, closed_id, -1).session_id == 0
        session = session_fetch(client, topic, {0: 0}, 0, 0).session_id
        for epoch in (2, 7):
            stale = session_fetch(client, topic, {0: 0}, session, epoch)
            assert (stale.error_code, stale.session_id, stale.responses) == (
                ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                0,
                [],
            )
        # The session itself is untouched: its next epoch is still 1.
        put(client, topic, 0, b"x")
        assert answered(session_fetch(client, topic, {}, session, 1)) == {0: (1, [b"x"])}
        unknown = session_fetch(client, topic, {0: 0}, closed_id, 1)
        assert (unknown.error_code, unknown.session_id, unknown.responses) == (
            ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
            0,
            [],
        )


def test_a_waiting_fetch_overtaken_by_the_next_epoch_is_answered_with_an_error(port):
    """A client gave up on a long poll and went on with the session's next
    epoch: the old Fetch, answered later, must not carry what may no longer be
    the session's partitions."""
    topic = create_topic(port, unique_name("session"), 1)
    with RawClient(port) as waiting, RawClient(port) as client:
        session = session_fetch(client, topic, {0: 0}, 0, 0).session_id
        parked = waiting.send(
            ApiKey.FETCH, 12, session_fetch_body(topic, {}, session, 1, max_wait_ms=1500)
        )
        # Sent after the parked one: its epoch is taken only once that one is
        # read, so try until the broker has.
        deadline = time.monotonic() + 10
        while (next_one := session_fetch(client, topic, {}, session, 2)).error_code:
            assert next_one.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
            assert time.monotonic() < deadline, "the parked Fetch never took epoch 1"
        assert next_one.session_id == session
        correlation_id, late = waiting.receive(ApiKey.FETCH, 12)
        assert correlation_id == parked
        assert (late.error_code, late.session_id, late.responses) == (
            ErrorCode.INVALID_FETCH_SESSION_EPOCH,
            session,
            [],
        )


def test_forgotten_partitions_leave_the_session(port):
    topic = create_topic(port, unique_name("session"), 3)
    with RawClient(port) as client:
        session = session_fetch(client, topic, {0: 0, 1: 0, 2: 0}, 0, 0).session_id
        assert answered(session_fetch(client, topic, {}, session, 1, forget=[1])) == {}
        put(client, topic, 1, b"forgotten")
        put(client, topic, 2, b"kept")
        assert answered(session_fetch(client, topic, {}, session, 2)) == {2: (1, [b"kept"])}
        # Listed again, it is back.
        back = session_fetch(client, topic, {1: 0}, session, 3)
        assert answered(back) == {1: (1, [b"forgotten"]), 2: (1, [b"kept"])}


def test_epoch_zero_replaces_a_session_and_epoch_minus_one_closes_it(port):
    topic = create_topic(port, unique_name("session"), 2)
    with RawClient(port) as client:
        put(client, topic, 0, b"r")
        first = session_fetch(client, topic, {0: 0, 1: 0}, 0, 0).session_id
        second = session_fetch(client, topic, {0: 1}, first, 0)
        assert second.session_id not in (0, first)
        assert answered(second) == {0: (1, [])}, "a full answer lists every partition asked"
        gone = session_fetch(client, topic, {}, first, 1)
        assert gone.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND

        closed = session_fetch(client, topic, {0: 0, 1: 0}, second.session_id, -1)
        assert closed.session_id == 0, "epoch -1: a sessionless answer"
        assert answered(closed) == {0: (1, [b"r"]), 1: (0, [])}
        after = session_fetch(client, topic, {}, second.session_id, 1)
        assert after.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_forgetting_every_partition_ends_the_session(port):
    topic = create_topic(port, unique_name("session"), 1)
    with RawClient(port) as client:
        session = session_fetch(client, topic, {0: 0}, 0, 0).session_id
        last = session_fetch(client, topic, {}, session, 1, forget=[0])
        assert (last.error_code, last.session_id) == (ErrorCode.NONE, 0)
        assert session_fetch(client, topic, {}, session, 2).error_code == (
            ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        )


def test_a_session_by_topic_id_takes_no_topic_names(port):
    topic = create_topic(port, unique_name("session"), 2)
    with RawClient(port) as client:
        topic_id = client.call(ApiKey.METADATA, 12, {"topics": [{"name": topic}]}).topics[0]
        topic_id = topic_id.topic_id
        put(client, topic, 1, b"by-id")
        full = session_fetch(client, topic_id, {0: 0, 1: 0}, 0, 0, version=13)
        session = full.session_id
        assert session > 0
        assert [t.topic_id for t in full.responses] == [topic_id]
        assert answered(full) == {0: (0, []), 1: (1, [b"by-id"])}
        assert answered(session_fetch(client, topic_id, {1: 1}, session, 1, version=13)) == {}
        mixed = session_fetch(client, topic, {}, session, 2, version=12)
        assert mixed.error_code == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
        put(client, topic, 0, b"later")
        news = session_fetch(client, topic_id, {}, session, 2, version=13)
        assert answered(news) == {0: (1, [b"later"])}


def test_kafka_python_consumes_through_a_session(port):
    """kafka-python's consumer keeps a fetch session per broker (its
    FetchSessionHandler): every record arrives once and in order, and the
    session it holds at the end is the one it opened, many epochs on."""
    from kafka import KafkaConsumer, TopicPartition

    partitions = 12
    topic = create_topic(port, unique_name("session-kp"), partitions)
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        sent: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        got: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        with RawClient(port) as client:
            for round_no in range(6):
                # A few partitions at a time: the others have nothing new.
                for p in range(round_no % 3, partitions, 3):
                    value = f"{round_no}-{p}".encode()
                    put(client, topic, p, value)
                    sent[p].append(value)
                deadline = time.monotonic() + 15
                while got != sent and time.monotonic() < deadline:
                    for tp, records in consumer.poll(timeout_ms=200).items():
                        got[tp.partition] += [r.value for r in records]
                assert got == sent, f"round {round_no}"
        handlers = consumer._fetcher._session_handlers  # kafka-python 3.x internals
        (handler,) = handlers.values()
        assert handler.next_metadata.session_id > 0, "no session was kept"
        assert handler.next_metadata.epoch > 3, "the session's fetches were not incremental"
    finally:
        consumer.close()
