"""`sasl.jaas.config` values, parsed as Kafka's JaasConfig parses them.

    parse_jaas_config('org.apache.kafka.common.security.plain.PlainLoginModule '
                      'required user_alice="alice-secret";')
    # [LoginModule("org.apache...PlainLoginModule", "required", {"user_alice": "alice-secret"})]

A value is one or more login modules, each `<class> <flag> (<key>=<value>)* ;`,
values bare words or double-quoted strings (a backslash escapes the next
character). What the broker reads from them: the PLAIN users
(`user_<name>="<password>"`, as Kafka's PlainServerCallbackHandler reads them).
"""

from __future__ import annotations

from typing import NamedTuple

FLAGS = ("required", "requisite", "sufficient", "optional")


class JaasConfigError(ValueError):
    pass


class LoginModule(NamedTuple):
    name: str
    flag: str
    options: dict[str, str]


def _tokens(text: str):
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in ";=":
            yield c
            i += 1
        elif c == '"':
            i += 1
            out = []
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                out.append(text[i])
                i += 1
            if i >= n:
                raise JaasConfigError(f"Invalid JAAS config: unterminated quote in {text!r}")
            i += 1
            yield ("quoted", "".join(out))
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] not in ';="':
                i += 1
            yield ("word", text[start:i])


def parse_jaas_config(text: str) -> list[LoginModule]:
    tokens = list(_tokens(text))
    modules: list[LoginModule] = []
    i = 0

    def value_at(j: int) -> str | None:
        if j < len(tokens) and isinstance(tokens[j], tuple):
            return tokens[j][1]
        return None

    while i < len(tokens):
        name = value_at(i)
        if name is None:
            raise JaasConfigError(f"Invalid JAAS config: login module name expected in {text!r}")
        flag = value_at(i + 1)
        if flag is None or flag.lower() not in FLAGS:
            raise JaasConfigError(
                f"Invalid JAAS config: login module control flag not specified in {text!r}"
            )
        i += 2
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i] != ";":
            key = value_at(i)
            if key is None or i + 1 >= len(tokens) or tokens[i + 1] != "=":
                raise JaasConfigError(f"Invalid JAAS config: option expected in {text!r}")
            value = value_at(i + 2)
            if value is None:
                raise JaasConfigError(f"Value not specified for key '{key}' in JAAS config")
            options[key] = value
            i += 3
        if i >= len(tokens):
            raise JaasConfigError(f"Invalid JAAS config: ';' expected at the end of {text!r}")
        i += 1
        modules.append(LoginModule(name, flag.lower(), options))
    if not modules:
        raise JaasConfigError("JAAS config entry not terminated by semi-colon")
    return modules


def plain_users(modules: list[LoginModule]) -> dict[str, str]:
    """The user_<name>="<password>" options of the login modules: PLAIN's users."""
    return {
        key[len("user_") :]: value
        for module in modules
        for key, value in module.options.items()
        if key.startswith("user_")
    }
