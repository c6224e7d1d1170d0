"""Record batches written by real producers decode and re-encode byte for byte.

confluent-kafka (librdkafka) and kafka-python's KafkaProducer send over a
socket to `capture_server.CaptureServer`, a minimal broker built on `wire`
(ApiVersions, Metadata, InitProducerId, Produce), which keeps the `records`
bytes of every Produce request. Each client produces, for each codec and with
idempotence off and on, two rounds (two flushes, hence at least two batches)
of records with keys, null keys, null and empty values, headers (duplicate
keys, non-ASCII keys, empty and -- where the client allows it -- null
values), explicit past and future timestamps, and values from empty to 70 KB
(past LZ4's 64 KiB and xerial snappy's 32 KiB blocks), compressible and not.

For every captured batch:

- `iter_batches` accepts it (length, magic, CRC-32C) and the header is what a
  producer must send: base offset 0, the requested codec (the payloads are
  compressible enough that neither client falls back to no compression), no
  transactional/control/LogAppendTime bit, records_count = last_offset_delta
  + 1, producer id/epoch/sequence as InitProducerId gave (sequences running
  on from batch to batch) or all -1 without idempotence;
- `iter_records` yields exactly the records produced, in order, with
  consecutive offset deltas and the produced (or current) timestamps;
- `encode_batch(header, batch_payload(...))` is byte-identical to the batch;
- uncompressed: `build_batch` from the parsed records and the header's
  fields is byte-identical, and so is `build_batch` from scratch (absolute
  timestamps, its default base and max timestamps); compressed:
  `encode_records` of the parsed records equals the decompressed records
  section.

The offsets the clients report back come from the capture server's Produce
responses, so those are checked too. The main matrix goes through Produce v9
(flexible); two more tests per client go through v3 (gzip) and v8 (zstd).

What the clients send (confluent-kafka 2.16 / librdkafka 2.16, kafka-python
3.0): both write partition_leader_epoch 0 (Java writes -1) whatever leader
epoch Metadata gave; both take the first record's timestamp as the base and
the largest as the max, like Java; both send a batch uncompressed (codec bits
0) when compressing would not make it smaller, so the payloads here are
compressible. librdkafka writes snappy as one raw block, however large (no
xerial framing), LZ4 frames without a content size and zstd frames without
one; kafka-python writes xerial snappy and LZ4/zstd frames with a content
size. librdkafka asks ApiVersions v3 straight away; kafka-python asks v4
first and retries v3 after the UNSUPPORTED_VERSION answer.

confluent-kafka and kafka-python are required: a missing one fails the
collection of this module instead of skipping it.
"""

from __future__ import annotations

import random
import time
from typing import NamedTuple

import confluent_kafka
import kafka
import pytest

from wire.api_keys import ApiKey
from wire.records import (
    GZIP,
    LZ4,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NONE,
    SNAPPY,
    ZSTD,
    BatchHeader,
    Record,
    RecordInput,
    batch_payload,
    build_batch,
    decompress,
    encode_batch,
    encode_records,
    iter_batches,
    iter_records,
    record_timestamp,
    validate_batch,
)

from .capture_server import ADVERTISED, PRODUCER_EPOCH, PRODUCER_ID, CaptureServer

TOPIC = "real-client-batches"
CODECS = {"none": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}
PAST = 1_500_000_000_000  # 2017: a large negative timestamp delta
FUTURE = 4_100_000_000_000  # 2099: raises max_timestamp above the others
CLOCK_SLACK_MS = 2_000
MAX_UNCOMPRESSED = 16 * 1024 * 1024
FLUSH_TIMEOUT = 15.0


class Sent(NamedTuple):
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None  # None: the producer's clock


