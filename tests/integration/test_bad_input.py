"""Bad input gets a clear error and loses nothing.

A real Gregor process is fed, over raw sockets, what a broken or hostile
client sends: garbage bytes, negative and oversized frame sizes, truncated
requests, unknown API keys, versions outside the advertised range, corrupt
and invalid record batches, oversized batches, produce requests for topics
that do not exist, pipelined requests and clients that vanish mid-request.

Kafka's rules, which Gregor follows:
- a frame size that is negative or above `socket.request.max.bytes`, bytes
  that do not decode as a request, an unknown API key or an unsupported
  version of any API but ApiVersions close the connection (and only it);
- ApiVersions above the served range gets a v0 answer with
  UNSUPPORTED_VERSION and the single entry [18, min, max];
- a bad record batch gets a per-partition error (CORRUPT_MESSAGE,
  INVALID_RECORD, INVALID_TIMESTAMP, MESSAGE_TOO_LARGE), with per-record
  errors and a message exactly where Kafka sends them, and nothing of it is
  appended; a first batch Kafka cannot even read, or a transactional one
  without a transactional id, fails the whole request; with acks=0 a failure
  closes the connection.

After every test on the shared broker, a fixture proves that the process is
alive, answers ApiVersions and Metadata on a new connection, still holds
every record acknowledged at the start, and has not logged a traceback.
"""

from __future__ import annotations

import random
import re
import socket
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.support.gregor import GregorNode, assert_no_traceback
from tests.support.raw import (
    PRODUCE_VERSION,
    RawClient,
    assert_serves_requests,
    batch,
    fetch_body,
    fetch_values,
    latest_offset,
    patch,
    produce,
    produce_body,
    raw_header,
    software,
)
from tests.support.topics import create_topic, ensure_topic, unique_name
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.framing import encode_frame
from wire.protocol import encode_request
from wire.records import (
    CONTROL_MASK,
    GZIP,
    LOG_APPEND_TIME,
    RecordInput,
    build_batch,
    build_control_batch,
    iter_batches,
    iter_records,
    write_crc,
)

SOCKET_REQUEST_MAX_BYTES = 65536
MAX_MESSAGE_BYTES = 10_000
SHARED_OVERRIDES = {
    "socket.request.max.bytes": SOCKET_REQUEST_MAX_BYTES,
    "message.max.bytes": MAX_MESSAGE_BYTES,
}
# Acknowledged at the start; every test must leave them all readable.
PRECIOUS = "precious"
PRECIOUS_VALUES = [f"precious-{i}".encode() for i in range(30)]

# Byte positions in a v2 batch header (see wire/records/batch.py).
ATTRIBUTES_POS = 21
LAST_OFFSET_DELTA_POS = 23
MAX_TIMESTAMP_POS = 35
RECORDS_COUNT_POS = 57


# --- checks ---------------------------------------------------------------------------


def assert_real_client_works(broker: GregorNode) -> None:
    """confluent-kafka produces to a new topic and reads it back."""
    topic = f"normal-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for i in range(5):
        producer.produce(topic, value=f"v{i}", partition=0)
    assert producer.flush(15) == 0
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got = []
        deadline = time.monotonic() + 15
        while len(got) < 5 and time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append(msg.value())
    finally:
        consumer.close()
    assert got == [f"v{i}".encode() for i in range(5)]


# --- fixtures -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def _shared_broker(tmp_path_factory):
    broker = GregorNode(tmp_path_factory.mktemp("bad-input") / "data", SHARED_OVERRIDES)
    broker.start()
    try:
        with RawClient(broker.port) as client:
            ensure_topic(client, PRECIOUS)
            for i in range(0, len(PRECIOUS_VALUES), 10):
                r = produce(client, PRECIOUS, batch(PRECIOUS_VALUES[i : i + 10]))
                assert (r.error_code, r.base_offset) == (ErrorCode.NONE, i)
        yield broker
    finally:
        code = broker.stop()
    assert code == 0, broker.log()


@pytest.fixture
def broker(_shared_broker):
    """The shared broker; afterwards it must still be alive, serving, whole and quiet."""
    yield _shared_broker
    assert _shared_broker.proc.poll() is None, "the broker died:\n" + _shared_broker.log()
    assert_serves_requests(_shared_broker.port)
    with RawClient(_shared_broker.port) as client:
        assert fetch_values(client, PRECIOUS) == PRECIOUS_VALUES
    assert_no_traceback(_shared_broker)


@pytest.fixture(scope="module")
def strict_broker(tmp_path_factory):
    """No topic auto-creation; idle connections close after a second."""
    broker = GregorNode(
        tmp_path_factory.mktemp("strict") / "data",
        {"auto.create.topics.enable": False, "connections.max.idle.ms": 1000},
    )
    broker.start()
    yield broker
    assert broker.stop() == 0, broker.log()
    assert_no_traceback(broker)


def new_topic(client: RawClient, prefix: str) -> str:
    """A fresh topic, auto-created by Metadata (the broker's default settings)."""
    name = unique_name(prefix)
    ensure_topic(client, name)
    return name


# --- framing ------------------------------------------------------------------------


