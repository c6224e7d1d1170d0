"""SCRAM as Kafka serves it: RFC 7677's exchange, Kafka's credential format and its answers."""

from __future__ import annotations

import base64

import pytest

from broker.security.sasl import java_hash_order
from broker.security.scram import ScramCredential, ScramError, ScramExchange, ScramMechanism

SHA256 = ScramMechanism.SCRAM_SHA_256
# RFC 7677, section 3: user "user", password "pencil".
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
INVALID = (
    "Authentication failed during authentication due to invalid credentials with "
    "SASL mechanism SCRAM-SHA-256"
)


def rfc_exchange(users=None) -> ScramExchange:
    credential = ScramCredential.from_password(SHA256, "pencil", 4096, salt=RFC_SALT)
    users = {"user": credential} if users is None else users
    return ScramExchange(SHA256, users.get, server_nonce=lambda: RFC_SERVER_NONCE)


def test_the_rfc_7677_exchange_gives_its_messages():
    exchange = rfc_exchange()
    assert exchange.first(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert exchange.final(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert exchange.username == "user"


def test_a_wrong_proof_fails_with_kafkas_message():
    exchange = rfc_exchange()
    exchange.first(RFC_CLIENT_FIRST)
    wrong = RFC_CLIENT_FINAL[:-8] + b"AAAAAAA="
    with pytest.raises(ScramError, match=f"^{INVALID}$"):
        exchange.final(wrong)


@pytest.mark.parametrize(
    "client_first",
    [
        b"n,,n=nobody,r=abc",  # no credential: refused at once, no made-up salt
        b"y,,n=user,r=abc",  # a client that could bind a channel
        b"p=tls-server-end-point,,n=user,r=abc",
        b"n,,n=user,r=abc,tokenauth=true",  # delegation tokens are not served
        b"n=user,r=abc",  # no gs2 header
        b"n,,n=user",  # no nonce
        b"n,,n=,r=abc",  # no user
        b"n,,n=us=er,r=abc",  # "=" not escaped
        b"\xff\xfe",
        b"",
    ],
)
def test_a_bad_first_message_fails_with_the_same_message_as_a_wrong_password(client_first):
    with pytest.raises(ScramError, match=f"^{INVALID}$"):
        rfc_exchange().first(client_first)


def test_an_authorization_id_must_be_the_user():
    assert rfc_exchange().first(b"n,a=user,n=user,r=rOprNGfwEbeRWgbNEkqO") == RFC_SERVER_FIRST
    with pytest.raises(ScramError, match="^Authentication failed: Client requested an authoriz"):
        rfc_exchange().first(b"n,a=other,n=user,r=abc")


def test_escaped_names_and_extensions_are_read():
    credential = ScramCredential.from_password(SHA256, "pw", 4096)
    exchange = rfc_exchange({"a,b=c": credential})
    assert exchange.first(b"n,,n=a=2Cb=3Dc,r=abc,ext=1").startswith(b"r=abc")
    assert exchange.username == "a,b=c"


def test_the_final_message_must_carry_the_servers_nonce():
    exchange = rfc_exchange()
    exchange.first(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError, match=f"^{INVALID}$"):
        exchange.final(RFC_CLIENT_FINAL.replace(b"%hvYD", b"%hvYE"))


def test_the_server_nonce_is_random_base36_like_kafkas():
    credential = ScramCredential.from_password(SHA256, "pw", 4096)
    nonces = set()
    for _ in range(20):
        answer = ScramExchange(SHA256, {"u": credential}.get).first(b"n,,n=u,r=abc").decode()
        nonce = answer.split(",")[0][len("r=abc") :]
        assert 20 <= len(nonce) <= 26 and set(nonce) <= set("0123456789abcdefghijklmnopqrstuvwxyz")
        nonces.add(nonce)
    assert len(nonces) == 20


def test_credentials_are_kept_in_kafkas_config_format():
    credential = ScramCredential.from_password(SHA256, "pencil", 4096, salt=RFC_SALT)
    value = credential.to_config_value()
    assert value.startswith("salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key=")
    assert value.endswith(",iterations=4096")
    assert ScramCredential.from_config_value(value) == credential
    assert ScramCredential.from_config_value("not a credential") is None


def test_sha_512_signs_with_64_bytes():
    sha512 = ScramMechanism.SCRAM_SHA_512
    credential = ScramCredential.from_password(sha512, "pw", 8192)
    exchange = ScramExchange(sha512, {"u": credential}.get)
    server_first = exchange.first(b"n,,n=u,r=abc").decode()
    nonce = server_first.split(",")[0][2:]
    auth_without_proof = f"c=biws,r={nonce}"
    salted = sha512.salted_password("pw", credential.salt, 8192)
    client_key = sha512.hmac(salted, b"Client Key")
    auth_message = f"n=u,r=abc,{server_first},{auth_without_proof}".encode()
    signature = sha512.hmac(sha512.hash(client_key), auth_message)
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    final = exchange.final(f"{auth_without_proof},p={base64.b64encode(proof).decode()}".encode())
    assert len(base64.b64decode(final[2:])) == 64


def test_java_hash_order_is_the_order_kafka_answers_in():
    # Measured on Kafka 4.3.1: SaslHandshake's mechanisms, and
    # DescribeUserScramCredentials of every user.
    assert java_hash_order(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]) == [
        "PLAIN",
        "SCRAM-SHA-512",
        "SCRAM-SHA-256",
    ]
    users = ["zed", "alice", "bert", "eve", "gina", "gina2", "aaa", "ccc", "zzz"]
    assert java_hash_order(users) == [
        "aaa", "gina2", "ccc", "eve", "gina", "zed", "alice", "bert", "zzz"
    ]  # fmt: skip
