"""A Gregor cluster of real processes: ZooKeeper on a free loopback port and
three brokers that find each other through it (zookeeper.connect).

Brokers keep their port across restarts, so clients' bootstrap lists stay
valid. Sessions time out in 4 s (zookeeper.session.timeout.ms), so a killed
broker is noticed within a few seconds.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.support.gregor import GregorNode
from tools.zookeeper import ZOOKEEPER_JAR, ZooKeeperNode

SESSION_TIMEOUT_MS = 4000
BROKER_SETTINGS = {
    "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS,
    "default.replication.factor": 3,
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 3,
    "min.insync.replicas": 2,
    "replica.lag.time.max.ms": 6000,
    "replica.fetch.wait.max.ms": 200,
    "replica.fetch.backoff.ms": 200,
    "group.initial.rebalance.delay.ms": 0,
}


class GregorCluster:
    """`racks=True` puts broker N in rack "rack-N"."""

    def __init__(
        self, root: Path, zookeeper: ZooKeeperNode, n: int = 3, racks: bool = False, **overrides
    ):
        self.zookeeper = zookeeper
        self.brokers = {
            node_id: GregorNode(
                root / f"broker-{node_id}",
                {
                    "zookeeper.connect": f"{zookeeper.connect}/gregor",
                    **BROKER_SETTINGS,
                    **({"broker.rack": f"rack-{node_id}"} if racks else {}),
                    **overrides,
                },
                node_id=node_id,
            )
            for node_id in range(1, n + 1)
        }

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values() if b.port)

    def start(self) -> GregorCluster:
        for broker in self.brokers.values():
            broker.start(timeout=60)
        return self

    def kill(self, node_id: int) -> None:
        self.brokers[node_id].kill()

    def stop(self, node_id: int) -> int:
        return self.brokers[node_id].stop()

    def restart(self, node_id: int) -> None:
        self.brokers[node_id].start(timeout=60)

    def pause(self, node_id: int) -> None:
        self.brokers[node_id].proc.send_signal(signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        self.brokers[node_id].proc.send_signal(signal.SIGCONT)

    def close(self) -> None:
        for broker in self.brokers.values():
            if broker.proc is not None and broker.proc.poll() is None:
                broker.proc.send_signal(signal.SIGCONT)
                broker.stop()


@pytest.fixture(scope="session")
def zookeeper():
    if not ZOOKEEPER_JAR.exists():
        pytest.fail(
            f"{ZOOKEEPER_JAR} is missing: Gregor clusters need Debian's zookeeper package "
            "(`make clients` installs it)",
            pytrace=False,
        )
    with ZooKeeperNode() as node:
        yield node


@pytest.fixture
def cluster(tmp_path, zookeeper, request):
    """Three brokers under a ZooKeeper chroot of their own."""
    marker = request.node.get_closest_marker("cluster_settings")
    overrides = dict(marker.kwargs) if marker else {}
    zk = _Chrooted(zookeeper, f"t{time.monotonic_ns()}")
    racks = overrides.pop("racks", False)
    c = GregorCluster(tmp_path, zk, racks=racks, **overrides).start()
    yield c
    c.close()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        # The brokers' own account of what happened, for a failure seen in CI.
        for node_id, broker in c.brokers.items():
            lines = [line for line in broker.output if "kazoo.client" not in line]
            print(f"--- broker {node_id} (last 80 lines) ---")
            print("".join(lines[-80:]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.rep_call = report


class _Chrooted:
    """The shared ZooKeeper seen under a chroot of one test's own."""

    def __init__(self, node: ZooKeeperNode, name: str):
        self.connect = f"{node.connect}/{name}"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cluster_settings(**props): broker properties for the `cluster` fixture"
    )
