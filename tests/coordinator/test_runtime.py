"""The coordinator runtime on its own: loading states, write confirmation, timers.

Its shard here is a second, minimal coordinator over an internal topic, as
the transaction coordinator will be: a register per key, whose writes answer
once durable and whose entries expire on a timer.
"""

from __future__ import annotations

import pytest

from coordinator.actions import Persist, Reply
from coordinator.runtime import CoordinatorRuntime, PartitionState
from wire.error_codes import ErrorCode as E


class Registers:
    """Last value per key, one register space per partition of its topic."""

    def __init__(self):
        self.runtime = CoordinatorRuntime(self)
        self.values: dict[int, dict[bytes, bytes]] = {}
        self.replayed: list[tuple[int, bytes, bytes | None]] = []
        self.hooks: list[tuple[str, int]] = []

    # --- CoordinatorShard -------------------------------------------------------

    def replay_records(self, partition, records, now_ms):
        for key, value in records:
            self.replayed.append((partition, key, value))
            if value is None:
                self.values.setdefault(partition, {}).pop(key, None)
            else:
                self.values.setdefault(partition, {})[key] = value

    def on_loaded(self, partition, now_ms):
        self.hooks.append(("loaded", partition))
        return [Reply(("loaded", partition), {"keys": len(self.values.get(partition, {}))})]

    def on_unloaded(self, partition, now_ms):
        self.hooks.append(("unloaded", partition))
        self.values.pop(partition, None)
        return [Reply(("unloaded", partition), {})]

    # --- requests ---------------------------------------------------------------

    def put(self, token, partition: int, key: bytes, value: bytes) -> list:
        """Store `value` once its record is durable; answer then."""
        error = self.runtime.status_error(partition)
        if error is not None:
            return [Reply(token, {"error_code": error})]
        persist = self.runtime.persist(partition, [(key, value)])

        def done(error, now_ms):
            if error == E.NONE:
                self.values.setdefault(partition, {})[key] = value
            return [Reply(token, {"error_code": error})]

        self.runtime.then(persist, done)
        return [persist]


def loaded(*partitions: int) -> Registers:
    shard = Registers()
    for p in partitions:
        shard.runtime.load(p, [], 0)
    return shard


def only_persist(actions) -> Persist:
    (persist,) = actions
    assert isinstance(persist, Persist)
    return persist


def errors(actions) -> dict:
    return {a.token: a.response.get("error_code") for a in actions if isinstance(a, Reply)}


# --- loading ------------------------------------------------------------------------


def test_a_partition_is_not_coordinator_then_load_in_progress_then_served():
    shard = Registers()
    rt = shard.runtime
    assert rt.partition_state(0) is None
    assert rt.status_error(0) == E.NOT_COORDINATOR
    assert not rt.has_partitions()
    rt.begin_loading(0)
    assert rt.partition_state(0) is PartitionState.LOADING
    assert rt.status_error(0) == E.COORDINATOR_LOAD_IN_PROGRESS
    assert rt.any_loading() and not rt.is_active(0) and rt.has_partitions()
    assert errors(shard.put("early", 0, b"k", b"v")) == {"early": E.COORDINATOR_LOAD_IN_PROGRESS}
    rt.finish_loading(0, 0)
    assert rt.partition_state(0) is PartitionState.ACTIVE
    assert rt.status_error(0) is None
    assert rt.is_active(0) and not rt.any_loading()
    assert rt.status_error(1) == E.NOT_COORDINATOR


def test_replay_hands_records_to_the_shard_in_log_order_then_on_loaded_runs():
    shard = Registers()
    rt = shard.runtime
    rt.begin_loading(3)
    rt.replay(3, [(b"a", b"1"), (b"b", b"2")], 0)
    rt.replay(3, [(b"a", None), (b"c", b"3")], 0)
    assert shard.replayed == [(3, b"a", b"1"), (3, b"b", b"2"), (3, b"a", None), (3, b"c", b"3")]
    assert shard.hooks == []  # not served before finish_loading
    actions = rt.finish_loading(3, 0)
    assert actions == [Reply(("loaded", 3), {"keys": 2})]
    assert shard.values[3] == {b"b": b"2", b"c": b"3"}


def test_load_is_begin_replay_finish():
    shard = Registers()
    actions = shard.runtime.load(1, [(b"k", b"v")], 0)
    assert actions == [Reply(("loaded", 1), {"keys": 1})]
    assert shard.runtime.is_active(1)


