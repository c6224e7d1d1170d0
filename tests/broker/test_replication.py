"""Replication between real brokers of one process (tests/broker/in_process_cluster.py).

Followers fetch from the leader over TCP as Kafka's do; the high watermark
and acks=all wait for the ISR; a leader killed hands over to an in-sync
follower with every acknowledged record; a returning replica with a tail the
new leader does not have truncates it (KIP-101's scenarios) and copies the
leader's log instead.
"""

from __future__ import annotations

import os

import trio

from broker.registry import BoundHandler
from tests.broker.in_process_cluster import Cluster
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.records import RecordInput, build_batch, iter_batches, iter_records

DEADLINE = 20


def values_of(partition) -> list[tuple[int, bytes]]:
    """(offset, value) of every record in the replica's log."""
    data = partition.log.read(partition.log_start_offset, 1 << 24, partition.log_end_offset, True)
    raw = data.read_bytes()
    out = []
    for pos, h in iter_batches(raw):
        for r in iter_records(raw, pos):
            out.append((h.base_offset + r.offset_delta, bytes(r.value)))
    return out


def tagged(prefix: str, n: int = 1) -> bytearray:
    """A batch of n records with distinct values, so logs compare record by record."""
    return bytearray(build_batch([RecordInput(None, f"{prefix}-{i}".encode()) for i in range(n)]))


async def until(condition, what: str):
    with trio.fail_after(DEADLINE):
        while not condition():
            await trio.sleep(0.01)


def run(tmp_path, scenario, n=3, overrides=None):
    async def main():
        cluster = Cluster(tmp_path, n, overrides)
        async with trio.open_nursery() as nursery:
            await cluster.start_all(nursery)
            await scenario(cluster, nursery)
            await cluster.stop_all()
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_followers_copy_the_leader_and_acks_all_waits_for_the_isr(tmp_path):
    async def scenario(cluster, nursery):
        b1 = cluster.brokers[1]
        topic = await b1.topics.create("t", 1, 3, configs={"min.insync.replicas": "2"})
        reg = topic.partitions[0]
        leader = cluster.brokers[reg.leader].replicas.get("t", 0)
        assert leader.is_leader and set(leader.isr) == {1, 2, 3}
        info = leader.append_as_leader(tagged("a", 3), required_acks=-1)
        outcome = await cluster.brokers[reg.leader].replicas.wait_for_replication(
            [(leader, info.next_offset)], 10_000
        )
        assert outcome == {("t", 0): ErrorCode.NONE}
        assert leader.high_watermark == 3
        followers = [cluster.brokers[n].replicas.get("t", 0) for n in (1, 2, 3) if n != reg.leader]
        for f in followers:
            assert not f.is_leader
            await until(lambda f=f: f.high_watermark == 3, "followers learn the high watermark")
            assert values_of(f) == values_of(leader)

    run(tmp_path, scenario)


def test_an_append_answers_the_followers_waiting_fetches_at_once(tmp_path):
    """A follower's Fetch parked at the leader returns on the append, not at
    replica.fetch.wait.max.ms: with that at a minute, acks=all appends one
    after another each complete as soon as the followers have copied them.
    (The waiter once took the partition's event only when its task ran, and
    an append in between was missed: a stall of max_wait for one append in
    three.)"""

    async def scenario(cluster, nursery):
        b1 = cluster.brokers[1]
        topic = await b1.topics.create("t", 1, 3, configs={"min.insync.replicas": "3"})
        broker = cluster.brokers[topic.partitions[0].leader]
        leader = broker.replicas.get("t", 0)
        await until(lambda: len(leader.isr) == 3, "a full ISR")
        with trio.fail_after(DEADLINE):
            for i in range(30):
                info = leader.append_as_leader(tagged(f"r{i}"), required_acks=-1)
                outcome = await broker.replicas.wait_for_replication(
                    [(leader, info.next_offset)], 120_000
                )
                assert outcome == {("t", 0): ErrorCode.NONE}
        assert leader.high_watermark == 30

    run(tmp_path, scenario, overrides={"replica.fetch.wait.max.ms": 60_000})


