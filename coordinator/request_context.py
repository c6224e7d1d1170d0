"""Who sent a request to a coordinator: what every request handler is given."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Who asked: `token` comes back in the Reply; `client_host` is shown by
    DescribeGroups (Kafka shows the address as "/127.0.0.1")."""

    token: Any
    api_version: int
    client_id: str = ""
    client_host: str = ""
