"""Helpers of the configuration tests."""

from broker.config import BrokerConfig

HOUR = 3_600_000
WEEK = 168 * HOUR


def props(text: str, *overrides: str) -> BrokerConfig:
    return BrokerConfig.from_properties_text(text, overrides)


def syn(entries):
    return [(s.name, s.value, s.source) for s in entries]
