"""Spark's own Kafka connector against a real Gregor: one broker and one local
SparkSession for the whole run (a JVM start costs seconds), each test on its own
topics and directories.

Spark's log goes to a file; a failing test's report carries what Spark logged
while it ran, and a passing one prints nothing of it. PySpark and the
connector's jars are installed by `make install` and `make clients`; when they
are missing every test here fails saying so.
"""

from __future__ import annotations

import uuid

import pytest

from tests.support.gregor import GregorNode

# Retention is checked every second, as in the compatibility suite, so that a test
# can see it remove records.
BROKER_OVERRIDES = {"log.retention.check.interval.ms": 1000}


@pytest.fixture(scope="session")
def spark_gregor(tmp_path_factory):
    broker = GregorNode(tmp_path_factory.mktemp("spark-gregor") / "data", BROKER_OVERRIDES)
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def bootstrap(spark_gregor) -> str:
    return spark_gregor.bootstrap


@pytest.fixture(scope="session")
def spark_logs(tmp_path_factory):
    return tmp_path_factory.mktemp("spark-logs")


@pytest.fixture(scope="session")
def spark(spark_logs, tmp_path_factory):
    from spark.session import local_session

    scratch = tmp_path_factory.mktemp("spark-scratch")
    session = local_session("gregor-tests", log_dir=spark_logs, scratch_dir=scratch)
    yield session
    session.stop()


@pytest.fixture
def admin(bootstrap):
    # Per test: a client still held when the session's broker stops logs its
    # reconnection attempts into the run's output.
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


@pytest.fixture
def topic(admin):
    """topic(partitions=1, config={}) -> the name of a new topic with a leader."""
    from compatlib.common import wait_for_leaders
    from confluent_kafka.admin import NewTopic

    def create(partitions: int = 1, config: dict | None = None) -> str:
        name = f"t-{uuid.uuid4().hex[:12]}"
        new = NewTopic(name, num_partitions=partitions, config=config or {})
        admin.create_topics([new])[name].result(30)
        wait_for_leaders(admin, name, partitions)
        return name

    return create


_LOG_START = pytest.StashKey[tuple]()


@pytest.fixture(autouse=True)
def _spark_log_start(request, spark_logs):
    """Where Spark's log stood when the test began (read by the report hook below)."""
    from spark.session import LOG_FILE

    path = spark_logs / LOG_FILE
    request.node.stash[_LOG_START] = (path, path.stat().st_size if path.exists() else 0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    path, start = item.stash.get(_LOG_START, (None, 0))
    if report.failed and path is not None and path.exists():
        with open(path, errors="replace") as fh:
            fh.seek(start)
            report.sections.append(("Spark's log during this test", fh.read()[-20000:]))
