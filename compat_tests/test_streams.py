"""Kafka Streams, unmodified: Kafka's own WordCountDemo (kafka-streams-examples
4.3.1 from Maven Central) counts words at-least-once and exactly-once
(`processing.guarantee=exactly_once_v2`: transactions, TxnOffsetCommit,
read_committed repartition and changelog topics).

The demo's topics are fixed (streams-plaintext-input, streams-wordcount-output),
so each run deletes and creates them first; its output is read at
read_committed and the last count of each word must be the input's.
"""

from __future__ import annotations

import struct
import time
from collections import Counter

import pytest
from compatlib import java
from compatlib.common import ck_produce, unique, wait_for_leaders
from compatlib.ecosystem import log_tail, start_jvm

INPUT, OUTPUT = "streams-plaintext-input", "streams-wordcount-output"
DEMO = "org.apache.kafka.streams.examples.wordcount.WordCountDemo"
LINES = [
    "all streams lead to kafka",
    "hello kafka streams",
    "join kafka summit",
    "exactly once is a kafka streams guarantee",
] * 25
DEADLINE = 120.0


def _fresh_topics(admin) -> None:
    from confluent_kafka.admin import NewTopic

    existing = set(admin.list_topics(timeout=15).topics)
    gone = [t for t in (INPUT, OUTPUT) if t in existing]
    if gone:
        for f in admin.delete_topics(gone, operation_timeout=15).values():
            f.result(30)
        deadline = time.monotonic() + 30
        while set(gone) & set(admin.list_topics(timeout=15).topics):
            assert time.monotonic() < deadline, "the demo's topics were not deleted"
            time.sleep(0.2)
    futures = admin.create_topics([NewTopic(t, 2, 1) for t in (INPUT, OUTPUT)])
    for f in futures.values():
        f.result(30)
    for t in (INPUT, OUTPUT):
        wait_for_leaders(admin, t, 2)


def _latest_counts(bootstrap: str, want: dict[str, int], demo) -> dict[str, int]:
    """The last count of each word in the output (read_committed), once every
    word reached its expected count, the deadline passed, or the demo exited
    and nothing more came."""
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("wordcount-reader"),
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    c.subscribe([OUTPUT])
    counts: dict[str, int] = {}
    deadline = time.monotonic() + DEADLINE
    try:
        while time.monotonic() < deadline and counts != want:
            m = c.poll(0.5)
            if m is None and demo.poll() is not None:
                break
            if m is None or m.error():
                continue
            counts[m.key().decode()] = struct.unpack(">q", m.value())[0]
        return counts
    finally:
        c.close()


@pytest.mark.client("java")
@pytest.mark.api("Kafka Streams", "transactions")
@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_kafka_streams_word_count(bootstrap, admin, tmp_path, guarantee):
    _fresh_topics(admin)
    ck_produce(bootstrap, INPUT, [{"value": line.encode()} for line in LINES])
    want = dict(Counter(w for line in LINES for w in line.lower().split(" ")))
    props = java.properties_file(
        {
            "bootstrap.servers": bootstrap,
            "application.id": unique("wordcount"),
            "processing.guarantee": guarantee,
            "commit.interval.ms": 500,
            "state.dir": str(tmp_path / "state"),
            "replication.factor": 1,
        },
        tmp_path,
    )
    log = tmp_path / "wordcount.log"
    demo = start_jvm(DEMO, props, log=log)
    try:
        got = _latest_counts(bootstrap, want, demo)
    finally:
        code = java.stop(demo)
    assert got == want, f"counts differ (demo exit {code}):\n{log_tail(log)}"