def test_random_garbage_on_many_connections(broker):
    """Seeded random bytes, random framed bodies, valid headers with random
    bodies and mangled valid requests: the broker answers or closes each
    connection, never hangs on one, and never dies."""
    rng = random.Random(20240611)
    with RawClient(broker.port) as setup:
        target = new_topic(setup, "garbage-target")
        versions = {
            k.api_key: (k.min_version, k.max_version)
            for k in setup.call(ApiKey.API_VERSIONS, 3, software()).api_keys
        }
    valid = [
        encode_request(ApiKey.METADATA, 12, 1, {"topics": [{"name": target}]}),
        encode_request(ApiKey.API_VERSIONS, 3, 1, software()),
        encode_request(ApiKey.PRODUCE, 9, 1, produce_body(target, batch([b"x" * 20] * 3))),
        encode_request(ApiKey.PRODUCE, 3, 1, produce_body(target, batch([b"y"]))),
        encode_request(
            ApiKey.LIST_OFFSETS,
            7,
            1,
            {"topics": [{"name": target, "partitions": [{"partition_index": 0, "timestamp": -1}]}]},
        ),
    ]

    def garbage(kind: int) -> bytes:
        if kind == 0:  # anything at all, size prefix included
            return rng.randbytes(rng.randint(1, 300))
        if kind == 1:  # a well-formed frame of random bytes
            return encode_frame(rng.randbytes(rng.randint(0, 300)))
        if kind == 2:  # a served API and version, then a random body
            key = rng.choice(sorted(versions))
            lo, hi = versions[key]
            header = raw_header(key, rng.randint(lo, hi), rng.randint(0, 2**31 - 1))
            return encode_frame(header + rng.randbytes(rng.randint(0, 200)))
        request = bytearray(rng.choice(valid))
        if kind == 3:  # a valid request with a few bytes flipped
            for _ in range(rng.randint(1, 4)):
                request[rng.randrange(len(request))] ^= 1 << rng.randrange(8)
            return encode_frame(request)
        # a valid request cut short, under a frame size that claims all of it
        return struct.pack(">i", len(request)) + request[: rng.randrange(len(request))]

    for i in range(400):
        with RawClient(broker.port, timeout=5) as client:
            client.send_raw(garbage(i % 5))
            # Whatever the broker makes of it, once we stop sending it must
            # answer and close, or just close: never hang, never die.
            client.sock.shutdown(socket.SHUT_WR)
            client.wait_closed(timeout=5)
    assert broker.proc.poll() is None
    assert_real_client_works(broker)


def test_negative_frame_size_closes_only_that_connection(broker):
    with RawClient(broker.port) as bystander, RawClient(broker.port) as client:
        bystander.call(ApiKey.API_VERSIONS, 3, software())
        client.send_raw(struct.pack(">i", -1))
        assert client.wait_closed() == b""
        bystander.call(ApiKey.API_VERSIONS, 3, software())
    assert broker.wait_for_log("invalid frame size -1"), broker.log()


@pytest.mark.parametrize("bad_size", [-1, SOCKET_REQUEST_MAX_BYTES + 1])
def test_requests_before_a_bad_size_are_answered_then_the_connection_closes(broker, bad_size):
    """Kafka reads the next size only after answering a request, so requests
    that arrived whole before a bad size (even in the same packet) are answered."""
    with RawClient(broker.port) as client:
        topic = new_topic(client, "before-bad-size")
        payload = encode_frame(encode_request(ApiKey.API_VERSIONS, 3, 5, software()))
        payload += encode_frame(
            encode_request(ApiKey.PRODUCE, 9, 6, produce_body(topic, batch([b"kept"])))
        )
        client.send_raw(payload + struct.pack(">i", bad_size))
        assert client.receive(ApiKey.API_VERSIONS, 3)[0] == 5
        correlation_id, response = client.receive(ApiKey.PRODUCE, 9)
        assert correlation_id == 6
        assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE
        assert client.wait_closed() == b""
    with RawClient(broker.port) as client:
        assert fetch_values(client, topic) == [b"kept"]


@pytest.mark.parametrize("size", [SOCKET_REQUEST_MAX_BYTES + 1, 2**31 - 1])
def test_frame_above_socket_request_max_bytes_closes_before_the_body(broker, size):
    with RawClient(broker.port) as client:
        # Only the size: the broker must not wait for (or buffer) the body.
        client.send_raw(struct.pack(">i", size))
        assert client.wait_closed() == b""


