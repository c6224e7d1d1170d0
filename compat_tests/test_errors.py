"""The error codes, per-record errors and messages a client sees for bad produce requests,
and how a broker treats requests it cannot parse."""

from __future__ import annotations

import re
import struct
import time

import pytest
from compatlib import java, raw
from compatlib.common import ck_watermarks, unique

CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REQUIRED_ACKS = 21
INVALID_TIMESTAMP = 32
INVALID_RECORD = 87
UNKNOWN_TOPIC_ID = 100
UNKNOWN_SERVER_ERROR = -1


def produce(bootstrap, topic, partition, batch, **kw):
    with raw.Connection(bootstrap) as conn:
        return raw.produce(conn, topic, partition, batch, version=8, **kw)


def assert_plain_error(res, code, log_start_offset):
    """An error without per-record errors and (as Kafka sends it) without a message."""
    assert res.error_code == code, res
    assert res.base_offset == -1
    assert res.record_errors == [], res
    assert res.error_message is None, res
    assert res.log_start_offset == log_start_offset, res


@pytest.mark.client("raw")
@pytest.mark.api("Produce", "errors")
def test_produce_unknown_topic_and_partition_raw(bootstrap, topic):
    t = topic()
    res = produce(bootstrap, unique("missing"), 0, raw.record_batch([b"x"]))
    assert_plain_error(res, UNKNOWN_TOPIC_OR_PARTITION, -1)
    res = produce(bootstrap, t, 7, raw.record_batch([b"x"]))
    assert_plain_error(res, UNKNOWN_TOPIC_OR_PARTITION, -1)


@pytest.mark.client("raw")
@pytest.mark.api("Produce", "errors", "topic ids")
def test_produce_by_topic_id_raw(bootstrap, admin, topic):
    """Produce v13 (Kafka 4.1+) names the topic by its id: the answer names it
    the same way, a known id with an unknown partition is
    UNKNOWN_TOPIC_OR_PARTITION, and an id nobody knows UNKNOWN_TOPIC_ID."""
    from confluent_kafka import TopicCollection

    t = topic(partitions=2)
    uid = admin.describe_topics(TopicCollection([t]))[t].result(20).topic_id
    topic_id = struct.pack(">qq", uid.get_most_significant_bits(), uid.get_least_significant_bits())
    with raw.Connection(bootstrap) as conn:
        answered, res = raw.produce_v13(conn, topic_id, 1, raw.record_batch([b"a", b"b"]))
        assert answered == topic_id
        assert (res.error_code, res.base_offset, res.log_start_offset) == (0, 0, 0), res
        answered, res = raw.produce_v13(conn, topic_id, 1, raw.record_batch([b"c"]))
        assert (res.error_code, res.base_offset) == (0, 2), res
        _, res = raw.produce_v13(conn, topic_id, 7, raw.record_batch([b"x"]))
        assert_plain_error(res, UNKNOWN_TOPIC_OR_PARTITION, -1)
        unknown = bytes(range(1, 17))
        answered, res = raw.produce_v13(conn, unknown, 0, raw.record_batch([b"x"]))
        assert answered == unknown
        assert_plain_error(res, UNKNOWN_TOPIC_ID, -1)
    assert ck_watermarks(bootstrap, t, 1) == (0, 3)
    assert ck_watermarks(bootstrap, t, 0) == (0, 0)


@pytest.mark.client("raw")
@pytest.mark.api("Produce", "errors")
def test_produce_invalid_acks_raw(bootstrap, topic):
    t = topic()
    res = produce(bootstrap, t, 0, raw.record_batch([b"x"]), acks=2)
    assert_plain_error(res, INVALID_REQUIRED_ACKS, -1)
    assert ck_watermarks(bootstrap, t) == (0, 0)


@pytest.mark.client("raw")
@pytest.mark.api("Produce", "errors", "crc")
def test_produce_corrupt_batch_raw(bootstrap, topic):
    t = topic()
    batch = bytearray(raw.record_batch([b"payload"]))
    batch[-1] ^= 0xFF  # a flipped byte in the record: the CRC no longer matches
    res = produce(bootstrap, t, 0, bytes(batch))
    assert_plain_error(res, CORRUPT_MESSAGE, -1)
    assert ck_watermarks(bootstrap, t) == (0, 0)


def _lz4_batch_with_a_wrong(where: str) -> bytes:
    """A batch of 64 records, its records section one LZ4 frame with every
    optional field and `where` wrong, the batch CRC right for its bytes."""
    plain = raw.record_batch([b"x" * 1000 + bytes([i]) for i in range(64)])
    return raw.with_records_section(plain, raw.lz4_frame_with_a_wrong(plain[61:], where), 3)


@pytest.mark.client("raw")
@pytest.mark.api("Produce", "errors", "compression")
@pytest.mark.parametrize("where", ["header checksum", "block checksum"])
def test_produce_lz4_frame_with_a_wrong_checksum_raw(bootstrap, topic, where):
    t = topic()
    res = produce(bootstrap, t, 0, _lz4_batch_with_a_wrong(where))
    assert_plain_error(res, UNKNOWN_SERVER_ERROR, 0)
    assert ck_watermarks(bootstrap, t) == (0, 0)


