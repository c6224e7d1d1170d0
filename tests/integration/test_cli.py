"""`gregor serve` as a process: a bad configuration stops start-up with exit code 2
and a message naming the key; SIGTERM and SIGINT stop it gracefully (exit 0), and
a request in flight at that moment is still answered."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import pytest
from confluent_kafka import Producer

from tests.support.gregor import GregorNode
from tests.support.raw import RawClient, batch, fetch_body, fetch_values, produce
from tests.support.topics import ensure_topic
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

# Slow (a broker process per test: start-up failures, signals, restarts): make unit leaves the module out.
pytestmark = pytest.mark.slow


def gregor(*args: str) -> subprocess.CompletedProcess:
    """`gregor <args>` run to its end."""
    return subprocess.run(
        [sys.executable, "-m", "broker", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def serve(*args: str) -> subprocess.CompletedProcess:
    return gregor("serve", *args)


def add_scram(*args: str) -> subprocess.CompletedProcess:
    return gregor("add-scram", *args)


@pytest.mark.parametrize(
    "override, message",
    [
        ("no.such.key=1", "Unknown configuration 'no.such.key'"),
        ("num.partitions=many", "Invalid value many for configuration num.partitions"),
        ("message.max.bytes=-1", "Invalid value -1 for configuration message.max.bytes"),
        ("listeners=bogus", "Invalid value bogus for configuration listeners"),
    ],
)
def test_bad_override_exits_2_naming_the_key(tmp_path, override, message):
    p = serve(
        "--override",
        "listeners=PLAINTEXT://127.0.0.1:0",
        "--override",
        f"log.dirs={tmp_path / 'data'}",
        "--override",
        override,
    )
    assert p.returncode == 2, p.stderr
    assert message in p.stderr
    assert not (tmp_path / "data").exists(), "nothing is written before the config is valid"


def test_unknown_key_in_a_properties_file_exits_2_naming_it(tmp_path):
    props = tmp_path / "server.properties"
    props.write_text(
        "# a typo in a real file\n"
        "listeners=PLAINTEXT://127.0.0.1:0\n"
        f"log.dirs={tmp_path / 'data'}\n"
        "log.retention.hour=5\n"
    )
    p = serve(str(props))
    assert p.returncode == 2, p.stderr
    assert "Unknown configuration 'log.retention.hour'" in p.stderr


def test_an_unreachable_zookeeper_stops_start_up_with_a_message(tmp_path):
    # A broker of a cluster whose ZooKeeper does not answer: it must not start
    # as a lone node; it says what it could not reach and exits 1.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    props = tmp_path / "server.properties"
    props.write_text(
        "broker.id=2\n"
        "listeners=PLAINTEXT://127.0.0.1:0\n"
        f"log.dirs={tmp_path / 'data'}\n"
        f"zookeeper.connect=127.0.0.1:{closed_port}/kafka\n"
        "zookeeper.connection.timeout.ms=1000\n"
    )
    p = serve(str(props))
    assert p.returncode == 1, p.stderr
    assert f"cannot reach ZooKeeper at 127.0.0.1:{closed_port}/kafka" in p.stderr


def test_missing_properties_file_exits_2(tmp_path):
    p = serve(str(tmp_path / "nowhere.properties"))
    assert p.returncode == 2
    assert "nowhere.properties" in p.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_answers_the_long_poll_in_flight_then_exits_0(tmp_path, sig):
    broker = GregorNode(tmp_path / "data").start()
    try:
        with RawClient(broker.port, timeout=30) as client:
            ensure_topic(client, "waiting")
            assert produce(client, "waiting", batch([b"kept"])).error_code == ErrorCode.NONE
            # A consumer at the log end, willing to wait a minute for data.
            correlation_id = client.send(
                ApiKey.FETCH,
                12,
                {**fetch_body("waiting", offset=1), "max_wait_ms": 60_000, "min_bytes": 1},
            )
            time.sleep(0.5)  # the Fetch is parked in the broker
            broker.proc.send_signal(sig)
            answered_id, response = client.receive(ApiKey.FETCH, 12)
            assert answered_id == correlation_id
            (p,) = response.responses[0].partitions
            assert (p.error_code, p.high_watermark, bytes(p.records)) == (ErrorCode.NONE, 1, b"")
            assert client.wait_closed(timeout=30) == b""
        assert broker.proc.wait(30) == 0, broker.log()
        assert "stopped: logs flushed and checkpointed" in broker.log()
    finally:
        broker.kill()
    # The record acknowledged before the stop is there after a restart.
    with GregorNode(tmp_path / "data") as again, RawClient(again.port) as client:
        assert fetch_values(client, "waiting") == [b"kept"]


def test_add_scram_gives_a_stopped_node_its_first_scram_user(tmp_path):
    # A listener whose only mechanism is SCRAM needs a first user that no
    # broker could have taken: written into the node's metadata before it
    # starts, as kafka-storage format --add-scram does for Kafka.
    data = tmp_path / "data"
    written = add_scram(
        f"--override=log.dirs={data}",
        "SCRAM-SHA-256=[name=admin,password=admin-secret,iterations=8192]",
    )
    assert written.returncode == 0, written.stderr
    assert "SCRAM-SHA-256 credential for user admin written to" in written.stdout
    settings = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
    }
    node = GregorNode(data, settings).start()
    try:
        with RawClient(node.bootstrap) as client:
            described = client.call(
                ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": [{"name": "admin"}]}
            )
        assert [(c.mechanism, c.iterations) for c in described.results[0].credential_infos] == [
            (1, 8192)
        ]
        producer = Producer(
            {
                "bootstrap.servers": f"127.0.0.1:{node.ports['SASL_PLAINTEXT']}",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.username": "admin",
                "sasl.password": "admin-secret",
            }
        )
        producer.produce("first-user", b"v")
        assert producer.flush(20) == 0
    finally:
        node.stop()


@pytest.mark.parametrize(
    "spec, message",
    [
        ("SCRAM-SHA-1=[name=a,password=b]", "not a SCRAM mechanism"),
        ("SCRAM-SHA-256=[name=a]", "has no password"),
        ("SCRAM-SHA-256=[name=a,password=b,iterations=100]", "outside 4096..16384"),
        ("SCRAM-SHA-256:name=a", "expected MECHANISM=[name=...,password=...]"),
    ],
)
def test_add_scram_refuses_a_bad_credential_with_exit_2(tmp_path, spec, message):
    result = add_scram(f"--override=log.dirs={tmp_path}", spec)
    assert result.returncode == 2
    assert message in result.stderr