def test_partial_frames_then_disconnect(broker):
    """A client vanishes mid-request at every stage; nothing of it is appended."""
    with RawClient(broker.port) as client:
        topic = new_topic(client, "vanish")
        before = latest_offset(client, topic)
    request = encode_request(ApiKey.PRODUCE, 9, 1, produce_body(topic, batch([b"lost"] * 5)))
    frame = encode_frame(request)
    for cut in (1, 3, 4, 5, 12, len(frame) // 2, len(frame) - 1):
        with RawClient(broker.port) as client:
            client.send_raw(frame[:cut])
    with RawClient(broker.port) as client:
        # A size prefix of a big (allowed) frame, a little body, then a reset.
        client.send_raw(struct.pack(">i", SOCKET_REQUEST_MAX_BYTES) + b"\x00" * 100)
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with RawClient(broker.port) as client:
        assert latest_offset(client, topic) == before


def _truncated(request: bytes, keep: int) -> bytes:
    return encode_frame(request[:keep])


_PRODUCE = encode_request(ApiKey.PRODUCE, 9, 7, produce_body("t", batch([b"v"])))
_METADATA = encode_request(ApiKey.METADATA, 12, 7, {"topics": [{"name": "some-topic"}]})


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(encode_frame(b""), id="empty frame"),
        pytest.param(encode_frame(b"\x00\x03\x00"), id="header cut in the api version"),
        pytest.param(_truncated(_METADATA, 9), id="header cut in the client id"),
        pytest.param(_truncated(_PRODUCE, 20), id="produce body cut early"),
        pytest.param(_truncated(_PRODUCE, len(_PRODUCE) - 10), id="produce cut in the records"),
        pytest.param(_truncated(_METADATA, len(_METADATA) - 3), id="metadata cut"),
        pytest.param(
            encode_frame(raw_header(ApiKey.PRODUCE, 9, 7) + b"\x00" + b"\xff" * 40),
            id="produce body garbage",
        ),
        pytest.param(
            encode_frame(raw_header(ApiKey.METADATA, 12, 7) + b"\x00" + b"\xff" * 10),
            id="metadata body garbage",
        ),
        pytest.param(
            encode_frame(raw_header(ApiKey.METADATA, 1, 7) + struct.pack(">i", 2**31 - 1)),
            id="metadata array count beyond the frame",
        ),
        pytest.param(
            encode_frame(raw_header(ApiKey.PRODUCE, 3, 7, b"\x00" * 5)[:-5] + b"\x7f\xff"),
            id="client id longer than the frame",
        ),
    ],
)
def test_malformed_request_closes_only_that_connection(broker, frame):
    with RawClient(broker.port) as bystander, RawClient(broker.port) as client:
        bystander.call(ApiKey.API_VERSIONS, 3, software())
        client.send_raw(frame)
        assert client.wait_closed() == b"", "a malformed request got an answer"
        bystander.call(ApiKey.METADATA, 12, {"topics": None})


@pytest.mark.parametrize(
    "api_key",
    [
        pytest.param(9999, id="unknown key 9999"),
        pytest.param(-1, id="negative key"),
        pytest.param(ApiKey.VOTE, id="known to wire, not served by a broker"),
    ],
)
def test_unknown_api_key_closes_the_connection(broker, api_key):
    with RawClient(broker.port) as client:
        client.send_raw(encode_frame(raw_header(api_key, 0, 5) + b"\x00" * 16))
        assert client.wait_closed() == b""


@pytest.mark.parametrize("version", [12, 99, -1, 32767])
def test_unsupported_produce_version_closes_the_connection(broker, version):
    with RawClient(broker.port) as client:
        topic = new_topic(client, "v99")
    with RawClient(broker.port) as client:
        body = encode_request(ApiKey.PRODUCE, 9, 5, produce_body(topic, batch([b"x"])))
        # Same body as v9, header claiming another version.
        client.send_raw(encode_frame(raw_header(ApiKey.PRODUCE, version, 5, b"gregor") + body[14:]))
        assert client.wait_closed() == b""
    with RawClient(broker.port) as client:
        assert latest_offset(client, topic) == 0


@pytest.mark.parametrize("version", [5, 99, 32767])
def test_api_versions_above_range_gets_a_v0_answer(broker, version):
    """Kafka answers in v0 with UNSUPPORTED_VERSION and ApiVersions' own range,
    whatever the body, and keeps the connection so the client can retry."""
    with RawClient(broker.port) as client:
        client.send_raw(encode_frame(raw_header(ApiKey.API_VERSIONS, version, 42) + b"\xde\xad"))
        correlation_id, response = client.receive(ApiKey.API_VERSIONS, 0)
        assert correlation_id == 42
        assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [
            (ApiKey.API_VERSIONS, 0, 4)
        ]
        # The client retries with a version it now knows, on the same connection.
        retry = client.call(ApiKey.API_VERSIONS, 4, software())
        assert retry.error_code == ErrorCode.NONE
        assert len(retry.api_keys) > 1


@pytest.mark.parametrize(
    "name,version",
    [("", "1.0"), ("bad name", "1.0"), ("-leading-dash", "1"), ("ok", "trailing."), ("ok", "")],
)
def test_api_versions_v3_invalid_client_software_is_invalid_request(broker, name, version):
    with RawClient(broker.port) as client:
        response = client.call(ApiKey.API_VERSIONS, 3, software(name, version))
        assert response.error_code == ErrorCode.INVALID_REQUEST


# --- record batches -------------------------------------------------------------------
#
# Each refused batch gets Apache Kafka 4.3.1's exact answer (checked against a real
# Kafka with the same requests): the error code, the per-record errors and message
# where Kafka sends them (most errors carry none), and the log start offset, which
# Kafka reports for errors found while appending and leaves at -1 for the others.

NO_LOG_START = -1
LOG_START = 0  # a fresh partition's log start offset


