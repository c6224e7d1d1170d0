"""Helpers for the consumer-group tests: a Gregor set up for fast, deterministic
groups, confluent-kafka group members, and bounded waits for a group's state.

Every wait polls for a condition and fails with what it last saw when
TIMEOUT passes; a working broker never reaches it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support.clients import TIMEOUT

# The first rebalance of a new group starts at once; __consumer_offsets has few
# partitions (quick to create and replay); members may ask for short sessions.
GROUP_OVERRIDES = {
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.num.partitions": 3,
    "group.min.session.timeout.ms": 1000,
}


def wait_until(condition: Callable[[], object], what: str, timeout: float = TIMEOUT, step=0.1):
    """condition()'s first truthy value, polled until `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(step)


class Member:
    """A confluent-kafka consumer in a group that records its rebalances and
    the messages it is handed (polling is the caller's, as librdkafka wants)."""

    def __init__(self, bootstrap: str, group: str, topic: str | None = None, **conf):
        self.errors = []  # from poll() and librdkafka's error callback
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "error_cb": self.errors.append,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 300,
                **conf,
            }
        )
        self.cooperative = conf.get("partition.assignment.strategy") == "cooperative-sticky"
        self.assigned_calls = 0
        self.revoked_calls = 0
        self.closed = False
        if topic is not None:
            self.subscribe([topic])

    def subscribe(self, topics, on_assign=None, on_revoke=None) -> None:
        def assigned(consumer, partitions):
            self.assigned_calls += 1
            if on_assign is not None:
                on_assign(self, partitions)

        def revoked(consumer, partitions):
            self.revoked_calls += 1
            if on_revoke is not None:
                on_revoke(self, partitions)

        self.consumer.subscribe(topics, on_assign=assigned, on_revoke=revoked)

    def poll(self, timeout: float = 0.05):
        """The next message (None when there is none); errors are kept in .errors."""
        msg = self.consumer.poll(timeout)
        if msg is not None and msg.error() is not None:
            self.errors.append(msg.error())
            return None
        return msg

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close()


def poll_until(members: Iterable[Member], condition: Callable[[], object], what: str):
    """Poll every open member in turn until condition() holds; its value."""
    members = list(members)

    def step():
        for m in members:
            if not m.closed:
                m.poll(0.02)
        return condition()

    return wait_until(step, what, step=0)


def split_evenly(members: list[Member], partitions: int) -> bool:
    """Whether the members' assignments are disjoint, cover every partition and
    differ in size by at most one."""
    owned = [m.partitions() for m in members]
    sizes = [len(p) for p in owned]
    union = set().union(*owned)
    return (
        sum(sizes) == partitions == len(union)
        and union == set(range(partitions))
        and max(sizes) - min(sizes) <= 1
    )


def describe_group(bootstrap: str, group: str):
    """confluent-kafka's ConsumerGroupDescription of `group` (DescribeGroups)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([group], request_timeout=TIMEOUT)[group].result(TIMEOUT)


def described_assignment(description) -> dict[str, set[tuple[str, int]]]:
    """member id -> its (topic, partition)s, as the group's leader assigned them."""
    return {
        m.member_id: {(tp.topic, tp.partition) for tp in m.assignment.topic_partitions}
        for m in description.members
    }


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """partition -> the group's committed offset (-1001 when none), by OffsetFetch."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed(
            [TopicPartition(topic, p) for p in range(partitions)], timeout=TIMEOUT
        )
    finally:
        consumer.close()
    for tp in found:
        assert tp.error is None, tp.error
    return {tp.partition: tp.offset for tp in found}
