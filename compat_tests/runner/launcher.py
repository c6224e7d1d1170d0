"""The two brokers the compatibility suite compares, started with the same settings.

Apache Kafka through tools/run_kafka.py's KafkaNode, Gregor through
tools/run_gregor.py's GregorNode, both on free loopback ports with
BROKER_SETTINGS (bench/ starts its brokers here too). With sasl=True (the
compatibility run's brokers) each also listens on a SASL_PLAINTEXT listener
named SASL_PLAINTEXT with SASL_SETTINGS; PLAINTEXT stays the main listener.
With tls=tls_settings(keystore, truststore) (the compatibility run's too)
each also listens on an SSL listener named SSL with those settings (the run
makes the certificates: compat_tests/compatlib/tls.py). Without sasl and tls
(bench/) the brokers get only PLAINTEXT, as before.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import run_gregor  # tools/run_gregor.py
import run_kafka  # tools/run_kafka.py

# Settings the suite relies on, given to both brokers.
BROKER_SETTINGS = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "auto.create.topics.enable": "true",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "log.retention.check.interval.ms": "1000",
    # kafka-python's integration suite (suites/kafka_python.py) runs groups with 3 s
    # sessions; its own test broker allows them the same way.
    "group.min.session.timeout.ms": "1000",
}
# Kafka only: retention checks start 30 s after startup unless told otherwise.
KAFKA_ONLY = {"log.initial.task.delay.ms": "0"}

# The SASL_PLAINTEXT listener of a compatibility run (compat_tests/test_security.py):
# PLAIN users alice and admin, SCRAM credentials created by the tests.
SASL_LISTENER = "SASL_PLAINTEXT"
PLAIN_USERS = {"alice": "alice-secret", "admin": "admin-secret"}
_SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
SASL_SETTINGS = {
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{user}="{password}"' for user, password in PLAIN_USERS.items())
        + ";"
    ),
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": _SCRAM_JAAS,
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": _SCRAM_JAAS,
}

# The SSL listener of a compatibility run (compat_tests/test_tls.py): the server's
# PEM keystore (key and chain in one file), a PEM truststore (the run's CA), and
# client certificates requested, so that clients connect with or without one.
TLS_LISTENER = "SSL"
TLS_CLIENT_AUTH = "requested"


def tls_settings(keystore: Path, truststore: Path) -> dict[str, str]:
    """The SSL listener's settings, the same on both brokers (listener.name.ssl.*)."""
    prefix = f"listener.name.{TLS_LISTENER.lower()}."
    return {
        f"{prefix}ssl.keystore.type": "PEM",
        f"{prefix}ssl.keystore.location": str(keystore),
        f"{prefix}ssl.truststore.type": "PEM",
        f"{prefix}ssl.truststore.location": str(truststore),
        f"{prefix}ssl.client.auth": TLS_CLIENT_AUTH,
    }


GREGOR_START_TIMEOUT = 60.0


def gregor_node(
    workdir: Path,
    overrides: dict[str, str] | None = None,
    *,
    sasl: bool = False,
    tls: dict[str, str] | None = None,
) -> run_gregor.GregorNode:
    """`gregor serve` on a free port with BROKER_SETTINGS (and `overrides`, which win):
    data in workdir/data, its output in workdir/gregor.log. Not started.
    sasl=True: a SASL_PLAINTEXT listener too (sasl_bootstrap()); tls (from
    tls_settings()): an SSL listener too (ssl_bootstrap())."""
    port = run_kafka.free_port()
    ports = [port]

    def another_port() -> int:
        other = run_kafka.free_port()
        while other in ports:
            other = run_kafka.free_port()
        ports.append(other)
        return other

    listeners = f"PLAINTEXT://127.0.0.1:{port}"
    extra_settings: dict[str, str] = {}
    if sasl:
        listeners += f",{SASL_LISTENER}://127.0.0.1:{another_port()}"
        extra_settings.update(SASL_SETTINGS)
    if tls is not None:
        listeners += f",{TLS_LISTENER}://127.0.0.1:{another_port()}"
        extra_settings.update(tls)
    if extra_settings:
        extra_settings = {"listeners": listeners, **extra_settings}
    settings = {
        # As tools/run_kafka.py gives Kafka: the same static setting on both sides
        # (kafka-python's suite checks its DescribeConfigs source).
        "advertised.listeners": listeners,
        **extra_settings,
        **BROKER_SETTINGS,
        **(overrides or {}),
    }
    return run_gregor.GregorNode(
        workdir / "data",
        settings,
        port=port,
        log_path=workdir / "gregor.log",
        new_session=True,
    )


