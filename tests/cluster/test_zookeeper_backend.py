"""AlterPartition on ZooKeeper (broker/controller/zookeeper.py), against a real
ZooKeeper: every answer is checked against ZooKeeper's own state, so that a
refusal is final and a proposal whose answer was lost is known as taken.

The backend runs in-process as broker 1; the test plays the rest of the
cluster with its own ZooKeeper client (broker 2's registration, a write that
landed while its answer was lost).
"""

from __future__ import annotations

import json
import time

import pytest
import trio
from kazoo.client import KazooClient

from broker.controller.api import ControllerError
from broker.controller.zookeeper import ZkMetadataBackend, registration_json, state_path
from broker.metadata.image import BrokerRegistration, Endpoint, MetadataImage
from broker.metadata.publisher import MetadataCache
from wire.error_codes import ErrorCode

pytestmark = pytest.mark.slow

TP = ("t", 0)


def _registration(node_id: int) -> BrokerRegistration:
    return BrokerRegistration(node_id, (Endpoint("PLAINTEXT", "127.0.0.1", 9000 + node_id),))


def test_alter_partition_answers_from_zookeeper_itself(zookeeper):
    root = f"/t{time.monotonic_ns()}/gregor"
    setup = KazooClient(hosts=zookeeper.connect)
    setup.start(timeout=10)
    setup.ensure_path(root)
    setup.stop()
    setup.close()
    other = KazooClient(hosts=zookeeper.connect + root)
    other.start(timeout=10)

    async def refused(backend, code, *args):
        try:
            await backend.alter_partition(TP, *args)
        except ControllerError as e:
            assert e.code == code, e
        else:
            raise AssertionError(f"{args} was accepted")

    def zk_isr() -> list[int]:
        return json.loads(other.get(state_path(*TP))[0])["isr"]

    async def main():
        cache = MetadataCache(MetadataImage("", -1))
        backend = ZkMetadataBackend(zookeeper.connect + root, cache, node_id=1)
        async with trio.open_nursery() as nursery:
            await backend.start(_registration(1), nursery)
            await backend.create_topic("t", {0: [1, 2]}, {})
            p = cache.image.partition(*TP)
            assert (p.leader, p.isr) == (1, (1,))
            epochs = (p.leader_epoch, p.partition_epoch)

            # Broker 2 is not registered: ZooKeeper says so, final.
            await refused(backend, ErrorCode.INELIGIBLE_REPLICA, 1, *epochs, [1, 2])
            # Registered in ZooKeeper but not yet in broker 1's image: ZooKeeper
            # is asked, so broker 2 may join at once.
            other.create("/brokers/ids/2", registration_json(_registration(2)), ephemeral=True)
            await refused(backend, ErrorCode.FENCED_LEADER_EPOCH, 2, *epochs, [2])
            await refused(backend, ErrorCode.INVALID_UPDATE_VERSION, 1, epochs[0], 7, [1, 2])
            changed = await backend.alter_partition(TP, 1, *epochs, [1, 2])
            assert changed.isr == (1, 2) and changed.partition_epoch == epochs[1] + 1
            assert zk_isr() == [1, 2]

            # The same proposal sent again (its first answer lost): taken, not
            # refused as a stale version...
            again = await backend.alter_partition(TP, 1, *epochs, [1, 2])
            assert again.isr == (1, 2)
            # ...but another proposal at that old version is.
            await refused(backend, ErrorCode.INVALID_UPDATE_VERSION, 1, *epochs, [1])
            assert zk_isr() == [1, 2]
            await backend.close()
            nursery.cancel_scope.cancel()

    try:
        trio.run(main)
    finally:
        other.stop()
        other.close()
