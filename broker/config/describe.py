"""How DescribeConfigs reports a value: its source and its synonyms.

Shared by the broker's and the topics' configurations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from broker.config.keys import ConfigType


class ConfigSource(IntEnum):
    """Kafka's DescribeConfigs config source codes."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


@dataclass(frozen=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class ConfigEntry:
    """One DescribeConfigs result entry."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    synonyms: list[ConfigSynonym] = field(default_factory=list)
    config_type: ConfigType = ConfigType.UNKNOWN
    documentation: str | None = None
