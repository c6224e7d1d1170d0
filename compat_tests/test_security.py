"""SASL authentication on a SASL_PLAINTEXT listener: PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512, and SCRAM credentials (DescribeUserScramCredentials,
AlterUserScramCredentials).

The broker listens on PLAINTEXT (`bootstrap`) and on SASL_PLAINTEXT
(`sasl_bootstrap`) with sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,
PLAIN users alice/alice-secret and admin/admin-secret, no authorizer
(runner/launcher.py's SASL_SETTINGS). SCRAM credentials are created by each
test for a user of its own, over the PLAINTEXT listener.

Real clients show what a user sees; raw requests check what clients hide:
which requests a connection may send in which state, the broker's exact
answers, and when it closes the connection.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from compatlib import java, raw
from compatlib.common import ck_consume, ck_produce, wait_until

PLAIN_USER, PLAIN_PASSWORD = "alice", "alice-secret"
# In the order Kafka lists them in every SaslHandshake answer (its HashSet's).
MECHANISMS = ["PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256"]
SCRAM = {1: ("SCRAM-SHA-256", "sha256"), 2: ("SCRAM-SHA-512", "sha512")}

NONE = 0
UNKNOWN_SERVER_ERROR = -1
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58
RESOURCE_NOT_FOUND = 91
DUPLICATE_RESOURCE = 92
UNACCEPTABLE_CREDENTIAL = 93

INVALID_PLAIN = "Authentication failed: Invalid username or password"
AFTER_LOGIN = "SaslAuthenticate request received after successful authentication"
DUPLICATE_ALTER = "A user credential cannot be altered twice in the same request"
DELETE_MISSING = "Attempt to delete a user credential that does not exist"


def scram_failed(mechanism: str) -> str:
    return (
        "Authentication failed during authentication due to invalid credentials "
        f"with SASL mechanism {mechanism}"
    )


def plain_conf(user: str = PLAIN_USER, password: str = PLAIN_PASSWORD) -> dict:
    """librdkafka's settings for SASL/PLAIN."""
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
    }


def scram_conf(mechanism: str, user: str, password: str) -> dict:
    return {**plain_conf(user, password), "sasl.mechanism": mechanism}


def jaas_properties(directory: Path, mechanism: str, user: str, password: str) -> str:
    """A Java client config file (--command-config) for SASL_PLAINTEXT, in `directory`."""
    module = (
        "org.apache.kafka.common.security.plain.PlainLoginModule"
        if mechanism == "PLAIN"
        else "org.apache.kafka.common.security.scram.ScramLoginModule"
    )
    return java.properties_file(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'{module} required username="{user}" password="{password}";',
        },
        directory,
    )


def salted(mechanism: int, password: str, salt: bytes, iterations: int) -> bytes:
    """SCRAM's SaltedPassword: PBKDF2 with the mechanism's hash (RFC 5802)."""
    return hashlib.pbkdf2_hmac(SCRAM[mechanism][1], password.encode(), salt, iterations)


def upsertion(user: str, mechanism: int, password: str, iterations: int = 4096):
    """An AlterUserScramCredentials upsertion with a random salt (for an unknown
    mechanism or fewer than one iteration, a random salted password)."""
    salt = os.urandom(16)
    if mechanism in SCRAM and iterations > 0:
        salted_password = salted(mechanism, password, salt, iterations)
    else:
        salted_password = os.urandom(32)
    return (user, mechanism, iterations, salt, salted_password)


def described(bootstrap: str, user: str) -> dict[int, int] | None:
    """The user's SCRAM credentials {mechanism: iterations} as the broker describes
    them, None when it has none."""
    with raw.Connection(bootstrap) as conn:
        _, _, results = raw.describe_user_scram_credentials(conn, [user])
    (result,) = results
    if result.error_code == RESOURCE_NOT_FOUND:
        return None
    assert result.error_code == NONE, result
    return dict(result.credentials or [])


def wait_described(bootstrap: str, user: str, credentials: dict[int, int] | None) -> None:
    """Until DescribeUserScramCredentials shows `credentials` for `user`: an
    AlterUserScramCredentials answer comes once the change is committed, and
    Kafka's broker serves its metadata (and its logins) a moment later."""
    wait_until(
        lambda: described(bootstrap, user) == credentials,
        timeout=15,
        interval=0.05,
        message=f"{user}'s SCRAM credentials described as {credentials}",
    )


def create_scram_user(bootstrap: str, user: str, password: str, mechanisms=(1, 2)) -> None:
    """SCRAM credentials for `user` (one AlterUserScramCredentials per
    mechanism: a user may appear only once in a request), iterations 4096."""
    with raw.Connection(bootstrap) as conn:
        for mechanism in mechanisms:
            results = raw.alter_user_scram_credentials(
                conn, upsertions=[upsertion(user, mechanism, password)]
            )
            assert [(r.user, r.error_code) for r in results] == [(user, NONE)], results
    wait_described(bootstrap, user, {m: 4096 for m in mechanisms})