def _text(n: int, seed: str) -> bytes:
    """n bytes of compressible text."""
    line = f"{seed}: the quick brown fox jumps over the lazy dog {seed}\n".encode()
    return (line * (n // len(line) + 1))[:n]


def rounds(*, null_header_values: bool, null_key_and_value: bool) -> list[list[Sent]]:
    """Two rounds of records, each compressible as a whole. kafka-python
    refuses a record with neither key nor value and header values that are
    not bytes; librdkafka allows both."""
    rnd = random.Random(20240611)
    first = [
        Sent(b"key-0", b"value-0", (("trace-id", b"abc123"), ("empty", b""))),
        Sent(None, _text(300, "null key")),
        Sent(b"tombstone", None, (("reason", b"deleted"),)),
        Sent(b"", b""),
        Sent(b"big", _text(70_000, "big")),
        Sent(rnd.randbytes(16), rnd.randbytes(2_000), (("ключ-ü", b"\x00\xff"),)),
        Sent(b"past", b"old record", (), PAST),
        Sent(b"future", b"new record", (("dup", b"1"), ("dup", b"2")), FUTURE),
    ]
    second = [
        Sent(b"second-round", _text(5_000, "second")),
        Sent(b"many-headers", b"v", tuple((f"h{i}", str(i).encode() * i) for i in range(20))),
        Sent(b"k" * 200, _text(1_000, "long key")),
        Sent(b"another-past", b"x", (), PAST + 1),
    ]
    if null_header_values:
        first.append(Sent(b"null-header", b"v", (("a", None), ("b", b"B"), ("c", None))))
    if null_key_and_value:
        second.append(Sent(None, None, (("only-headers", b"yes"),)))
    return [first, second]


# -- producing ------------------------------------------------------------------------


def produce_confluent(srv: CaptureServer, codec: str, idempotent: bool, batches):
    """Produce with librdkafka; returns (offsets reported, (before, after) ms)."""
    reports = []

    def on_delivery(err, msg):
        reports.append((err, msg.offset() if err is None else None))

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": srv.bootstrap,
            "compression.type": codec,
            "linger.ms": 100,
            "enable.idempotence": idempotent,
            "acks": "all",
            "message.timeout.ms": 20_000,
        }
    )
    before = _now_ms()
    for batch in batches:
        for s in batch:
            producer.produce(
                TOPIC,
                value=s.value,
                key=s.key,
                headers=list(s.headers),
                timestamp=s.timestamp or 0,
                on_delivery=on_delivery,
            )
        assert producer.flush(FLUSH_TIMEOUT) == 0, "librdkafka did not deliver everything"
    after = _now_ms()
    del producer
    assert [err for err, _ in reports if err is not None] == []
    return [offset for _, offset in reports], (before, after)


def produce_kafka_python(srv: CaptureServer, codec: str, idempotent: bool, batches):
    producer = kafka.KafkaProducer(
        bootstrap_servers=srv.bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=100,
        batch_size=1_000_000,
        enable_idempotence=idempotent,
        acks="all",
    )
    try:
        before = _now_ms()
        futures = []
        for batch in batches:
            for s in batch:
                futures.append(
                    producer.send(
                        TOPIC,
                        value=s.value,
                        key=s.key,
                        headers=list(s.headers),
                        timestamp_ms=s.timestamp,
                    )
                )
            producer.flush(FLUSH_TIMEOUT)
        after = _now_ms()
        offsets = [f.get(timeout=FLUSH_TIMEOUT).offset for f in futures]
    finally:
        producer.close(timeout=5)
    return offsets, (before, after)


CLIENTS = {
    "confluent": (produce_confluent, {"null_header_values": True, "null_key_and_value": True}),
    "kafka-python": (
        produce_kafka_python,
        {"null_header_values": False, "null_key_and_value": False},
    ),
}


def _now_ms() -> int:
    return int(time.time() * 1000)


# -- checking -------------------------------------------------------------------------


def check_batch(blob: bytes, pos: int, header: BatchHeader, codec: int) -> list[Record]:
    """Check one captured batch as described in the module docstring; return
    its records."""
    batch = blob[pos : pos + header.size]
    assert validate_batch(batch) == header
    assert header.magic == 2
    assert header.base_offset == 0
    assert header.compression == codec, "the client sent another codec than configured"
    assert not header.is_transactional
    assert not header.is_control
    assert not header.is_log_append_time
    assert header.records_count == header.last_offset_delta + 1

    records = list(iter_records(batch))
    assert [r.offset_delta for r in records] == list(range(header.records_count))
    assert all(r.attributes == 0 for r in records)
    # As Java's producer: the first record's timestamp is the base, the
    # largest is the max (not the last: the records include older ones).
    assert records[0].timestamp_delta == 0
    assert header.max_timestamp == max(record_timestamp(header, r) for r in records)

    # The stored records section round-trips through the header.
    payload = batch_payload(batch)
    assert encode_batch(header, payload) == batch

    if codec == NONE:
        rebuilt = build_batch(
            records,
            base_offset=header.base_offset,
            base_timestamp=header.base_timestamp,
            max_timestamp=header.max_timestamp,
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence,
            partition_leader_epoch=header.partition_leader_epoch,
        )
        assert rebuilt == batch
        assert encode_records(records, base_timestamp=header.base_timestamp) == bytes(payload)
        # Built from scratch, with absolute timestamps and build_batch's own
        # base and max timestamps: the same bytes too.
        inputs = [
            RecordInput(r.key, r.value, r.headers, record_timestamp(header, r)) for r in records
        ]
        assert (
            build_batch(
                inputs,
                producer_id=header.producer_id,
                producer_epoch=header.producer_epoch,
                base_sequence=header.base_sequence,
                partition_leader_epoch=header.partition_leader_epoch,
            )
            == batch
        )
    else:
        section = decompress(codec, payload, MAX_UNCOMPRESSED)
        assert encode_records(records, base_timestamp=header.base_timestamp) == section
    return records