def test_replay_and_finish_loading_of_a_partition_not_loading_are_errors():
    shard = loaded(0)
    rt = shard.runtime
    with pytest.raises(ValueError):
        rt.replay(0, [(b"k", b"v")], 0)  # already active
    with pytest.raises(ValueError):
        rt.replay(1, [(b"k", b"v")], 0)  # never loaded
    with pytest.raises(ValueError):
        rt.finish_loading(0, 0)
    with pytest.raises(ValueError):
        rt.finish_loading(1, 0)
    assert shard.replayed == []


def test_loading_a_partition_already_loading_or_served_is_an_error():
    shard = loaded(0)
    shard.runtime.begin_loading(1)
    for p in (0, 1):
        with pytest.raises(ValueError):
            shard.runtime.begin_loading(p)


def test_unload_runs_the_shard_hook_then_fails_the_partitions_writes_in_flight():
    shard = loaded(0, 1)
    rt = shard.runtime
    w0 = only_persist(shard.put("t0", 0, b"k", b"v"))
    w1 = only_persist(shard.put("t1", 1, b"k", b"v"))
    actions = rt.unload(0, 0)
    # The shard's own answers first, then the writes' continuations.
    assert actions == [Reply(("unloaded", 0), {}), Reply("t0", {"error_code": E.NOT_COORDINATOR})]
    assert rt.partition_state(0) is None and rt.status_error(0) == E.NOT_COORDINATOR
    # The driver reporting the write afterwards changes nothing.
    assert rt.persisted(w0.write_id, 0) == []
    assert 0 not in shard.values
    # The other partition's write is still waiting for its outcome.
    assert errors(rt.persisted(w1.write_id, 0)) == {"t1": E.NONE}
    assert shard.values[1] == {b"k": b"v"}


def test_unloading_a_partition_not_led_does_nothing():
    shard = loaded(0)
    assert shard.runtime.unload(5, 0) == []
    assert shard.hooks == [("loaded", 0)]


def test_a_partition_unloaded_while_loading_can_be_loaded_again():
    shard = Registers()
    rt = shard.runtime
    rt.begin_loading(0)
    rt.replay(0, [(b"k", b"old")], 0)
    rt.unload(0, 0)
    assert 0 not in shard.values
    rt.load(0, [(b"k", b"new")], 0)
    assert shard.values[0] == {b"k": b"new"}


# --- writes -------------------------------------------------------------------------


def test_a_persist_carries_a_fresh_write_id_the_partition_and_the_records_in_order():
    rt = loaded(0, 1).runtime
    a = rt.persist(0, [(b"k1", b"v1"), (b"k2", None)])
    b = rt.persist(1, [(b"k3", b"v3")])
    assert a.write_id != b.write_id
    assert (a.partition, [(r.key, r.value) for r in a.records]) == (
        0,
        [(b"k1", b"v1"), (b"k2", None)],
    )
    assert b.partition == 1


def test_continuations_run_once_in_the_order_they_were_attached():
    rt = loaded(0).runtime
    persist = rt.persist(0, [(b"k", b"v")])
    seen = []
    for name in ("first", "second", "third"):

        def continuation(error, now_ms, name=name):
            seen.append((name, error, now_ms))
            return [Reply(name, {})]

        rt.then(persist, continuation)
    actions = rt.persisted(persist.write_id, 42)
    assert [a.token for a in actions] == ["first", "second", "third"]
    assert seen == [("first", E.NONE, 42), ("second", E.NONE, 42), ("third", E.NONE, 42)]
    assert rt.persisted(persist.write_id, 43) == []
    assert len(seen) == 3


def test_a_failed_write_passes_its_error_to_the_continuations():
    shard = loaded(0)
    persist = only_persist(shard.put("t", 0, b"k", b"v"))
    actions = shard.runtime.persisted(persist.write_id, 0, E.NOT_ENOUGH_REPLICAS)
    assert errors(actions) == {"t": E.NOT_ENOUGH_REPLICAS}
    assert shard.values.get(0, {}) == {}


def test_writes_complete_in_the_order_the_driver_reports_them():
    shard = loaded(0)
    first = only_persist(shard.put("first", 0, b"k", b"1"))
    second = only_persist(shard.put("second", 0, b"k", b"2"))
    assert shard.values.get(0, {}) == {}  # nothing is applied before it is durable
    assert errors(shard.runtime.persisted(first.write_id, 0)) == {"first": E.NONE}
    assert shard.values[0] == {b"k": b"1"}
    assert errors(shard.runtime.persisted(second.write_id, 0)) == {"second": E.NONE}
    assert shard.values[0] == {b"k": b"2"}


