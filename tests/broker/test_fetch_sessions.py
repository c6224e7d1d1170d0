"""The fetch session cache's rules (broker/fetch_sessions.py): epochs, and which
session a new one may take the place of when the cache is full. The requests
themselves are tested against a real broker in
tests/integration/test_fetch_sessions.py."""

from __future__ import annotations

import random

from broker.fetch_sessions import (
    EVICTION_MS,
    FINAL_EPOCH,
    INVALID_SESSION_ID,
    FetchSessionCache,
    next_epoch,
)
from wire.error_codes import ErrorCode


def answer(high_watermark: int = 0) -> dict:
    return {
        "high_watermark": high_watermark,
        "log_start_offset": 0,
        "error_code": 0,
        "records": b"",
    }


def open_session(cache, size: int, now_ms: int, follower: bool = False) -> int:
    partitions = [(("t", i), object(), answer()) for i in range(size)]
    return cache.open(partitions, follower=follower, uses_topic_ids=False, now_ms=now_ms)


def test_epochs_count_from_one_and_wrap_past_int32():
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_no_slots_means_no_sessions():
    cache = FetchSessionCache(0)
    assert open_session(cache, 5, now_ms=0) == INVALID_SESSION_ID
    assert len(cache) == 0


def test_a_full_cache_refuses_a_session_while_its_sessions_are_young():
    cache = FetchSessionCache(2, rng=random.Random(1))
    first, second = open_session(cache, 3, 0), open_session(cache, 3, 0)
    assert INVALID_SESSION_ID not in (first, second)
    assert open_session(cache, 100, now_ms=EVICTION_MS) == INVALID_SESSION_ID
    assert cache.get(first) is not None and cache.get(second) is not None


def test_a_stale_session_makes_room():
    cache = FetchSessionCache(2, rng=random.Random(2))
    stale = open_session(cache, 50, 0)
    used = open_session(cache, 50, 0)
    context = cache.context(used, 1, [], [], uses_topic_ids=False, now_ms=EVICTION_MS)
    assert context.error == ErrorCode.NONE
    new = open_session(cache, 1, now_ms=EVICTION_MS + 1)
    assert new != INVALID_SESSION_ID
    assert cache.get(stale) is None and cache.get(used) is not None


def test_a_larger_session_takes_the_place_of_the_smallest_old_one():
    cache = FetchSessionCache(2, rng=random.Random(3))
    small = open_session(cache, 2, 0)
    big = open_session(cache, 20, 0)
    now = EVICTION_MS + 1
    for session in (small, big):  # both in use: none is stale
        cache.context(session, 1, [], [], uses_topic_ids=False, now_ms=now)
    assert open_session(cache, 1, now) == INVALID_SESSION_ID, "smaller than every old session"
    assert open_session(cache, 5, now) != INVALID_SESSION_ID
    assert cache.get(small) is None and cache.get(big) is not None


def test_a_follower_session_may_take_the_place_of_a_young_consumer_session():
    cache = FetchSessionCache(1, rng=random.Random(4))
    consumer = open_session(cache, 10, 0)
    assert open_session(cache, 10, 1, follower=False) == INVALID_SESSION_ID
    follower = open_session(cache, 10, 1, follower=True)
    assert follower != INVALID_SESSION_ID and cache.get(consumer) is None
    # A young follower session is kept from a consumer's, whatever its size.
    assert open_session(cache, 1000, 2, follower=False) == INVALID_SESSION_ID


def test_an_answered_partition_with_records_goes_to_the_end():
    cache = FetchSessionCache(10, rng=random.Random(5))
    session_id = open_session(cache, 3, 0)
    session = cache.get(session_id)
    results = [
        (("t", 0), {**answer(), "records": b"x" * 70}),
        (("t", 1), answer()),
        (("t", 2), answer(high_watermark=4)),
    ]
    assert session.answered(results) == [True, False, True]
    assert list(session.partitions) == [("t", 1), ("t", 2), ("t", 0)]
    # What was answered is remembered: the same high watermark is not news again.
    assert session.answered([(("t", 2), answer(high_watermark=4))]) == [False]
