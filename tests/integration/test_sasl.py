"""SASL authentication on a real Gregor: a PLAINTEXT listener beside a
SASL_PLAINTEXT one serving PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.

Clients log in as they would to Kafka (kafka-python, confluent-kafka); the
protocol details clients hide are checked with raw requests against what
Apache Kafka 4.3.1 answered to the same ones (the compatibility suite's
test_security.py runs those side by side).
"""

from __future__ import annotations

import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka import KafkaConsumer, KafkaProducer

from tests.integration.clients import wait_until
from tests.support.clients import TIMEOUT, produce_ok
from tests.support.gregor import GregorNode, assert_no_traceback
from tests.support.raw import Closed, RawClient, raw_header, software
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.framing import encode_frame

PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_alice="alice-secret" user_admin="admin-secret";'
)
SETTINGS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
}
MECHANISMS = {
    "SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256,
    "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512,
}
INVALID_PLAIN = "Authentication failed: Invalid username or password"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    node = GregorNode(tmp_path_factory.mktemp("sasl") / "data", SETTINGS).start()
    yield node
    node.stop()
    assert_no_traceback(node)


@pytest.fixture(scope="module")
def sasl(broker) -> str:
    return f"127.0.0.1:{broker.ports['SASL_PLAINTEXT']}"


def user() -> str:
    return f"user-{uuid.uuid4().hex[:8]}"


def set_scram(bootstrap: str, name: str, password: str, mechanism: str, iterations=8192):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    info = ScramCredentialInfo(MECHANISMS[mechanism], iterations)
    for future in admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion(name, info, password.encode())]
    ).values():
        future.result(TIMEOUT)


def confluent_login(sasl: str, mechanism: str, name: str, password: str) -> dict:
    return {
        "bootstrap.servers": sasl,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": name,
        "sasl.password": password,
    }


# --- logging in with real clients --------------------------------------------------------


def test_kafka_python_produces_and_consumes_over_plain(broker, sasl):
    login = {
        "bootstrap_servers": sasl,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
    }
    producer = KafkaProducer(**login)
    for i in range(5):
        producer.send("plain-topic", f"v{i}".encode(), partition=0).get(TIMEOUT)
    producer.close()
    consumer = KafkaConsumer(
        "plain-topic", auto_offset_reset="earliest", consumer_timeout_ms=10_000, **login
    )
    got = [m.value for m in consumer]
    consumer.close()
    assert got == [f"v{i}".encode() for i in range(5)]
    # The broker is advertised on the listener the client came in on.
    admin = AdminClient(confluent_login(sasl, "PLAIN", "alice", "alice-secret"))
    assert admin.list_topics(timeout=TIMEOUT).brokers[1].port == broker.ports["SASL_PLAINTEXT"]


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_scram_credentials_log_in_confluent_kafka_and_kafka_python(broker, sasl, mechanism):
    name = user()
    set_scram(broker.bootstrap, name, "s3cret", mechanism)
    topic = f"scram-{mechanism.lower()}"
    produce_ok(
        sasl, topic, [(None, b"one", None)], **confluent_login(sasl, mechanism, name, "s3cret")
    )
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=sasl,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=name,
        sasl_plain_password="s3cret",
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
    )
    assert [m.value for m in consumer] == [b"one"]
    consumer.close()


@pytest.mark.parametrize(
    ("mechanism", "message"),
    [
        ("PLAIN", INVALID_PLAIN),
        (
            "SCRAM-SHA-256",
            "Authentication failed during authentication due to invalid credentials "
            "with SASL mechanism SCRAM-SHA-256",
        ),
    ],
)
def test_a_wrong_password_is_refused_with_kafkas_message(broker, sasl, mechanism, message):
    name = "alice" if mechanism == "PLAIN" else user()
    if mechanism != "PLAIN":
        set_scram(broker.bootstrap, name, "right", mechanism)
    errors: list[KafkaError] = []
    producer = Producer(
        {**confluent_login(sasl, mechanism, name, "wrong"), "error_cb": errors.append}
    )
    producer.produce("refused", b"x")
    wait_until(lambda: producer.poll(0.1) is not None and errors, "an authentication error")
    assert errors[0].code() == KafkaError._AUTHENTICATION
    assert message in errors[0].str()
    assert broker.wait_for_log("failed authentication with 127.0.0.1:")


