"""TLS on an SSL listener: what clients see when they encrypt, and when they
cannot trust the broker or the broker cannot trust them.

The broker listens on PLAINTEXT (`bootstrap`) and on SSL (`ssl_bootstrap`)
with a PEM keystore (key and chain in one file) for 127.0.0.1/localhost, the
run's CA as a PEM truststore and ssl.client.auth=requested
(runner/launcher.py's tls_settings). `tls` (compatlib/tls.py's TlsFiles) holds
that CA (tls.ca_pem) and a client certificate it signed (tls.client).
Topics are created over PLAINTEXT.

Certificates the broker does not trust come from two CAs of the tests' own:
`stranger` (another name, another key) and `impostor` (the run's CA's name,
another key). Clients that pick their certificate by the CAs a broker names
(librdkafka, Java) withhold a stranger's certificate, and present an
impostor's, which the broker then refuses.
"""

from __future__ import annotations

import json
import ssl
import time
from pathlib import Path

import pytest
from compatlib import java, raw
from compatlib.common import ck_consume, ck_produce
from compatlib.tls import Identity, Pki

API_VERSIONS = 18


def ck_ssl(tls, identity: Identity | None = None) -> dict:
    """librdkafka's settings for the SSL listener (with a client certificate)."""
    conf = {"security.protocol": "SSL", "ssl.ca.location": str(tls.ca_pem)}
    if identity is not None:
        conf["ssl.certificate.location"] = str(identity.pem_cert)
        conf["ssl.key.location"] = str(identity.pem_key)
    return conf


def java_ssl_config(directory: Path, tls, keystore: Path | None = None, **extra: object) -> str:
    """A Java client config file for SSL: the run's CA as a PEM truststore and,
    given `keystore`, a PEM keystore (key and chain in one file)."""
    props: dict[str, object] = {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": tls.ca_pem,
    }
    if keystore is not None:
        props["ssl.keystore.type"] = "PEM"
        props["ssl.keystore.location"] = keystore
    props.update(extra)
    return java.properties_file(props, directory)


def tls_context(
    ca: Path, identity: Identity | None = None, version: ssl.TLSVersion | None = None
) -> ssl.SSLContext:
    """Python's TLS client: trusts `ca`, checks the host name, shows `identity`."""
    context = ssl.create_default_context(cafile=str(ca))
    if identity is not None:
        context.load_cert_chain(identity.pem_cert, identity.pem_key)
    if version is not None:
        context.minimum_version = context.maximum_version = version
    return context


def host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


@pytest.fixture(scope="module")
def stranger(tmp_path_factory) -> Pki:
    """A CA the broker knows neither by name nor by key."""
    return Pki(tmp_path_factory.mktemp("stranger"), ca_name="compat-stranger-ca")


@pytest.fixture(scope="module")
def impostor(tmp_path_factory) -> Pki:
    """A CA with the name of the run's CA and a key of its own."""
    return Pki(tmp_path_factory.mktemp("impostor"))


# --- confluent-kafka ---------------------------------------------------------------------


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("Produce", "Fetch", "ListOffsets")
def test_confluent_kafka_produces_and_consumes_over_tls(ssl_bootstrap, tls, topic):
    t = topic()
    values = [b"sealed-%d" % i for i in range(5)]
    delivered = ck_produce(ssl_bootstrap, t, [{"value": v} for v in values], conf=ck_ssl(tls))
    assert [m.offset() for m in delivered] == [0, 1, 2, 3, 4]
    got = ck_consume(ssl_bootstrap, t, count=5, conf=ck_ssl(tls))
    assert [m.value() for m in got] == values
    # With the client certificate too (ssl.client.auth=requested).
    got = ck_consume(ssl_bootstrap, t, offset=3, count=2, conf=ck_ssl(tls, tls.client))
    assert [m.value() for m in got] == values[3:]


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("Metadata")
def test_metadata_over_tls_advertises_the_ssl_listener(ssl_bootstrap, tls, topic):
    """A client that bootstraps on the SSL listener is sent to the SSL listener."""
    from confluent_kafka.admin import AdminClient

    t = topic()
    metadata = AdminClient({"bootstrap.servers": ssl_bootstrap, **ck_ssl(tls)}).list_topics(
        timeout=15
    )
    host, port = host_port(ssl_bootstrap)
    assert {b.id: (b.host, b.port) for b in metadata.brokers.values()} == {1: (host, port)}
    # The bootstrap connection or the one to node 1 (librdkafka's choice): SSL either way.
    assert metadata.orig_broker_name in (
        f"ssl://{ssl_bootstrap}/bootstrap",
        f"ssl://{ssl_bootstrap}/1",
    ), metadata.orig_broker_name
    assert t in metadata.topics


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("TLS")
def test_confluent_kafka_does_not_connect_to_a_broker_it_does_not_trust(ssl_bootstrap, stranger):
    """librdkafka with a CA that did not sign the broker's certificate fails the
    handshake and says why (compared loosely: the verification failure)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list = []
    client = AdminClient(
        {
            "bootstrap.servers": ssl_bootstrap,
            "security.protocol": "SSL",
            "ssl.ca.location": str(stranger.ca_pem),
            "error_cb": errors.append,
            "log_level": 0,
        }
    )
    deadline = time.monotonic() + 15
    while not any(e.code() == KafkaError._SSL for e in errors):
        assert time.monotonic() < deadline, f"no SSL error within 15 s: {errors}"
        with pytest.raises(KafkaException):
            client.list_topics(timeout=1)
        client.poll(0)
    message = next(e.str() for e in errors if e.code() == KafkaError._SSL)
    assert message.startswith(f"ssl://{ssl_bootstrap}/bootstrap: SSL handshake failed: "), message
    assert "certificate verify failed" in message, message


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("TLS")
def test_confluent_kafka_withholds_a_certificate_the_broker_does_not_name(
    ssl_bootstrap, tls, stranger, topic
):
    """The broker's certificate request names the CAs it trusts (Kafka: its
    truststore's). librdkafka then withholds a client certificate none of them
    issued, and with ssl.client.auth=requested the client goes on without one."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    t = topic()
    errors: list = []
    conf = {
        "bootstrap.servers": ssl_bootstrap,
        **ck_ssl(tls, stranger.client("stranger")),
        "error_cb": errors.append,
        "log_level": 0,
    }
    client = AdminClient(conf)
    try:
        metadata = client.list_topics(timeout=10)
    except KafkaException as e:
        client.poll(0)
        raise AssertionError(
            f"not connected with a certificate no CA the broker trusts issued: {e}; "
            f"errors: {sorted({x.str() for x in errors})}"
        ) from None
    assert t in metadata.topics


