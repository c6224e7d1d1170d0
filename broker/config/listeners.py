"""Listener endpoints: `listeners`, `advertised.listeners` and
`listener.security.protocol.map`, parsed as Kafka parses them.

    parse_listeners("listeners", ["PLAINTEXT://localhost:9092"])
    # [Endpoint("PLAINTEXT", "localhost", 9092)]
"""

from __future__ import annotations

import ipaddress
import re
from typing import NamedTuple

from broker.config.keys import ConfigError, ConfigType, parse_value

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class Endpoint(NamedTuple):
    """One endpoint of `listeners`/`advertised.listeners` (Kafka's EndPoint):
    the listener's name, upper-cased, and where it is bound or reached ("" host:
    all interfaces). A value: immutable, hashable, equal by its fields, and
    `str()` gives back its NAME://host:port form (IPv6 hosts bracketed). A
    NamedTuple, so that `for name, host, port in config.listeners` reads well."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


_ENDPOINT_RE = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")


def parse_listeners(key: str, entries: list[str]) -> list[Endpoint]:
    result = []
    for entry in entries:
        m = _ENDPOINT_RE.match(entry)
        if not m or not m.group(1):
            raise ConfigError(
                f"Invalid value {','.join(entries)} for configuration {key}: "
                f"Unable to parse {entry} to a broker endpoint (expected NAME://host:port)",
                key,
                entry,
            )
        port = int(m.group(3))
        if not 0 <= port <= 65535:
            raise ConfigError(
                f"Invalid value {','.join(entries)} for configuration {key}: "
                f"port {port} of {entry} is not in [0,...,65535]",
                key,
                entry,
            )
        result.append(Endpoint(m.group(1).upper(), m.group(2), port))
    return result


def parse_security_protocol_map(raw: str) -> dict[str, str]:
    key = "listener.security.protocol.map"
    result: dict[str, str] = {}
    for entry in parse_value(key, ConfigType.LIST, raw):
        name, sep, proto = entry.partition(":")
        if not sep or not name.strip():
            raise ConfigError(
                f"Invalid value {raw} for configuration {key}: "
                f"each entry must be LISTENER_NAME:SECURITY_PROTOCOL, not {entry!r}",
                key,
                raw,
            )
        proto = proto.strip().upper()
        if proto not in SECURITY_PROTOCOLS:
            raise ConfigError(f"Invalid security protocol `{proto}` defined in {key}", key, raw)
        name = name.strip().upper()
        if name in result:
            raise ConfigError(
                f"Invalid value {raw} for configuration {key}: listener {name} appears twice",
                key,
                raw,
            )
        result[name] = proto
    return result


def ports_clash(listeners: list[Endpoint]) -> bool:
    """Kafka's rule: ports differ, except one IPv4 and one IPv6 listener may
    share a port. Port 0 (pick a free port) never clashes."""
    by_port: dict[int, list[Endpoint]] = {}
    for lst in listeners:
        if lst.port != 0:
            by_port.setdefault(lst.port, []).append(lst)
    for same in by_port.values():
        if len(same) == 1:
            continue
        families = [_ip_family(lst.host) for lst in same]
        if len(same) > 2 or None in families or families[0] == families[1]:
            return True
    return False


def _ip_family(host: str) -> int | None:
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return None
