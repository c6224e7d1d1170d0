"""Fetch sessions (KIP-227): what a consumer's or follower's Fetch left out.

A client with many partitions need not list them all in every Fetch, nor read
them all back. Its first Fetch (session id 0, epoch 0) is answered in full
and opens a session: the broker keeps each partition's request fields (fetch
offset, byte limit, epochs) and what it last answered (high watermark, log
start offset). Each later Fetch names the session and its next epoch, and
lists only the partitions whose fields changed (and, in forgotten topics,
those to drop); the broker reads every partition of the session and answers
only the ones with something new: records, a moved high watermark or log
start, an error, a diverging epoch, a preferred read replica. A partition
that returned records goes to the end of the session's order, so that the
others get the response's bytes next time.

The epochs: 0 opens a session (with session id 0) or closes the named one
and opens another; -1 closes the named one and asks for a sessionless full
answer; any other is the session's next epoch (1 after opening, then 2, 3,
... and back to 1 after 2^31-1). A session unknown here is
FETCH_SESSION_ID_NOT_FOUND, an epoch out of step INVALID_FETCH_SESSION_EPOCH,
and a session opened with topic names asked with topic ids (or the other
way) FETCH_SESSION_TOPIC_ID_ERROR; the client then starts again in full.

The cache holds `max.incremental.fetch.session.cache.slots` sessions. When it
is full a new one takes the place of one unused for two minutes, or of the
smallest one (fewest partitions) older than two minutes, follower sessions
last, as Kafka's FetchSessionCache does; otherwise the answer carries
session id 0 and the client goes on with full fetches.

No I/O and no clock here: the caller passes the time.
"""

from __future__ import annotations

import random
from typing import Any

from wire.error_codes import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1
# Kafka's fetch session eviction time: a session unused this long may be
# evicted by any new one, and a session younger than this only by a larger
# follower session.
EVICTION_MS = 120_000


def next_epoch(epoch: int) -> int:
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _MAX_EPOCH else epoch + 1


class CachedPartition:
    """One partition of a session: the request fields it was last fetched
    with (the request's partition entry itself) and what it was last answered."""

    __slots__ = ("request", "high_watermark", "log_start_offset")

    def __init__(self, request: Any, high_watermark: int = -1, log_start_offset: int = -1):
        self.request = request
        self.high_watermark = high_watermark
        self.log_start_offset = log_start_offset

    def has_seen(self, high_watermark: int, log_start_offset: int) -> bool:
        """Whether the client was last answered these offsets: a partition with
        no records, error or redirection and these is left out of the answer."""
        return high_watermark == self.high_watermark and log_start_offset == self.log_start_offset

    def must_answer(self, result: dict) -> bool:
        """Whether `result` (a partition's answer) has anything the client has
        not seen; the cache remembers what it is told."""
        must = len(result["records"]) > 0
        if result["high_watermark"] != self.high_watermark:
            self.high_watermark = result["high_watermark"]
            must = True
        if result["log_start_offset"] != self.log_start_offset:
            self.log_start_offset = result["log_start_offset"]
            must = True
        if result["error_code"] != ErrorCode.NONE:
            # Answered until the error is gone, and once more then.
            self.high_watermark = -1
            must = True
        if result.get("preferred_read_replica", -1) >= 0 or "diverging_epoch" in result:
            must = True
        return must


class FetchSession:
    """The partitions, keyed (topic key, partition index), in the order they
    are read; the topic key is the name, or the topic id from Fetch v13."""

    __slots__ = ("id", "follower", "uses_topic_ids", "partitions", "created_ms", "used_ms", "epoch")

    def __init__(self, id: int, follower: bool, uses_topic_ids: bool, partitions, now_ms: int):
        self.id = id
        self.follower = follower
        self.uses_topic_ids = uses_topic_ids
        self.partitions: dict[tuple[Any, int], CachedPartition] = partitions
        self.created_ms = now_ms
        self.used_ms = now_ms
        self.epoch = next_epoch(INITIAL_EPOCH)

    def update(self, requested, forgotten) -> None:
        """An incremental Fetch's partitions (((topic key, index), partition
        entry)) added or updated, then its forgotten ones ((topic key, index))
        dropped."""
        partitions = self.partitions
        for key, request in requested:
            cached = partitions.get(key)
            if cached is None:
                partitions[key] = CachedPartition(request)
            else:
                cached.request = request
        for key in forgotten:
            partitions.pop(key, None)

    def answered(self, keys_and_results) -> list[bool]:
        """Which of the results ((key, partition answer), in session order) go
        into the response; a partition that returned records moves to the end.
        A result of None (nothing new, the reader saw) stays out."""
        partitions = self.partitions
        chosen = []
        for key, result in keys_and_results:
            if result is None:
                chosen.append(False)
                continue
            cached = partitions[key]
            must = cached.must_answer(result)
            chosen.append(must)
            if must and len(result["records"]) > 0:
                del partitions[key]
                partitions[key] = cached
        return chosen


