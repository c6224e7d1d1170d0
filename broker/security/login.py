"""A broker logging in to another broker's SASL listener (inter-broker traffic).

Kafka takes the broker's own credentials from the inter-broker listener's
JAAS config for `sasl.mechanism.inter.broker.protocol`: its `username` and
`password` options. `SaslLogin.client()` gives the tokens to send: PLAIN's
one, or SCRAM's two with the server's signature checked at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.security.scram import ScramClient, ScramError, ScramMechanism


@dataclass(frozen=True)
class SaslLogin:
    mechanism: str
    username: str
    password: str

    def client(self) -> LoginClient:
        scram = ScramMechanism.by_name(self.mechanism)
        if scram is None:
            return _PlainClient(self.username, self.password)
        return _ScramLoginClient(ScramClient(scram, self.username, self.password))


class LoginClient:
    """first() is the first token; then next(answer) gives the next token to
    send, or None once the login is complete. Raises ScramError when the
    server's answers are wrong."""

    def first(self) -> bytes:
        raise NotImplementedError

    def next(self, answer: bytes) -> bytes | None:
        raise NotImplementedError


class _PlainClient(LoginClient):
    def __init__(self, username: str, password: str):
        self._token = f"\0{username}\0{password}".encode()

    def first(self) -> bytes:
        return self._token

    def next(self, answer: bytes) -> bytes | None:
        return None


class _ScramLoginClient(LoginClient):
    def __init__(self, scram: ScramClient):
        self._scram = scram
        self._step = 0

    def first(self) -> bytes:
        return self._scram.first()

    def next(self, answer: bytes) -> bytes | None:
        self._step += 1
        if self._step == 1:
            return self._scram.final(answer)
        if self._step == 2:
            self._scram.verify(answer)
            return None
        raise ScramError("SCRAM login already complete")
