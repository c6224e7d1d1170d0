"""The replica manager following the metadata, in one process on trio's autojump clock.

Built from the parts the broker builds it from: the single node's controller
(broker 2 registered beside broker 1, so partitions can have a follower that
never fetches), the metadata cache it publishes to, a real log manager.
"""

from __future__ import annotations

import dataclasses
import logging
import os

import trio
import trio.testing

from broker.config import BrokerConfig
from broker.controller.local import LocalController, LocalMetadataStore
from broker.log_manager import LogDuties, LogManager
from broker.metadata.image import BrokerRegistration, Endpoint, MetadataImage
from broker.metadata.publisher import MetadataCache
from broker.partition import ISR_REFUSAL_BACKOFF_MS, PartitionError
from broker.replica_manager import ReplicaManager
from broker.topic_configs import EffectiveTopicConfigs
from tests.logstore.helpers import batch
from wire.error_codes import ErrorCode

LAG_MS = 10_000
DUTIES = LogDuties(3_600_000, 3_600_000, 3_600_000, False, 15_000)


def registration(node_id: int) -> BrokerRegistration:
    return BrokerRegistration(node_id, (Endpoint("PLAINTEXT", "localhost", 9090 + node_id),))


async def cluster(tmp_path, nursery):
    """(controller, cache, replica manager) for broker 1, broker 2 registered."""
    store = LocalMetadataStore(tmp_path / "meta.json")
    cache = MetadataCache(MetadataImage("", -1))
    config = BrokerConfig({"log.dirs": str(tmp_path / "data"), "node.id": 1})
    topic_configs = EffectiveTopicConfigs(config)
    logs = LogManager([str(tmp_path / "data")], DUTIES)
    logs.load()
    controller = LocalController(store, cache, 1)
    replicas = ReplicaManager(1, logs, topic_configs, controller, LAG_MS, clock_ms=clock_ms)
    cache.subscribe(topic_configs)
    cache.subscribe(replicas)
    replicas.start(nursery)
    await controller.start(registration(1))
    await controller.register_broker(registration(2))
    return controller, cache, replicas


def clock_ms() -> int:
    return int(trio.current_time() * 1000)


def run(tmp_path, main):
    """Run main(nursery) once the cluster is set up with time standing still;
    from then on time jumps whenever every task waits (not while the setup's
    disk work runs in threads, which would look like waiting)."""
    clock = trio.testing.MockClock()

    async def wrapped():
        async with trio.open_nursery() as nursery:
            parts = await cluster(tmp_path, nursery)
            clock.autojump_threshold = 0
            await main(*parts)
            nursery.cancel_scope.cancel()

    trio.run(wrapped, clock=clock)


def test_acks_all_times_out_with_request_timed_out_when_a_follower_never_fetches(tmp_path):
    async def main(controller, cache, replicas):
        await controller.create_topic("t", {0: [1, 2]}, {})
        partition = replicas.get("t", 0)
        assert partition.is_leader and partition.isr == (1, 2)
        info = partition.append_as_leader(batch(2), required_acks=-1)
        start = trio.current_time()
        outcome = await replicas.wait_for_replication([(partition, info.next_offset)], 5000)
        assert outcome == {("t", 0): ErrorCode.REQUEST_TIMED_OUT}
        assert trio.current_time() - start == 5

    run(tmp_path, main)


def test_a_silent_follower_leaves_the_isr_through_the_controller(tmp_path):
    async def main(controller, cache, replicas):
        await controller.create_topic("t", {0: [1, 2]}, {"min.insync.replicas": "2"})
        partition = replicas.get("t", 0)
        partition.append_as_leader(batch(1), required_acks=1)
        assert partition.high_watermark == 0
        while cache.image.partition("t", 0).isr != (1,):
            await cache.wait_for_change()
        assert partition.isr == (1,) and trio.current_time() * 1000 >= LAG_MS
        # Now under min.insync.replicas: acks=all is refused before the append.
        try:
            partition.append_as_leader(batch(1), required_acks=-1)
        except PartitionError as e:
            assert e.code == ErrorCode.NOT_ENOUGH_REPLICAS
        else:
            raise AssertionError("acks=all under min ISR was accepted")
        assert partition.high_watermark == 0

    run(tmp_path, main)


