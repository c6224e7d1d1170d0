"""What a configuration key is: its type, default, check and documentation,
and how its values parse from and print to strings as Kafka's ConfigDef does.

    spec = define_key("num.partitions", ConfigType.INT, 1, "...", at_least(1))
    spec.parse(" 3 ")              # 3; ConfigError naming the key if not valid
    spec.to_string(3)              # "3", as DescribeConfigs shows it

The broker's keys are in `broker.config.broker_keys`, the topic's in
`broker.config.topic`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from enum import IntEnum
from typing import Any

INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)
SHORT_MAX = 2**15 - 1
SHORT_MIN = -(2**15)


class ConfigError(ValueError):
    """A configuration key or value Gregor cannot accept.

    The message names the key (and, for a bad value, the value and what was
    expected), in Kafka's own words where Kafka has them. The CLI turns it into
    exit code 2; CreateTopics/AlterConfigs into INVALID_CONFIG with the message.
    """

    def __init__(self, message: str, key: str | None = None, value: Any = None):
        super().__init__(message)
        self.key = key
        self.value = value


class ConfigType(IntEnum):
    """Kafka's DescribeConfigs (v3+) config type codes."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


# Dynamic update modes, as Kafka's DynamicBrokerConfig reports them.
PER_BROKER = "per-broker"
CLUSTER_WIDE = "cluster-wide"

# --- validators ----------------------------------------------------------------
# A validator takes the parsed value and returns None or the reason it is bad,
# worded as Kafka's validators word it (or a pair: the part of the value to
# show, and the reason).

Validator = Callable[[Any], "str | tuple[str, str] | None"]


def at_least(low: int | float) -> Validator:
    def check(v):
        if v is not None and v < low:
            return f"Value must be at least {low}"
        return None

    check.describe = f"[{low},...]"  # type: ignore[attr-defined]
    return check


def between(low: int | float, high: int | float) -> Validator:
    def check(v):
        if v is None:
            return None
        if v < low:
            return f"Value must be at least {low}"
        if v > high:
            return f"Value must be no more than {high}"
        return None

    check.describe = f"[{low},...,{high}]"  # type: ignore[attr-defined]
    return check


def one_of(*allowed: str) -> Validator:
    """Kafka's ValidString.in / ValidList.in: case-sensitive membership."""

    def check(v):
        items = v if isinstance(v, list) else [v]
        for item in items:
            if item is not None and item not in allowed:
                # (the offending item, the reason): Kafka names the item, not the list
                return item, f"String must be one of: {', '.join(allowed)}"
        return None

    check.describe = "[" + ", ".join(allowed) + "]"  # type: ignore[attr-defined]
    return check


def gzip_level(v):
    if v is None or v == -1 or 1 <= v <= 9:
        return None
    return "Value must be between 1 and 9 or equal to -1"


gzip_level.describe = "[1,...,9] or -1"  # type: ignore[attr-defined]


def non_empty_list(v):
    return None if v is None or v else "must not be empty"


# --- keys -------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigKey:
    """One defined configuration key: its type, default, check and documentation."""

    name: str
    type: ConfigType
    default: Any
    doc: str
    validator: Validator | None = None
    # None: read-only; PER_BROKER or CLUSTER_WIDE: alterable with AlterConfigs.
    dynamic: str | None = None
    # Kafka's description of the valid values, for documentation tables.
    valid_values: str = ""

    @property
    def sensitive(self) -> bool:
        return self.type == ConfigType.PASSWORD

    @property
    def read_only(self) -> bool:
        return self.dynamic is None

    def parse(self, raw: Any) -> Any:
        """A raw (string) value to its typed value; ConfigError if it is not valid."""
        value = parse_value(self.name, self.type, raw)
        self.check(value, raw)
        return value

    def check(self, value: Any, raw: Any = None) -> None:
        if self.validator is None:
            return
        problem = self.validator(value)
        if problem is None:
            return
        if problem == "must not be empty":
            raise ConfigError(
                f"Configuration '{self.name}' must not be empty. "
                f"Valid values include: any non-empty value",
                self.name,
                raw,
            )
        shown: str | None
        if isinstance(problem, tuple):
            shown, problem = problem
        else:
            shown = to_string(value, self.type)
        raise ConfigError(
            f"Invalid value {shown} for configuration {self.name}: {problem}", self.name, raw
        )

    def to_string(self, value: Any) -> str | None:
        return to_string(value, self.type)

    @property
    def default_string(self) -> str | None:
        return to_string(self.default, self.type)


_INT_RE = re.compile(r"[+-]?[0-9]+")
_LIST_SPLIT = re.compile(r"\s*,\s*")


def parse_value(name: str, type_: ConfigType, raw: Any) -> Any:
    """Kafka's ConfigDef.parseType for one value (strings are trimmed first)."""
    if raw is None:
        return None
    if not isinstance(raw, str):
        raw = to_string(raw, type_)
    text = raw.strip()
    if type_ == ConfigType.BOOLEAN:
        if text.lower() == "true":
            return True
        if text.lower() == "false":
            return False
        raise ConfigError(
            f"Invalid value {raw} for configuration {name}: Expected value to be either true or false",
            name,
            raw,
        )
    if type_ in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
        low, high = {
            ConfigType.INT: (INT_MIN, INT_MAX),
            ConfigType.SHORT: (SHORT_MIN, SHORT_MAX),
            ConfigType.LONG: (LONG_MIN, LONG_MAX),
        }[type_]
        if not _INT_RE.fullmatch(text) or not low <= int(text) <= high:
            raise ConfigError(
                f"Invalid value {raw} for configuration {name}: Not a number of type {type_.name}",
                name,
                raw,
            )
        return int(text)
    if type_ == ConfigType.DOUBLE:
        try:
            if not re.fullmatch(r"[\s0-9eE+\-.a-zA-Z]+", text) or "_" in text:
                raise ValueError
            return float(text)
        except ValueError:
            raise ConfigError(
                f"Invalid value {raw} for configuration {name}: Not a number of type DOUBLE",
                name,
                raw,
            ) from None
    if type_ == ConfigType.LIST:
        return [] if not text else _LIST_SPLIT.split(text)
    # STRING, CLASS, PASSWORD
    return text


def to_string(value: Any, type_: ConfigType) -> str | None:
    """Kafka's ConfigDef.convertToString: the string a DescribeConfigs answer carries."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, float) or type_ == ConfigType.DOUBLE:
        return java_double_string(float(value))
    return str(value)


def java_double_string(v: float) -> str:
    """Java's Double.toString (0.5, 1.0, 1.7976931348623157E308)."""
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if str(v).startswith("-") else "0.0"
    a = abs(v)
    if 1e-3 <= a < 1e7:
        s = repr(v)
        return s if "." in s or "e" in s else s + ".0"
    sign, digits, exp = Decimal(repr(v)).normalize().as_tuple()
    assert isinstance(exp, int)  # only NaN and the infinities (returned above) have a letter
    mantissa = "".join(map(str, digits))
    exponent = exp + len(digits) - 1
    frac = mantissa[1:] or "0"
    return f"{'-' if sign else ''}{mantissa[0]}.{frac}E{exponent}"


def define_key(
    name: str,
    type_: ConfigType,
    default: Any,
    doc: str,
    validator: Validator | None = None,
    dynamic: str | None = None,
) -> ConfigKey:
    valid = getattr(validator, "describe", "") if validator else ""
    return ConfigKey(name, type_, default, doc, validator, dynamic, valid)


def as_raw(v: Any) -> str:
    """A Python value as the string a properties file would carry."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(map(str, v))
    return str(v)
