"""SCRAM (RFC 5802, RFC 7677) as Kafka serves it: credentials and the server's exchange.

A credential is what the broker keeps of a password: a salt, an iteration
count, and the two keys derived from the salted password (the stored key,
which checks a client's proof, and the server key, which signs the server's
answer). The password itself is never seen: an admin client sends the salted
password (AlterUserScramCredentials), and a client logging in proves it knows
it. Credentials are kept as Kafka kept them in ZooKeeper, a user config value
per mechanism:

    SCRAM-SHA-256 -> "salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=4096"

Pure computation, no I/O: the authenticator (broker/security/sasl.py) feeds
the client's messages to a `ScramExchange` and sends what it returns.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from enum import Enum

# Kafka's bounds on the iteration count of a credential (ScramMechanism).
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


class ScramMechanism(Enum):
    """Kafka's ScramMechanism: the SASL name, the wire type and the hash."""

    SCRAM_SHA_256 = ("SCRAM-SHA-256", 1, "sha256")
    SCRAM_SHA_512 = ("SCRAM-SHA-512", 2, "sha512")

    def __init__(self, mechanism_name: str, type_code: int, hash_name: str):
        self.mechanism_name = mechanism_name
        self.type_code = type_code
        self.hash_name = hash_name

    @classmethod
    def by_name(cls, name: str) -> ScramMechanism | None:
        for m in cls:
            if m.mechanism_name == name:
                return m
        return None

    @classmethod
    def by_type(cls, type_code: int) -> ScramMechanism | None:
        for m in cls:
            if m.type_code == type_code:
                return m
        return None

    def hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self.hash_name).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        """Hi() of RFC 5802: what a client computes from the password."""
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode(), salt, iterations)


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(
        cls, mechanism: ScramMechanism, salt: bytes, salted_password: bytes, iterations: int
    ) -> ScramCredential:
        client_key = mechanism.hmac(salted_password, b"Client Key")
        return cls(
            salt=salt,
            stored_key=mechanism.hash(client_key),
            server_key=mechanism.hmac(salted_password, b"Server Key"),
            iterations=iterations,
        )

    @classmethod
    def from_password(
        cls, mechanism: ScramMechanism, password: str, iterations: int, salt: bytes | None = None
    ) -> ScramCredential:
        salt = secrets.token_bytes(32) if salt is None else salt
        salted = mechanism.salted_password(password, salt, iterations)
        return cls.from_salted_password(mechanism, salt, salted, iterations)

    def to_config_value(self) -> str:
        """Kafka's ScramCredentialUtils.credentialToString."""
        b64 = base64.b64encode
        return (
            f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
            f"server_key={b64(self.server_key).decode()},iterations={self.iterations}"
        )

    @classmethod
    def from_config_value(cls, value: str) -> ScramCredential | None:
        """The credential a user config value holds, None when it holds none."""
        try:
            fields = dict(part.split("=", 1) for part in value.split(","))
            return cls(
                salt=base64.b64decode(fields["salt"], validate=True),
                stored_key=base64.b64decode(fields["stored_key"], validate=True),
                server_key=base64.b64decode(fields["server_key"], validate=True),
                iterations=int(fields["iterations"]),
            )
        except (KeyError, ValueError):
            return None


class ScramError(Exception):
    """The exchange failed; the message is what the client is told."""


def random_nonce() -> str:
    """A nonce as Kafka makes them (its server's part, and its client's):
    130 random bits in lower-case base 36."""
    n = secrets.randbits(130)
    digits = ""
    while n:
        n, d = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[d] + digits
    return digits or "0"