def check_capture(
    srv: CaptureServer, codec: int, idempotent: bool, sent, offsets, clock, produce_version=9
):
    assert srv.errors == []
    produce_versions = {v for key, v in srv.requests if key == ApiKey.PRODUCE}
    assert produce_versions == {produce_version}, "clients use the highest version advertised"
    blobs = srv.batches()
    assert len(blobs) >= 2, "two flushes, at least two Produce requests"

    headers: list[BatchHeader] = []
    got: list[tuple[BatchHeader, Record]] = []
    for blob in blobs:
        for pos, header in iter_batches(blob):
            headers.append(header)
            got.extend((header, r) for r in check_batch(blob, pos, header, codec))

    flat = [s for batch in sent for s in batch]
    assert [(r.key, r.value, r.headers) for _, r in got] == [
        (s.key, s.value, s.headers) for s in flat
    ]
    before, after = clock
    for (header, record), s in zip(got, flat, strict=True):
        ts = record_timestamp(header, record)
        if s.timestamp is not None:
            assert ts == s.timestamp
        else:
            assert before - CLOCK_SLACK_MS <= ts <= after + CLOCK_SLACK_MS

    # The capture server gave consecutive offsets, which the clients reported.
    assert offsets == list(range(len(flat)))

    if idempotent:
        sequence = 0
        for h in headers:
            assert (h.producer_id, h.producer_epoch) == (PRODUCER_ID, PRODUCER_EPOCH)
            assert h.base_sequence == sequence
            sequence += h.records_count
        assert ApiKey.INIT_PRODUCER_ID in {key for key, _ in srv.requests}
    else:
        for h in headers:
            assert (h.producer_id, h.producer_epoch, h.base_sequence) == (
                NO_PRODUCER_ID,
                NO_PRODUCER_EPOCH,
                NO_SEQUENCE,
            )
    return headers


@pytest.mark.parametrize("idempotent", [False, True], ids=["plain", "idempotent"])
@pytest.mark.parametrize("codec_name", list(CODECS))
@pytest.mark.parametrize("client", list(CLIENTS))
def test_real_client_batches_round_trip(client, codec_name, idempotent):
    produce, options = CLIENTS[client]
    sent = rounds(**options)
    with CaptureServer(TOPIC) as srv:
        offsets, clock = produce(srv, codec_name, idempotent, sent)
    headers = check_capture(srv, CODECS[codec_name], idempotent, sent, offsets, clock)
    # Both clients write 0 here (Java's producer writes -1); the broker
    # overwrites it anyway.
    assert {h.partition_leader_epoch for h in headers} == {0}


@pytest.mark.parametrize(
    ("produce_version", "codec_name"),
    [(3, "gzip"), (8, "zstd")],
    ids=["produce-v3-gzip", "produce-v8-zstd"],
)
@pytest.mark.parametrize("client", list(CLIENTS))
def test_real_client_batches_over_non_flexible_produce(client, produce_version, codec_name):
    """The same through Produce v3 (the first with record batch v2) and v8
    (the last before flexible versions; zstd needs v7+)."""
    produce, options = CLIENTS[client]
    sent = rounds(**options)
    api_versions = dict(ADVERTISED)
    api_versions[ApiKey.PRODUCE] = (0, produce_version)
    with CaptureServer(TOPIC, api_versions=api_versions) as srv:
        offsets, clock = produce(srv, codec_name, True, sent)
    check_capture(srv, CODECS[codec_name], True, sent, offsets, clock, produce_version)