def test_a_deleted_credential_refuses_new_logins_but_not_logged_in_clients(broker, sasl):
    name = user()
    set_scram(broker.bootstrap, name, "pw", "SCRAM-SHA-512")
    producer = Producer(confluent_login(sasl, "SCRAM-SHA-512", name, "pw"))
    producer.produce("deleted-user", b"before")
    assert producer.flush(TIMEOUT) == 0
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    deletion = UserScramCredentialDeletion(name, ScramMechanism.SCRAM_SHA_512)
    for future in admin.alter_user_scram_credentials([deletion]).values():
        future.result(TIMEOUT)
    # The logged-in producer keeps its connection (no re-authentication, as on Kafka).
    producer.produce("deleted-user", b"after")
    assert producer.flush(TIMEOUT) == 0
    with RawClient(sasl) as client:
        client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-512"})
        answer = client.call(
            ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": f"n,,n={name},r=abc".encode()}
        )
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        client.wait_closed()


def test_transactions_work_over_a_sasl_listener(broker, sasl):
    producer = Producer(
        {**confluent_login(sasl, "PLAIN", "alice", "alice-secret"), "transactional.id": user()}
    )
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    producer.produce("txn-over-sasl", b"committed", partition=0)
    producer.commit_transaction(TIMEOUT)
    consumer = Consumer(
        {
            **confluent_login(sasl, "PLAIN", "alice", "alice-secret"),
            "group.id": user(),
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([TopicPartition("txn-over-sasl", 0, 0)])
    msg = wait_until(lambda: consumer.poll(0.2), "the committed record")
    consumer.close()
    assert msg.error() is None and msg.value() == b"committed"


def test_scram_credentials_survive_a_restart(tmp_path):
    node = GregorNode(tmp_path / "data", SETTINGS).start()
    try:
        name = user()
        set_scram(node.bootstrap, name, "kept", "SCRAM-SHA-256")
        node.stop()
        node.start()
        sasl = f"127.0.0.1:{node.ports['SASL_PLAINTEXT']}"
        produce_ok(
            sasl,
            "after-restart",
            [(None, b"x", None)],
            **confluent_login(sasl, "SCRAM-SHA-256", name, "kept"),
        )
    finally:
        node.stop()


# --- the protocol, as Kafka answers it ------------------------------------------------


def plain_token(name: str, password: str, authzid: str = "") -> bytes:
    return f"{authzid}\0{name}\0{password}".encode()


def test_requests_before_login_close_the_connection_unanswered(sasl):
    with RawClient(sasl) as client:
        client.send(ApiKey.METADATA, 12, {"topics": None})
        assert client.wait_closed() == b""
    # The first request may be ApiVersions; a second one is refused like any other.
    with RawClient(sasl) as client:
        assert client.call(ApiKey.API_VERSIONS, 3, software()).error_code == ErrorCode.NONE
        client.send(ApiKey.API_VERSIONS, 3, software())
        assert client.wait_closed() == b""


def test_an_api_versions_at_an_unknown_version_may_be_asked_again(sasl):
    with RawClient(sasl) as client:
        client.send_raw(encode_frame(raw_header(ApiKey.API_VERSIONS, 99, 7)))
        correlation_id, answer = client.receive(ApiKey.API_VERSIONS, 0)
        assert (correlation_id, answer.error_code) == (7, ErrorCode.UNSUPPORTED_VERSION)
        assert client.call(ApiKey.API_VERSIONS, 3, software()).error_code == ErrorCode.NONE
        assert client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
        token = plain_token("alice", "alice-secret")
        assert client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token}).error_code == 0


def test_the_handshake_lists_the_mechanisms_and_refuses_others(sasl):
    with RawClient(sasl) as client:
        answer = client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
        assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        # In the order Kafka lists them (a Java HashSet's).
        assert answer.mechanisms == ["PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256"]
        client.wait_closed()


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (plain_token("alice", "wrong"), INVALID_PLAIN),
        (plain_token("bob", "alice-secret"), INVALID_PLAIN),
        (plain_token("", "alice-secret"), "Authentication failed: username not specified"),
        (plain_token("alice", ""), "Authentication failed: password not specified"),
        (
            plain_token("alice", "alice-secret", authzid="bob"),
            "Authentication failed: Client requested an authorization id that is different "
            "from username",
        ),
        (b"aliceNoNuls", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (b"\0alice\0alice-secret\0extra", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    ],
)
def test_a_failed_plain_login_is_answered_then_closed(sasl, token, message):
    with RawClient(sasl) as client:
        assert client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
        answer = client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        assert (answer.error_code, answer.error_message) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED,
            message,
        )
        client.wait_closed()