def test_after_all_answers_once_every_write_completed_with_the_failed_partitions():
    rt = loaded(0, 1, 2).runtime
    persists = [rt.persist(p, [(b"k", b"v")]) for p in (0, 1, 2)]
    outcomes = []

    def done(errors_by_partition, now_ms):
        outcomes.append((dict(errors_by_partition), now_ms))
        return [Reply("all", {})]

    rt.after_all(persists, done)
    assert rt.persisted(persists[1].write_id, 1, E.REQUEST_TIMED_OUT) == []
    assert rt.persisted(persists[0].write_id, 2) == []
    assert outcomes == []
    assert rt.persisted(persists[2].write_id, 3) == [Reply("all", {})]
    assert outcomes == [({1: E.REQUEST_TIMED_OUT}, 3)]


# --- timers -------------------------------------------------------------------------


def recorder(log: list):
    """fire(name): a timer callback that logs (name, now_ms) and answers `name`."""

    def fire(name):
        def callback(now_ms):
            log.append((name, now_ms))
            return [Reply(name, {})]

        return callback

    return fire


def test_timers_fire_at_the_first_tick_at_or_after_their_deadline_in_deadline_order():
    rt = CoordinatorRuntime(Registers())
    log = []
    fire = recorder(log)
    rt.schedule("late", 300, fire("late"))
    rt.schedule("early", 100, fire("early"))
    rt.schedule("middle", 200, fire("middle"))
    assert rt.next_deadline() == 100
    assert rt.tick(99) == [] and log == []
    actions = rt.tick(250)
    assert [a.token for a in actions] == ["early", "middle"]
    assert log == [("early", 250), ("middle", 250)]
    assert rt.next_deadline() == 300
    rt.tick(300)
    assert rt.next_deadline() is None and not rt.has_timer("late")


def test_scheduling_a_key_again_replaces_its_deadline_and_callback():
    rt = CoordinatorRuntime(Registers())
    log = []
    fire = recorder(log)
    rt.schedule("session", 100, fire("old"))
    rt.schedule("session", 500, fire("new"))
    assert rt.next_deadline() == 500
    assert rt.tick(100) == []
    assert [a.token for a in rt.tick(500)] == ["new"]
    assert log == [("new", 500)]


def test_a_cancelled_timer_does_not_fire():
    rt = CoordinatorRuntime(Registers())
    log = []
    rt.schedule("session", 100, recorder(log)("session"))
    assert rt.has_timer("session")
    rt.cancel_timer("session")
    assert not rt.has_timer("session") and rt.next_deadline() is None
    assert rt.tick(1000) == [] and log == []
    rt.cancel_timer("session")  # cancelling twice is harmless


def test_a_timer_cancelled_by_an_earlier_one_in_the_same_tick_does_not_fire():
    rt = CoordinatorRuntime(Registers())
    log = []
    fire = recorder(log)

    def first(now_ms):
        rt.cancel_timer("second")
        return fire("first")(now_ms)

    rt.schedule("first", 100, first)
    rt.schedule("second", 100, fire("second"))
    assert [a.token for a in rt.tick(100)] == ["first"]
    assert log == [("first", 100)]
    assert rt.next_deadline() is None


def test_a_timer_scheduled_during_a_tick_waits_for_the_next_tick_even_if_due():
    rt = CoordinatorRuntime(Registers())
    log = []
    fire = recorder(log)

    def again(now_ms):
        rt.schedule("again", now_ms, fire("again"))  # a zero timeout
        return fire("first")(now_ms)

    rt.schedule("first", 100, again)
    assert [a.token for a in rt.tick(100)] == ["first"]
    assert rt.next_deadline() == 100
    assert [a.token for a in rt.tick(100)] == ["again"]
    assert log == [("first", 100), ("again", 100)]


def test_timers_not_fired_when_a_callback_raises_are_still_scheduled():
    rt = CoordinatorRuntime(Registers())
    log = []
    fire = recorder(log)

    def broken(now_ms):
        raise RuntimeError("bug in the shard")

    rt.schedule("broken", 100, broken)
    rt.schedule("next", 200, fire("next"))
    with pytest.raises(RuntimeError):
        rt.tick(200)
    assert not rt.has_timer("broken")
    assert rt.next_deadline() == 200
    assert [a.token for a in rt.tick(200)] == ["next"]
