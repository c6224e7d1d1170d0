"""One connection's SASL authentication, on a SASL_PLAINTEXT listener.

As Kafka's SaslServerAuthenticator: a connection on a SASL listener may send
ApiVersions, then SaslHandshake (the mechanism), then SaslAuthenticate until
the mechanism's exchange ends. Anything else before that closes the
connection, and so does a failed login, once its answer is sent. Once logged
in, the connection's principal is `User:<name>` and its requests go to the
handlers like any other (where SaslHandshake and SaslAuthenticate are answered
ILLEGAL_SASL_STATE, as on a PLAINTEXT listener).

A SaslHandshake at v0 means the client sends the mechanism's tokens next as
bare frames, without SaslAuthenticate around them (clients before Kafka 1.0).

Mechanisms: PLAIN (users from the listener's JAAS config) and SCRAM-SHA-256,
SCRAM-SHA-512 (credentials from the cluster metadata). Pure state: the
connection does the I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from broker.request_context import KafkaPrincipal
from broker.security.scram import ScramCredential, ScramError, ScramExchange, ScramMechanism
from wire.error_codes import ErrorCode

PLAIN = "PLAIN"
SUPPORTED_MECHANISMS = (PLAIN, "SCRAM-SHA-256", "SCRAM-SHA-512")

# (user, mechanism) -> the user's SCRAM credential, None if it has none.
ScramLookup = Callable[[str, ScramMechanism], ScramCredential | None]


@dataclass(frozen=True)
class ListenerSasl:
    """What a SASL listener accepts."""

    # The mechanisms enabled, in the order of `sasl.enabled.mechanisms`.
    mechanisms: tuple[str, ...]
    # PLAIN's users and passwords (the JAAS config's user_<name> options).
    plain_users: Mapping[str, str] = field(default_factory=dict)
    # `sasl.server.max.receive.size`: the largest frame before login.
    max_receive_size: int = 524288
    # `connections.max.reauth.ms`: how long a login lasts (0: the connection's life).
    max_reauth_ms: int = 0
    # `connection.failed.authentication.delay.ms`: a failed login's answer waits this long.
    failed_authentication_delay_ms: int = 100


class AuthenticationFailed(Exception):
    """The login failed: the answer carries this message, then the connection closes."""


class SaslAuthenticator:
    """Kafka's states: first ApiVersions or SaslHandshake, then (after an
    ApiVersions) SaslHandshake only, then SaslAuthenticate until the
    mechanism's exchange ends (FAILED once a login or a request failed). The
    connection turns frames into calls of `api_versions`, `handshake`,
    `authenticate` or, after a v0 handshake, `evaluate`, and does what the
    state and the answers say."""

    VERSIONS_OR_HANDSHAKE = "versions or handshake"
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    FAILED = "failed"

    def __init__(
        self,
        settings: ListenerSasl,
        scram_lookup: ScramLookup,
        reauthenticating: tuple[KafkaPrincipal, str] | None = None,
    ):
        self.settings = settings
        self._scram_lookup = scram_lookup
        # A login again on a logged-in connection (KIP-368): the principal
        # and mechanism it must keep. It starts at the handshake.
        self._reauthenticating = reauthenticating
        self.state = self.VERSIONS_OR_HANDSHAKE if reauthenticating is None else self.HANDSHAKE
        self.principal: KafkaPrincipal | None = None
        # True after a v0 handshake: the next frames are bare tokens.
        self.raw_tokens = False
        self.mechanism: str | None = None
        self._scram: ScramExchange | None = None
        # Kafka lists its enabled mechanisms from a java.util.HashSet.
        self._listed = java_hash_order(settings.mechanisms)

    @property
    def complete(self) -> bool:
        return self.state == self.COMPLETE

    # --- the Kafka requests -----------------------------------------------------

    def api_versions(self) -> bool:
        """An ApiVersions request: True if it is answered as usual (only as
        the first request), False if it closes the connection."""
        if self.state != self.VERSIONS_OR_HANDSHAKE:
            return False
        self.state = self.HANDSHAKE
        return True

    def handshake(self, version: int, mechanism: str) -> tuple[dict, bool]:
        """The SaslHandshake answer, and whether the connection closes after it."""
        if self.state not in (self.VERSIONS_OR_HANDSHAKE, self.HANDSHAKE):
            self.state = self.FAILED
            return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}, True
        if mechanism not in self.settings.mechanisms:
            self.state = self.FAILED
            if self._reauthenticating is not None:
                # Kafka closes such a re-authentication without an answer.
                raise AuthenticationFailed(f"Unsupported SASL mechanism {mechanism}")
            return {
                "error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                "mechanisms": self._listed,
            }, True
        self.mechanism = mechanism
        self.state = self.AUTHENTICATE
        self.raw_tokens = version == 0
        return {"error_code": ErrorCode.NONE, "mechanisms": self._listed}, False

    def authenticate(self, auth_bytes: bytes) -> tuple[dict, bool]:
        """The SaslAuthenticate answer, and whether the connection closes after
        it. AuthenticationFailed: close without an answer."""
        if self._reauthenticating is not None and self.mechanism != self._reauthenticating[1]:
            # Kafka lets the handshake name another mechanism, and then
            # closes the connection at its first token.
            self.state = self.FAILED
            raise AuthenticationFailed(
                f"re-authentication with {self.mechanism}, not {self._reauthenticating[1]}"
            )
        try:
            challenge = self.evaluate(auth_bytes)
        except AuthenticationFailed as e:
            return {
                "error_code": ErrorCode.SASL_AUTHENTICATION_FAILED,
                "error_message": str(e),
                "auth_bytes": b"",
                "session_lifetime_ms": 0,
            }, True
        return {
            "error_code": ErrorCode.NONE,
            "error_message": "",
            "auth_bytes": challenge,
            # Told with the last step of the login, as Kafka tells it.
            "session_lifetime_ms": self.settings.max_reauth_ms if self.complete else 0,
        }, False

    # --- the mechanisms ------------------------------------------------------------

    def evaluate(self, token: bytes) -> bytes:
        """The mechanism's answer to the client's token; the login is complete
        when the state says so. Raises AuthenticationFailed."""
        if self.state != self.AUTHENTICATE:
            raise AuthenticationFailed(f"Unexpected SASL token in state {self.state}")
        try:
            return self._evaluate(token)
        except AuthenticationFailed:
            self.state = self.FAILED
            raise

    def _evaluate(self, token: bytes) -> bytes:
        if self.mechanism == PLAIN:
            self._plain(token)
            return b""
        scram_mechanism = ScramMechanism.by_name(self.mechanism or "")
        assert scram_mechanism is not None, self.mechanism
        try:
            if self._scram is None:
                self._scram = ScramExchange(
                    scram_mechanism, lambda user: self._scram_lookup(user, scram_mechanism)
                )
                return self._scram.first(token)
            answer = self._scram.final(token)
        except ScramError as e:
            raise AuthenticationFailed(str(e)) from None
        assert self._scram.username is not None
        self._succeed(self._scram.username)
        return answer

    def _plain(self, token: bytes) -> None:
        # Kafka's PlainSaslServer: authzid NUL authcid NUL password.
        try:
            parts = token.decode().split("\0")
        except UnicodeDecodeError:
            parts = []
        if len(parts) != 3:
            raise AuthenticationFailed(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}"
            )
        authzid, username, password = parts
        if not username:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        expected = self.settings.plain_users.get(username)
        if expected is None or expected != password:
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self._succeed(username)

    def reauthentication(self) -> SaslAuthenticator:
        """A new login on this logged-in connection, which must keep its
        principal and mechanism."""
        assert self.principal is not None and self.mechanism is not None
        return SaslAuthenticator(
            self.settings, self._scram_lookup, (self.principal, self.mechanism)
        )

    def _succeed(self, username: str) -> None:
        principal = KafkaPrincipal("User", username)
        if self._reauthenticating is not None and principal != self._reauthenticating[0]:
            before = self._reauthenticating[0]
            raise AuthenticationFailed(
                "Cannot change principals during re-authentication from "
                f"{before.type}.{before.name}: {principal.type}.{principal.name}"
            )
        self.principal = principal
        self.state = self.COMPLETE
        self.raw_tokens = False


def java_hash_order(names: Iterable[str]) -> list[str]:
    """The order a java.util.HashSet (or a HashMap's keys) of these strings,
    added in this order, iterates in: String's hashCode, HashMap's spread,
    a table of 16 buckets or more. Kafka lists its enabled mechanisms, and
    answers SCRAM credential requests user by user, in that order."""
    names = list(names)
    buckets = 16
    while len(names) > buckets * 3 // 4:
        buckets *= 2

    def bucket(name: str) -> int:
        h = 0
        for ch in name:  # mechanism names are ASCII: one UTF-16 unit each
            h = (31 * h + ord(ch)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (buckets - 1)

    unique = list(dict.fromkeys(names))
    return sorted(unique, key=lambda n: (bucket(n), unique.index(n)))
