"""Fetch sessions (KIP-227), request by request: what a Java or franz-go consumer's
Fetches rely on. A full Fetch with session id 0 and epoch 0 opens a session;
later ones name it with the next epoch, list only what changed, and are
answered with only the partitions that have something new."""

from __future__ import annotations

import time

import pytest
from compatlib import raw
from compatlib.common import ck_produce

NONE = 0
FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71


def _put(bootstrap: str, topic: str, partition: int, count: int = 1) -> None:
    ck_produce(bootstrap, topic, [{"value": b"v", "partition": partition}] * count)


@pytest.mark.client("raw")
@pytest.mark.api("Fetch", "fetch sessions")
def test_fetch_session_answers_only_what_changed(bootstrap, topic):
    t = topic(partitions=3)
    _put(bootstrap, t, 0, count=2)
    with raw.Connection(bootstrap) as conn:
        full = raw.fetch_in_session(conn, t, {0: 0, 1: 0, 2: 0}, 0, 0)
        assert full.error_code == NONE and full.session_id > 0
        assert full.partitions == {0: (NONE, 2, 2), 1: (NONE, 0, 0), 2: (NONE, 0, 0)}
        session = full.session_id

        moved = raw.fetch_in_session(conn, t, {0: 2}, session, 1)
        assert (moved.error_code, moved.session_id, moved.partitions) == (NONE, session, {})

        _put(bootstrap, t, 1)
        assert raw.fetch_in_session(conn, t, {}, session, 2).partitions == {1: (NONE, 1, 1)}
        # The session reads partition 1 from where it keeps it until told otherwise.
        assert raw.fetch_in_session(conn, t, {}, session, 3).partitions == {1: (NONE, 1, 1)}
        assert raw.fetch_in_session(conn, t, {1: 1}, session, 4).partitions == {}

        # Forgotten, partition 2 is no longer read.
        assert raw.fetch_in_session(conn, t, {}, session, 5, forget=(2,)).partitions == {}
        _put(bootstrap, t, 2)
        _put(bootstrap, t, 0)
        assert raw.fetch_in_session(conn, t, {}, session, 6).partitions == {0: (NONE, 3, 1)}


@pytest.mark.client("raw")
@pytest.mark.api("Fetch", "fetch sessions", "log-start-offset")
def test_fetch_session_answers_a_log_start_moved_under_a_caught_up_partition(
    bootstrap, admin, topic
):
    from confluent_kafka import TopicPartition

    t = topic(partitions=2)
    _put(bootstrap, t, 0, count=2)
    with raw.Connection(bootstrap) as conn:
        full = raw.fetch_in_session(conn, t, {0: 2, 1: 0}, 0, 0)
        assert full.partitions == {0: (NONE, 2, 0), 1: (NONE, 0, 0)}
        session = full.session_id
        assert raw.fetch_in_session(conn, t, {}, session, 1).partitions == {}

        (deleted,) = admin.delete_records([TopicPartition(t, 0, 2)]).values()
        assert deleted.result(15).low_watermark == 2
        # Nothing to read at offset 2, but the log start moved: answered once.
        moved = raw.fetch_in_session(conn, t, {}, session, 2)
        assert (moved.partitions, moved.log_starts) == ({0: (NONE, 2, 0)}, {0: 2})
        assert raw.fetch_in_session(conn, t, {}, session, 3).partitions == {}


@pytest.mark.client("raw")
@pytest.mark.api("Fetch", "fetch sessions")
def test_fetch_session_errors_and_closing(bootstrap, topic):
    t = topic(partitions=1)
    with raw.Connection(bootstrap) as conn:
        # A session closed at once (epoch -1): its id is unknown from then on.
        closed_id = raw.fetch_in_session(conn, t, {0: 0}, 0, 0).session_id
        assert raw.fetch_in_session(conn, t, {0: 0}, closed_id, -1).session_id == 0
        session = raw.fetch_in_session(conn, t, {0: 0}, 0, 0).session_id
        stale = raw.fetch_in_session(conn, t, {0: 0}, session, 5)
        assert (stale.error_code, stale.session_id, stale.partitions) == (
            INVALID_FETCH_SESSION_EPOCH,
            0,
            {},
        )
        unknown = raw.fetch_in_session(conn, t, {0: 0}, closed_id, 1)
        assert (unknown.error_code, unknown.session_id) == (FETCH_SESSION_ID_NOT_FOUND, 0)
        # An error leaves the session as it was.
        _put(bootstrap, t, 0)
        assert raw.fetch_in_session(conn, t, {}, session, 1).partitions == {0: (NONE, 1, 1)}

        # Epoch -1 closes it and is answered in full, without a session.
        closed = raw.fetch_in_session(conn, t, {0: 0}, session, -1)
        assert (closed.error_code, closed.session_id, closed.partitions) == (
            NONE,
            0,
            {0: (NONE, 1, 1)},
        )
        gone = raw.fetch_in_session(conn, t, {}, session, 2)
        assert gone.error_code == FETCH_SESSION_ID_NOT_FOUND


@pytest.mark.client("raw")
@pytest.mark.api("Fetch", "fetch sessions")
def test_fetch_overtaken_by_the_next_epoch_is_an_error(bootstrap, topic):
    """A long poll still waiting when the client goes on with the session's
    next epoch is answered INVALID_FETCH_SESSION_EPOCH, with the session's id."""
    t = topic(partitions=1)
    with raw.Connection(bootstrap) as waiting, raw.Connection(bootstrap) as conn:
        session = raw.fetch_in_session(conn, t, {0: 0}, 0, 0).session_id
        parked = waiting.send(1, 7, raw.session_fetch_body(t, {}, session, 1, max_wait_ms=1500))
        # Its epoch is taken once the broker has read it: try until then.
        deadline = time.monotonic() + 10
        while (next_one := raw.fetch_in_session(conn, t, {}, session, 2)).error_code:
            assert next_one.error_code == INVALID_FETCH_SESSION_EPOCH
            assert time.monotonic() < deadline, "the parked Fetch never took epoch 1"
        assert next_one.session_id == session
        late = raw.read_session_fetch(waiting.receive(parked))
        assert (late.error_code, late.session_id, late.partitions) == (
            INVALID_FETCH_SESSION_EPOCH,
            session,
            {},
        )
