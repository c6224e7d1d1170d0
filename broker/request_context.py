"""What a handler knows about a request besides its body.

The principal is who sent it: Kafka's `User:ANONYMOUS` on a PLAINTEXT
listener, `User:<name>` once a client has logged in on a SASL listener
(broker/security/sasl.py). An authorizer will check it in each handler
before anything else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    type: str
    name: str

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"


ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")


class RequestContext(NamedTuple):
    # Immutable like a frozen dataclass, and built for every request at a
    # third of its cost (0.65 against 2.3 us: a frozen dataclass sets each
    # field through object.__setattr__).
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    # The listener the request came in on: answers name endpoints of the same listener.
    listener: str
    # "host:port" of the client, "?" when the socket could not tell.
    client_address: str
    principal: KafkaPrincipal = ANONYMOUS

    @property
    def client_host(self) -> str:
        return self.client_address.rsplit(":", 1)[0]
