"""Security on a cluster: SCRAM credentials are cluster metadata (ZooKeeper's
/config/users, as in Kafka's ZooKeeper mode), so a credential created
through one broker logs a client in at every other one, and a client on a
SASL listener is sent to every broker's SASL listener. Brokers whose only
listener is a SASL or TLS one log in to, or show their certificate to,
each other.
"""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import contextmanager

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka import KafkaConsumer

from tests.integration.clients import wait_until
from tests.support.clients import TIMEOUT
from tests.support.gregor import GregorNode, assert_no_traceback
from tests.support.raw import kafka_request
from tests.support.tls import PASSWORD, Pki
from wire.api_keys import ApiKey

pytestmark = pytest.mark.slow

PLAIN_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'
)
# Two brokers where an acks=all write, and a transaction's markers, need the
# other broker: what reaches it over the listener under test.
BOTH_NEEDED = {
    "default.replication.factor": 2,
    "min.insync.replicas": 2,
    "offsets.topic.replication.factor": 2,
    "offsets.topic.num.partitions": 1,
    "transaction.state.log.replication.factor": 2,
    "transaction.state.log.min.isr": 2,
    "transaction.state.log.num.partitions": 1,
    "replica.fetch.wait.max.ms": 100,
    "group.initial.rebalance.delay.ms": 0,
}


def cluster_settings(zookeeper, **listener_settings) -> dict:
    """Two brokers' settings under a ZooKeeper chroot of their own."""
    return {
        "zookeeper.connect": f"{zookeeper.connect}/t{time.monotonic_ns()}/gregor",
        "zookeeper.session.timeout.ms": 4000,
        **BOTH_NEEDED,
        **listener_settings,
    }


@contextmanager
def two_brokers(tmp_path, settings: dict):
    """Brokers 1 and 2, started; stopped at the end, with no traceback logged."""
    brokers = [
        GregorNode(tmp_path / f"broker-{n}", settings, node_id=n, log_path=tmp_path / f"{n}.log")
        for n in (1, 2)
    ]
    try:
        for broker in brokers:
            broker.start()
        yield brokers
    finally:
        for broker in brokers:
            broker.stop()
    for broker in brokers:
        assert_no_traceback(broker)


def commit_a_record_on_each_broker(conf: dict, topic: str) -> None:
    """A topic of two partitions (one led by each broker, replicated to the
    other), and a transaction writing to both, acks=all."""
    admin = AdminClient(conf)
    wait_until(lambda: len(admin.list_topics(timeout=5).brokers) == 2, "both brokers")
    admin.create_topics([NewTopic(topic, 2)])[topic].result(TIMEOUT)
    producer = Producer({**conf, "acks": "all", "transactional.id": f"{topic}-txn"})
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    for partition in (0, 1):
        producer.produce(topic, f"p{partition}".encode(), partition=partition)
    producer.commit_transaction(TIMEOUT)