def logged_in_metadata(conn: raw.Connection, sasl_bootstrap: str) -> None:
    """The connection is open and serves Metadata, which lists the broker at
    the SASL listener's own address."""
    brokers, controller, _ = raw.metadata_v1(conn)
    host, _, port = sasl_bootstrap.rpartition(":")
    assert brokers == [(1, host, int(port))]
    assert controller == 1


# --- kafka-python ----------------------------------------------------------------------


def kafka_python_sasl(user: str = PLAIN_USER, password: str = PLAIN_PASSWORD) -> dict:
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": user,
        "sasl_plain_password": password,
    }


@pytest.mark.client("kafka-python")
@pytest.mark.api("SaslHandshake", "SaslAuthenticate", "Produce", "Fetch", "FindCoordinator")
def test_kafka_python_plain_produce_consume(sasl_bootstrap, topic, name):
    from kafka import KafkaConsumer, KafkaProducer

    t = topic()
    producer = KafkaProducer(bootstrap_servers=sasl_bootstrap, **kafka_python_sasl())
    try:
        sent = [producer.send(t, b"sasl-%d" % i).get(timeout=20) for i in range(3)]
    finally:
        producer.close()
    assert [m.offset for m in sent] == [0, 1, 2]
    consumer = KafkaConsumer(
        t,
        bootstrap_servers=sasl_bootstrap,
        group_id=name("g"),
        auto_offset_reset="earliest",
        consumer_timeout_ms=15000,
        **kafka_python_sasl(),
    )
    try:
        values = []
        for message in consumer:
            values.append(message.value)
            if len(values) == 3:
                break
        consumer.commit()
    finally:
        consumer.close()
    assert values == [b"sasl-0", b"sasl-1", b"sasl-2"]


@pytest.mark.client("kafka-python")
@pytest.mark.api("SaslAuthenticate")
def test_kafka_python_plain_wrong_password(sasl_bootstrap, caplog):
    """The client cannot connect. kafka-python logs the broker's reason when it
    reads the answer before the connection's end; it may see only the end
    ("socket disconnected"), so the reason is checked where it shows."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError

    caplog.set_level(logging.INFO, logger="kafka")
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaProducer(
            bootstrap_servers=sasl_bootstrap,
            bootstrap_timeout_ms=2000,
            **kafka_python_sasl(password="wrong"),
        )
    lost = [r.getMessage() for r in caplog.records if "Connection lost" in r.getMessage()]
    assert lost, "no connection was made and lost"
    for message in lost:
        if "[Error 58]" in message:  # SASL_AUTHENTICATION_FAILED, with the broker's reason
            assert message.endswith(f"SaslAuthenticationFailedError: {INVALID_PLAIN}"), message
        else:  # the end seen first, or the client's own deadline
            assert message.endswith("socket disconnected") or "RequestTimedOutError" in message, (
                message
            )


# --- confluent-kafka ---------------------------------------------------------------------


def ck_login_error(sasl_bootstrap: str, conf: dict, timeout: float = 15) -> str | None:
    """Log in with librdkafka: None when it gets metadata, else the
    authentication error it reports."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list = []
    settings: dict[str, Any] = {"bootstrap.servers": sasl_bootstrap, "error_cb": errors.append}
    client = AdminClient({**settings, **conf})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            client.list_topics(timeout=1)
            return None
        except KafkaException:
            client.poll(0)
        auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
        if auth:
            return auth[0].str()
    raise AssertionError(f"neither logged in nor refused within {timeout} s: {errors}")


def check_librdkafka_auth_error(error: str | None, sasl_bootstrap: str, message: str) -> None:
    """librdkafka reports the broker's message as it is."""
    assert error is not None, "logged in"
    assert re.fullmatch(
        re.escape(f"sasl_plaintext://{sasl_bootstrap}/bootstrap: SASL authentication error: ")
        + re.escape(message)
        + r" \(after \d+ms in state AUTH_REQ\)",
        error,
    ), error


