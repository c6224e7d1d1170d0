"""What tests with real clients share: the wait bound, a confluent-kafka
produce that returns its delivery reports, and the marks for tests that need
kcat or Kafka's Java tools (installed by `make clients`; without them those
tests are reported as skipped, by name and reason, never as passed).
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from tools import kafka_cli

TIMEOUT = 20.0  # safety net for each wait; never reached when the broker works

needs_kcat = pytest.mark.skipif(not kafka_cli.kcat_available(), reason="kcat is not installed")
needs_java = pytest.mark.skipif(
    not (kafka_cli.java_available() and kafka_cli.jars_available()),
    reason="Kafka's CLI tools are not installed (make clients)",
)


def produce_confluent(bootstrap, topic, records, partition=0, **conf):
    """Produce (key, value, headers[, timestamp]) tuples; their delivery reports."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, **conf})
    reports = []

    def delivered(err, msg):
        reports.append((err, msg))

    for record in records:
        key, value, headers, *ts = record
        kwargs = {"timestamp": ts[0]} if ts else {}
        producer.produce(
            topic,
            key=key,
            value=value,
            headers=headers,
            partition=partition,
            on_delivery=delivered,
            **kwargs,
        )
    assert producer.flush(TIMEOUT) == 0, "undelivered records"
    return reports


def produce_ok(bootstrap, topic, records, partition=0, **conf) -> list[int]:
    """Produce as `produce_confluent`, every record delivered; their offsets."""
    reports = produce_confluent(bootstrap, topic, records, partition, **conf)
    assert [err for err, _ in reports] == [None] * len(records)
    return [msg.offset() for _, msg in reports]
