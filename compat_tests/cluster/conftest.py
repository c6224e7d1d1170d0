"""Three-node clusters for the compatibility suite: the same tests against three
Apache Kafka nodes (KRaft, each broker and controller: tools/run_kafka.py's
KafkaCluster) and against three Gregor brokers with ZooKeeper (tools/run_gregor.py
and tools/zookeeper.py), chosen by --cluster-kind (compat_tests/run.py passes
the target's kind, so the report puts the two side by side).

Both clusters: sessions of 6 s (Kafka's broker.session.timeout.ms, Gregor's
zookeeper.session.timeout.ms), internal topics with three replicas,
min.insync.replicas=2 by default. One cluster per run; a test that stops a node
starts it again before it ends (the `cluster` fixture checks every node serves
after each test).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(TOOLS))

import run_gregor  # noqa: E402  tools/run_gregor.py
import run_kafka  # noqa: E402  tools/run_kafka.py
import zookeeper  # noqa: E402  tools/zookeeper.py

SESSION_MS = 6000
COMMON = {
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "min.insync.replicas": "2",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
}


class Cluster:
    """What the tests do to a cluster of either kind: its bootstrap list, kill -9 a
    node, start it again, the node ids."""

    kind: str

    @property
    def bootstrap(self) -> str:
        raise NotImplementedError

    def node_ids(self) -> list[int]:
        raise NotImplementedError

    def kill(self, node_id: int) -> None:
        raise NotImplementedError

    def restart(self, node_id: int) -> None:
        raise NotImplementedError

    def running(self, node_id: int) -> bool:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


class KafkaNodes(Cluster):
    kind = "kafka"

    def __init__(self):
        self.cluster = run_kafka.KafkaCluster(
            3,
            overrides={
                **COMMON,
                "broker.session.timeout.ms": SESSION_MS,
                "broker.heartbeat.interval.ms": 1000,
                "log.initial.task.delay.ms": 0,
            },
        ).start()

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    def node_ids(self) -> list[int]:
        return list(self.cluster.nodes)

    def kill(self, node_id: int) -> None:
        self.cluster.kill(node_id)

    def restart(self, node_id: int) -> None:
        self.cluster.restart(node_id)

    def running(self, node_id: int) -> bool:
        proc = self.cluster.nodes[node_id].proc
        return proc is not None and proc.poll() is None

    def stop(self) -> None:
        for node in self.cluster.nodes.values():  # data thrown away: no controlled shutdown
            node.kill()
        self.cluster.stop()


class GregorNodes(Cluster):
    kind = "gregor"

    def __init__(self, workdir: Path):
        self.zookeeper = zookeeper.ZooKeeperNode(directory=workdir / "zookeeper").start()
        self.nodes = {}
        try:
            for node_id in (1, 2, 3):
                node = run_gregor.GregorNode(
                    workdir / f"broker-{node_id}",
                    {
                        **COMMON,
                        "zookeeper.connect": f"{self.zookeeper.connect}/gregor",
                        "zookeeper.session.timeout.ms": SESSION_MS,
                    },
                    node_id=node_id,
                    log_path=workdir / f"broker-{node_id}.log",
                )
                self.nodes[node_id] = node.start(timeout=60)
        except BaseException:
            self.stop()
            raise

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes.values())

    def node_ids(self) -> list[int]:
        return list(self.nodes)

    def kill(self, node_id: int) -> None:
        self.nodes[node_id].kill()

    def restart(self, node_id: int) -> None:
        self.nodes[node_id].start(timeout=60)

    def running(self, node_id: int) -> bool:
        return self.nodes[node_id].running()

    def stop(self) -> None:
        for node in self.nodes.values():
            if node.running():
                node.kill()
        self.zookeeper.stop()


@pytest.fixture(scope="session")
def cluster_kind(pytestconfig) -> str:
    return pytestconfig.getoption("--cluster-kind")


@pytest.fixture(scope="session")
def whole_cluster(cluster_kind):
    with tempfile.TemporaryDirectory(prefix=f"compat-cluster-{cluster_kind}-") as tmp:
        nodes = KafkaNodes() if cluster_kind == "kafka" else GregorNodes(Path(tmp))
        try:
            yield nodes
        finally:
            nodes.stop()


@pytest.fixture
def cluster(whole_cluster):
    """The session's cluster, every node serving before and after the test."""
    yield whole_cluster
    for node_id in whole_cluster.node_ids():
        if not whole_cluster.running(node_id):
            whole_cluster.restart(node_id)
    wait_for_brokers(whole_cluster.bootstrap, len(whole_cluster.node_ids()))


@pytest.fixture
def cluster_admin(cluster):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def wait_for_brokers(bootstrap: str, n: int, timeout: float = 90.0) -> None:
    """Until Metadata lists `n` live brokers."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while True:
        brokers = admin.list_topics(timeout=10).brokers
        if len(brokers) == n:
            return
        assert time.monotonic() < deadline, f"{len(brokers)} of {n} brokers after {timeout:.0f} s"
        time.sleep(0.2)


def pytest_report_header(config):
    kind = config.getoption("--cluster-kind")
    return f"compat cluster: three {kind} nodes" if kind else None