def read_committed(topic: str, brokers, **security) -> list[bytes]:
    """Every committed record of the topic, with kafka-python, sorted."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=[b.bootstrap for b in brokers],
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
        **security,
    )
    values = sorted(m.value for m in consumer)
    consumer.close()
    return values


def test_a_scram_credential_made_through_one_broker_logs_in_at_another(tmp_path, zookeeper):
    settings = cluster_settings(
        zookeeper,
        **{
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        },
    )
    with two_brokers(tmp_path, settings) as brokers:
        one, two = brokers
        sasl_two = f"127.0.0.1:{two.ports['SASL_PLAINTEXT']}"
        admin = AdminClient({"bootstrap.servers": one.bootstrap})
        wait_until(lambda: len(admin.list_topics(timeout=5).brokers) == 2, "both brokers")
        admin.create_topics([NewTopic("replicated", 2)])["replicated"].result(TIMEOUT)
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
        upsert = UserScramCredentialUpsertion("carol", info, b"carol-secret")
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(TIMEOUT)

        login = {
            "bootstrap.servers": sasl_two,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "carol",
            "sasl.password": "carol-secret",
        }

        # Broker 2 learns of the credential through its ZooKeeper watch.
        def on_broker_two():
            body = {"users": [{"name": "carol"}]}
            answer = kafka_request(two.bootstrap, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, body)
            return answer.results[0].credential_infos

        infos = wait_until(on_broker_two, "broker 2 to hold carol's credential")
        assert [(c.mechanism, c.iterations) for c in infos] == [(1, 4096)]
        metadata = AdminClient(login).list_topics(timeout=TIMEOUT)
        # Every broker is reached on its SASL listener.
        assert sorted(b.port for b in metadata.brokers.values()) == sorted(
            b.ports["SASL_PLAINTEXT"] for b in brokers
        )
        producer = Producer(login)
        for partition in (0, 1):
            producer.produce("replicated", f"p{partition}".encode(), partition=partition)
        assert producer.flush(TIMEOUT) == 0
        consumer = KafkaConsumer(
            "replicated",
            bootstrap_servers=sasl_two,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="carol",
            sasl_plain_password="carol-secret",
            auto_offset_reset="earliest",
            consumer_timeout_ms=10_000,
        )
        assert sorted(m.value for m in consumer) == [b"p0", b"p1"]
        consumer.close()


def test_brokers_with_only_sasl_listeners_log_in_to_each_other(tmp_path, zookeeper):
    # Followers fetch, and transaction markers reach the other broker, over
    # the SASL listener: with min.insync.replicas=2 an acks=all write is
    # acknowledged only once the follower, logged in with SCRAM as the user
    # `broker`, has it. That credential is written into ZooKeeper before the
    # brokers start (`gregor add-scram`, as kafka-storage --add-scram), since
    # no broker could take it before the brokers replicate. Logins last a
    # second (connections.max.reauth.ms): each broker's connections to the
    # other are made anew, and log in again, before theirs ends.
    settings = cluster_settings(
        zookeeper,
        **{
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                'username="broker" password="broker-secret";'
            ),
            "connections.max.reauth.ms": 1000,
        },
    )
    added = subprocess.run(
        [
            sys.executable,
            "-m",
            "broker",
            "add-scram",
            *(f"--override={k}={v}" for k, v in settings.items()),
            "SCRAM-SHA-512=[name=broker,password=broker-secret]",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert added.returncode == 0, added.stderr
    assert "SCRAM-SHA-512 credential for user broker written to ZooKeeper" in added.stdout
    with two_brokers(tmp_path, settings) as brokers:
        login = {
            "bootstrap.servers": ",".join(b.bootstrap for b in brokers),
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": "admin-secret",
        }
        commit_a_record_on_each_broker(login, "both")
        assert read_committed(
            "both",
            brokers,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="admin",
            sasl_plain_password="admin-secret",
        ) == [b"p0", b"p1"]
        # Acknowledged writes for three logins' worth of time.
        acked = Producer({**login, "acks": "all"})
        started = time.monotonic()
        while time.monotonic() - started < 3:
            acked.produce("both", b"more", partition=0)
            assert acked.flush(TIMEOUT) == 0
        for broker in brokers:
            assert "failed authentication" not in broker.log()
            assert "expired" not in broker.log()


def test_brokers_with_only_tls_listeners_replicate_to_each_other(tmp_path, zookeeper):
    # Every connection, the brokers' own to each other included, must show a
    # certificate the CA signed (ssl.client.auth=required): acks=all with
    # min.insync.replicas=2 is acknowledged only once a follower has fetched
    # over TLS, and a transaction's markers reach the other broker over it.
    pki = Pki(tmp_path / "pki")
    settings = cluster_settings(
        zookeeper,
        **{
            "listeners": "SSL://127.0.0.1:0",
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(pki.server.pkcs12_keystore),
            "ssl.keystore.password": PASSWORD,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.ca_pem),
            "ssl.client.auth": "required",
        },
    )
    with two_brokers(tmp_path, settings) as brokers:
        client = pki.client("app")
        conf = {
            "bootstrap.servers": ",".join(b.bootstrap for b in brokers),
            "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca_pem),
            "ssl.certificate.location": str(client.pem_cert),
            "ssl.key.location": str(client.pem_key),
        }
        commit_a_record_on_each_broker(conf, "sealed")
        assert read_committed(
            "sealed",
            brokers,
            security_protocol="SSL",
            ssl_cafile=str(pki.ca_pem),
            ssl_certfile=str(client.pem_cert),
            ssl_keyfile=str(client.pem_key),
        ) == [b"p0", b"p1"]
        for broker in brokers:
            assert "TLS handshake" not in broker.log()
