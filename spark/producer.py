"""Sends purchases to a Kafka topic, keyed by country, at a steady pace.

Each record's timestamp is the purchase's event time, so "replay from 12:00" by
timestamp means the purchases made from 12:00. The producer is idempotent
(acks=all): a retried send is never a second purchase, which the checks against
spark/reference.py rely on. Keys go to partitions with murmur2, as Java's
producer (and so Spark's sink) would place them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from confluent_kafka import KafkaException, Producer

from spark.purchases import Purchase


@dataclass(frozen=True)
class Delivered:
    partition: int
    offset: int
    purchase: Purchase


def produce(
    bootstrap: str,
    topic: str,
    purchases: Iterable[Purchase],
    *,
    per_second: float = 0.0,
    on_progress: Callable[[int], None] | None = None,
    timeout: float = 60.0,
) -> list[Delivered]:
    """Send every purchase; return where each landed, in the order sent.

    per_second paces the sends (0: as fast as the client goes). on_progress(sent)
    is called about once a second while sending. Raises KafkaException on the
    first failed delivery.
    """
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "partitioner": "murmur2_random",
            "linger.ms": 5,
        }
    )
    delivered: dict[int, Delivered] = {}
    errors = []
    sent = 0
    started = last_report = time.monotonic()

    for purchase in purchases:
        if per_second > 0:
            wait = started + sent / per_second - time.monotonic()
            if wait > 0:
                producer.poll(wait)  # serves delivery reports while it paces

        def report(err, msg, index=sent, purchase=purchase):
            if err is not None:
                errors.append(err)
            else:
                delivered[index] = Delivered(msg.partition(), msg.offset(), purchase)

        while True:
            try:
                producer.produce(
                    topic,
                    key=purchase.key,
                    value=purchase.to_json(),
                    timestamp=purchase.event_time_ms,
                    on_delivery=report,
                )
                break
            except BufferError:  # the client's queue is full: let it drain
                producer.poll(0.1)
        sent += 1
        producer.poll(0)
        if errors:
            raise KafkaException(errors[0])
        if on_progress is not None and time.monotonic() - last_report >= 1.0:
            last_report = time.monotonic()
            on_progress(sent)
    left = producer.flush(timeout)
    if errors:
        raise KafkaException(errors[0])
    if left:
        raise TimeoutError(f"{left} of {sent} purchases not delivered within {timeout}s")
    if on_progress is not None:
        on_progress(sent)
    return [delivered[i] for i in range(sent)]