def test_a_killed_leader_hands_over_and_no_acknowledged_record_is_lost(tmp_path):
    async def scenario(cluster, nursery):
        topic = await cluster.brokers[1].topics.create("t", 1, 3)
        old = topic.partitions[0].leader
        partition = cluster.brokers[old].replicas.get("t", 0)
        acked = []
        for i in range(5):
            info = partition.append_as_leader(tagged(f"before-{i}"), required_acks=-1)
            result = await cluster.brokers[old].replicas.wait_for_replication(
                [(partition, info.next_offset)], 10_000
            )
            assert result[("t", 0)] == ErrorCode.NONE
            acked.append(info.first_offset)
        expected = values_of(partition)
        await cluster.kill(old)
        image = cluster.controller.image
        new = image.partition("t", 0).leader
        assert new not in (old, -1)
        assert image.partition("t", 0).leader_epoch == topic.partitions[0].leader_epoch + 1
        successor = cluster.brokers[new].replicas.get("t", 0)
        assert successor.is_leader
        assert values_of(successor)[: len(expected)] == expected
        info = successor.append_as_leader(tagged("after"), required_acks=-1)
        result = await cluster.brokers[new].replicas.wait_for_replication(
            [(successor, info.next_offset)], 10_000
        )
        assert result[("t", 0)] == ErrorCode.NONE
        # The old leader comes back as a follower and catches up.
        back = await cluster.start(nursery, old)
        follower = back.replicas.get("t", 0)
        await until(
            lambda: follower.log_end_offset == successor.log_end_offset, "the old leader catches up"
        )
        assert not follower.is_leader
        assert values_of(follower) == values_of(successor)

    run(tmp_path, scenario)


def test_a_returning_leader_truncates_the_tail_nobody_acknowledged(tmp_path):
    async def scenario(cluster, nursery):
        topic = await cluster.brokers[1].topics.create("t", 1, 3)
        old = topic.partitions[0].leader
        partition = cluster.brokers[old].replicas.get("t", 0)
        info = partition.append_as_leader(tagged("shared", 2), required_acks=-1)
        result = await cluster.brokers[old].replicas.wait_for_replication(
            [(partition, info.next_offset)], 10_000
        )
        assert result[("t", 0)] == ErrorCode.NONE
        # acks=1 records the followers never see: the leader dies at once.
        partition.append_as_leader(tagged("lost", 3), required_acks=1)
        assert partition.log_end_offset == 5
        await cluster.kill(old)
        new = cluster.controller.image.partition("t", 0).leader
        successor = cluster.brokers[new].replicas.get("t", 0)
        assert successor.log_end_offset == 2  # it never had the tail
        # More records than the lost tail: the returning replica's log end (5) is
        # inside the new leader's log (6), so only the epochs tell them apart.
        info = successor.append_as_leader(tagged("new", 4), required_acks=-1)
        await cluster.brokers[new].replicas.wait_for_replication(
            [(successor, info.next_offset)], 10_000
        )
        back = await cluster.start(nursery, old)
        follower = back.replicas.get("t", 0)
        await until(
            lambda: values_of(follower) == values_of(successor),
            "the old leader drops its tail and copies the new leader",
        )
        assert [v for _, v in values_of(follower)] == [b"shared-0", b"shared-1"] + [
            f"new-{i}".encode() for i in range(4)
        ]

    run(tmp_path, scenario)


def test_a_replica_that_led_without_appending_follows_and_rejoins_the_isr(tmp_path):
    """A leader cut off before it appended anything under its epoch keeps
    that epoch's entry at its log end; the next leader never had the epoch.
    Healed, it must drop the entry and copy the new leader, not ask forever
    with the epoch no batch has (found by the chaos test's network cut)."""

    async def scenario(cluster, nursery):
        topic = await cluster.brokers[1].topics.create("t", 1, 3)
        first = topic.partitions[0].leader
        partition = cluster.brokers[first].replicas.get("t", 0)
        info = partition.append_as_leader(tagged("shared", 2), required_acks=-1)
        result = await cluster.brokers[first].replicas.wait_for_replication(
            [(partition, info.next_offset)], 10_000
        )
        assert result[("t", 0)] == ErrorCode.NONE
        await cluster.isolate(first)
        idle = cluster.controller.image.partition("t", 0).leader
        led = cluster.brokers[idle].replicas.get("t", 0)
        await until(lambda: led.is_leader, "the second leader to take over")
        # Its epoch starts at its log end, and it is cut off before any append.
        assert led.log.latest_epoch == led.leader_epoch
        await cluster.isolate(idle)
        third = cluster.controller.image.partition("t", 0).leader
        assert third not in (first, idle, -1)
        successor = cluster.brokers[third].replicas.get("t", 0)
        await until(lambda: successor.is_leader, "the third leader to take over")
        successor.append_as_leader(tagged("new", 3), required_acks=1)
        await cluster.heal(nursery, idle)
        await until(
            lambda: values_of(led) == values_of(successor),
            "the healed replica drops its empty epoch and copies the new leader",
        )
        await until(
            lambda: idle in cluster.controller.image.partition("t", 0).isr,
            "the healed replica back in the ISR",
        )

    run(tmp_path, scenario)


