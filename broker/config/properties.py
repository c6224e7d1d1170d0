"""Java's Properties format, as Kafka reads server.properties, and `--override`s.

read_properties_file("server.properties")   # {"log.dirs": "/data", ...}
parse_overrides(["node.id=2"])              # {"node.id": "2"}
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from broker.config.keys import ConfigError, as_raw

_WS = " \t\f"


def parse_properties(text: str) -> dict[str, str]:
    """Java's Properties.load: `key=value`, `key: value` or `key value`;
    `#`/`!` comments; a line ending in an odd number of backslashes continues
    on the next (its leading whitespace dropped); escapes \\t \\n \\r \\f
    \\uXXXX and \\<char>. Later duplicates win."""
    result: dict[str, str] = {}
    lines = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(_WS)
        i += 1
        if not line or line[0] in "#!":
            continue
        logical = ""
        while True:
            trailing = len(line) - len(line.rstrip("\\"))
            if trailing % 2 == 1:
                logical += line[:-1]
                if i >= len(lines):
                    break
                line = lines[i].lstrip(_WS)
                i += 1
                continue
            logical += line
            break
        key, value = _split_key_value(logical)
        result[_unescape(key)] = _unescape(value)
    return result


def _split_key_value(line: str) -> tuple[str, str]:
    n = len(line)
    pos = 0
    escaped = False
    while pos < n:
        c = line[pos]
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in "=:" or c in _WS:
            break
        pos += 1
    key = line[:pos]
    rest = pos
    if rest < n and line[rest] in _WS:
        while rest < n and line[rest] in _WS:
            rest += 1
        if rest < n and line[rest] in "=:":
            rest += 1
    elif rest < n:
        rest += 1  # the '=' or ':'
    while rest < n and line[rest] in _WS:
        rest += 1
    return key, line[rest:]


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        i += 1
        if i >= len(s):
            break
        c = s[i]
        if c == "u":
            digits = s[i + 1 : i + 5]
            if len(digits) != 4 or not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                raise ConfigError(f"Malformed \\uxxxx encoding in properties: {s!r}")
            out.append(chr(int(digits, 16)))
            i += 5
            continue
        out.append(_ESCAPES.get(c, c))
        i += 1
    return "".join(out)


def parse_overrides(overrides: Iterable[str] | Mapping[str, Any]) -> dict[str, str]:
    """`--override key=value` arguments (split at the first '=')."""
    if isinstance(overrides, Mapping):
        return {str(k): as_raw(v) for k, v in overrides.items()}
    result: dict[str, str] = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"Invalid override {item!r}: expected key=value")
        result[key.strip()] = value
    return result


def read_properties_file(path: str | Path) -> dict[str, str]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"Cannot read configuration file {path}: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # Java's Properties.load reads ISO-8859-1
    return parse_properties(text)