def test_a_failed_login_is_answered_after_the_failed_authentication_delay(sasl):
    # connection.failed.authentication.delay.ms (100 ms by default, KIP-306)
    # slows down password guessing; a good login is answered at once.
    with RawClient(sasl) as client:
        client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        started = time.monotonic()
        answer = client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": plain_token("alice", "x")})
        assert time.monotonic() - started >= 0.1
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        client.wait_closed()


def test_after_login_sasl_requests_are_illegal_and_the_connection_stays(broker, sasl):
    for address in (sasl, broker.bootstrap):
        with RawClient(address) as client:
            if address == sasl:
                client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
                answer = client.call(
                    ApiKey.SASL_AUTHENTICATE,
                    2,
                    {"auth_bytes": plain_token("alice", "alice-secret")},
                )
                assert (answer.error_code, answer.error_message) == (ErrorCode.NONE, "")
            again = client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
            assert (again.error_code, again.mechanisms) == (ErrorCode.ILLEGAL_SASL_STATE, [])
            auth = client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"x"})
            assert auth.error_code == ErrorCode.ILLEGAL_SASL_STATE
            assert (
                auth.error_message
                == "SaslAuthenticate request received after successful authentication"
            )
            assert client.call(ApiKey.METADATA, 12, {"topics": None}).brokers


def test_a_v0_handshake_takes_bare_tokens(sasl):
    with RawClient(sasl) as client:
        assert client.call(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}).error_code == 0
        token = plain_token("alice", "alice-secret")
        client.send_raw(struct.pack(">i", len(token)) + token)
        assert client.receive_frame() == b""
        assert client.call(ApiKey.METADATA, 12, {"topics": None}).brokers
    with RawClient(sasl) as client:
        client.call(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
        token = plain_token("alice", "wrong")
        client.send_raw(struct.pack(">i", len(token)) + token)
        assert client.wait_closed() == b""


def test_a_large_request_before_login_closes_the_connection(sasl):
    # sasl.server.max.receive.size (512 KiB): nothing larger is buffered for
    # a client that has not logged in; after login socket.request.max.bytes holds.
    with RawClient(sasl) as client:
        client.send_raw(struct.pack(">i", 600_000) + b"\0" * 1024)
        client.wait_closed()
    with RawClient(sasl) as client:
        client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        client.call(
            ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": plain_token("alice", "alice-secret")}
        )
        # 600 KB of topic names: past the limit before login, fine after it.
        names = [{"name": c * 200_000, "topic_id": uuid.UUID(int=0)} for c in "abc"]
        answer = client.call(ApiKey.METADATA, 12, {"topics": names})
        assert [t.error_code for t in answer.topics] == [ErrorCode.INVALID_TOPIC_EXCEPTION] * 3


def test_scram_credentials_are_altered_and_described_as_kafka_answers(broker):
    salted = {"salt": b"salt", "salted_password": b"x" * 32}
    alice, bert = user(), user()
    with RawClient(broker.bootstrap) as client:
        answer = client.call(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            0,
            {
                "deletions": [{"name": "ghost", "mechanism": 1}],
                "upsertions": [
                    {"name": alice, "mechanism": 1, "iterations": 4096, **salted},
                    {"name": bert, "mechanism": 2, "iterations": 16384, **salted},
                    {"name": "few", "mechanism": 1, "iterations": 4095, **salted},
                    {"name": "many", "mechanism": 1, "iterations": 16385, **salted},
                    {"name": "odd", "mechanism": 3, "iterations": 4096, **salted},
                    {"name": "", "mechanism": 0, "iterations": 4096, **salted},
                    {"name": "twice", "mechanism": 1, "iterations": 4096, **salted},
                    {"name": "twice", "mechanism": 2, "iterations": 4096, **salted},
                ],
            },
        )
        results = {r.user: (r.error_code, r.error_message) for r in answer.results}
        assert results == {
            alice: (ErrorCode.NONE, None),
            bert: (ErrorCode.NONE, None),
            "ghost": (
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            ),
            "few": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
            "many": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
            "odd": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
            "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
            "twice": (
                ErrorCode.DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            ),
        }
        # Accepted changes first, then the refusals.
        assert [r.error_code for r in answer.results][:2] == [ErrorCode.NONE] * 2
        described = client.call(
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
            0,
            {"users": [{"name": alice}, {"name": "nobody"}, {"name": bert}, {"name": bert}]},
        )
        by_user = {
            r.user: (
                r.error_code,
                r.error_message,
                [(c.mechanism, c.iterations) for c in r.credential_infos],
            )
            for r in described.results
        }
        assert by_user == {
            alice: (ErrorCode.NONE, "", [(1, 4096)]),
            "nobody": (
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to describe a user credential that does not exist: nobody",
                [],
            ),
            bert: (
                ErrorCode.DUPLICATE_RESOURCE,
                "Cannot describe SCRAM credentials for the same user twice in a single request: "
                + bert,
                [],
            ),
        }
        everyone = client.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None})
        names = {r.user for r in everyone.results}
        assert {alice, bert} <= names and not {"few", "twice", ""} & names


