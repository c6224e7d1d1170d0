"""TLS on a real Gregor: SSL and SASL_SSL listeners with Kafka's ssl.* settings,
PEM and PKCS12 keystores, client certificates, and clients that connect as
they would to Kafka (confluent-kafka, kafka-python)."""

from __future__ import annotations

import socket
import ssl

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer

from broker.security.tls import principal_of
from tests.integration.clients import wait_until
from tests.support.clients import TIMEOUT, produce_ok
from tests.support.gregor import GregorNode, GregorStartError, assert_no_traceback
from tests.support.raw import RawClient
from tests.support.tls import PASSWORD, Pki
from wire.api_keys import ApiKey

PLAIN_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


def tls_settings(pki: Pki, **extra) -> dict:
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server.pem_keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca_pem),
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        **extra,
    }


@pytest.fixture(scope="module")
def broker(pki, tmp_path_factory):
    node = GregorNode(tmp_path_factory.mktemp("tls") / "data", tls_settings(pki)).start()
    yield node
    node.stop()
    assert_no_traceback(node)


def address(node: GregorNode, listener: str) -> str:
    return f"127.0.0.1:{node.ports[listener]}"


def test_confluent_kafka_produces_and_reads_metadata_over_tls(broker, pki):
    conf = {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca_pem)}
    offsets = produce_ok(address(broker, "SSL"), "over-tls", [(None, b"sealed", None)], **conf)
    assert offsets == [0]
    admin = AdminClient({"bootstrap.servers": address(broker, "SSL"), **conf})
    metadata = admin.list_topics(timeout=TIMEOUT)
    # Clients on the TLS listener are sent to the TLS listener.
    assert metadata.brokers[1].port == broker.ports["SSL"]


def test_kafka_python_consumes_a_fetch_over_tls(broker, pki):
    records = [(None, b"x" * 10_000, None) for _ in range(200)]
    produce_ok(broker.bootstrap, "tls-fetch", records)
    consumer = KafkaConsumer(
        "tls-fetch",
        bootstrap_servers=address(broker, "SSL"),
        security_protocol="SSL",
        ssl_cafile=str(pki.ca_pem),
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
    )
    # Fetch answers are read from the log and encrypted (no sendfile over TLS).
    values = [m.value for m in consumer]
    consumer.close()
    assert values == [b"x" * 10_000] * 200


def test_sasl_over_tls_logs_in_and_refuses_a_wrong_password(broker, pki):
    login = {
        "bootstrap.servers": address(broker, "SASL_SSL"),
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(pki.ca_pem),
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
    }
    produce_ok(
        login["bootstrap.servers"],
        "sasl-ssl",
        [(None, b"v", None)],
        **login,
        **{"sasl.password": "alice-secret"},
    )
    errors: list[KafkaError] = []
    producer = Producer({**login, "sasl.password": "wrong", "error_cb": errors.append})
    producer.produce("sasl-ssl", b"refused")
    wait_until(lambda: producer.poll(0.1) is not None and errors, "an authentication error")
    assert "Authentication failed: Invalid username or password" in errors[0].str()


def test_a_client_that_does_not_speak_tls_is_dropped_and_others_go_on(broker, pki):
    with RawClient(address(broker, "SSL")) as client:
        client.send(ApiKey.METADATA, 12, {"topics": None})
        client.wait_closed()
    assert broker.wait_for_log("TLS handshake with 127.0.0.1:")
    conf = {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca_pem)}
    produce_ok(address(broker, "SSL"), "after-bad-client", [(None, b"v", None)], **conf)