class ScramExchange:
    """The server's side of one SCRAM login: `first` answers the client's
    first message, `final` checks its proof and answers with the server's
    signature. `lookup(user)` gives the user's credential for this
    mechanism, or None. Each step raises ScramError when the login fails:
    as Kafka, with the same message whatever failed (an unknown user, a
    malformed message, a wrong proof), but an authorization id that is not
    the user's."""

    def __init__(self, mechanism: ScramMechanism, lookup, server_nonce=random_nonce):
        self.mechanism = mechanism
        self._lookup = lookup
        # Makes the server's part of the nonce (tests give RFC 7677's).
        self._server_nonce = server_nonce
        self.username: str | None = None
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    def failure(self) -> ScramError:
        return ScramError(
            "Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {self.mechanism.mechanism_name}"
        )

    def first(self, message: bytes) -> bytes:
        # gs2-header "n," [a=authzid] ",", then n=user,r=nonce and extensions.
        # Only "n": no TLS to bind a channel to, and a client that could bind
        # one ("y") is refused as Kafka refuses it.
        parts = _decode(message, self).split(",", 2)
        if len(parts) != 3 or parts[0] != "n":
            raise self.failure()
        _, authzid, bare = parts
        attrs = _attributes(bare, self)
        if attrs.get("tokenauth") == "true":  # delegation tokens are not served
            raise self.failure()
        username = _unescape_name(attrs.get("n", ""), self)
        if not username or not attrs.get("r"):
            raise self.failure()
        if authzid and (
            not authzid.startswith("a=") or _unescape_name(authzid[2:], self) != username
        ):
            raise ScramError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        credential = self._lookup(username)
        if credential is None:
            raise self.failure()
        self.username, self._credential = username, credential
        self._client_first_bare = bare
        self._nonce = attrs["r"] + self._server_nonce()
        self._server_first = (
            f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},"
            f"i={credential.iterations}"
        )
        return self._server_first.encode()

    def final(self, message: bytes) -> bytes:
        text = _decode(message, self)
        head, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise self.failure()
        attrs = _attributes(head, self)
        # The channel binding (c=) only enters the AuthMessage, as in Kafka.
        if "c" not in attrs or attrs.get("r") != self._nonce:
            raise self.failure()
        credential = self._credential
        assert credential is not None  # first() succeeded
        try:
            proof = base64.b64decode(proof_text, validate=True)
        except ValueError:
            raise self.failure() from None
        auth_message = f"{self._client_first_bare},{self._server_first},{head}".encode()
        signature = self.mechanism.hmac(credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise self.failure()
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(self.mechanism.hash(client_key), credential.stored_key):
            raise self.failure()
        server_signature = self.mechanism.hmac(credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)


# RFC 5802's names escape "," as =2C and "=" as =3D; any other "=" is invalid.
def _unescape_name(name: str, exchange: ScramExchange) -> str:
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise exchange.failure()
    return name.replace("=2C", ",").replace("=3D", "=")


def _attributes(message: str, exchange: ScramExchange) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise exchange.failure()
        attrs.setdefault(key, value)
    return attrs


def _decode(message: bytes, exchange: ScramExchange) -> str:
    try:
        return message.decode()
    except UnicodeDecodeError:
        raise exchange.failure() from None


class ScramClient:
    """The client's side of one SCRAM login, for a broker logging in to
    another: `first`, then `final` with the server's first message, then
    `verify` the server's signature (a server that does not know the
    password cannot make it)."""

    def __init__(self, mechanism: ScramMechanism, username: str, password: str):
        self.mechanism = mechanism
        self._password = password
        name = username.replace("=", "=3D").replace(",", "=2C")
        self._client_first_bare = f"n={name},r={random_nonce()}"
        self._auth_message = b""
        self._salted = b""

    def first(self) -> bytes:
        return f"n,,{self._client_first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        failure = ScramError(f"Invalid SCRAM server first message: {server_first!r}")
        try:
            attrs = dict(part.split("=", 1) for part in server_first.decode().split(","))
            nonce, salt, iterations = attrs["r"], base64.b64decode(attrs["s"]), int(attrs["i"])
        except (KeyError, ValueError) as e:
            raise failure from e
        if not nonce.startswith(self._client_first_bare.split(",r=", 1)[1]):
            raise failure
        m = self.mechanism
        self._salted = m.salted_password(self._password, salt, iterations)
        without_proof = f"c=biws,r={nonce}"
        self._auth_message = (
            f"{self._client_first_bare},{server_first.decode()},{without_proof}".encode()
        )
        client_key = m.hmac(self._salted, b"Client Key")
        signature = m.hmac(m.hash(client_key), self._auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        server_key = self.mechanism.hmac(self._salted, b"Server Key")
        expected = b"v=" + base64.b64encode(self.mechanism.hmac(server_key, self._auth_message))
        if not hmac.compare_digest(server_final, expected):
            raise ScramError("The server's SCRAM signature does not match")