def test_a_reassignment_copies_the_data_then_drops_the_old_replica(tmp_path):
    async def scenario(cluster, nursery):
        await cluster.brokers[1].topics.create("t", assignments={0: [1, 2]})
        partition = cluster.brokers[1].replicas.get("t", 0)
        info = partition.append_as_leader(tagged("moved", 4), required_acks=-1)
        await cluster.brokers[1].replicas.wait_for_replication(
            [(partition, info.next_offset)], 10_000
        )
        old_log = partition.log.dir
        backend = cluster.controller.backend(cluster.brokers[1].metadata, cluster.config(1))
        await backend.alter_partition_reassignments({("t", 0): [3, 2]})
        reg = cluster.controller.image.partition("t", 0)
        assert (reg.replicas, reg.adding_replicas, reg.removing_replicas) == ((3, 2, 1), (3,), (1,))
        newcomer = cluster.brokers[3].replicas.get("t", 0)
        await until(lambda: 3 in cluster.controller.image.partition("t", 0).isr, "3 in sync")
        assert values_of(newcomer) == values_of(partition)
        await backend.finish_reassignments()
        reg = cluster.controller.image.partition("t", 0)
        assert (reg.replicas, reg.adding_replicas, reg.removing_replicas) == ((3, 2), (), ())
        assert reg.leader in (3, 2) and 1 not in reg.isr  # the leaving leader handed over
        assert cluster.brokers[1].replicas.get("t", 0) is None
        assert not os.path.exists(old_log)

    run(tmp_path, scenario)


def test_a_fetch_answer_for_a_log_that_moved_meanwhile_is_not_applied(tmp_path):
    """A follower's log end can move while its Fetch is out: a truncation
    from before a leader change finishing in its worker thread. The answer,
    records from the old end on, must not be appended at the new end (a gap
    in the replica, for good); the follower asks again from where its log
    is, and ends with the leader's log record for record (Kafka's fetcher
    drops such an answer the same way)."""

    async def scenario(cluster, nursery):
        topic = await cluster.brokers[1].topics.create("t", 1, 2)
        reg = topic.partitions[0]
        (follower_id,) = [n for n in reg.replicas if n != reg.leader]
        leader_broker = cluster.brokers[reg.leader]
        leader = leader_broker.replicas.get("t", 0)
        follower = cluster.brokers[follower_id].replicas.get("t", 0)
        # The fault hook: the leader's Fetch handler, wrapped. Once armed, the
        # first answer carrying records has the follower's log cut back to 2
        # before the follower reads it.
        bound = leader_broker.dispatcher.handlers[ApiKey.FETCH]
        armed = trio.Event()
        moved = trio.Event()

        async def fetch(ctx, request):
            response = await bound.call(ctx, request)
            carries_records = any(
                len(p["records"] or b"") for t in response["responses"] for p in t["partitions"]
            )
            if armed.is_set() and not moved.is_set() and carries_records:
                follower.truncate_to(2)
                moved.set()
            return response

        # Before the follower's first Fetch is parked in the handler.
        leader_broker.dispatcher.handlers[ApiKey.FETCH] = BoundHandler(bound.spec, fetch)
        for i in range(5):
            leader.append_as_leader(tagged(f"a{i}"))
        await until(lambda: follower.log_end_offset == 5, "the follower caught up")
        armed.set()
        for i in range(3):
            leader.append_as_leader(tagged(f"b{i}"))
        with trio.fail_after(DEADLINE):
            await moved.wait()
        await until(lambda: follower.log_end_offset == 8, "the follower caught up again")
        assert values_of(follower) == values_of(leader)
        assert [offset for offset, _ in values_of(follower)] == list(range(8))

    run(tmp_path, scenario, n=2)