# --- re-authentication (KIP-368) ---------------------------------------------------------

REAUTH_MS = 1500


@pytest.fixture(scope="module")
def reauth_sasl(tmp_path_factory):
    """A broker whose logins last REAUTH_MS (connections.max.reauth.ms)."""
    settings = {**SETTINGS, "connections.max.reauth.ms": REAUTH_MS}
    node = GregorNode(tmp_path_factory.mktemp("reauth") / "data", settings).start()
    yield node
    node.stop()
    assert_no_traceback(node)


def plain_login(client: RawClient, name="alice", password="alice-secret"):
    client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    return client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": plain_token(name, password)})


def test_a_login_lasts_connections_max_reauth_ms_and_may_be_renewed(reauth_sasl):
    sasl = f"127.0.0.1:{reauth_sasl.ports['SASL_PLAINTEXT']}"
    with RawClient(sasl) as client:
        assert plain_login(client).session_lifetime_ms == REAUTH_MS
        # Logging in again on the same connection, at once, renews the login.
        renewed = plain_login(client)
        assert (renewed.error_code, renewed.session_lifetime_ms) == (ErrorCode.NONE, REAUTH_MS)
        # Not twice within a second: the handshake is illegal then, and the
        # connection stays.
        again = client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert (again.error_code, again.mechanisms) == (ErrorCode.ILLEGAL_SASL_STATE, [])
        assert client.call(ApiKey.METADATA, 12, {"topics": None}).brokers
        # Without a new login, the first request after the login's end closes
        # the connection unanswered.
        deadline = time.monotonic() + 10 * REAUTH_MS / 1000
        with pytest.raises(Closed):
            while time.monotonic() < deadline:
                client.call(ApiKey.METADATA, 12, {"topics": None})
    assert reauth_sasl.wait_for_log("the SASL login of User:alice expired")


@pytest.mark.parametrize(
    ("handshake", "token", "answered"),
    [
        # Another user: refused with Kafka's message, then closed.
        (
            "PLAIN",
            plain_token("admin", "admin-secret"),
            "Cannot change principals during re-authentication from User.alice: User.admin",
        ),
        ("PLAIN", plain_token("alice", "wrong"), INVALID_PLAIN),
        # Another mechanism: Kafka answers the handshake and closes at the token.
        ("SCRAM-SHA-256", b"n,,n=alice,r=abc", None),
    ],
)
def test_a_renewed_login_must_keep_its_user_and_mechanism(reauth_sasl, handshake, token, answered):
    sasl = f"127.0.0.1:{reauth_sasl.ports['SASL_PLAINTEXT']}"
    with RawClient(sasl) as client:
        plain_login(client)
        assert client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": handshake}).error_code == 0
        if answered is None:
            client.send(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
            assert client.wait_closed() == b""
            return
        answer = client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        assert (answer.error_code, answer.error_message) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED,
            answered,
        )
        client.wait_closed()


def test_librdkafka_renews_its_login_and_keeps_its_connection(reauth_sasl):
    sasl = f"127.0.0.1:{reauth_sasl.ports['SASL_PLAINTEXT']}"
    name = user()
    set_scram(reauth_sasl.bootstrap, name, "pw", "SCRAM-SHA-512")
    producer = Producer(confluent_login(sasl, "SCRAM-SHA-512", name, "pw"))
    # Records for three logins' worth of time: each delivered on the same
    # connections, renewed before they end.
    started = time.monotonic()
    sent = 0
    while time.monotonic() - started < 3 * REAUTH_MS / 1000:
        producer.produce("renewed", f"{sent}".encode(), partition=0)
        sent += 1
        assert producer.flush(TIMEOUT) == 0
    assert f"the SASL login of User:{name} expired" not in reauth_sasl.log()
