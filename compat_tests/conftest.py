"""Gregor's compatibility suite: real clients against any Kafka-protocol broker.

    pytest compat_tests --bootstrap-servers 127.0.0.1:9092
    COMPAT_BOOTSTRAP_SERVERS=127.0.0.1:9092 pytest compat_tests

Every test must pass against Apache Kafka (tools/run_kafka.py starts one);
compat_tests/run.py runs the suite against Kafka and Gregor side by side.

The broker is expected to run with the settings of compat_tests/run.py
(BROKER_SETTINGS): one node with node.id 1 (tests check leaders, the controller
and replication factors against it), auto.create.topics.enable=true,
num.partitions=1, log.retention.check.interval.ms=1000,
group.initial.rebalance.delay.ms=0, group.min.session.timeout.ms=1000.

test_security.py also needs the broker's SASL_PLAINTEXT listener
(--sasl-bootstrap; compat_tests/run.py passes it): mechanisms PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512, PLAIN users alice/alice-secret and
admin/admin-secret (runner/launcher.py's SASL_SETTINGS). Without it the tests
that use the `sasl_bootstrap` fixture are deselected, and say so.

test_tls.py needs the broker's SSL listener (--ssl-bootstrap) and the run's
certificates (--tls-dir; compat_tests/run.py passes both): a PEM keystore for
127.0.0.1/localhost, the run's CA as a PEM truststore (ca.pem) and
ssl.client.auth=requested (runner/launcher.py's tls_settings), and a client
certificate that CA signed (compatlib/tls.py's TlsFiles). Without them the
tests that use the `ssl_bootstrap` or `tls` fixture are deselected, and say so.

compat_tests/cluster/ runs beside that broker on a three-node cluster of the
same kind that its conftest starts (--cluster-kind, which compat_tests/run.py
passes): replicated topics, a leader killed under acks=all, min ISR, and
kafka-reassign-partitions, on Apache Kafka (KRaft) and on Gregor (ZooKeeper).

Each test uses fresh, unique topic and group names, so the suite can run again
and again against one broker. Markers (for the report):

    @pytest.mark.client("java")           the client family exercised
    @pytest.mark.api("CreateTopics", ...)  the Kafka APIs / behaviour behind the test

This file and compatlib/ depend on the clients only (and tools/kafka_cli.py
for the Java tools, and the project's Spark pipeline, spark/, which reaches a
broker through Spark's own Kafka connector), never on Gregor's packages.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from compatlib.common import unique, wait_for_leaders  # noqa: E402

CLIENTS = (
    "java",
    "confluent-kafka",
    "kcat",
    "kafka-python",
    "aiokafka",
    "franz-go",
    "raw",
    "spark",
)


def pytest_addoption(parser):
    group = parser.getgroup("compat", "compatibility suite")
    group.addoption(
        "--bootstrap-servers",
        default=os.environ.get("COMPAT_BOOTSTRAP_SERVERS"),
        help="the broker under test (host:port); default: $COMPAT_BOOTSTRAP_SERVERS",
    )
    group.addoption(
        "--sasl-bootstrap",
        default=os.environ.get("COMPAT_SASL_BOOTSTRAP"),
        help="the broker's SASL_PLAINTEXT listener (host:port); default: $COMPAT_SASL_BOOTSTRAP; "
        "without it the tests that need it are deselected, and say so",
    )
    group.addoption(
        "--ssl-bootstrap",
        default=os.environ.get("COMPAT_SSL_BOOTSTRAP"),
        help="the broker's SSL listener (host:port); default: $COMPAT_SSL_BOOTSTRAP; "
        "without it (or --tls-dir) the tests that need it are deselected, and say so",
    )
    group.addoption(
        "--tls-dir",
        default=os.environ.get("COMPAT_TLS_DIR"),
        help="the SSL listener's CA (ca.pem) and a client certificate it signed "
        "(compatlib/tls.py's TlsFiles); default: $COMPAT_TLS_DIR",
    )
    group.addoption(
        "--cluster-kind",
        choices=("kafka", "gregor"),
        default=os.environ.get("COMPAT_CLUSTER_KIND"),
        help="compat_tests/cluster/ starts a three-node cluster of this kind (compat_tests/run.py "
        "passes the target's); without it those tests are deselected, and say so",
    )
    group.addoption(
        "--compat-results",
        default=None,
        metavar="FILE",
        help="append one JSON line per test (id, outcome, client, APIs, message) to FILE",
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers", f"client(name): the client family a compat test uses ({', '.join(CLIENTS)})"
    )
    config.addinivalue_line(
        "markers", "api(*names): the Kafka APIs/behaviours a compat test covers"
    )


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(os.path.abspath(__file__))
    compat = [i for i in items if str(i.fspath).startswith(here)]
    if compat and not config.getoption("--bootstrap-servers"):
        raise pytest.UsageError(
            "compat_tests need a broker: pass --bootstrap-servers host:port or set "
            "COMPAT_BOOTSTRAP_SERVERS (compat_tests/run.py starts Apache Kafka and Gregor)"
        )
    if not config.getoption("--cluster-kind"):
        cluster_dir = os.path.join(here, "cluster")
        clustered = [i for i in compat if str(i.fspath).startswith(cluster_dir)]
        if clustered:
            config.hook.pytest_deselected(items=clustered)
            items[:] = [i for i in items if i not in clustered]
            compat = [i for i in compat if i not in clustered]
            print(f"\ncompat: {len(clustered)} cluster tests deselected: they need --cluster-kind")
    if not config.getoption("--sasl-bootstrap"):
        needs_sasl = [i for i in compat if "sasl_bootstrap" in getattr(i, "fixturenames", ())]
        if needs_sasl:
            config.hook.pytest_deselected(items=needs_sasl)
            items[:] = [i for i in items if i not in needs_sasl]
            compat = [i for i in compat if i not in needs_sasl]
            print(f"\ncompat: {len(needs_sasl)} SASL tests deselected: they need --sasl-bootstrap")
    if not (config.getoption("--ssl-bootstrap") and config.getoption("--tls-dir")):
        needs_tls = [
            i for i in compat if {"ssl_bootstrap", "tls"} & set(getattr(i, "fixturenames", ()))
        ]
        if needs_tls:
            config.hook.pytest_deselected(items=needs_tls)
            items[:] = [i for i in items if i not in needs_tls]
            compat = [i for i in compat if i not in needs_tls]
            print(
                f"\ncompat: {len(needs_tls)} TLS tests deselected: "
                "they need --ssl-bootstrap and --tls-dir"
            )
    for item in compat:
        client = item.get_closest_marker("client")
        if client is None or client.args[0] not in CLIENTS:
            raise pytest.UsageError(f"{item.nodeid}: needs @pytest.mark.client(one of {CLIENTS})")
        if item.get_closest_marker("api") is None:
            raise pytest.UsageError(f"{item.nodeid}: needs @pytest.mark.api(...)")


class _ResultWriter:
    """Writes each test's final outcome as a JSON line (read by compat_tests/run.py)."""

    def __init__(self, path: str):
        self.path = path
        self.meta: dict[str, dict] = {}
        self.state: dict[str, dict] = {}

    def pytest_collection_finish(self, session):
        # After -k/-m deselection: only the tests that will run are expected.
        for item in session.items:
            client = item.get_closest_marker("client")
            api = item.get_closest_marker("api")
            self.meta[item.nodeid] = {
                "client": client.args[0] if client else None,
                "api": list(api.args) if api else [],
            }
        # Every test about to run, so that one that never reports (the run was
        # killed, say) shows up as not run instead of vanishing from the matrix.
        with open(self.path, "a") as fh:
            for nodeid, meta in self.meta.items():
                fh.write(json.dumps({"id": nodeid, "collected": True, **meta}) + "\n")

    def pytest_runtest_logreport(self, report):
        st = self.state.setdefault(
            report.nodeid, {"outcome": "passed", "message": "", "duration": 0.0}
        )
        st["duration"] += report.duration
        if report.passed:
            return
        if report.skipped:
            st["outcome"] = "skipped"
            st["message"] = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
            return
        # failed
        if st["outcome"] == "passed" or report.when == "call":
            st["outcome"] = "failed" if report.when == "call" else "error"
            st["message"] = _short_message(report)

    def pytest_runtest_logfinish(self, nodeid, location):
        st = self.state.pop(nodeid, {"outcome": "passed", "message": "", "duration": 0.0})
        row = {"id": nodeid, **self.meta.get(nodeid, {}), **st}
        row["duration"] = round(row["duration"], 2)
        with open(self.path, "a") as fh:
            fh.write(json.dumps(row) + "\n")