@pytest.mark.client("confluent-kafka")
@pytest.mark.api(
    "AlterUserScramCredentials",
    "DescribeUserScramCredentials",
    "SaslHandshake",
    "SaslAuthenticate",
    "Produce",
    "Fetch",
)
def test_confluent_scram_credentials_and_logins(admin, sasl_bootstrap, topic, name):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    user, password = name("u"), "scram-secret"
    wanted = {ScramMechanism.SCRAM_SHA_256: 4096, ScramMechanism.SCRAM_SHA_512: 8192}
    # One alteration per call: Kafka refuses a user twice in one request.
    for mechanism, iterations in wanted.items():
        upsert = UserScramCredentialUpsertion(
            user, ScramCredentialInfo(mechanism, iterations), password.encode()
        )
        futures = admin.alter_user_scram_credentials([upsert])
        assert futures[user].result(20) is None

    def describe():
        description = admin.describe_user_scram_credentials([user])[user].result(20)
        assert description.user == user
        return {i.mechanism: i.iterations for i in description.scram_credential_infos}

    wait_until(lambda: describe() == wanted, message=f"{user}'s credentials described")

    t = topic()
    for i, mechanism_name in enumerate(("SCRAM-SHA-256", "SCRAM-SHA-512")):
        conf = scram_conf(mechanism_name, user, password)
        value = mechanism_name.encode()
        (delivered,) = ck_produce(sasl_bootstrap, t, [{"value": value}], conf=conf)
        assert delivered.offset() == i
        got = ck_consume(sasl_bootstrap, t, offset=i, conf=conf)
        assert [m.value() for m in got] == [value]

    error = ck_login_error(sasl_bootstrap, scram_conf("SCRAM-SHA-256", user, "wrong"))
    check_librdkafka_auth_error(error, sasl_bootstrap, scram_failed("SCRAM-SHA-256"))

    deletion = UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)
    assert admin.alter_user_scram_credentials([deletion])[user].result(20) is None
    wait_until(
        lambda: describe() == {ScramMechanism.SCRAM_SHA_512: 8192}, message="deletion described"
    )
    error = ck_login_error(sasl_bootstrap, scram_conf("SCRAM-SHA-256", user, password))
    check_librdkafka_auth_error(error, sasl_bootstrap, scram_failed("SCRAM-SHA-256"))
    assert ck_login_error(sasl_bootstrap, scram_conf("SCRAM-SHA-512", user, password)) is None

    with pytest.raises(KafkaException) as raised:
        admin.alter_user_scram_credentials([deletion])[user].result(20)
    assert (raised.value.args[0].code(), raised.value.args[0].str()) == (
        RESOURCE_NOT_FOUND,
        DELETE_MISSING,
    )
    nobody = name("nobody")
    with pytest.raises(KafkaException) as raised:
        admin.describe_user_scram_credentials([nobody])[nobody].result(20)
    assert raised.value.args[0].code() == RESOURCE_NOT_FOUND
    # librdkafka 2.16 appends the byte after the message (the empty credential
    # list's length, \x01) to it; what a user reads starts with Kafka's message.
    assert (
        raised.value.args[0]
        .str()
        .startswith(f"Attempt to describe a user credential that does not exist: {nobody}")
    ), raised.value.args[0].str()


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("SaslAuthenticate")
def test_confluent_plain_wrong_password(sasl_bootstrap):
    error = ck_login_error(sasl_bootstrap, plain_conf(password="wrong"))
    check_librdkafka_auth_error(error, sasl_bootstrap, INVALID_PLAIN)


# --- Kafka's own tools --------------------------------------------------------------------


@pytest.mark.client("java")
@pytest.mark.api("AlterUserScramCredentials", "DescribeUserScramCredentials")
def test_kafka_configs_adds_and_describes_a_scram_credential(bootstrap, name):
    user = name("u")
    entity = ("--entity-type", "users", "--entity-name", user)
    add = "SCRAM-SHA-256=[iterations=8192,password=user-secret]"
    proc = java.run(
        "kafka-configs", "--bootstrap-server", bootstrap, "--alter", "--add-config", add, *entity
    )
    assert (proc.returncode, proc.stdout) == (0, f"Completed updating config for user {user}.\n"), (
        proc.stderr
    )
    wait_described(bootstrap, user, {1: 8192})
    proc = java.run("kafka-configs", "--bootstrap-server", bootstrap, "--describe", *entity)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        f"SCRAM credential configs for user-principal '{user}' are SCRAM-SHA-256=iterations=8192\n"
    )


@pytest.mark.client("java")
@pytest.mark.api("AlterUserScramCredentials")
def test_kafka_configs_deletes_a_scram_credential_once(bootstrap, name):
    user = name("u")
    entity = ("--entity-type", "users", "--entity-name", user)
    add = "SCRAM-SHA-256=[iterations=8192,password=user-secret]"
    proc = java.run(
        "kafka-configs", "--bootstrap-server", bootstrap, "--alter", "--add-config", add, *entity
    )
    assert proc.returncode == 0, proc.stderr
    wait_described(bootstrap, user, {1: 8192})
    delete = ("--alter", "--delete-config", "SCRAM-SHA-256")
    proc = java.run("kafka-configs", "--bootstrap-server", bootstrap, *delete, *entity)
    assert (proc.returncode, proc.stdout) == (0, f"Completed updating config for user {user}.\n"), (
        proc.stderr
    )
    wait_described(bootstrap, user, None)
    proc = java.run("kafka-configs", "--bootstrap-server", bootstrap, *delete, *entity)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert (
        "Caused by: org.apache.kafka.common.errors.ResourceNotFoundException: "
        f"{DELETE_MISSING}\n" in proc.stderr
    ), proc.stderr