def answer(r) -> tuple:
    """What a partition response tells a producer about a failure."""
    records_errors = [(e.batch_index, e.batch_index_error_message) for e in r.record_errors]
    return r.error_code, r.base_offset, r.log_start_offset, records_errors, r.error_message


def _flip(pos: int):
    def corrupt(buf: bytearray) -> bytearray:
        buf[pos if pos >= 0 else len(buf) + pos] ^= 0x01
        return buf

    return corrupt


@pytest.mark.parametrize(
    "corrupt",
    [
        pytest.param(_flip(-1), id="last value byte"),
        pytest.param(_flip(-20), id="inside a record"),
        pytest.param(_flip(17), id="stored crc"),
        pytest.param(_flip(LAST_OFFSET_DELTA_POS + 3), id="last offset delta"),
        pytest.param(_flip(RECORDS_COUNT_POS + 3), id="records count"),
        pytest.param(_flip(MAX_TIMESTAMP_POS + 7), id="max timestamp"),
    ],
)
def test_crc_mismatch_is_corrupt_message_and_nothing_is_appended(broker, corrupt):
    with RawClient(broker.port) as client:
        topic = new_topic(client, "crc")
        assert produce(client, topic, batch([b"good"])).error_code == ErrorCode.NONE
        r = produce(client, topic, corrupt(batch([b"a" * 30, b"b" * 30, b"c" * 30])))
        assert answer(r) == (ErrorCode.CORRUPT_MESSAGE, -1, NO_LOG_START, [], None)
        assert latest_offset(client, topic) == 1
        # The partition keeps working, right after the bad batch.
        r = produce(client, topic, batch([b"after"]))
        assert (r.error_code, r.base_offset) == (ErrorCode.NONE, 1)
        assert fetch_values(client, topic) == [b"good", b"after"]


def test_a_corrupt_batch_fails_its_own_partition_only(broker):
    with RawClient(broker.port) as client:
        topic = create_topic(client, unique_name("one-bad"), partitions=3)
        values = {p: [bytes([65 + p]) * 100, bytes([97 + p]) * 100] for p in range(3)}
        batches = {p: batch(values[p]) for p in range(3)}
        batches[1] = _flip(-20)(batches[1])
        response = client.call(
            ApiKey.PRODUCE,
            PRODUCE_VERSION,
            {
                "acks": 1,
                "timeout_ms": 5000,
                "topic_data": [
                    {
                        "name": topic,
                        "partition_data": [{"index": p, "records": batches[p]} for p in (2, 1, 0)],
                    }
                ],
            },
        )
        (topic_response,) = response.responses
        answers = [
            (r.index, r.error_code, r.base_offset) for r in topic_response.partition_responses
        ]
        assert answers == [
            (2, ErrorCode.NONE, 0),
            (1, ErrorCode.CORRUPT_MESSAGE, -1),
            (0, ErrorCode.NONE, 0),
        ]
        # The others are written and readable at once.
        assert fetch_values(client, topic, 0) == values[0]
        assert fetch_values(client, topic, 2) == values[2]
        assert latest_offset(client, topic, 1) == 0


def _with_base_offset(buf: bytearray) -> bytearray:
    return patch(buf, ">q", 0, 5, fix_crc=False)  # base offset is not under the CRC


def _control_bit(buf: bytearray) -> bytearray:
    attributes = struct.unpack_from(">h", buf, ATTRIBUTES_POS)[0]
    return patch(buf, ">h", ATTRIBUTES_POS, attributes | CONTROL_MASK)


def _count_above_offsets(buf: bytearray) -> bytearray:
    return patch(buf, ">i", RECORDS_COUNT_POS, 4)


def _offsets_above_count(buf: bytearray) -> bytearray:
    return patch(buf, ">i", LAST_OFFSET_DELTA_POS, 5)


def _declared(count: int):
    """The header of a 2-record batch claims `count` records (consistently)."""

    def make(buf: bytearray) -> bytearray:
        two = batch([b"r0", b"r1"])
        patch(two, ">i", LAST_OFFSET_DELTA_POS, count - 1)
        return patch(two, ">i", RECORDS_COUNT_POS, count)

    return make


def _empty_batch(buf: bytearray) -> bytearray:
    now = int(time.time() * 1000)
    return bytearray(build_batch([], base_timestamp=now, max_timestamp=now, last_offset_delta=-1))


def _idempotent_without_sequence(buf: bytearray) -> bytearray:
    return batch([b"v"], producer_id=1000, producer_epoch=0, base_sequence=-1)


def _offset_delta_gap(buf: bytearray) -> bytearray:
    # Records a, b of 8 bytes each: the second one's offset delta (a zigzag
    # varint after its length, attributes and timestamp delta) 1 -> 5.
    two = batch([b"a", b"b"])
    assert two[72] == 2
    return patch(two, ">b", 72, 10)


def _two_batches(buf: bytearray) -> bytearray:
    return batch([b"a"]) + batch([b"b"])


def _truncated_batch(buf: bytearray) -> bytearray:
    return buf[:-10]


def _magic_1(buf: bytearray) -> bytearray:
    return patch(buf, ">b", 16, 1, fix_crc=False)


def _gzip_garbage(buf: bytearray) -> bytearray:
    gz = batch([b"a" * 100, b"b"], compression=GZIP)
    gz[70:] = b"A" * (len(gz) - 70)  # past the gzip header: not a deflate stream
    write_crc(gz)
    return gz


