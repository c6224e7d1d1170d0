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


DAY_MS = 86_400_000


def wait_for_retention_checks(bootstrap: str, checks: int = 3, timeout: float = 30.0) -> None:
    """Return once the broker's periodic retention check has run whole at
    least once since this call: what lets a test say that retention left a
    partition alone, without sleeping and hoping.

    A retention check is seen through a sentinel topic of its own: a record
    stamped 8 days ago (past the default 7-day retention.ms) is produced, and
    its deletion (the log start offset passing it) shows a check reaching the
    sentinel. Each record is produced only after the previous one is gone, so
    the checks that delete them are distinct, in order: the third began
    after the first had finished, and the second then ran from start to end
    after this call. A check looks at every partition, so every partition
    that existed when this was called has been looked at since."""
    from confluent_kafka.admin import AdminClient, NewTopic

    sentinel = unique("compat-retention-sentinel")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(sentinel, 1)])[sentinel].result(timeout)
    wait_for_leaders(admin, sentinel, 1)
    for n in range(checks):
        old = int(time.time() * 1000) - 8 * DAY_MS
        (delivered,) = ck_produce(bootstrap, sentinel, [{"value": b"sentinel", "timestamp": old}])
        assert delivered.offset() == n
        wait_until(
            lambda n=n: ck_watermarks(bootstrap, sentinel)[0] == n + 1,
            timeout=timeout,
            interval=0.1,
            message=f"a retention check deleting sentinel record {n}",
        )
    admin.delete_topics([sentinel])[sentinel].result(timeout)