@pytest.mark.client("java")
@pytest.mark.api("SaslHandshake", "SaslAuthenticate", "Metadata")
def test_kafka_topics_lists_over_sasl_plain(sasl_bootstrap, topic, tmp_path):
    t = topic()
    config = jaas_properties(tmp_path, "PLAIN", PLAIN_USER, PLAIN_PASSWORD)
    proc = java.run(
        "kafka-topics", "--bootstrap-server", sasl_bootstrap, "--command-config", config, "--list"
    )
    assert proc.returncode == 0, proc.stderr
    assert t in proc.stdout.splitlines()


@pytest.mark.client("java")
@pytest.mark.api("SaslAuthenticate")
def test_kafka_topics_wrong_password(sasl_bootstrap, tmp_path):
    config = jaas_properties(tmp_path, "PLAIN", PLAIN_USER, "wrong")
    proc = java.run(
        "kafka-topics", "--bootstrap-server", sasl_bootstrap, "--command-config", config, "--list"
    )
    assert proc.returncode == 1
    assert proc.stdout == f"Error while executing topic command : {INVALID_PLAIN}\n"
    assert f"SaslAuthenticationException: {INVALID_PLAIN}" in proc.stderr


@pytest.mark.client("java")
@pytest.mark.api("SaslHandshake", "SaslAuthenticate", "Produce", "Fetch")
def test_console_producer_consumer_over_scram_sha_512(
    bootstrap, sasl_bootstrap, topic, name, tmp_path
):
    user, password = name("u"), "console-secret"
    create_scram_user(bootstrap, user, password, mechanisms=(2,))
    t = topic()
    config = jaas_properties(tmp_path, "SCRAM-SHA-512", user, password)
    java.console_round_trip(sasl_bootstrap, t, config, ["hello", "world"])


# --- kcat ---------------------------------------------------------------------------------


def kcat_plain(sasl_bootstrap: str, password: str = PLAIN_PASSWORD) -> list[str]:
    return [
        "-b",
        sasl_bootstrap,
        "-X",
        "security.protocol=SASL_PLAINTEXT",
        "-X",
        "sasl.mechanisms=PLAIN",
        "-X",
        f"sasl.username={PLAIN_USER}",
        "-X",
        f"sasl.password={password}",
    ]


@pytest.mark.client("kcat")
@pytest.mark.api("SaslHandshake", "SaslAuthenticate", "Produce", "Metadata", "Fetch")
def test_kcat_plain_produces_and_lists_metadata(sasl_bootstrap, topic):
    import json

    t = topic()
    p = java.kcat(*kcat_plain(sasl_bootstrap), "-P", "-t", t, input="one\ntwo\n")
    assert p.returncode == 0, p.stderr
    p = java.kcat(*kcat_plain(sasl_bootstrap), "-L", "-J", "-t", t)
    assert p.returncode == 0, p.stderr
    md = json.loads(p.stdout)
    assert md["brokers"] == [{"id": 1, "name": sasl_bootstrap}]
    assert md["originating_broker"]["name"] == f"sasl_plaintext://{sasl_bootstrap}/1"
    assert [(x["topic"], len(x["partitions"])) for x in md["topics"]] == [(t, 1)]
    p = java.kcat(*kcat_plain(sasl_bootstrap), "-C", "-t", t, "-o", "beginning", "-e", "-q")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["one", "two"]


@pytest.mark.client("kcat")
@pytest.mark.api("SaslAuthenticate")
def test_kcat_plain_wrong_password(sasl_bootstrap):
    p = java.kcat(*kcat_plain(sasl_bootstrap, "wrong"), "-L", "-m", "2")
    assert p.returncode == 1
    assert f"SASL authentication error: {INVALID_PLAIN} (after " in p.stderr, p.stderr


# --- raw: the PLAINTEXT listener ------------------------------------------------------------


@pytest.mark.client("raw")
@pytest.mark.api("SaslHandshake", "SaslAuthenticate")
def test_sasl_requests_on_the_plaintext_listener(bootstrap):
    """No SASL on PLAINTEXT: ILLEGAL_SASL_STATE, as after a login, and the connection stays."""
    with raw.Connection(bootstrap) as conn:
        for version in (0, 1):
            assert raw.sasl_handshake(conn, "PLAIN", version) == (ILLEGAL_SASL_STATE, [])
        for version in (0, 1, 2):
            answer = raw.sasl_authenticate(conn, b"\0alice\0alice-secret", version)
            assert answer == raw.SaslAuthenticated(
                ILLEGAL_SASL_STATE, AFTER_LOGIN, b"", 0 if version >= 1 else None
            )
        assert raw.api_versions(conn, 3).error_code == NONE


# --- raw: the SASL listener before and during login ---------------------------------------


