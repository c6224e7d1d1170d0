"""Helpers shared by the compat tests (clients only)."""

from __future__ import annotations

import time
import uuid


def unique(prefix: str = "compat") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def wait_for_leaders(admin, topic: str, partitions: int, timeout: float = 15.0) -> None:
    """Until confluent-kafka's metadata shows `partitions` partitions, each with a leader."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        md = admin.list_topics(topic=topic, timeout=5)
        t = md.topics.get(topic)
        last = t
        if (
            t is not None
            and t.error is None
            and len(t.partitions) == partitions
            and all(p.leader >= 0 and p.error is None for p in t.partitions.values())
        ):
            return
        time.sleep(0.1)
    raise AssertionError(f"topic {topic} has no leaders after {timeout}s: {last}")


def wait_until(predicate, timeout: float = 15.0, interval: float = 0.2, message: str = ""):
    """Poll predicate() until it returns a truthy value (returned); AssertionError on timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s {message}; last value: {last!r}")


def ck_produce(bootstrap: str, topic: str, records, conf: dict | None = None, timeout: float = 20):
    """Produce with confluent-kafka; records are dicts (value, key, headers, partition, timestamp).

    Returns the delivered messages (or raises with the first delivery error)."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **(conf or {})})
    delivered, errors = [], []

    def cb(err, msg):
        (errors if err else delivered).append(err or msg)

    for r in records:
        kwargs = {k: v for k, v in r.items() if k in ("key", "headers", "partition", "timestamp")}
        p.produce(topic, value=r.get("value"), on_delivery=cb, **kwargs)
    left = p.flush(timeout)
    if errors:
        raise AssertionError(f"delivery failed: {errors[0]} (and {len(errors) - 1} more)")
    assert left == 0, f"{left} messages not delivered within {timeout}s"
    return sorted(delivered, key=lambda m: (m.partition(), m.offset()))


def ck_consume(
    bootstrap: str,
    topic: str,
    partition: int = 0,
    offset=None,
    count: int = 1,
    timeout: float = 15,
    conf: dict | None = None,
):
    """Read `count` messages with confluent-kafka's assign() from `offset` (default: beginning)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("compat-assign"),
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **(conf or {}),
        }
    )
    try:
        c.assign([TopicPartition(topic, partition, OFFSET_BEGINNING if offset is None else offset)])
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                raise AssertionError(f"consume error: {m.error()}")
            out.append(m)
        return out
    finally:
        c.close()


def ck_watermarks(bootstrap: str, topic: str, partition: int = 0) -> tuple[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("compat-wm")})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10, cached=False)
    finally:
        c.close()