@pytest.mark.client("raw")
@pytest.mark.api("Produce", "compression")
@pytest.mark.parametrize("where", ["content checksum", "content size"])
def test_produce_lz4_frame_read_past_its_content_checksum_and_size_raw(bootstrap, topic, where):
    # Kafka's LZ4 reader checks the frame's header and block checksums but
    # reads past its content checksum and content size: the batch is stored.
    t = topic()
    res = produce(bootstrap, t, 0, _lz4_batch_with_a_wrong(where))
    assert (res.error_code, res.base_offset) == (0, 0), res
    assert ck_watermarks(bootstrap, t) == (0, 64)


@pytest.mark.client("raw")
@pytest.mark.api("Produce", "errors")
def test_produce_nonzero_base_offset_raw(bootstrap, topic):
    t = topic()
    batch = bytearray(raw.record_batch([b"x"]))
    batch[0:8] = struct.pack(">q", 5)  # not covered by the CRC
    res = produce(bootstrap, t, 0, bytes(batch))
    assert_plain_error(res, INVALID_RECORD, 0)


@pytest.mark.client("raw")
@pytest.mark.api("Produce", "errors", "record-errors", "compaction")
def test_produce_keyless_to_compacted_topic_raw(bootstrap, topic):
    t = topic(config={"cleanup.policy": "compact"})
    res = produce(bootstrap, t, 0, raw.record_batch([b"x", b"y"]))
    assert res.error_code == INVALID_RECORD
    per_record = f"Compacted topic cannot accept message without key in topic partition {t}-0"
    assert res.record_errors == [(0, per_record), (1, per_record)]
    assert res.error_message == (
        "One or more records have been rejected due to 2 record errors in total, and only "
        "showing the first three errors at most: ["
        f"RecordError(batchIndex=0, message='{per_record}'), "
        f"RecordError(batchIndex=1, message='{per_record}')]"
    )
    assert res.log_start_offset == 0


@pytest.mark.client("raw")
@pytest.mark.api("Produce", "errors", "record-errors", "message.timestamp.before.max.ms")
@pytest.mark.parametrize("shift_ms", [-7_200_000, 7_200_000])
def test_produce_timestamp_out_of_bounds_raw(bootstrap, topic, shift_ms):
    t = topic(
        config={
            "message.timestamp.before.max.ms": "3600000",
            "message.timestamp.after.max.ms": "3600000",
        }
    )
    ts = int(time.time() * 1000) + shift_ms
    res = produce(bootstrap, t, 0, raw.record_batch([b"x"], timestamp=ts))
    assert res.error_code == INVALID_TIMESTAMP
    assert res.error_message == "One or more records have been rejected due to invalid timestamp"
    ((index, message),) = res.record_errors
    assert index == 0
    assert re.fullmatch(
        rf"Timestamp {ts} of message with offset 0 is out of range\. "
        r"The timestamp should be within \[\d+, \d+\]",
        message,
    ), message
    assert res.log_start_offset == 0


@pytest.mark.client("java")
@pytest.mark.api("Produce", "errors", "compaction")
def test_keyless_to_compacted_topic_java_console_producer(bootstrap, topic):
    t = topic(config={"cleanup.policy": "compact"})
    p = java.run(
        "kafka-console-producer", "--bootstrap-server", bootstrap, "--topic", t, input="no key\n"
    )
    assert (
        "org.apache.kafka.common.InvalidRecordException: Compacted topic cannot accept message "
        f"without key in topic partition {t}-0\n" in p.stderr
    ), p.stderr[-2000:]


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("Produce", "errors", "compaction", "message.timestamp.before.max.ms")
def test_produce_errors_confluent(bootstrap, topic):
    from confluent_kafka import KafkaError, Producer

    compacted = topic(config={"cleanup.policy": "compact"})
    strict = topic(config={"message.timestamp.before.max.ms": "3600000"})
    errors = []
    p = Producer({"bootstrap.servers": bootstrap})
    p.produce(compacted, b"no key", on_delivery=lambda e, m: errors.append(e))
    assert p.flush(20) == 0  # (one batch each: a rejected batch fails all its records)
    p.produce(compacted, b"keyed", key=b"k", on_delivery=lambda e, m: errors.append(e))
    assert p.flush(20) == 0
    p.produce(
        strict,
        b"old",
        timestamp=int(time.time() * 1000) - 7_200_000,
        on_delivery=lambda e, m: errors.append(e),
    )
    assert p.flush(20) == 0
    assert [e and e.code() for e in errors] == [
        KafkaError.INVALID_RECORD,
        None,
        KafkaError.INVALID_TIMESTAMP,
    ]


@pytest.mark.client("raw")
@pytest.mark.api("errors", "framing")
@pytest.mark.parametrize(
    "api_key,version", [(999, 0), (3, 99)], ids=["unknown-api", "unsupported-version"]
)
def test_unparseable_request_closes_connection_raw(bootstrap, api_key, version):
    """Kafka closes the connection on a request it cannot parse (other than ApiVersions)."""
    with raw.Connection(bootstrap) as conn:
        with pytest.raises((ConnectionError, OSError)):
            conn.request(api_key, version, b"")
    # the broker itself is fine
    with raw.Connection(bootstrap) as conn:
        assert raw.api_versions(conn, 0).error_code == 0