@pytest.mark.client("raw")
@pytest.mark.api("ApiVersions", "SaslHandshake", "SaslAuthenticate")
def test_api_versions_before_login(bootstrap, sasl_bootstrap):
    """ApiVersions is answered before a login, with the PLAINTEXT listener's list."""
    with raw.Connection(sasl_bootstrap) as conn:
        before_login = raw.api_versions(conn, 3)
    with raw.Connection(bootstrap) as conn:
        plaintext = raw.api_versions(conn, 3)
    assert before_login.error_code == NONE
    assert before_login.versions == plaintext.versions
    for key, (lo, hi) in {17: (0, 1), 36: (0, 2), 50: (0, 0), 51: (0, 0)}.items():
        assert before_login.versions.get(key) == (lo, hi), key


def _first_requests(conn: raw.Connection, case: str) -> None:
    """Send what the case sends before a SaslHandshake, answers included."""
    if case == "metadata first":
        conn.send(3, 1, struct_int32(0))
    elif case == "metadata after api versions":
        assert raw.api_versions(conn, 3).error_code == NONE
        conn.send(3, 1, struct_int32(0))
    elif case == "api versions twice":
        assert raw.api_versions(conn, 3).error_code == NONE
        conn.send(18, 0, b"")
    elif case == "authenticate before handshake":
        conn.send(36, 2, b"\x14\0alice\0alice-secret\x00", flexible_header=True)
    elif case == "describe scram credentials":
        conn.send(50, 0, b"\x00\x00", flexible_header=True)
    else:
        raise ValueError(case)


