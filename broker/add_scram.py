"""`gregor add-scram`: SCRAM credentials written into a cluster's metadata
before any broker runs, as Kafka's `kafka-storage format --add-scram` does.

    gregor add-scram server.properties 'SCRAM-SHA-512=[name=broker,password=broker-secret]'

A cluster whose brokers log in to each other with SCRAM needs the brokers'
own credential before they can replicate, and a listener whose only
mechanism is SCRAM needs a first admin: neither can come through a broker.
With `zookeeper.connect` the credential goes to ZooKeeper's
/config/users/<name>, which running brokers watch; for a single node, into
its metadata file, which only a stopped node may have written under it.
The specification is Kafka's: MECHANISM=[name=...,password=...,iterations=...].
"""

from __future__ import annotations

import re
from pathlib import Path

from broker.config import BrokerConfig
from broker.controller.api import apply_config_changes
from broker.controller.local import METADATA_FILE, LocalMetadataStore
from broker.security.scram import MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential, ScramMechanism

_SPEC = re.compile(r"^(?P<mechanism>[A-Z0-9-]+)=\[(?P<fields>.*)\]$")


class ScramSpecError(ValueError):
    pass


def parse_spec(spec: str) -> tuple[str, ScramMechanism, str, int]:
    """(user, mechanism, password, iterations) of Kafka's --add-scram syntax."""
    m = _SPEC.match(spec.strip())
    if m is None:
        raise ScramSpecError(
            f"{spec!r}: expected MECHANISM=[name=...,password=...], "
            "e.g. SCRAM-SHA-256=[name=alice,password=alice-secret]"
        )
    mechanism = ScramMechanism.by_name(m["mechanism"])
    if mechanism is None:
        raise ScramSpecError(
            f"{m['mechanism']}: not a SCRAM mechanism (SCRAM-SHA-256 or SCRAM-SHA-512)"
        )
    fields = {}
    for part in m["fields"].split(","):
        key, sep, value = part.partition("=")
        if not sep:
            raise ScramSpecError(f"{part!r} in {spec!r} is not key=value")
        fields[key.strip()] = value.strip().strip('"')
    for required in ("name", "password"):
        if not fields.get(required):
            raise ScramSpecError(f"{spec!r} has no {required}")
    try:
        iterations = int(fields.get("iterations", MIN_ITERATIONS))
    except ValueError:
        raise ScramSpecError(f"iterations of {spec!r} is not a number") from None
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ScramSpecError(
            f"iterations {iterations} is outside {MIN_ITERATIONS}..{MAX_ITERATIONS}"
        )
    return fields["name"], mechanism, fields["password"], iterations


def add_scram(config: BrokerConfig, specs: list[str]) -> list[str]:
    """Write the credentials; a line for each, saying where it went."""
    changes: dict[str, dict[str, str | None]] = {}
    for spec in specs:
        user, mechanism, password, iterations = parse_spec(spec)
        credential = ScramCredential.from_password(mechanism, password, iterations)
        changes.setdefault(user, {})[mechanism.mechanism_name] = credential.to_config_value()
    if config.single_node:
        where = _add_to_file(config, changes)
    else:
        where = _add_to_zookeeper(config, changes)
    return [
        f"{mechanism} credential for user {user} written to {where}"
        for user, change in changes.items()
        for mechanism in change
    ]


def _add_to_file(config: BrokerConfig, changes) -> str:
    store = LocalMetadataStore(Path(config.log_dirs[0]) / METADATA_FILE)
    # A node never started gets the metadata its first start would make.
    image, next_producer_id = store.load_or_create(config.node_id, config["gregor.cluster.id"])
    for user, change in changes.items():
        image = image.with_user_configs(user, apply_config_changes(image.user_config(user), change))
    store.save(image, next_producer_id)
    return str(store.path)


def _add_to_zookeeper(config: BrokerConfig, changes) -> str:
    from kazoo.client import KazooClient

    from broker.controller.zookeeper import change_user_configs, create_chroot

    connect = config["zookeeper.connect"]
    timeout = config.zookeeper_connection_timeout_ms / 1000
    create_chroot(connect, timeout)
    zk = KazooClient(hosts=connect, timeout=timeout)
    zk.start(timeout=timeout)
    try:
        change_user_configs(zk, changes)
    finally:
        zk.stop()
        zk.close()
    return f"ZooKeeper {connect}"
