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
from pathlib import Path

import pytest
from compatlib.cluster_report import (  # noqa: F401  the hook: a pytest hook, found by name
    call_failed,
    failure_report,
    pytest_runtest_makereport,
)

TOOLS = Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(TOOLS))

import run_gregor  # noqa: E402  tools/run_gregor.py
import run_kafka  # noqa: E402  tools/run_kafka.py

SESSION_MS = 6000
COMMON = {
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "3",
    "min.insync.replicas": "2",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
}


def start_cluster(kind: str, workdir: Path):
    """Three nodes of `kind`, every one registered with the others."""
    if kind == "kafka":
        overrides = {
            **COMMON,
            "broker.session.timeout.ms": SESSION_MS,
            "broker.heartbeat.interval.ms": 1000,
            "log.initial.task.delay.ms": 0,
        }
        return run_kafka.KafkaCluster(3, overrides=overrides).start()
    overrides = {**COMMON, "zookeeper.session.timeout.ms": SESSION_MS}
    return run_gregor.GregorCluster(workdir, overrides).start()


@pytest.fixture(scope="session")
def cluster_kind(pytestconfig) -> str:
    return pytestconfig.getoption("--cluster-kind")


@pytest.fixture(scope="session")
def whole_cluster(cluster_kind):
    with tempfile.TemporaryDirectory(prefix=f"compat-cluster-{cluster_kind}-") as tmp:
        nodes = start_cluster(cluster_kind, Path(tmp))
        try:
            yield nodes
        finally:
            nodes.stop(graceful=False)  # the data is thrown away


@pytest.fixture
def cluster(whole_cluster, request):
    """The session's cluster, every node serving before and after the test.
    After a failed test, each node's own account of it (the data and logs
    go with the cluster's temporary directory)."""
    yield whole_cluster
    if call_failed(request.node):
        for node_id, node in whole_cluster.nodes.items():
            log_path = getattr(node, "log_path", None)
            if log_path is not None and Path(log_path).exists():
                lines = Path(log_path).read_text(errors="replace").splitlines(keepends=True)
                print(failure_report(node_id, lines, log_path))
            else:
                print(f"--- node {node_id}: the last lines ---\n{node.tail()}")
    for node_id in whole_cluster.nodes:
        if not whole_cluster.running(node_id):
            whole_cluster.restart(node_id)  # returns once it is registered again


@pytest.fixture
def cluster_admin(cluster):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def pytest_report_header(config):
    kind = config.getoption("--cluster-kind")
    return f"compat cluster: three {kind} nodes" if kind else None