@pytest.mark.parametrize(
    "make,code,log_start",
    [
        pytest.param(_with_base_offset, ErrorCode.INVALID_RECORD, LOG_START, id="base offset 5"),
        pytest.param(_control_bit, ErrorCode.INVALID_RECORD, LOG_START, id="control bit"),
        pytest.param(_count_above_offsets, ErrorCode.INVALID_RECORD, LOG_START, id="count 4/3"),
        pytest.param(_offsets_above_count, ErrorCode.INVALID_RECORD, LOG_START, id="count 3/6"),
        pytest.param(_declared(3), ErrorCode.INVALID_RECORD, LOG_START, id="3 declared, 2 there"),
        pytest.param(_declared(1), ErrorCode.INVALID_RECORD, LOG_START, id="1 declared, 2 there"),
        pytest.param(_empty_batch, ErrorCode.INVALID_RECORD, LOG_START, id="no records"),
        pytest.param(
            _idempotent_without_sequence, ErrorCode.INVALID_RECORD, LOG_START, id="no sequence"
        ),
        # Kafka stores this one as it is (its offsets then collide with the
        # next batch's); Gregor refuses it, as Kafka refuses other bad records.
        pytest.param(_offset_delta_gap, ErrorCode.INVALID_RECORD, LOG_START, id="delta gap"),
        pytest.param(_gzip_garbage, ErrorCode.UNKNOWN_SERVER_ERROR, LOG_START, id="bad gzip"),
        pytest.param(_two_batches, ErrorCode.INVALID_RECORD, NO_LOG_START, id="two batches"),
        pytest.param(_truncated_batch, ErrorCode.INVALID_RECORD, NO_LOG_START, id="truncated"),
        pytest.param(_magic_1, ErrorCode.INVALID_RECORD, NO_LOG_START, id="magic 1"),
    ],
)
def test_invalid_batch_is_refused_without_a_message(broker, make, code, log_start):
    with RawClient(broker.port) as client:
        topic = new_topic(client, "invalid")
        r = produce(client, topic, make(batch([b"one", b"two", b"three"])))
        assert answer(r) == (code, -1, log_start, [], None)
        assert latest_offset(client, topic) == 0
        assert produce(client, topic, batch([b"fine"])).error_code == ErrorCode.NONE
        assert fetch_values(client, topic) == [b"fine"]


@pytest.mark.parametrize("records", [b"", None])
def test_missing_records_are_invalid_record(broker, records):
    with RawClient(broker.port) as client:
        topic = new_topic(client, "norecords")
        r = produce(client, topic, records)
        assert answer(r) == (ErrorCode.INVALID_RECORD, -1, NO_LOG_START, [], None)
        assert latest_offset(client, topic) == 0


@pytest.mark.parametrize(
    "records,message",
    [
        (b"\x00" * 30, "Record size 0 is less than the minimum record overhead (14)"),
        (b"\xff" * 61, "Record size -1 is less than the minimum record overhead (14)"),
        (
            bytes(8) + struct.pack(">i", 8) + bytes(14),
            "Record size 8 is less than the minimum record overhead (14)",
        ),
        (
            bytes(8) + struct.pack(">ii", 49, -1) + b"\x03" + bytes(45),
            "Invalid magic found in record: 3",
        ),
    ],
    ids=["zeros", "ones", "length 8", "magic 3"],
)
def test_unreadable_first_batch_fails_the_whole_request(broker, records, message):
    """Kafka reads every partition's first batch before anything else (is it
    transactional?): one it cannot read fails every partition of the request,
    the only case where a batch error carries a message but no record errors."""
    with RawClient(broker.port) as client:
        good, bad = new_topic(client, "bystander"), new_topic(client, "unreadable")
        body = produce_body(good, batch([b"would be fine"]))
        body["topic_data"].append(
            {"name": bad, "partition_data": [{"index": 0, "records": records}]}
        )
        response = client.call(ApiKey.PRODUCE, 9, body)
        answers = [answer(p) for t in response.responses for p in t.partition_responses]
        assert answers == [(ErrorCode.CORRUPT_MESSAGE, -1, NO_LOG_START, [], message)] * 2
        assert latest_offset(client, good) == 0


def test_transactional_batch_without_transactional_id_fails_the_whole_request(broker):
    with RawClient(broker.port) as client:
        plain, transactional = new_topic(client, "plain"), new_topic(client, "txn")
        body = produce_body(plain, batch([b"would be fine"]))
        txn = batch(
            [b"t"], producer_id=1000, producer_epoch=0, base_sequence=0, is_transactional=True
        )
        body["topic_data"].append(
            {"name": transactional, "partition_data": [{"index": 0, "records": txn}]}
        )
        response = client.call(ApiKey.PRODUCE, 9, body)
        answers = [answer(p) for t in response.responses for p in t.partition_responses]
        failed = (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, NO_LOG_START, [], None)
        assert answers == [failed] * 2
        # A transaction marker is a transactional batch too.
        marker = build_control_batch(True, 1000, 0, 0, int(time.time() * 1000))
        assert answer(produce(client, plain, bytearray(marker))) == failed
        assert latest_offset(client, plain) == 0
        assert latest_offset(client, transactional) == 0


