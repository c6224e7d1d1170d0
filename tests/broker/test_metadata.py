"""The metadata image, its deltas, and the single node's controller that makes them."""

from __future__ import annotations

import trio

from broker.controller.api import ControllerError
from broker.controller.local import LocalController, LocalMetadataStore
from broker.metadata.delta import MetadataDelta
from broker.metadata.image import BrokerRegistration, Endpoint, MetadataImage
from broker.metadata.publisher import MetadataCache
from wire.error_codes import ErrorCode

ME = BrokerRegistration(1, (Endpoint("PLAINTEXT", "localhost", 9092),))


class Recorder:
    """A publisher that keeps every delta it is handed."""

    def __init__(self):
        self.deltas: list[MetadataDelta] = []

    async def on_metadata_update(self, delta, image):
        self.deltas.append(delta)


async def started(path, node_id=1):
    store = LocalMetadataStore(path)
    cache = MetadataCache(MetadataImage("", -1))
    recorder = Recorder()
    cache.subscribe(recorder)
    controller = LocalController(store, cache, node_id)
    await controller.start(ME)
    return controller, cache, recorder


def test_a_created_topic_is_persisted_then_published_as_a_delta(tmp_path):
    async def main():
        controller, cache, recorder = await started(tmp_path / "meta.json")
        topic = await controller.create_topic("t", {0: [1], 1: [1]}, {"retention.ms": "1000"})
        delta = recorder.deltas[-1]
        assert delta.created_topics == {"t"}
        local = delta.local_changes(1)
        assert sorted(c.index for c in local.leaders) == [0, 1] and not local.followers
        assert cache.image.topic("t") is topic
        # On disk before it was published: a new controller loads it.
        image, _ = LocalMetadataStore(tmp_path / "meta.json").load()
        assert image.topic("t").topic_id == topic.topic_id
        assert dict(image.topic("t").configs) == {"retention.ms": "1000"}

    trio.run(main)


def test_a_deleted_topic_tells_its_replicas_to_stop_and_delete(tmp_path):
    async def main():
        controller, cache, recorder = await started(tmp_path / "meta.json")
        await controller.create_topic("t", {0: [1]}, {})
        await controller.delete_topic("t")
        local = recorder.deltas[-1].local_changes(1)
        assert local.stopped == [(("t", 0), True)]
        try:
            await controller.delete_topic("t")
        except ControllerError as e:
            assert e.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            raise AssertionError("deleted twice")

    trio.run(main)


def test_a_topic_name_is_taken_once(tmp_path):
    async def main():
        controller, _, _ = await started(tmp_path / "meta.json")
        await controller.create_topic("t", {0: [1]}, {})
        try:
            await controller.create_topic("t", {0: [1]}, {})
        except ControllerError as e:
            assert e.code == ErrorCode.TOPIC_ALREADY_EXISTS
        else:
            raise AssertionError("created twice")

    trio.run(main)


def test_each_restart_leads_under_two_new_epochs(tmp_path):
    async def main():
        controller, cache, _ = await started(tmp_path / "meta.json")
        await controller.create_topic("t", {0: [1]}, {})
        assert cache.image.partition("t", 0).leader_epoch == 0
        _, cache, recorder = await started(tmp_path / "meta.json")
        p = cache.image.partition("t", 0)
        assert (p.leader_epoch, p.partition_epoch) == (2, 2)
        # The first image reaches publishers as the creation of every topic.
        assert recorder.deltas[0].created_topics == {"t"}

    trio.run(main)


def test_an_isr_change_is_accepted_only_from_the_leader_at_its_epochs(tmp_path):
    async def main():
        controller, cache, _ = await started(tmp_path / "meta.json")
        await controller.register_broker(BrokerRegistration(2, ME.endpoints))
        await controller.create_topic("t", {0: [1, 2]}, {})
        p = cache.image.partition("t", 0)

        async def refused(code, *args):
            try:
                await controller.alter_partition(("t", 0), *args)
            except ControllerError as e:
                assert e.code == code, e
            else:
                raise AssertionError(f"{args} was accepted")

        await refused(ErrorCode.FENCED_LEADER_EPOCH, 2, p.leader_epoch, p.partition_epoch, [2])
        await refused(ErrorCode.INVALID_UPDATE_VERSION, 1, p.leader_epoch, 7, [1])
        await refused(ErrorCode.INELIGIBLE_REPLICA, 1, p.leader_epoch, p.partition_epoch, [1, 3])
        changed = await controller.alter_partition(
            ("t", 0), 1, p.leader_epoch, p.partition_epoch, [1]
        )
        assert changed.isr == (1,) and changed.partition_epoch == p.partition_epoch + 1
        assert changed.leader_epoch == p.leader_epoch
        assert cache.image.partition("t", 0) == changed

    trio.run(main)


def test_producer_id_blocks_are_never_handed_out_twice_across_restarts(tmp_path):
    async def main():
        controller, _, _ = await started(tmp_path / "meta.json")
        first = await controller.allocate_producer_ids(1)
        second = await controller.allocate_producer_ids(1)
        controller, _, _ = await started(tmp_path / "meta.json")
        third = await controller.allocate_producer_ids(1)
        assert first.first < first.next_after <= second.first < second.next_after <= third.first

    trio.run(main)


def test_a_delta_of_unchanged_parts_is_empty_and_a_config_change_is_named():
    image = MetadataImage("c", 1).with_broker(ME)
    assert MetadataDelta.between(image, image).is_empty
    with_configs = image.with_broker_configs("", {"log.retention.ms": "1"})
    delta = MetadataDelta.between(image, with_configs)
    assert delta.changed_broker_configs == {""} and not delta.created_topics