def struct_int32(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


@pytest.mark.client("raw")
@pytest.mark.api("SaslHandshake", "Metadata")
@pytest.mark.parametrize(
    "case",
    [
        "metadata first",
        "metadata after api versions",
        "api versions twice",
        "authenticate before handshake",
        "describe scram credentials",
    ],
)
def test_request_before_handshake_closes_the_connection(sasl_bootstrap, case):
    """Before a SaslHandshake only one ApiVersions is allowed: anything else
    closes the connection without an answer."""
    with raw.Connection(sasl_bootstrap) as conn:
        _first_requests(conn, case)
        assert conn.closed_by_broker() == b""


@pytest.mark.client("raw")
@pytest.mark.api("SaslHandshake", "ApiVersions", "Metadata")
def test_request_between_handshake_and_authenticate(sasl_bootstrap):
    """After the handshake only SaslAuthenticate: anything else gets an error
    answer, then the connection closes."""
    with raw.Connection(sasl_bootstrap) as conn:
        assert raw.sasl_handshake(conn, "PLAIN") == (NONE, MECHANISMS)
        answer = raw.api_versions(conn, 3)
        assert (answer.error_code, answer.versions) == (ILLEGAL_SASL_STATE, {})
        assert conn.closed_by_broker() == b""
    with raw.Connection(sasl_bootstrap) as conn:
        assert raw.sasl_handshake(conn, "PLAIN") == (NONE, MECHANISMS)
        # An empty Metadata v1 answer: no brokers, controller -1, no topics.
        assert raw.metadata_v1(conn) == ([], -1, 0)
        assert conn.closed_by_broker() == b""
    with raw.Connection(sasl_bootstrap) as conn:
        assert raw.sasl_handshake(conn, "PLAIN") == (NONE, MECHANISMS)
        assert raw.sasl_handshake(conn, "PLAIN") == (ILLEGAL_SASL_STATE, [])
        assert conn.closed_by_broker() == b""


@pytest.mark.client("raw")
@pytest.mark.api("SaslHandshake")
@pytest.mark.parametrize(
    "mechanism,version",
    [("GSSAPI", 1), ("FOO", 1), ("", 1), ("plain", 1), ("OAUTHBEARER", 1), ("FOO", 0)],
)
def test_unsupported_mechanism(sasl_bootstrap, mechanism, version):
    with raw.Connection(sasl_bootstrap) as conn:
        assert raw.sasl_handshake(conn, mechanism, version) == (
            UNSUPPORTED_SASL_MECHANISM,
            MECHANISMS,
        )
        assert conn.closed_by_broker() == b""


# (token, version, the error message; None: the login succeeds)
PLAIN_TOKENS = [
    (b"\0alice\0alice-secret", 0, None),
    (b"\0alice\0alice-secret", 1, None),
    (b"\0alice\0alice-secret", 2, None),
    (b"\0admin\0admin-secret", 2, None),
    (b"alice\0alice\0alice-secret", 2, None),
    (b"\0alice\0wrong", 0, INVALID_PLAIN),
    (b"\0alice\0wrong", 1, INVALID_PLAIN),
    (b"\0alice\0wrong", 2, INVALID_PLAIN),
    (b"\0bob\0alice-secret", 2, INVALID_PLAIN),
    (b"\0ALICE\0alice-secret", 2, INVALID_PLAIN),
    (b"\0\0alice-secret", 2, "Authentication failed: username not specified"),
    (b"\0alice\0", 2, "Authentication failed: password not specified"),
    (
        b"bob\0alice\0alice-secret",
        2,
        "Authentication failed: Client requested an authorization id that is different from "
        "username",
    ),
    (b"aliceNoNuls", 2, "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"", 2, "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"\0alice", 2, "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"\0alice\0alice-secret\0extra", 2, "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
]


@pytest.mark.client("raw")
@pytest.mark.api("SaslHandshake", "SaslAuthenticate", "Metadata")
@pytest.mark.parametrize(
    "token,version,message",
    PLAIN_TOKENS,
    ids=[f"{t!r}-v{v}".replace("\\x00", "0") for t, v, _ in PLAIN_TOKENS],
)
def test_plain_authenticate(sasl_bootstrap, token, version, message):
    with raw.Connection(sasl_bootstrap) as conn:
        assert raw.sasl_handshake(conn, "PLAIN") == (NONE, MECHANISMS)
        answer = raw.sasl_authenticate(conn, token, version)
        lifetime = 0 if version >= 1 else None
        if message is None:
            assert answer == raw.SaslAuthenticated(NONE, "", b"", lifetime)
            logged_in_metadata(conn, sasl_bootstrap)
        else:
            assert answer == raw.SaslAuthenticated(
                SASL_AUTHENTICATION_FAILED, message, b"", lifetime
            )
            assert conn.closed_by_broker() == b""


@pytest.mark.client("raw")
@pytest.mark.api("SaslAuthenticate", "connection.failed.authentication.delay.ms")
def test_failed_login_is_answered_after_a_delay(sasl_bootstrap):
    """Kafka answers a failed authentication (and closes) only after
    connection.failed.authentication.delay.ms, 100 ms by default (KIP-306),
    which slows down password guessing and clients' reconnection loops."""
    with raw.Connection(sasl_bootstrap) as conn:
        assert raw.sasl_handshake(conn, "PLAIN") == (NONE, MECHANISMS)
        started = time.monotonic()
        answer = raw.sasl_authenticate(conn, b"\0alice\0wrong")
        waited = time.monotonic() - started
        assert answer.error_code == SASL_AUTHENTICATION_FAILED
    assert waited >= 0.1, f"answered after {waited * 1000:.1f} ms"


@pytest.mark.client("raw")
@pytest.mark.api("SaslHandshake", "SaslAuthenticate")
def test_sasl_requests_after_login(sasl_bootstrap):
    """After a login, SASL requests get ILLEGAL_SASL_STATE and the connection stays."""
    with raw.Connection(sasl_bootstrap) as conn:
        assert raw.sasl_handshake(conn, "PLAIN") == (NONE, MECHANISMS)
        assert raw.sasl_authenticate(conn, b"\0alice\0alice-secret").error_code == NONE
        assert raw.sasl_handshake(conn, "PLAIN") == (ILLEGAL_SASL_STATE, [])
        assert raw.sasl_handshake(conn, "FOO") == (ILLEGAL_SASL_STATE, [])
        again = raw.sasl_authenticate(conn, b"\0alice\0alice-secret", 2)
        assert again == raw.SaslAuthenticated(ILLEGAL_SASL_STATE, AFTER_LOGIN, b"", 0)
        garbage = raw.sasl_authenticate(conn, b"garbage", 0)
        assert garbage == raw.SaslAuthenticated(ILLEGAL_SASL_STATE, AFTER_LOGIN, b"", None)
        assert raw.api_versions(conn, 3).error_code == NONE
        logged_in_metadata(conn, sasl_bootstrap)


@pytest.mark.client("raw")
@pytest.mark.api("SaslHandshake", "unframed SASL tokens")
def test_v0_handshake_then_a_bare_plain_token(sasl_bootstrap):
    """After SaslHandshake v0 the token goes without a Kafka header, and the
    answer is a bare frame: empty for PLAIN."""
    with raw.Connection(sasl_bootstrap) as conn:
        assert raw.sasl_handshake(conn, "PLAIN", 0) == (NONE, MECHANISMS)
        conn.send_frame(b"\0alice\0alice-secret")
        assert conn.receive_frame() == b""
        logged_in_metadata(conn, sasl_bootstrap)
    with raw.Connection(sasl_bootstrap) as conn:
        assert raw.sasl_handshake(conn, "PLAIN", 0) == (NONE, MECHANISMS)
        conn.send_frame(b"\0alice\0wrong")
        assert conn.closed_by_broker() == b""


# --- raw: SCRAM --------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.client("raw")
@pytest.mark.api("SaslHandshake", "SaslAuthenticate")
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_unknown_user_fails_at_the_first_message(sasl_bootstrap, name, mechanism):
    with raw.Connection(sasl_bootstrap) as conn:
        assert raw.sasl_handshake(conn, mechanism) == (NONE, MECHANISMS)
        answer = raw.sasl_authenticate(conn, f"n,,n={name('nobody')},r=abcdefgh".encode())
        assert answer == raw.SaslAuthenticated(
            SASL_AUTHENTICATION_FAILED, scram_failed(mechanism), b"", 0
        )
        assert conn.closed_by_broker() == b""


@pytest.mark.client("raw")
@pytest.mark.api("AlterUserScramCredentials", "SaslHandshake", "SaslAuthenticate")
@pytest.mark.parametrize("mechanism", [1, 2], ids=["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_exchange_by_hand(bootstrap, sasl_bootstrap, name, mechanism):
    """RFC 5802 with the stored salt and iterations; the server's signature checks out;
    a wrong proof fails at the final message."""
    mech_name, hash_name = SCRAM[mechanism]
    user, password = name("u"), "hand-secret"
    stored = upsertion(user, mechanism, password, iterations=4096)
    with raw.Connection(bootstrap) as conn:
        results = raw.alter_user_scram_credentials(conn, upsertions=[stored])
    assert results == [raw.ScramUserResult(user, NONE, None)]
    wait_described(bootstrap, user, {mechanism: 4096})
    salt, salted_password = stored[3], stored[4]

    def digest(key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, hash_name).digest()

    for right_proof in (True, False):
        with raw.Connection(sasl_bootstrap) as conn:
            assert raw.sasl_handshake(conn, mech_name) == (NONE, MECHANISMS)
            client_nonce = _b64(os.urandom(18))
            first_bare = f"n={user},r={client_nonce}"
            first = raw.sasl_authenticate(conn, f"n,,{first_bare}".encode())
            assert (first.error_code, first.error_message, first.session_lifetime_ms) == (
                NONE,
                "",
                0,
            )
            assert first.auth_bytes is not None
            server_first = first.auth_bytes.decode()
            found = re.fullmatch(r"r=([!-+\--~]+),s=([A-Za-z0-9+/=]*),i=(\d+)", server_first)
            assert found, server_first
            nonce = found.group(1)
            assert nonce.startswith(client_nonce) and len(nonce) > len(client_nonce)
            assert (base64.b64decode(found.group(2)), int(found.group(3))) == (salt, 4096)
            final_bare = f"c=biws,r={nonce}"
            auth_message = f"{first_bare},{server_first},{final_bare}".encode()
            client_key = digest(salted_password, b"Client Key")
            signature = digest(hashlib.new(hash_name, client_key).digest(), auth_message)
            proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
            if not right_proof:
                proof = bytes(len(proof))
            final = raw.sasl_authenticate(conn, f"{final_bare},p={_b64(proof)}".encode())
            if right_proof:
                server_key = digest(salted_password, b"Server Key")
                verifier = f"v={_b64(digest(server_key, auth_message))}".encode()
                assert final == raw.SaslAuthenticated(NONE, "", verifier, 0)
                logged_in_metadata(conn, sasl_bootstrap)
            else:
                assert final == raw.SaslAuthenticated(
                    SASL_AUTHENTICATION_FAILED, scram_failed(mech_name), b"", 0
                )
                assert conn.closed_by_broker() == b""


# --- raw: DescribeUserScramCredentials and AlterUserScramCredentials ------------------------


def by_user(results: list[raw.ScramUserResult]) -> dict[str, tuple]:
    """Results keyed by user (Kafka's order is its HashMap's); credentials as a
    dict (their order follows a HashMap of mechanisms too)."""
    users = [r.user for r in results]
    assert len(users) == len(set(users)), f"a user answered twice: {results}"
    return {
        r.user: (r.error_code, r.error_message)
        + (() if r.credentials is None else (dict(r.credentials),))
        for r in results
    }


@pytest.mark.client("raw")
@pytest.mark.api("DescribeUserScramCredentials")
def test_describe_user_scram_credentials(bootstrap, name):
    a, b, nobody = name("a"), name("b"), name("nobody")
    create_scram_user(bootstrap, a, "a-secret", mechanisms=(1, 2))
    create_scram_user(bootstrap, b, "b-secret", mechanisms=(1,))
    not_found = "Attempt to describe a user credential that does not exist: "
    twice = "Cannot describe SCRAM credentials for the same user twice in a single request: "

    def describe(users):
        with raw.Connection(bootstrap) as conn:
            error, _, results = raw.describe_user_scram_credentials(conn, users)
        assert error == NONE
        # Whether a success's message is "" or null: see the next test.
        return {
            user: (code, message or "", *rest)
            for user, (code, message, *rest) in by_user(results).items()
        }

    both, one = (NONE, "", {1: 4096, 2: 4096}), (NONE, "", {1: 4096})
    assert describe([a]) == {a: both}
    assert describe([nobody]) == {nobody: (RESOURCE_NOT_FOUND, not_found + nobody, {})}
    assert describe([""]) == {"": (RESOURCE_NOT_FOUND, not_found, {})}
    assert describe([a, a]) == {a: (DUPLICATE_RESOURCE, twice + a, {})}
    assert describe([nobody, a, nobody]) == {
        a: both,
        nobody: (DUPLICATE_RESOURCE, twice + nobody, {}),
    }
    assert describe([a, nobody, b]) == {
        a: both,
        b: one,
        nobody: (RESOURCE_NOT_FOUND, not_found + nobody, {}),
    }
    everyone: list[str] | None
    for everyone in (None, []):
        described_all = describe(everyone)
        assert (described_all.get(a), described_all.get(b)) == (both, one)
        assert all(code == NONE for code, *_ in described_all.values())


@pytest.mark.client("raw")
@pytest.mark.api("DescribeUserScramCredentials")
def test_describe_user_scram_credentials_success_messages(bootstrap, name):
    """Kafka's answer carries an empty error message (not null), at the top
    and for each user it describes."""
    user = name("u")
    create_scram_user(bootstrap, user, "u-secret", mechanisms=(1,))
    with raw.Connection(bootstrap) as conn:
        error, message, results = raw.describe_user_scram_credentials(conn, [user])
    assert (error, message) == (NONE, "")
    assert results == [raw.ScramUserResult(user, NONE, "", [(1, 4096)])]


@pytest.mark.client("raw")
@pytest.mark.api("AlterUserScramCredentials", "DescribeUserScramCredentials")
def test_alter_user_scram_credentials_errors(bootstrap, name):
    """Each user's result, keyed by user; nothing is stored for a user in error."""
    sha256, sha512 = 1, 2

    def alter(deletions=(), upsertions=()):
        with raw.Connection(bootstrap) as conn:
            return by_user(raw.alter_user_scram_credentials(conn, deletions, upsertions))

    def up(user, mechanism=sha256, iterations=4096):
        return upsertion(user, mechanism, "pw", iterations)

    few = (UNACCEPTABLE_CREDENTIAL, "Too few iterations")
    many = (UNACCEPTABLE_CREDENTIAL, "Too many iterations")
    unknown = (UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    empty = (UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    ok = (NONE, None)

    u = name("u")
    assert alter(upsertions=[up(u, iterations=4095)]) == {u: few}
    assert alter(upsertions=[up(u, sha512, iterations=0)]) == {u: few}
    assert alter(upsertions=[up(u, iterations=-1)]) == {u: few}
    assert alter(upsertions=[up(u, iterations=16385)]) == {u: many}
    for mechanism in (0, 3, -1):
        assert alter(upsertions=[up(u, mechanism)]) == {u: unknown}
    assert alter(upsertions=[up(u, 0, iterations=1)]) == {u: unknown}
    for mechanism in (0, 3):
        assert alter(deletions=[(u, mechanism)]) == {u: unknown}
    assert alter(upsertions=[up("")]) == {"": empty}
    assert alter(deletions=[("", sha256)]) == {"": empty}
    assert alter(deletions=[(u, sha256)]) == {u: (RESOURCE_NOT_FOUND, DELETE_MISSING)}
    # A deletion is checked first: this upsertion is not made.
    assert alter(deletions=[(u, sha256)], upsertions=[up(u)]) == {
        u: (RESOURCE_NOT_FOUND, DELETE_MISSING)
    }
    # A user at most once per request, across mechanisms.
    assert alter(upsertions=[up(u, sha256), up(u, sha512)]) == {
        u: (DUPLICATE_RESOURCE, DUPLICATE_ALTER)
    }
    assert alter(upsertions=[up(u), up(u, iterations=8192)]) == {
        u: (DUPLICATE_RESOURCE, DUPLICATE_ALTER)
    }
    assert described(bootstrap, u) is None  # nothing of the above was stored

    # The limits are inclusive.
    low, high = name("low"), name("high")
    assert alter(upsertions=[up(low, iterations=4096), up(high, sha512, iterations=16384)]) == {
        low: ok,
        high: ok,
    }
    wait_described(bootstrap, low, {sha256: 4096})
    wait_described(bootstrap, high, {sha512: 16384})
    assert alter(deletions=[(low, sha256)], upsertions=[up(low)]) == {
        low: (DUPLICATE_RESOURCE, DUPLICATE_ALTER)
    }
    assert alter(deletions=[(low, sha256)], upsertions=[up(low, sha512)]) == {
        low: (DUPLICATE_RESOURCE, DUPLICATE_ALTER)
    }
    assert alter(deletions=[(low, sha256), (low, sha256)]) == {
        low: (DUPLICATE_RESOURCE, DUPLICATE_ALTER)
    }
    assert alter(deletions=[(high, sha256)]) == {high: (RESOURCE_NOT_FOUND, DELETE_MISSING)}
    described_low = described(bootstrap, low)
    assert described_low == {sha256: 4096}

    # Several users in one request: each its own result.
    fresh, ghost, bad = name("fresh"), name("ghost"), name("bad")
    assert alter(
        deletions=[(ghost, sha256), (low, sha256)],
        upsertions=[up(fresh, sha512), up(bad, iterations=4095), up("")],
    ) == {low: ok, fresh: ok, ghost: (RESOURCE_NOT_FOUND, DELETE_MISSING), bad: few, "": empty}
    wait_described(bootstrap, low, None)
    wait_described(bootstrap, fresh, {sha512: 4096})
    assert described(bootstrap, bad) is None
    assert alter() == {}