@pytest.mark.parametrize(
    "after",
    [b"\x00" * 11, bytes(batch([b"next"]))[:40]],
    ids=["11 bytes", "a partial second batch"],
)
def test_bytes_after_the_batch_are_dropped_as_kafka_does(broker, after):
    """Bytes after the batch that do not make a whole second one are trimmed."""
    with RawClient(broker.port) as client:
        topic = new_topic(client, "trailing")
        r = produce(client, topic, batch([b"kept"]) + after)
        assert (r.error_code, r.base_offset) == (ErrorCode.NONE, 0)
        r = produce(client, topic, batch([b"next"]))
        assert (r.error_code, r.base_offset) == (ErrorCode.NONE, 1)
        assert fetch_values(client, topic) == [b"kept", b"next"]


def test_keyless_records_on_a_compacted_topic_are_listed_per_record(broker):
    with RawClient(broker.port) as client:
        topic = create_topic(client, unique_name("compacted"), config={"cleanup.policy": "compact"})
        now = int(time.time() * 1000)
        records = [RecordInput(k, b"v", timestamp=now) for k in (None, b"k", None, None, None)]
        r = produce(client, topic, bytearray(build_batch(records)))
        per_record = (
            f"Compacted topic cannot accept message without key in topic partition {topic}-0"
        )
        quoted = ", ".join(
            f"RecordError(batchIndex={i}, message='{per_record}')" for i in (0, 2, 3)
        )
        assert answer(r) == (
            ErrorCode.INVALID_RECORD,
            -1,
            LOG_START,
            [(i, per_record) for i in (0, 2, 3, 4)],
            "One or more records have been rejected due to 4 record errors in total, and only "
            f"showing the first three errors at most: [{quoted}]",
        )
        keyed = [RecordInput(b"k", b"v", timestamp=now)]
        assert produce(client, topic, bytearray(build_batch(keyed))).error_code == ErrorCode.NONE


def test_timestamps_out_of_range_are_listed_per_record(broker):
    """Every record is checked, not just the batch's first and largest timestamps."""
    hour = 3_600_000
    with RawClient(broker.port) as client:
        topic = create_topic(
            client,
            unique_name("bounded"),
            config={
                "message.timestamp.before.max.ms": str(hour),
                "message.timestamp.after.max.ms": str(hour),
            },
        )
        now = int(time.time() * 1000)
        stamps = [now, now - 2 * hour, now, now + 2 * hour]  # first and max in range but one
        r = produce(
            client,
            topic,
            bytearray(build_batch([RecordInput(None, b"v", timestamp=t) for t in stamps])),
        )
        code, base_offset, log_start, record_errors, message = answer(r)
        assert (code, base_offset, log_start, message) == (
            ErrorCode.INVALID_TIMESTAMP,
            -1,
            LOG_START,
            "One or more records have been rejected due to invalid timestamp",
        )
        assert [i for i, _ in record_errors] == [1, 3]
        for (i, text), stamp in zip(record_errors, (stamps[1], stamps[3]), strict=True):
            match = re.fullmatch(
                rf"Timestamp {stamp} of message with offset {i} is out of range\. "
                r"The timestamp should be within \[(\d+), (\d+)\]",
                text,
            )
            assert match, text
            lower, upper = int(match[1]), int(match[2])
            assert upper - lower == 2 * hour and lower >= now - hour  # the broker's now is later
        assert latest_offset(client, topic) == 0


def test_timestamp_far_in_the_future_is_refused_with_default_settings(broker):
    with RawClient(broker.port) as client:
        topic = new_topic(client, "future")
        future = int(time.time() * 1000) + 30 * 24 * 3600 * 1000
        r = produce(
            client, topic, bytearray(build_batch([RecordInput(None, b"v", timestamp=future)]))
        )
        code, _, _, ((index, text),), _ = answer(r)
        assert (code, index) == (ErrorCode.INVALID_TIMESTAMP, 0)
        assert text.startswith(f"Timestamp {future} of message with offset 0 is out of range.")


def test_client_log_append_time_without_timestamp_is_refused_per_record(broker):
    with RawClient(broker.port) as client:
        topic = new_topic(client, "lat-none")
        buf = build_batch(
            [RecordInput(None, b"v"), RecordInput(b"kk", b"ww")],
            timestamp_type=LOG_APPEND_TIME,
            base_timestamp=-1,
            max_timestamp=-1,
        )
        r = produce(client, topic, bytearray(buf))
        assert answer(r) == (
            ErrorCode.INVALID_TIMESTAMP,
            -1,
            LOG_START,
            [
                (
                    i,
                    f"Invalid timestamp type in message DefaultRecord(offset={i}, timestamp=-1, "
                    f"key={k} bytes, value={v} bytes). Producer should not set timestamp type "
                    "to LogAppendTime.",
                )
                for i, k, v in ((0, 0, 1), (1, 2, 2))
            ],
            "One or more records have been rejected due to invalid timestamp",
        )


