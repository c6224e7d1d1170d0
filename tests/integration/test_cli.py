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

from tests.support.gregor import GregorNode
from tests.support.raw import RawClient, batch, fetch_body, fetch_values, produce
from tests.support.topics import ensure_topic
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

# Slow (a broker process per test: start-up failures, signals, restarts): make unit leaves the module out.
pytestmark = pytest.mark.slow


def serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "broker", "serve", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


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
