"""A Gregor cluster of real processes: ZooKeeper on a free loopback port and
three brokers that find each other through it (zookeeper.connect).

Brokers keep their port across restarts, so clients' bootstrap lists stay
valid. Sessions time out in 4 s (zookeeper.session.timeout.ms), so a killed
broker is noticed within a few seconds.

Every broker is behind two TCP proxies the test controls
(tests/support/tcp_proxy.py), so that it can be cut off the network and
healed without root:
- its ZooKeeper connection: its zookeeper.connect names a proxy of its own
  to the shared ZooKeeper (same chroot);
- every connection into it: it advertises (advertised.listeners) a proxy in
  front of its listener, and the brokers find each other through the
  endpoints registered in ZooKeeper, so followers fetching from it, brokers
  reaching it and clients (the bootstrap list names the proxies too) all go
  through that proxy.
`isolate(n)` cuts both, and broker n's own connections out to the other
brokers (its followers fetching from their leaders, its coordinators'
requests): each other broker's inbound proxy refuses broker n's process
(`TcpProxy.cut_from`), so the partition is symmetric; clients still reach
the other brokers. `heal(n)` restores all of it.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from compatlib.cluster_report import (  # noqa: F401  the hook: a pytest hook, found by name
    call_failed,
    failure_report,
    pytest_runtest_makereport,
)
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from broker.controller.zookeeper import reconnect_retry
from tests.support.gregor import GregorNode
from tests.support.raw import kafka_request
from tests.support.tcp_proxy import BLACKHOLE, RESET, TcpProxy
from tools.zookeeper import ZOOKEEPER_JAR, ZooKeeperNode
from wire.api_keys import ApiKey

SESSION_TIMEOUT_MS = 4000
BROKER_SETTINGS = {
    "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS,
    "default.replication.factor": 3,
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 3,
    "transaction.state.log.num.partitions": 3,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "min.insync.replicas": 2,
    "replica.lag.time.max.ms": 6000,
    "replica.fetch.wait.max.ms": 200,
    "replica.fetch.backoff.ms": 200,
    "group.initial.rebalance.delay.ms": 0,
}


class GregorCluster:
    """`racks=True` puts broker N in rack "rack-N". `zookeeper` is the shared
    ZooKeeper; the brokers live under `chroot` in it."""

    def __init__(
        self,
        root: Path,
        zookeeper: ZooKeeperNode,
        chroot: str,
        n: int = 3,
        racks: bool = False,
        **overrides,
    ):
        self.zookeeper = zookeeper
        self.chroot = f"/{chroot}/gregor"
        self._zk: KazooClient | None = None
        # The test's own ZooKeeper client goes through a proxy too, cut only
        # by cut_zookeeper() (isolating a broker leaves it be).
        self.observer_proxy = TcpProxy((zookeeper.host, zookeeper.port)).start()
        self.zk_proxies: dict[int, TcpProxy] = {}
        self.inbound: dict[int, TcpProxy] = {}
        self.brokers: dict[int, GregorNode] = {}
        for node_id in range(1, n + 1):
            zk_proxy = TcpProxy((zookeeper.host, zookeeper.port)).start()
            # Its target, the broker's own port, is known once the broker listens.
            inbound = TcpProxy().start()
            self.zk_proxies[node_id] = zk_proxy
            self.inbound[node_id] = inbound
            self.brokers[node_id] = GregorNode(
                root / f"broker-{node_id}",
                {
                    "zookeeper.connect": f"{zk_proxy.address}/{chroot}/gregor",
                    "advertised.listeners": f"PLAINTEXT://{inbound.address}",
                    **BROKER_SETTINGS,
                    **({"broker.rack": f"rack-{node_id}"} if racks else {}),
                    **overrides,
                },
                node_id=node_id,
                # Every line, across restarts, beside the data (the failure report
                # below prints only the last ones).
                log_path=root / f"broker-{node_id}.log",
            )

    @property
    def bootstrap(self) -> str:
        """The brokers' inbound proxies (what they advertise)."""
        return ",".join(self.inbound[n].address for n, b in self.brokers.items() if b.port)

    def start(self, timeout: float = 30) -> GregorCluster:
        for node_id in self.brokers:
            self.restart(node_id)
        # A broker listens before the others (and the controller among them)
        # have seen its registration in ZooKeeper: a topic created at once
        # with a replication factor of 3 could be refused for want of
        # brokers. The cluster is up when every broker lists all of them.
        deadline = time.monotonic() + timeout
        while not self.all_brokers_seen():
            assert time.monotonic() < deadline, "the brokers did not all see each other"
            time.sleep(0.05)
        return self

    def all_brokers_seen(self) -> bool:
        body = {"topics": [], "allow_auto_topic_creation": False}
        for broker in self.brokers.values():
            try:
                response = kafka_request(broker.bootstrap, ApiKey.METADATA, 12, body, timeout=5)
            except OSError:
                return False
            if sorted(b.node_id for b in response.brokers) != sorted(self.brokers):
                return False
        return True

    def kill(self, node_id: int) -> None:
        self.brokers[node_id].kill()

    def stop(self, node_id: int) -> int:
        return self.brokers[node_id].stop()

    def restart(self, node_id: int) -> None:
        broker = self.brokers[node_id]
        broker.start(timeout=60)
        self.inbound[node_id].target = (broker.host, broker.port)

    def pause(self, node_id: int) -> None:
        self.brokers[node_id].proc.send_signal(signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        self.brokers[node_id].proc.send_signal(signal.SIGCONT)

    def isolate(self, node_id: int, mode: str = BLACKHOLE) -> None:
        """Cut broker `node_id` off ZooKeeper, off every connection into it
        and off the other brokers."""
        self.zk_proxies[node_id].cut(mode)
        self.inbound[node_id].cut(mode)
        pid = self.brokers[node_id].proc.pid
        for other, proxy in self.inbound.items():
            if other != node_id:
                proxy.cut_from(pid, mode)

    def heal(self, node_id: int) -> None:
        pid = self.brokers[node_id].proc.pid
        for other, proxy in self.inbound.items():
            if other != node_id:
                proxy.heal_from(pid)
        self.zk_proxies[node_id].heal()
        self.inbound[node_id].heal()

    def cut_zookeeper(self) -> None:
        """Every ZooKeeper client of the cluster (each broker's and the test's
        own) is refused from now on, as by a stopped ZooKeeper, until
        heal_zookeeper(). Around a ZooKeeper restart, healed once it serves:
        ZooKeeper 3.8.0 (Debian's) listens before it has loaded its database,
        and a connection that arrives then is neither answered nor closed
        (closing it fails on a NullPointerException in
        ZooKeeperServer.removeCnxn, ZOOKEEPER-5051), so its client waits out
        its connect timeout, which is its whole session timeout, and the
        session is lost for a reason that is ZooKeeper's, not the client's."""
        for proxy in self._zookeeper_proxies():
            proxy.cut(RESET)

    def heal_zookeeper(self) -> None:
        for proxy in self._zookeeper_proxies():
            proxy.heal()

    def _zookeeper_proxies(self) -> tuple[TcpProxy, ...]:
        """Every way into ZooKeeper: each broker's proxy and the observer's."""
        return (*self.zk_proxies.values(), self.observer_proxy)

    def cut_link(self, source: int, target: int, mode: str = RESET) -> None:
        """Broker `source` can no longer reach broker `target` (its follower
        fetches, its requests); everyone else still can."""
        self.inbound[target].cut_from(self.brokers[source].proc.pid, mode)

    def heal_link(self, source: int, target: int) -> None:
        self.inbound[target].heal_from(self.brokers[source].proc.pid)

    # --- the truth, not one broker's view of it -------------------------------------

    def zk_partitions(self, topic: str) -> dict[int, tuple[int, int, list[int]]] | None:
        """{partition: (leader, leader epoch, ISR)} as ZooKeeper holds it, read
        directly (not through a broker's proxy); None while ZooKeeper cannot
        answer."""
        try:
            zk = self._observer()
            base = f"/brokers/topics/{topic}/partitions"
            states = {}
            for child in zk.get_children(base):
                raw = json.loads(zk.get(f"{base}/{child}/state")[0])
                states[int(child)] = (raw["leader"], raw["leader_epoch"], raw["isr"])
            return states
        except (KazooException, TimeoutError):
            return None

    def broker_sessions(self) -> dict[int, int]:
        """{broker: the ZooKeeper session holding its registration}."""
        zk = self._observer()
        sessions = {}
        for child in zk.get_children("/brokers/ids"):
            stat = zk.exists(f"/brokers/ids/{child}")
            if stat is not None:
                sessions[int(child)] = stat.ephemeralOwner
        return sessions

    def _observer(self) -> KazooClient:
        """The test's own ZooKeeper client, started on first use."""
        if self._zk is None:
            # Reconnecting as the brokers do, so it is back with them after
            # a ZooKeeper restart.
            self._zk = KazooClient(
                hosts=f"{self.observer_proxy.address}{self.chroot}",
                connection_retry=reconnect_retry(),
            )
            self._zk.start(timeout=10)
        return self._zk

    def in_sync(self, topic: str, replicas: int = 3) -> bool:
        """Every partition of `topic` has its `replicas` replicas in its ISR in
        ZooKeeper, and every broker, asked at its own port, serves that same
        leader, leader epoch and ISR: a broker that was cut off has caught up,
        not just answered from the image it had before the cut."""
        truth = self.zk_partitions(topic)
        if not truth or any(len(isr) != replicas for _, _, isr in truth.values()):
            return False
        body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
        for broker in self.brokers.values():
            try:
                response = kafka_request(broker.bootstrap, ApiKey.METADATA, 12, body, timeout=5)
            except OSError:
                return False
            seen = {
                p.partition_index: (p.leader_id, p.leader_epoch, sorted(p.isr_nodes))
                for p in response.topics[0].partitions
            }
            if seen != {i: (lead, ep, sorted(isr)) for i, (lead, ep, isr) in truth.items()}:
                return False
        return True

    def close(self) -> None:
        if self._zk is not None:
            try:
                self._zk.stop()
                self._zk.close()
            except KazooException:
                pass
        for broker in self.brokers.values():
            if broker.proc is not None and broker.proc.poll() is None:
                broker.proc.send_signal(signal.SIGCONT)
                broker.stop()
        for proxy in (*self._zookeeper_proxies(), *self.inbound.values()):
            proxy.close()


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
    racks = overrides.pop("racks", False)
    c = GregorCluster(tmp_path, zookeeper, f"t{time.monotonic_ns()}", racks=racks, **overrides)
    try:
        c.start()
    except BaseException:
        c.close()
        raise
    yield c
    c.close()
    if call_failed(request.node):
        for node_id, broker in c.brokers.items():
            print(failure_report(node_id, broker.output, broker.log_path))
        print(f"--- ZooKeeper: its warnings and expiries, all in {zookeeper.log_path} ---")
        print(zookeeper.events())


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cluster_settings(**props): broker properties for the `cluster` fixture"
    )