def test_client_log_append_time_on_a_log_append_time_topic_is_refused(broker):
    with RawClient(broker.port) as client:
        topic = create_topic(
            client, unique_name("lat-topic"), config={"message.timestamp.type": "LogAppendTime"}
        )
        now = int(time.time() * 1000)
        buf = build_batch([RecordInput(None, b"v", timestamp=now)], timestamp_type=LOG_APPEND_TIME)
        r = produce(client, topic, bytearray(buf))
        code, _, _, ((index, text),), _ = answer(r)
        assert (code, index) == (ErrorCode.INVALID_TIMESTAMP, 0)
        assert text == (
            f"Invalid timestamp type in message DefaultRecord(offset=0, timestamp={now}, key=0 "
            "bytes, value=1 bytes). Producer should not set timestamp type to LogAppendTime."
        )
        assert latest_offset(client, topic) == 0


def test_client_log_append_time_with_valid_timestamp_is_accepted_as_kafka_does(broker):
    """On a CreateTime topic Kafka accepts a client batch marked LogAppendTime
    whose timestamp is in range, and stores it as CreateTime."""
    with RawClient(broker.port) as client:
        topic = new_topic(client, "lat")
        now = int(time.time() * 1000)
        buf = build_batch(
            [RecordInput(None, b"v", timestamp=now - 5000), RecordInput(None, b"w", timestamp=now)],
            timestamp_type=LOG_APPEND_TIME,
            max_timestamp=now,
        )
        r = produce(client, topic, bytearray(buf))
        assert (r.error_code, r.base_offset, r.log_append_time_ms) == (ErrorCode.NONE, 0, -1)
        response = client.call(ApiKey.FETCH, 12, fetch_body(topic))
        stored = bytes(response.responses[0].partitions[0].records)
        ((pos, header),) = list(iter_batches(stored))
        assert not header.is_log_append_time
        assert [header.base_timestamp + r.timestamp_delta for r in iter_records(stored, pos)] == [
            now - 5000,
            now,
        ]