class FetchContext:
    """What one Fetch asks, after its session is looked at: `error` (a whole
    request error, nothing read), or the partitions to read (((topic key,
    index), partition entry), in order) and how to answer."""

    __slots__ = ("error", "partitions", "session", "epoch", "open_session")

    def __init__(self, error=ErrorCode.NONE, partitions=(), session=None, open_session=False):
        self.error = error
        self.partitions = partitions
        # The session an incremental Fetch goes on with (its answer is pruned),
        # and the epoch it expects the session at when it answers.
        self.session: FetchSession | None = session
        self.epoch = session.epoch if session is not None else None
        # A full Fetch that opens a session once it is answered.
        self.open_session = open_session

    def answered(self, keys_and_results) -> list[bool] | None:
        """Which results ((key, partition answer), in the order read) an
        incremental answer carries; None when a later Fetch of the same session
        came first (this one waited): Kafka then answers
        INVALID_FETCH_SESSION_EPOCH, since its partitions may have changed."""
        assert self.session is not None
        if self.session.epoch != self.epoch:
            return None
        return self.session.answered(keys_and_results)


class FetchSessionCache:
    def __init__(self, max_sessions: int, eviction_ms: int = EVICTION_MS, rng=None):
        self.max_sessions = max_sessions
        self.eviction_ms = eviction_ms
        self._rng = rng or random.Random()
        self._sessions: dict[int, FetchSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def context(
        self,
        session_id: int,
        epoch: int,
        requested,
        forgotten,
        *,
        uses_topic_ids: bool,
        now_ms: int,
    ) -> FetchContext:
        """The FetchContext of a request with this session id and epoch, its
        partitions `requested` (((topic key, index), partition entry)) and
        `forgotten` ((topic key, index)), as Kafka's FetchManager.newContext
        decides."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self._sessions.pop(session_id, None)
            return FetchContext(partitions=list(requested), open_session=epoch == INITIAL_EPOCH)
        session = self._sessions.get(session_id)
        if session is None:
            return FetchContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return FetchContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != uses_topic_ids:
            return FetchContext(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(requested, forgotten)
        if not session.partitions:
            # Nothing left to fetch: the session ends, the answer is sessionless.
            del self._sessions[session_id]
            return FetchContext(partitions=[])
        session.used_ms = now_ms
        session.epoch = next_epoch(session.epoch)
        return FetchContext(
            partitions=[(key, cached.request) for key, cached in session.partitions.items()],
            session=session,
        )

    def open(self, partitions, *, follower: bool, uses_topic_ids: bool, now_ms: int) -> int:
        """A new session of `partitions` (((topic key, index), partition entry,
        its answer) of a full Fetch just answered): its id, or
        INVALID_SESSION_ID when the cache is full of sessions worth more."""
        if self.max_sessions <= 0 or (
            len(self._sessions) >= self.max_sessions
            and not self._evict(follower, len(partitions), now_ms)
        ):
            return INVALID_SESSION_ID
        cached = {
            key: CachedPartition(request, result["high_watermark"], result["log_start_offset"])
            for key, request, result in partitions
        }
        session_id = self._new_id()
        self._sessions[session_id] = FetchSession(
            session_id, follower, uses_topic_ids, cached, now_ms
        )
        return session_id

    def _new_id(self) -> int:
        while True:
            session_id = self._rng.randint(1, _MAX_EPOCH - 1)
            if session_id not in self._sessions:
                return session_id

    def _evict(self, follower: bool, size: int, now_ms: int) -> bool:
        """Make room for a new session of `size` partitions (Kafka's tryEvict):
        the least recently used session if it is stale, else the least
        valuable evictable one if the new session is worth more."""
        if not self._sessions:
            return False
        stalest = min(self._sessions.values(), key=lambda s: (s.used_ms, s.id))
        if now_ms - stalest.used_ms > self.eviction_ms:
            del self._sessions[stalest.id]
            return True
        old_enough = [
            s for s in self._sessions.values() if now_ms - s.created_ms > self.eviction_ms
        ]
        # A follower's new session may also evict a young consumer session.
        if follower:
            old_enough += [
                s
                for s in self._sessions.values()
                if not s.follower and now_ms - s.created_ms <= self.eviction_ms
            ]
        if not old_enough:
            return False
        cheapest = min(old_enough, key=lambda s: (s.follower, len(s.partitions), s.id))
        if (follower, size, 0) < (cheapest.follower, len(cheapest.partitions), cheapest.id):
            return False
        del self._sessions[cheapest.id]
        return True