async def leading_alone(controller, cache, replicas):
    """Partition t-0 on brokers 1 and 2, led by 1 with an ISR of 1 alone, and
    3 records appended: (its topic-partition, the Partition)."""
    await controller.create_topic("t", {0: [1, 2]}, {})
    tp = ("t", 0)
    reg = cache.image.partition(*tp)
    await controller.alter_partition(tp, 1, reg.leader_epoch, reg.partition_epoch, [1])
    partition = replicas.get(*tp)
    assert partition.isr == (1,)
    partition.append_as_leader(batch(3), required_acks=1)
    return tp, partition


def test_a_follower_that_catches_up_rejoins_the_isr_through_the_controller(tmp_path):
    async def main(controller, cache, replicas):
        tp, partition = await leading_alone(controller, cache, replicas)
        assert partition.high_watermark == 3  # the ISR is the leader alone
        replicas.follower_fetched(partition, 2, 3, 0)
        while cache.image.partition(*tp).isr != (1, 2):
            await cache.wait_for_change()
        assert partition.isr == (1, 2) and partition.pending_isr is None

    run(tmp_path, main)


def test_a_refused_isr_expansion_is_proposed_again_only_after_a_back_off(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="gregor.replicas")

    async def main(controller, cache, replicas):
        tp, partition = await leading_alone(controller, cache, replicas)
        # Broker 2's session ends while it goes on fetching, caught up: the
        # controller refuses it as ineligible for the ISR.
        await controller.register_broker(dataclasses.replace(registration(2), fenced=True))
        for _ in range(200):  # a fetch every 10 ms for two seconds
            replicas.follower_fetched(partition, 2, 3, 0)
            await trio.sleep(0.01)
        refusals = [r for r in caplog.records if "refused: INELIGIBLE_REPLICA" in r.getMessage()]
        # One proposal each ISR_REFUSAL_BACKOFF_MS, not one each fetch.
        assert 3 <= len(refusals) <= 5, len(refusals)
        assert partition.isr == (1,) and partition.pending_isr is None
        # Registered again: the first fetch after the back-off is taken.
        await controller.register_broker(registration(2))
        await trio.sleep(ISR_REFUSAL_BACKOFF_MS / 1000)
        replicas.follower_fetched(partition, 2, 3, 0)
        while cache.image.partition(*tp).isr != (1, 2):
            await cache.wait_for_change()
        assert partition.isr == (1, 2)

    run(tmp_path, main)


def test_a_deleted_topic_stops_its_replicas_and_removes_their_logs(tmp_path):
    async def main(controller, cache, replicas):
        await controller.create_topic("t", {0: [1], 1: [1]}, {})
        paths = [replicas.get("t", i).log.dir for i in (0, 1)]
        assert all(os.path.isdir(p) for p in paths)
        await controller.delete_topic("t")
        assert replicas.get("t", 0) is None and replicas.get("t", 1) is None
        assert not any(os.path.exists(p) for p in paths)

    run(tmp_path, main)


def test_a_log_that_cannot_be_opened_leaves_only_its_partition_offline(tmp_path):
    async def main(controller, cache, replicas):
        # A file where the partition's directory would go: its log cannot be made.
        (tmp_path / "data" / "broken-0").write_text("not a directory")
        await controller.create_topic("broken", {0: [1]}, {})
        await controller.create_topic("fine", {0: [1]}, {})
        image = cache.image
        assert replicas.leader_partition(image.topic("broken"), 0) == (
            None,
            ErrorCode.KAFKA_STORAGE_ERROR,
        )
        assert replicas.is_offline(("broken", 0))
        partition, error = replicas.leader_partition(image.topic("fine"), 0)
        assert error == ErrorCode.NONE
        partition.append_as_leader(batch(1), required_acks=-1)
        assert partition.high_watermark == 1

    run(tmp_path, main)