# --- kafka-python --------------------------------------------------------------------------


@pytest.mark.client("kafka-python")
@pytest.mark.api("Fetch", "Metadata")
def test_kafka_python_consumes_a_large_fetch_over_tls(bootstrap, ssl_bootstrap, tls, topic):
    """A few hundred KB in one Fetch answer, encrypted."""
    from kafka import KafkaConsumer

    t = topic()
    values = [bytes([i % 251]) * 2000 for i in range(200)]  # 400 KB
    ck_produce(bootstrap, t, [{"value": v} for v in values])
    consumer = KafkaConsumer(
        t,
        bootstrap_servers=ssl_bootstrap,
        security_protocol="SSL",
        ssl_cafile=str(tls.ca_pem),
        group_id=None,
        auto_offset_reset="earliest",
        consumer_timeout_ms=15000,
    )
    try:
        got = []
        for message in consumer:
            got.append((message.offset, message.value))
            if len(got) == len(values):
                break
    finally:
        consumer.close()
    assert [offset for offset, _ in got] == list(range(len(values)))
    assert [value for _, value in got] == values


# --- Kafka's own tools ---------------------------------------------------------------------

WITH_AND_WITHOUT_CERTIFICATE = pytest.mark.parametrize(
    "certificate", [False, True], ids=["truststore", "client-certificate"]
)


@pytest.mark.client("java")
@pytest.mark.api("Metadata", "TLS")
@WITH_AND_WITHOUT_CERTIFICATE
def test_kafka_topics_lists_over_ssl(ssl_bootstrap, tls, topic, tmp_path, certificate):
    t = topic()
    keystore = tls.client.pem_keystore if certificate else None
    config = java_ssl_config(tmp_path, tls, keystore)
    proc = java.run(
        "kafka-topics", "--bootstrap-server", ssl_bootstrap, "--command-config", config, "--list"
    )
    assert proc.returncode == 0, proc.stderr
    assert t in proc.stdout.splitlines()


@pytest.mark.client("java")
@pytest.mark.api("Produce", "Fetch", "FindCoordinator", "JoinGroup", "TLS")
@WITH_AND_WITHOUT_CERTIFICATE
def test_console_producer_consumer_over_ssl(ssl_bootstrap, tls, topic, tmp_path, certificate):
    t = topic()
    keystore = tls.client.pem_keystore if certificate else None
    config = java_ssl_config(tmp_path, tls, keystore)
    java.console_round_trip(ssl_bootstrap, t, config, ["over", "tls"])


@pytest.mark.client("java")
@pytest.mark.api("TLS")
def test_kafka_topics_with_a_refused_client_certificate_fails_at_once(
    ssl_bootstrap, tls, impostor, tmp_path
):
    """A certificate from a CA with the trusted CA's name is presented, and
    refused with a TLS alert: the Java client reports an SSL authentication
    failure, which is fatal, instead of retrying until its timeout
    (default.api.timeout.ms, 10 s here, bounds a broker that only hangs up)."""
    timeouts = {"default.api.timeout.ms": 10000, "request.timeout.ms": 5000}
    config = java_ssl_config(tmp_path, tls, impostor.client("impostor").pem_keystore, **timeouts)
    proc = java.run(
        "kafka-topics", "--bootstrap-server", ssl_bootstrap, "--command-config", config, "--list"
    )
    assert proc.returncode == 1
    assert proc.stdout.startswith("Error while executing topic command : "), proc.stdout
    # What the tool says, without stack frames.
    said = [line for line in proc.stderr.splitlines() if not line.startswith("\t")]
    assert "org.apache.kafka.common.errors.SslAuthenticationException" in proc.stderr, said
    assert "javax.net.ssl.SSLHandshakeException: Received fatal alert: " in proc.stderr, said


