"""The broker's configuration: its static, --override and dynamic layers, typed.

    config = BrokerConfig.load("server.properties", ["log.dirs=/data", "node.id=2"])
    config.listeners            # [Endpoint("PLAINTEXT", "localhost", 9092)]
    config.log_retention_ms     # log.retention.ms > .minutes > .hours, negative -> -1
    config["num.partitions"]    # the typed value of any defined key
    config.num_partitions       # the same, as an attribute (dots become underscores)

Sources are layered as in Kafka, highest first: DYNAMIC_BROKER_CONFIG (this
broker, set through AlterConfigs), DYNAMIC_DEFAULT_BROKER_CONFIG (cluster-wide),
STATIC_BROKER_CONFIG (server.properties and --override) and DEFAULT_CONFIG.

The keys themselves (types, defaults, checks, which are dynamic, which Kafka
keys are accepted and ignored) are in `broker.config.broker_keys`; topic-level
configuration is in `broker.config.topic`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from broker.config.broker_keys import (
    BROKER_CONFIG_KEYS,
    EMBEDDED_PROFILE,
    broker_synonyms,
    is_ignored_key,
    unknown_key_error,
)
from broker.config.describe import ConfigEntry, ConfigSource, ConfigSynonym
from broker.config.keys import PER_BROKER, ConfigError, ConfigType, as_raw, parse_value
from broker.config.listeners import (
    Endpoint,
    parse_listeners,
    parse_security_protocol_map,
    ports_clash,
)
from broker.config.properties import parse_overrides, parse_properties, read_properties_file
from broker.security.jaas import JaasConfigError, parse_jaas_config
from broker.security.jaas import plain_users as plain_users_of
from broker.security.login import SaslLogin
from broker.security.sasl import PLAIN, SUPPORTED_MECHANISMS, ListenerSasl
from broker.security.tls import TlsConfigError, TlsSettings

_HOUR_MS = 60 * 60 * 1000
_MINUTE_MS = 60 * 1000


def _attr_to_key() -> dict[str, str]:
    return {k.replace(".", "_"): k for k in BROKER_CONFIG_KEYS}


class BrokerConfig:
    """The broker's settings: static (file and overrides) plus dynamic layers.

    `BrokerConfig(props)` takes a mapping of Kafka keys to values (strings, or
    Python values); with `embedded=True` (the default) EMBEDDED_PROFILE sits
    under them. `BrokerConfig.load(path, overrides)` reads a server.properties.
    """

    _ATTRS = _attr_to_key()

    def __init__(
        self,
        props: Mapping[str, Any] | None = None,
        *,
        embedded: bool = True,
    ):
        raw = dict(EMBEDDED_PROFILE) if embedded else {}
        raw.update({str(k): as_raw(v) for k, v in (props or {}).items() if v is not None})
        static: dict[str, str] = {}
        ignored: dict[str, str] = {}
        for key, value in raw.items():
            if key in BROKER_CONFIG_KEYS:
                static[key] = value
            elif is_ignored_key(key):
                ignored[key] = value
            else:
                raise unknown_key_error(key)
        # Kafka's populateSynonyms: node.id and broker.id name the same id.
        if "node.id" in static and "broker.id" not in static:
            static["broker.id"] = static["node.id"]
        elif "broker.id" in static and "node.id" not in static:
            static["node.id"] = static["broker.id"]
        self.embedded = embedded
        self.static: dict[str, str] = static
        self.ignored: dict[str, str] = ignored
        self.dynamic_default: dict[str, str] = {}
        self.dynamic_broker: dict[str, str] = {}
        self._static_values = {k: BROKER_CONFIG_KEYS[k].parse(v) for k, v in static.items()}
        self._dynamic_values: dict[str, Any] = {}
        # Each SASL listener's settings, and the listener.name.* keys they
        # were read from (acted on, so not reported as ignored).
        self._sasl: dict[str, ListenerSasl] = {}
        self._tls: dict[str, TlsSettings] = {}
        self._consumed: set[str] = set()
        self._inter_broker_login: SaslLogin | None = None
        self._validate()

    # --- construction --------------------------------------------------------

    @classmethod
    def load(
        cls,
        path: str | Path | None = None,
        overrides: Iterable[str] | Mapping[str, Any] = (),
    ) -> BrokerConfig:
        """A server.properties file (or none: the embedded profile) plus overrides,
        which win."""
        props: dict[str, str] = {}
        if path is not None:
            props = read_properties_file(path)
        props.update(parse_overrides(overrides))
        return cls(props, embedded=path is None)

    @classmethod
    def from_properties_text(
        cls, text: str, overrides: Iterable[str] | Mapping[str, Any] = ()
    ) -> BrokerConfig:
        props = parse_properties(text)
        props.update(parse_overrides(overrides))
        return cls(props, embedded=False)

    # --- typed access ----------------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        if key not in BROKER_CONFIG_KEYS:
            raise unknown_key_error(key)
        if key in self._dynamic_values:
            value = self._dynamic_values[key]
        elif key in self._static_values:
            value = self._static_values[key]
        elif key == "broker.id":  # unset: the broker's id is node.id
            return self["node.id"]
        else:
            value = BROKER_CONFIG_KEYS[key].default
        return list(value) if isinstance(value, list) else value

    def get(self, key: str, default: Any = None) -> Any:
        value = self[key]
        return default if value is None else value

    def __contains__(self, key: str) -> bool:
        return self.is_set(key)

    def is_set(self, key: str) -> bool:
        """Whether the key was given anywhere (file, override or dynamically)."""
        return key in self.dynamic_broker or key in self.dynamic_default or key in self.static

    def __getattr__(self, attr: str) -> Any:
        key = BrokerConfig._ATTRS.get(attr)
        if key is None:
            raise AttributeError(f"{type(self).__name__} has no attribute {attr!r}")
        return self[key]

    def source(self, key: str) -> ConfigSource:
        if key in self.dynamic_broker:
            return ConfigSource.DYNAMIC_BROKER_CONFIG
        if key in self.dynamic_default:
            return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        if key in self.static:
            return ConfigSource.STATIC_BROKER_CONFIG
        return ConfigSource.DEFAULT_CONFIG

    def string_value(self, key: str) -> str | None:
        """The value as DescribeConfigs shows it."""
        return BROKER_CONFIG_KEYS[key].to_string(self[key])

    # --- derived settings ------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self["node.id"]

    @property
    def broker_id(self) -> int:
        return self["node.id"]

    @property
    def rack(self) -> str | None:
        return self["broker.rack"]

    @property
    def security_protocol_map(self) -> dict[str, str]:
        return parse_security_protocol_map(self["listener.security.protocol.map"])

    @property
    def all_listeners(self) -> list[Endpoint]:
        """Every entry of `listeners`, controller listeners included."""
        return parse_listeners("listeners", self["listeners"])

    @property
    def controller_listener_names(self) -> list[str]:
        return [n.upper() for n in self["controller.listener.names"] or []]

    @property
    def listeners(self) -> list[Endpoint]:
        """The listeners serving Kafka clients: `listeners` minus controller listeners."""
        controller = set(self.controller_listener_names)
        return [lst for lst in self.all_listeners if lst.name not in controller]

    @property
    def advertised_listeners(self) -> list[Endpoint] | None:
        """Parsed `advertised.listeners`, or None when unset (advertise what is bound)."""
        entries = self["advertised.listeners"]
        if entries is None:
            return None
        return parse_listeners("advertised.listeners", entries)

    @property
    def inter_broker_listener_name(self) -> str:
        name = self["inter.broker.listener.name"]
        return name.upper() if name else self.listeners[0].name

    @property
    def log_dirs(self) -> list[str]:
        """`log.dirs`, or `log.dir` when that is unset."""
        dirs = self["log.dirs"]
        return list(dirs if dirs is not None else self["log.dir"])

    @property
    def log_retention_ms(self) -> int:
        """log.retention.ms, else .minutes, else .hours, in ms; any negative is -1 (no limit)."""
        ms = self["log.retention.ms"]
        if ms is None:
            minutes = self["log.retention.minutes"]
            ms = (
                minutes * _MINUTE_MS
                if minutes is not None
                else self["log.retention.hours"] * _HOUR_MS
            )
        return -1 if ms < 0 else ms

    @property
    def log_roll_ms(self) -> int:
        ms = self["log.roll.ms"]
        return ms if ms is not None else self["log.roll.hours"] * _HOUR_MS

    @property
    def log_roll_jitter_ms(self) -> int:
        ms = self["log.roll.jitter.ms"]
        return ms if ms is not None else self["log.roll.jitter.hours"] * _HOUR_MS

    @property
    def log_flush_interval_ms(self) -> int:
        ms = self["log.flush.interval.ms"]
        return ms if ms is not None else self["log.flush.scheduler.interval.ms"]

    @property
    def log_cleanup_policy(self) -> list[str]:
        return list(self["log.cleanup.policy"])

    @property
    def zookeeper_connection_timeout_ms(self) -> int:
        ms = self["zookeeper.connection.timeout.ms"]
        return ms if ms is not None else self["zookeeper.session.timeout.ms"]

    @property
    def single_node(self) -> bool:
        """No zookeeper.connect: this broker is its own controller, metadata in a file."""
        return not self["zookeeper.connect"]

    # --- validation ------------------------------------------------------------------

    def _validate(self) -> None:
        node = self._layered("node.id")
        broker = self._layered("broker.id")
        if node is not None and broker is not None and node != broker:
            raise ConfigError(
                "You must set `node.id` to the same value as `broker.id`.", "broker.id", broker
            )
        protocols = self.security_protocol_map
        listeners = self.all_listeners
        names = [lst.name for lst in listeners]
        shown = "[" + ", ".join(self["listeners"]) + "]"
        for lst in listeners:
            proto = protocols.get(lst.name)
            if proto is None:
                raise ConfigError(
                    f"Error creating broker listeners from '{shown}': "
                    f"No security protocol defined for listener {lst.name}",
                    "listeners",
                    lst.name,
                )
            if proto in ("SASL_PLAINTEXT", "SASL_SSL"):
                self._sasl[lst.name] = self._listener_sasl(lst.name)
            if proto in ("SSL", "SASL_SSL"):
                self._tls[lst.name] = self._listener_tls(lst.name)
        if len(set(names)) != len(names):
            raise ConfigError(
                f"Error creating broker listeners from '{shown}': "
                f"Each listener must have a different name, listeners: {shown}",
                "listeners",
            )
        if ports_clash(listeners):
            raise ConfigError(
                f"Error creating broker listeners from '{shown}': "
                f"Each listener must have a different port, listeners: {shown}",
                "listeners",
            )
        if not self.listeners:
            raise ConfigError(
                "Invalid value for configuration listeners: every listener is named in "
                "controller.listener.names; at least one must serve clients",
                "listeners",
            )
        advertised = self.advertised_listeners
        for lst in advertised or ():
            if lst.host == "0.0.0.0":
                raise ConfigError(
                    "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                    "Use a routable IP address.",
                    "advertised.listeners",
                    str(lst),
                )
            if lst.name not in names:
                raise ConfigError(
                    f"Invalid value {','.join(self['advertised.listeners'])} for configuration "
                    f"advertised.listeners: listener {lst.name} is not in listeners "
                    f"({', '.join(names)})",
                    "advertised.listeners",
                    lst.name,
                )
        ibl = self["inter.broker.listener.name"]
        if not self.single_node and self.inter_broker_listener_name in self._sasl:
            self._inter_broker_login = self._login_to(self.inter_broker_listener_name)
        if not self.single_node and self.inter_broker_listener_name in self._tls:
            # This broker's own client side: made now, so a bad store stops start-up.
            try:
                self._tls[self.inter_broker_listener_name].client_context  # noqa: B018
            except TlsConfigError as e:
                raise ConfigError(
                    f"Inter-broker listener {self.inter_broker_listener_name}: {e}", e.key
                ) from None
        if ibl is not None and ibl.upper() not in {lst.name for lst in self.listeners}:
            raise ConfigError(
                f"Invalid value {ibl} for configuration inter.broker.listener.name: "
                f"it must be one of the client listeners ({', '.join(lst.name for lst in self.listeners)})",
                "inter.broker.listener.name",
                ibl,
            )
        for voter in self["controller.quorum.voters"]:
            if not re.fullmatch(r"[0-9]+@\[?[0-9a-zA-Z\-%._:]*\]?:[0-9]+", voter):
                raise ConfigError(
                    "Invalid configuration value for controller.quorum.voters. "
                    "Each entry should be in the form `{id}@{host}:{port}`.",
                    "controller.quorum.voters",
                    voter,
                )
        dirs = self.log_dirs
        if len(set(dirs)) != len(dirs):
            key = "log.dirs" if self["log.dirs"] is not None else "log.dir"
            raise ConfigError(
                f"Invalid value {','.join(dirs)} for configuration {key}: a directory appears twice",
                key,
            )
        if self.log_roll_ms < 1:
            raise ConfigError(
                "requirement failed: log.roll.ms must be greater than or equal to 1",
                "log.roll.ms",
                self["log.roll.ms"],
            )
        if self.log_roll_jitter_ms < 0:
            raise ConfigError(
                "requirement failed: log.roll.jitter.ms must be greater than or equal to 0",
                "log.roll.jitter.ms",
                self["log.roll.jitter.ms"],
            )

    def listener_sasl(self, name: str) -> ListenerSasl | None:
        """What the listener's SASL accepts; None for a PLAINTEXT listener."""
        return self._sasl.get(name.upper())

    def _listener_key(self, listener: str, key: str) -> tuple[str, str | None]:
        """Kafka's listener.name.<listener>.<key> override, and its value if given."""
        prefixed = f"listener.name.{listener.lower()}.{key}"
        return prefixed, self.ignored.get(prefixed)

    def _listener_sasl(self, listener: str) -> ListenerSasl:
        key, raw = self._listener_key(listener, "sasl.enabled.mechanisms")
        if raw is not None:
            self._consumed.add(key)
            mechanisms = [m for m in parse_value(key, ConfigType.LIST, raw) if m]
        else:
            key, mechanisms = "sasl.enabled.mechanisms", self["sasl.enabled.mechanisms"]
        if not mechanisms:
            raise ConfigError(
                f"Invalid value for configuration {key}: listener {listener} uses "
                "SASL_PLAINTEXT and enables no SASL mechanism",
                key,
            )
        for mechanism in mechanisms:
            if mechanism not in SUPPORTED_MECHANISMS:
                raise ConfigError(
                    f"Invalid value {','.join(mechanisms)} for configuration {key}: "
                    f"SASL mechanism {mechanism} of listener {listener} is not supported by "
                    f"Gregor (it serves {', '.join(SUPPORTED_MECHANISMS)})",
                    key,
                    mechanism,
                )
        plain_users: dict[str, str] = {}
        # Each mechanism may have its JAAS config; SCRAM's carries nothing
        # the broker needs (its credentials live in the cluster metadata).
        for mechanism in mechanisms:
            jaas_key, jaas = self._listener_key(listener, f"{mechanism.lower()}.sasl.jaas.config")
            if jaas is None:
                if mechanism == PLAIN:
                    raise ConfigError(
                        f"Could not find a JAAS configuration for SASL mechanism PLAIN of "
                        f'listener {listener}: set {jaas_key} (users as user_<name>="<password>")',
                        jaas_key,
                    )
                continue
            self._consumed.add(jaas_key)
            try:
                modules = parse_jaas_config(jaas)
            except JaasConfigError as e:
                raise ConfigError(
                    f"Invalid value for configuration {jaas_key}: {e}", jaas_key
                ) from None
            if mechanism == PLAIN:
                plain_users = plain_users_of(modules)
        return ListenerSasl(
            mechanisms=tuple(mechanisms),
            plain_users=plain_users,
            max_receive_size=self["sasl.server.max.receive.size"],
            max_reauth_ms=self["connections.max.reauth.ms"],
            failed_authentication_delay_ms=self["connection.failed.authentication.delay.ms"],
        )

    def listener_tls(self, name: str) -> TlsSettings | None:
        """The listener's TLS settings; None for a listener without TLS."""
        return self._tls.get(name.upper())

    @property
    def inter_broker_tls(self) -> TlsSettings | None:
        """How this broker reaches the others, if their listener is a TLS one."""
        return self._tls.get(self.inter_broker_listener_name)

    def _listener_tls(self, listener: str) -> TlsSettings:
        """Kafka's ssl.* keys, each overridden by listener.name.<listener>.ssl.*."""

        def lookup(key: str) -> str | None:
            prefixed, value = self._listener_key(listener, key)
            if value is not None:
                self._consumed.add(prefixed)
                return value
            if key in self.ignored:
                self._consumed.add(key)
            return self.ignored.get(key)

        try:
            settings = TlsSettings.from_config(lookup)
            settings.server_context  # noqa: B018  a bad store stops start-up, with its reason
        except TlsConfigError as e:
            raise ConfigError(f"Listener {listener}: {e}", e.key) from None
        return settings

    @property
    def inter_broker_login(self) -> SaslLogin | None:
        """How this broker logs in to the others, if their listener is a SASL one."""
        return self._inter_broker_login

    def _login_to(self, listener: str) -> SaslLogin:
        """Kafka's rule: the inter-broker mechanism is one the listener enables,
        and the listener's JAAS config for it names this broker's user."""
        key = "sasl.mechanism.inter.broker.protocol"
        mechanism = self[key]
        if mechanism not in self._sasl[listener].mechanisms:
            raise ConfigError(
                f"{key} must be included in sasl.enabled.mechanisms when SASL is used for "
                "inter-broker communication",
                key,
                mechanism,
            )
        jaas_key, jaas = self._listener_key(listener, f"{mechanism.lower()}.sasl.jaas.config")
        options = {} if jaas is None else parse_jaas_config(jaas)[0].options
        if "username" not in options or "password" not in options:
            raise ConfigError(
                f"The broker's own {mechanism} credentials for inter-broker listener "
                f"{listener} are missing: give {jaas_key} username and password options",
                jaas_key,
            )
        return SaslLogin(mechanism, options["username"], options["password"])

    def _layered(self, key: str) -> Any:
        for layer in (self._dynamic_values, self._static_values):
            if key in layer:
                return layer[key]
        return None

    # --- dynamic configuration ----------------------------------------------------------

    def dynamic_mode(self, key: str) -> str | None:
        """PER_BROKER, CLUSTER_WIDE, or None for a read-only key."""
        spec = BROKER_CONFIG_KEYS.get(key)
        return spec.dynamic if spec else None

    def alter(
        self,
        updates: Mapping[str, Any],
        *,
        per_broker: bool = True,
        validate_only: bool = False,
    ) -> None:
        """Set (value) or delete (None) dynamic configs, as AlterConfigs does:
        `per_broker` for this broker's resource, else the cluster default ("").
        All or nothing: ConfigError leaves the configuration unchanged."""
        for key in updates:
            if key not in BROKER_CONFIG_KEYS:
                raise unknown_key_error(key)
        read_only = sorted(k for k in updates if self.dynamic_mode(k) is None)
        if read_only:
            raise ConfigError(
                f"Cannot update these configs dynamically: [{', '.join(read_only)}]",
                read_only[0],
            )
        if not per_broker:
            broker_only = sorted(k for k in updates if self.dynamic_mode(k) == PER_BROKER)
            if broker_only:
                raise ConfigError(
                    "Cannot update these configs at default cluster level, broker id must be "
                    f"specified: [{', '.join(broker_only)}]",
                    broker_only[0],
                )
        layer = dict(self.dynamic_broker if per_broker else self.dynamic_default)
        for key, value in updates.items():
            if value is None:
                layer.pop(key, None)
            else:
                raw = as_raw(value)
                BROKER_CONFIG_KEYS[key].parse(raw)
                layer[key] = raw
        saved = (self.dynamic_broker, self.dynamic_default, self._dynamic_values)
        if per_broker:
            self.dynamic_broker = layer
        else:
            self.dynamic_default = layer
        merged = {**self.dynamic_default, **self.dynamic_broker}
        self._dynamic_values = {k: BROKER_CONFIG_KEYS[k].parse(v) for k, v in merged.items()}
        try:
            self._validate()
        except ConfigError:
            self.dynamic_broker, self.dynamic_default, self._dynamic_values = saved
            raise
        if validate_only:
            self.dynamic_broker, self.dynamic_default, self._dynamic_values = saved

    # --- DescribeConfigs ---------------------------------------------------------------

    def config_synonyms(self, name: str) -> list[ConfigSynonym]:
        """Kafka's ConfigHelper.configSynonyms for `name`: every set value of its
        synonym keys, dynamic-broker first, then dynamic-default, static and
        default, dropping the entries before the first one named `name`."""
        names = broker_synonyms(name)
        found: list[ConfigSynonym] = []
        layers: list[tuple[Mapping[str, str], ConfigSource]] = [
            (self.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
            (self.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (self.static, ConfigSource.STATIC_BROKER_CONFIG),
            (_DEFAULT_STRINGS, ConfigSource.DEFAULT_CONFIG),
        ]
        for layer, source in layers:
            for n in names:
                if n in layer:
                    spec = BROKER_CONFIG_KEYS.get(n)
                    value = None if spec is not None and spec.sensitive else layer[n]
                    found.append(ConfigSynonym(n, value, source))
        for i, syn in enumerate(found):
            if syn.name == name:
                return found[i:]
        return []

    def describe(
        self,
        keys: Iterable[str] | None = None,
        *,
        include_synonyms: bool = True,
        include_documentation: bool = False,
    ) -> list[ConfigEntry]:
        """DescribeConfigs of this broker's resource (its id): every defined key,
        or `keys` (unknown names are left out, as Kafka does)."""
        wanted = (
            sorted(BROKER_CONFIG_KEYS) if not keys else [k for k in keys if k in BROKER_CONFIG_KEYS]
        )
        return [
            self._entry(k, self.string_value(k), include_synonyms, include_documentation)
            for k in wanted
        ]

    def describe_cluster_defaults(
        self,
        keys: Iterable[str] | None = None,
        *,
        include_synonyms: bool = True,
        include_documentation: bool = False,
    ) -> list[ConfigEntry]:
        """DescribeConfigs of the cluster-default broker resource (""): only the
        dynamic default configs that are set."""
        wanted = sorted(self.dynamic_default)
        if keys:
            wanted = [k for k in wanted if k in set(keys)]
        entries = []
        for k in wanted:
            spec = BROKER_CONFIG_KEYS[k]
            value = None if spec.sensitive else self.dynamic_default[k]
            syns = [
                s
                for s in self.config_synonyms(k)
                if s.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
            ]
            entries.append(self._entry(k, value, include_synonyms, include_documentation, syns))
        return entries

    def _entry(
        self,
        key: str,
        value: str | None,
        include_synonyms: bool,
        include_documentation: bool,
        synonyms: list[ConfigSynonym] | None = None,
    ) -> ConfigEntry:
        spec = BROKER_CONFIG_KEYS[key]
        syns = self.config_synonyms(key) if synonyms is None else synonyms
        return ConfigEntry(
            name=key,
            value=None if spec.sensitive else value,
            source=syns[0].source if syns else ConfigSource.DEFAULT_CONFIG,
            read_only=self.dynamic_mode(key) is None,
            sensitive=spec.sensitive,
            synonyms=syns if include_synonyms else [],
            config_type=spec.type,
            documentation=spec.doc if include_documentation else None,
        )

    # --- reporting ------------------------------------------------------------------------

    def warnings(self) -> list[str]:
        """Things worth a log line at start-up: accepted-but-ignored keys, and
        internal topics a single node cannot create."""
        out = [
            f"configuration {key} is accepted but ignored by Gregor"
            for key in sorted(self.ignored)
            if key not in self._consumed
        ]
        if self.single_node:
            for key in (
                "offsets.topic.replication.factor",
                "transaction.state.log.replication.factor",
            ):
                if self[key] > 1:
                    out.append(
                        f"{key}={self[key]} on a single node: as in Kafka, the internal topic cannot "
                        f"be created until that many brokers are registered; set {key}=1"
                    )
        return out

    def __repr__(self) -> str:
        shown = {
            k: ("[hidden]" if BROKER_CONFIG_KEYS[k].sensitive else v)
            for k, v in sorted(self.static.items())
        }
        return f"BrokerConfig({shown})"


_DEFAULT_STRINGS: dict[str, str] = {
    k.name: s for k in BROKER_CONFIG_KEYS.values() if (s := k.default_string) is not None
}
