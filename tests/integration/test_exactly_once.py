"""Exactly once: a consume-transform-produce application with librdkafka's
transactions (send_offsets_to_transaction), the way Kafka Streams and every
EOS pipeline work, against a real Gregor.

The application and the checker are compat_tests/compatlib/transactions.py's
(the side-by-side suite runs the same application against Kafka): the
checker compares the output (read_committed) with the input, every input
record exactly once, transformed; it prints the duplicates and the losses,
and both must be zero. The broker is killed and restarted in the
middle, and the application, restarted too, resumes from the offsets its
committed transactions stored.
"""

from __future__ import annotations

import uuid

from compatlib.transactions import (
    check_exactly_once,
    copy_exactly_once,
    leave_transaction_open,
    read_isolated,
)

from tests.support.clients import produce_ok
from tests.support.gregor import assert_no_traceback
from tests.support.raw import RawClient
from tests.support.topics import create_topic, unique_name
from wire.api_keys import ApiKey

PARTITIONS = 3
RECORDS = 600


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    with RawClient(bootstrap) as client:
        response = client.call(
            ApiKey.OFFSET_FETCH,
            7,
            {
                "group_id": group,
                "topics": [{"name": topic, "partition_indexes": list(range(PARTITIONS))}],
                "require_stable": True,
            },
        )
    return {p.partition_index: p.committed_offset for p in response.topics[0].partitions}


def check(bootstrap: str, source: str, sink: str) -> None:
    check_exactly_once(
        read_isolated(bootstrap, source, PARTITIONS, "read_committed", RECORDS),
        read_isolated(bootstrap, sink, 1, "read_committed", RECORDS),
    )


def fill(bootstrap: str) -> tuple[str, str]:
    source = create_topic(bootstrap, unique_name("eos-in"), partitions=PARTITIONS)
    sink = create_topic(bootstrap, unique_name("eos-out"), partitions=1)
    for p in range(PARTITIONS):
        produce_ok(
            bootstrap,
            source,
            [(None, b"rec-%d-%d" % (p, i), []) for i in range(RECORDS // PARTITIONS)],
            partition=p,
        )
    return source, sink


def test_consume_transform_produce_is_exactly_once_with_aborts(gregor):
    source, sink = fill(gregor.bootstrap)
    group = "eos-" + uuid.uuid4().hex[:6]
    copy_exactly_once(gregor.bootstrap, source, sink, group, "eos-" + source, abort_every=3)
    check(gregor.bootstrap, source, sink)
    # The group's committed offsets are the source's ends, from committed transactions only.
    assert committed_offsets(gregor.bootstrap, group, source) == {
        p: RECORDS // PARTITIONS for p in range(PARTITIONS)
    }


def test_consume_transform_produce_is_exactly_once_through_a_broker_kill(gregor):
    source, sink = fill(gregor.bootstrap)
    group = "eos-" + uuid.uuid4().hex[:6]
    txn_id = "eos-" + source
    # The application commits a few transactions, then a new instance leaves
    # one open, its records and its group offsets written, as the broker dies.
    copy_exactly_once(gregor.bootstrap, source, sink, group, txn_id, stop_after=2)
    leave_transaction_open(gregor.bootstrap, source, sink, group, txn_id, 50)
    gregor.kill()
    gregor.start()
    # The application restarts: its new producer fences and aborts what was open.
    copy_exactly_once(gregor.bootstrap, source, sink, group, txn_id)
    check(gregor.bootstrap, source, sink)
    assert_no_traceback(gregor)