# --- kcat ----------------------------------------------------------------------------------


@pytest.mark.client("kcat")
@pytest.mark.api("Produce", "Metadata", "Fetch")
def test_kcat_over_ssl(ssl_bootstrap, tls, topic):
    t = topic()
    options = [
        "-b",
        ssl_bootstrap,
        "-X",
        "security.protocol=SSL",
        "-X",
        f"ssl.ca.location={tls.ca_pem}",
    ]
    p = java.kcat(*options, "-P", "-t", t, input="one\ntwo\n")
    assert p.returncode == 0, p.stderr
    p = java.kcat(*options, "-L", "-J", "-t", t)
    assert p.returncode == 0, p.stderr
    md = json.loads(p.stdout)
    assert md["brokers"] == [{"id": 1, "name": ssl_bootstrap}]
    assert md["originating_broker"]["name"] == f"ssl://{ssl_bootstrap}/1"
    assert [(x["topic"], len(x["partitions"])) for x in md["topics"]] == [(t, 1)]
    p = java.kcat(*options, "-C", "-t", t, "-o", "beginning", "-e", "-q")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["one", "two"]


# --- raw: the TLS layer itself -------------------------------------------------------------


@pytest.mark.client("raw")
@pytest.mark.api("ApiVersions", "Metadata", "TLS")
@pytest.mark.parametrize(
    "version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["TLSv1.2", "TLSv1.3"]
)
def test_tls_versions_and_the_server_certificate(ssl_bootstrap, tls, version):
    """TLS 1.2 and 1.3 are both served (Kafka's default ssl.enabled.protocols);
    the broker shows the keystore's certificate, for 127.0.0.1 and localhost."""
    with raw.Connection(ssl_bootstrap, tls=tls_context(tls.ca_pem, version=version)) as conn:
        sock = conn.sock
        assert isinstance(sock, ssl.SSLSocket)
        assert sock.version() == version.name.replace("_", ".")
        cert = sock.getpeercert()
        assert cert is not None
        assert dict(x[0] for x in cert["subject"])["commonName"] == "localhost"
        assert cert["subjectAltName"] == (("DNS", "localhost"), ("IP Address", "127.0.0.1"))
        assert raw.api_versions(conn, 0).error_code == 0
        brokers, controller, _ = raw.metadata_v1(conn)
    assert brokers == [(1, *host_port(ssl_bootstrap))]
    assert controller == 1


@pytest.mark.client("raw")
@pytest.mark.api("ApiVersions", "TLS")
def test_a_plaintext_client_on_the_ssl_port_gets_no_kafka_answer(ssl_bootstrap):
    """An ApiVersions request in the clear is not a TLS handshake: the broker
    closes the connection, at most after a TLS alert record (content type 21),
    never with a Kafka answer."""
    with raw.Connection(ssl_bootstrap) as conn:
        conn.send(API_VERSIONS, 0, b"")
        sent = conn.closed_by_broker(10)
    assert sent == b"" or sent[0] == 21, sent.hex()


@pytest.mark.client("raw")
@pytest.mark.api("ApiVersions", "TLS")
@pytest.mark.parametrize("certificate", ["none", "trusted", "stranger", "impostor"])
def test_client_certificates_with_client_auth_requested(
    ssl_bootstrap, tls, stranger, impostor, certificate
):
    """ssl.client.auth=requested: a client without a certificate, or with one
    the truststore trusts, is served; one that presents a certificate the
    truststore does not trust (Python's client presents its certificate
    whatever CAs the broker names) is refused, at the handshake or, in
    TLS 1.3, at its first read, and gets no Kafka answer. (Compared loosely:
    whether the broker sends an alert first is not checked here.)"""
    identity = {
        "none": None,
        "trusted": tls.client,
        "stranger": stranger.client("stranger"),
        "impostor": impostor.client("impostor"),
    }[certificate]
    context = tls_context(tls.ca_pem, identity)
    if certificate in ("none", "trusted"):
        with raw.Connection(ssl_bootstrap, tls=context) as conn:
            assert raw.api_versions(conn, 0).error_code == 0
        return
    try:
        with raw.Connection(ssl_bootstrap, tls=context) as conn:
            answer = raw.api_versions(conn, 0)
    except TimeoutError:
        raise AssertionError("the broker neither refused nor answered within 10 s") from None
    except OSError:  # ssl.SSLError (an alert, an EOF), ConnectionError: refused
        return
    raise AssertionError(f"an untrusted client certificate was served: {answer}")