def kafka_node(
    workdir: Path,
    overrides: dict[str, str] | None = None,
    *,
    sasl: bool = False,
    tls: dict[str, str] | None = None,
    **kwargs,
) -> run_kafka.KafkaNode:
    """Apache Kafka with BROKER_SETTINGS, KAFKA_ONLY and `overrides`. Not started.
    sasl=True: a SASL_PLAINTEXT listener too (sasl_bootstrap()); tls (from
    tls_settings()): an SSL listener too (ssl_bootstrap())."""
    settings = {
        **(SASL_SETTINGS if sasl else {}),
        **(tls or {}),
        **BROKER_SETTINGS,
        **KAFKA_ONLY,
    }
    settings.update(overrides or {})
    if sasl:
        kwargs.setdefault("sasl_port", 0)
    if tls is not None:
        kwargs.setdefault("ssl_port", 0)
    return run_kafka.KafkaNode(overrides=settings, directory=workdir, **kwargs)


def sasl_bootstrap(node: run_kafka.KafkaNode | run_gregor.GregorNode) -> str | None:
    """The started node's SASL_PLAINTEXT listener (host:port), None if it has none."""
    if isinstance(node, run_kafka.KafkaNode):
        return node.sasl_bootstrap
    port = node.ports.get(SASL_LISTENER)
    return None if port is None else f"{node.host}:{port}"


def ssl_bootstrap(node: run_kafka.KafkaNode | run_gregor.GregorNode) -> str | None:
    """The started node's SSL listener (host:port), None if it has none."""
    if isinstance(node, run_kafka.KafkaNode):
        return node.ssl_bootstrap
    port = node.ports.get(TLS_LISTENER)
    return None if port is None else f"{node.host}:{port}"


class Brokers:
    """The brokers of one compatibility run, started side by side."""

    def __init__(self, workdir: Path, tls: dict[str, str] | None = None):
        self.workdir = workdir
        # Both brokers' SSL listener settings (tls_settings()), or None: no SSL listener.
        self.tls = tls
        self.kafka: run_kafka.KafkaNode | None = None
        self.gregor: run_gregor.GregorNode | None = None
        self.errors: list[str] = []

    def start(self, kafka: bool, gregor: bool) -> Brokers:
        """Start the brokers asked for, in parallel; failures go to `errors`."""
        starters = []
        if kafka:
            starters.append(threading.Thread(target=self._start_kafka))
        if gregor:
            starters.append(threading.Thread(target=self._start_gregor))
        for th in starters:
            th.start()
        for th in starters:
            th.join()
        return self

    def _start_kafka(self) -> None:
        try:
            self.kafka = kafka_node(self.workdir / "kafka", sasl=True, tls=self.tls).start()
        except Exception as exc:  # noqa: BLE001 - reported by the caller
            self.errors.append(f"Apache Kafka: {exc}")

    def _start_gregor(self) -> None:
        node = gregor_node(self.workdir / "gregor", sasl=True, tls=self.tls)
        try:
            self.gregor = node.start(GREGOR_START_TIMEOUT)
        except Exception as exc:  # noqa: BLE001
            self.errors.append(f"Gregor: {exc}")

    def stop(self, logs_to: Path) -> None:
        """Stop both and copy their logs to `logs_to` (gregor-broker.log, kafka-broker.log)."""
        if self.gregor is not None:
            self.gregor.stop(20)
            assert self.gregor.log_path is not None
            shutil.copy(self.gregor.log_path, logs_to / "gregor-broker.log")
        if self.kafka is not None:
            self.kafka.stop()
            shutil.copy(self.kafka.log_path, logs_to / "kafka-broker.log")