def _short_message(report) -> str:
    """The assertion/exception line(s) of a failure, without the traceback."""
    text = report.longreprtext or ""
    lines = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("E ")]
    if not lines:
        crash = getattr(report.longrepr, "reprcrash", None)
        lines = [crash.message] if crash is not None else text.strip().splitlines()[-3:]
    message = "\n".join(lines[:12])
    return message[:1500]


def pytest_sessionstart(session):
    path = session.config.getoption("--compat-results")
    if path:
        session.config.pluginmanager.register(_ResultWriter(path), "compat-results")


def pytest_report_header(config):
    return (
        f"compat broker: {config.getoption('--bootstrap-servers')}, "
        f"SASL listener: {config.getoption('--sasl-bootstrap')}, "
        f"SSL listener: {config.getoption('--ssl-bootstrap')}"
    )


@pytest.fixture(scope="session")
def bootstrap(pytestconfig) -> str:
    return pytestconfig.getoption("--bootstrap-servers")


@pytest.fixture(scope="session")
def sasl_bootstrap(pytestconfig) -> str:
    """The broker's SASL_PLAINTEXT listener (tests using it are deselected without one)."""
    return pytestconfig.getoption("--sasl-bootstrap")


@pytest.fixture(scope="session")
def ssl_bootstrap(pytestconfig) -> str:
    """The broker's SSL listener (tests using it are deselected without one)."""
    return pytestconfig.getoption("--ssl-bootstrap")