def test_a_client_certificate_is_required_when_asked_for(pki, tmp_path):
    settings = tls_settings(
        pki,
        **{
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "ssl.client.auth": "required",
            # A PKCS12 keystore, as Kafka reads them.
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(pki.server.pkcs12_keystore),
            "ssl.keystore.password": PASSWORD,
        },
    )
    node = GregorNode(tmp_path / "data", settings).start()
    try:
        tls = address(node, "SSL")
        alice = pki.client("alice")
        conf = {
            "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca_pem),
            "ssl.certificate.location": str(alice.pem_cert),
            "ssl.key.location": str(alice.pem_key),
        }
        produce_ok(tls, "mutual", [(None, b"v", None)], **conf)
        # Without a certificate the handshake fails, and nothing is answered.
        context = ssl.create_default_context(cafile=str(pki.ca_pem))
        with socket.create_connection(("127.0.0.1", node.ports["SSL"]), timeout=10) as raw:
            with pytest.raises((ssl.SSLError, ConnectionError, EOFError)):
                with context.wrap_socket(raw, server_hostname="localhost") as tls:
                    tls.sendall(b"\0\0\0\0")
                    if not tls.recv(1):
                        raise EOFError("closed")
        assert node.wait_for_log("TLS handshake with 127.0.0.1:")
    finally:
        node.stop()
    assert_no_traceback(node)


def test_a_client_certificate_names_the_principal(pki):
    alice = pki.client("alice")
    der = ssl.PEM_cert_to_DER_cert(alice.pem_cert.read_text())
    assert str(principal_of(der)) == "User:CN=alice,OU=gregor-tests,O=Example,C=US"
    assert str(principal_of(None)) == "User:ANONYMOUS"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"ssl.keystore.location": None}, "An SSL listener needs a keystore"),
        ({"ssl.keystore.type": "JKS"}, "keytool -importkeystore"),
        ({"ssl.keystore.location": "/nonexistent.pem"}, "Cannot read ssl.keystore.location"),
        ({"ssl.client.auth": "sometimes"}, "String must be one of: none, requested, required"),
        (
            {"ssl.client.auth": "required", "ssl.truststore.location": None},
            "Checking certificates needs a truststore",
        ),
    ],
)
def test_a_tls_listener_gregor_cannot_serve_stops_start_up(pki, tmp_path, extra, message):
    settings = {k: v for k, v in {**tls_settings(pki), **extra}.items() if v is not None}
    node = GregorNode(tmp_path / "data", settings)
    with pytest.raises(GregorStartError):
        node.start(timeout=30)
    assert message in node.log()


def test_the_tls_port_speaks_tls_to_python(broker, pki):
    context = ssl.create_default_context(cafile=str(pki.ca_pem))
    with socket.create_connection(("127.0.0.1", broker.ports["SSL"])) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")
            assert tls.getpeercert()["subject"][-1] == (("commonName", "localhost"),)


def test_a_refused_certificate_gets_a_tls_alert_and_a_stranger_ca_is_not_asked_for(pki, tmp_path):
    settings = tls_settings(
        pki,
        listeners="PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        **{"ssl.client.auth": "requested"},
    )
    node = GregorNode(tmp_path / "data", settings).start()
    stranger = Pki(tmp_path / "stranger", ca_name="some-other-ca").client("mallory")
    try:
        # The certificate request names the broker's CA, so librdkafka keeps
        # a certificate no CA here signed to itself and connects without one
        # (as Kafka's Java TLS lets it).
        conf = {
            "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca_pem),
            "ssl.certificate.location": str(stranger.pem_cert),
            "ssl.key.location": str(stranger.pem_key),
        }
        produce_ok(address(node, "SSL"), "no-cert", [(None, b"v", None)], **conf)
        # A client that shows it anyway is refused with a TLS alert, which
        # tells it why at once, rather than a bare close it would retry.
        context = ssl.create_default_context(cafile=str(pki.ca_pem))
        context.load_cert_chain(str(stranger.pem_cert), str(stranger.pem_key))
        with socket.create_connection(("127.0.0.1", node.ports["SSL"]), timeout=10) as raw:
            with pytest.raises(ssl.SSLError, match="alert"):
                with context.wrap_socket(raw, server_hostname="localhost") as tls:
                    tls.sendall(b"\0\0\0\0")
                    tls.recv(1)
    finally:
        node.stop()
    assert_no_traceback(node)