def test_batch_over_max_message_bytes_is_message_too_large(broker):
    with RawClient(broker.port) as client:
        topic = new_topic(client, "big")
        big = batch([b"x" * (MAX_MESSAGE_BYTES // 4)] * 4)
        assert len(big) > MAX_MESSAGE_BYTES
        r = produce(client, topic, big)
        assert r.error_code == ErrorCode.MESSAGE_TOO_LARGE, r
        just_fits = batch([b"x" * (MAX_MESSAGE_BYTES - 200)])
        assert len(just_fits) <= MAX_MESSAGE_BYTES
        r = produce(client, topic, just_fits)
        assert (r.error_code, r.base_offset) == (ErrorCode.NONE, 0)
        assert latest_offset(client, topic) == 1


def test_produce_to_unknown_partition(broker):
    with RawClient(broker.port) as client:
        topic = new_topic(client, "one-partition")
        for index in (1, 7, -1, 2**31 - 1):
            r = produce(client, topic, batch([b"v"]), partition=index)
            assert r.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, (index, r)
        assert latest_offset(client, topic) == 0


def test_invalid_acks_is_refused(broker):
    with RawClient(broker.port) as client:
        topic = new_topic(client, "acks")
        body = produce_body(topic, batch([b"v"]))
        body["acks"] = 2
        body["topic_data"].append(
            {"name": "no-such-topic", "partition_data": [{"index": 0, "records": batch([b"v"])}]}
        )
        response = client.call(ApiKey.PRODUCE, 9, body)
        codes = [p.error_code for t in response.responses for p in t.partition_responses]
        # Kafka looks the partition up before it looks at acks.
        assert codes == [ErrorCode.INVALID_REQUIRED_ACKS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        assert latest_offset(client, topic) == 0


def test_failed_produce_with_acks_0_closes_the_connection(broker):
    """acks=0 gets no answer, so Kafka closes the connection to signal a failure."""
    with RawClient(broker.port) as client:
        topic = new_topic(client, "acks0")
        client.send(ApiKey.PRODUCE, 9, produce_body(topic, batch([b"ok"]), acks=0))
        client.send(ApiKey.PRODUCE, 9, produce_body(topic, _flip(-1)(batch([b"bad"])), acks=0))
        assert client.wait_closed() == b""
    with RawClient(broker.port) as client:
        assert fetch_values(client, topic) == [b"ok"]


def test_produce_to_a_deleted_topic(broker):
    with RawClient(broker.port) as client:
        served = {
            k.api_key: k.max_version
            for k in client.call(ApiKey.API_VERSIONS, 3, software()).api_keys
        }
        if ApiKey.DELETE_TOPICS not in served:
            pytest.skip(
                "DeleteTopics (key 20) is not served yet: producing to a deleted topic is "
                "not tested (test_produce_to_a_topic_that_never_existed covers the answer)"
            )
        topic = new_topic(client, "doomed")
        assert produce(client, topic, batch([b"v"])).error_code == ErrorCode.NONE
        version = min(served[ApiKey.DELETE_TOPICS], 6)
        if version >= 6:
            body = {"topics": [{"name": topic}], "timeout_ms": 5000}
        else:
            body = {"topic_names": [topic], "timeout_ms": 5000}
        response = client.call(ApiKey.DELETE_TOPICS, version, body)
        assert [r.error_code for r in response.responses] == [ErrorCode.NONE], response
        r = produce(client, topic, batch([b"after delete"]))
        assert r.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, r


def test_produce_to_a_topic_that_never_existed(strict_broker):
    with RawClient(strict_broker.port) as client:
        r = produce(client, "never-existed", batch([b"v"]))
        assert r.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, r
        # Nor did asking create it: auto-creation is off.
        response = client.call(
            ApiKey.METADATA,
            12,
            {"topics": [{"name": "never-existed"}], "allow_auto_topic_creation": True},
        )
        assert response.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert_serves_requests(strict_broker.port)


# --- connections ----------------------------------------------------------------------


def test_pipelined_requests_are_answered_in_order(broker):
    with RawClient(broker.port) as client:
        topic = new_topic(client, "pipeline")
        expected = []  # (correlation id, api key, version) of every answer due
        payload = bytearray()
        for i in range(60):
            correlation_id = 1000 + i
            kind = i % 5
            if kind == 0:
                key, version, body = ApiKey.API_VERSIONS, 3, software()
            elif kind == 1:
                key, version, body = ApiKey.METADATA, 12, {"topics": [{"name": topic}]}
            elif kind == 4:
                key, version = ApiKey.PRODUCE, 9
                body = produce_body(topic, batch([f"acks0-{i}".encode()]), acks=0)
            else:
                key, version = ApiKey.PRODUCE, 3 + i % 7
                body = produce_body(topic, batch([f"v{i}".encode()]))
            payload += encode_frame(encode_request(key, version, correlation_id, body))
            if not (key == ApiKey.PRODUCE and body["acks"] == 0):
                expected.append((correlation_id, key, version))
        client.send_raw(bytes(payload))
        offsets = []
        for correlation_id, key, version in expected:
            got, response = client.receive(key, version)
            assert got == correlation_id
            if key == ApiKey.PRODUCE:
                r = response.responses[0].partition_responses[0]
                assert r.error_code == ErrorCode.NONE
                offsets.append(r.base_offset)
        assert offsets == sorted(offsets)
        values = fetch_values(client, topic)
    assert len(values) == 60 // 5 * 3


def test_client_that_disconnects_before_the_produce_answer_still_gets_its_records(broker):
    with RawClient(broker.port) as client:
        topic = new_topic(client, "fire-and-forget")
    sent = []
    for i in range(10):
        values = [f"r{i}-{j}".encode() for j in range(3)]
        sent += values
        with RawClient(broker.port) as client:
            client.send(ApiKey.PRODUCE, 9, produce_body(topic, batch(values)))
            # Gone before the answer (a FIN right behind the request).
    with RawClient(broker.port) as client:
        deadline = time.monotonic() + 5
        while latest_offset(client, topic) < len(sent) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sorted(fetch_values(client, topic)) == sorted(sent)


def test_request_sent_a_byte_at_a_time_is_answered(broker):
    with RawClient(broker.port) as client:
        client.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        frame = encode_frame(encode_request(ApiKey.METADATA, 12, 77, {"topics": None}))
        for i in range(len(frame)):
            client.send_raw(frame[i : i + 1])
            time.sleep(0.001)
        correlation_id, response = client.receive(ApiKey.METADATA, 12)
        assert correlation_id == 77
        assert [b.port for b in response.brokers] == [broker.port]


def test_client_that_disconnects_during_a_large_fetch_answer(broker):
    """The broker is writing (sendfile) megabytes when the client resets."""
    with RawClient(broker.port) as client:
        topic = new_topic(client, "big-fetch")
        for _ in range(40):
            r = produce(client, topic, batch([b"z" * 2000] * 4))
            assert r.error_code == ErrorCode.NONE
        size = latest_offset(client, topic)
    fetch = fetch_body(topic)
    for _ in range(5):
        with RawClient(broker.port) as client:
            for _ in range(20):
                client.send(ApiKey.FETCH, 12, fetch)
            # A few bytes of ~6 MB of answers: the writer is mid-sendfile.
            assert client.sock.recv(100)
            time.sleep(0.05)
            client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with RawClient(broker.port) as client:
        assert latest_offset(client, topic) == size
        assert len(fetch_values(client, topic)) == size


def test_idle_connection_is_closed(strict_broker):
    with RawClient(strict_broker.port) as idle, RawClient(strict_broker.port) as partial:
        idle.call(ApiKey.API_VERSIONS, 3, software())
        partial.send_raw(struct.pack(">i", 100) + b"\x00\x12")
        started = time.monotonic()
        assert idle.wait_closed(timeout=10) == b""
        assert partial.wait_closed(timeout=10) == b""
        assert time.monotonic() - started >= 0.5
    assert strict_broker.wait_for_log("closing idle connection"), strict_broker.log()
    assert_serves_requests(strict_broker.port)


@pytest.mark.slow
def test_busy_connection_is_not_closed_as_idle(strict_broker):
    with RawClient(strict_broker.port) as client:
        for _ in range(6):
            time.sleep(0.4)
            client.call(ApiKey.API_VERSIONS, 3, software())


def test_real_clients_still_work_after_all_of_it(broker):
    assert_real_client_works(broker)