@pytest.fixture(scope="session")
def tls(pytestconfig):
    """The run's certificates (compatlib/tls.py's TlsFiles): tls.ca_pem, tls.client."""
    from compatlib.tls import TlsFiles

    files = TlsFiles.at(pytestconfig.getoption("--tls-dir"))
    for path in (files.ca_pem, files.client.pem_keystore, files.client.pem_cert):
        assert path.is_file(), f"--tls-dir: no {path}"
    return files


@pytest.fixture
def name(request):
    """A unique name factory: name("t") -> "t-<test>-<hex>"."""
    base = request.node.originalname.removeprefix("test_").replace("_", "-")[:40]

    def make(kind: str = "t") -> str:
        return unique(f"{kind}-{base}")

    return make


@pytest.fixture(scope="session")
def admin(bootstrap):
    """A confluent-kafka AdminClient for setting up topics in any test."""
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


@pytest.fixture
def topic(admin, name, bootstrap):
    """Create topics for a test: topic(partitions=1, config={}) -> name (waits until usable)."""

    def create(partitions: int = 1, config: dict | None = None, topic_name: str | None = None):
        from confluent_kafka.admin import NewTopic

        t = topic_name or name("t")
        fs = admin.create_topics(
            [NewTopic(t, num_partitions=partitions, replication_factor=1, config=config or {})],
            operation_timeout=15,
            request_timeout=20,
        )
        fs[t].result(timeout=30)
        wait_for_leaders(admin, t, partitions)
        wait_for_leaders_serving(bootstrap, t, partitions)
        return t

    return create


def wait_for_leaders_serving(bootstrap: str, topic: str, partitions: int) -> None:
    """Until every partition's leader answers ListOffsets: Kafka lists a new
    partition's leader in Metadata a moment before that leader serves it,
    and a raw request (which, unlike a client, does not retry) sent in
    between gets NOT_LEADER_OR_FOLLOWER. Writes nothing, so a test still
    starts from an empty topic."""
    from compatlib import raw

    deadline = time.monotonic() + 15
    with raw.Connection(bootstrap) as conn:
        for p in range(partitions):
            while raw.list_offsets(conn, topic, p, -1)[0] != 0:
                assert time.monotonic() < deadline, f"{topic}-{p}: no leader serving after 15 s"
                time.sleep(0.05)
