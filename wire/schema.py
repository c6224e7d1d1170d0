"""How an API is declared: messages made of fields, each with its version range.

This is the shape of Kafka's JSON message specs, in the project's own compact
form. A declaration is data only; `wire.codec` derives one `construct` codec per
(message, version) from it.

    F("topics", "[]MetadataRequestTopic", "0+",
        F("topic_id", "uuid", "10+"),
        F("name", "string", "0+", nullable="10+"),
        nullable="1+")

A field's positional arguments are its name (snake_case), its type and its
versions; nested fields of a struct or struct-array type follow. Keywords:
`nullable` (versions in which it may be null), `tagged` and `tag` (versions in
which it is a tagged field, and its tag), `default` (the value when absent;
otherwise the type's zero value), `flexible` (only for strings/bytes whose
encoding ignores the message's flexible versions, like the client id of the
request header).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

# Largest version number any range can reach; "3+" means 3..MAX_VERSION.
MAX_VERSION = 0x7FFF

PRIMITIVE_TYPES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "float64",
        "string",
        "bytes",
        "records",
        "uuid",
    }
)

ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive range of versions; empty when lo > hi."""

    lo: int
    hi: int

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        """Parse "3+", "0-5", "7" or "none" (also None/"")."""
        if text is None or text in ("", "none"):
            return NO_VERSIONS
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), MAX_VERSION)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    def __bool__(self) -> bool:
        return self.lo <= self.hi

    def __iter__(self):
        return iter(range(self.lo, self.hi + 1))

    def __str__(self) -> str:
        if not self:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        if self.lo == self.hi:
            return str(self.lo)
        return f"{self.lo}-{self.hi}"


NO_VERSIONS = Versions(1, 0)


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: str
    versions: Versions
    fields: tuple[Field, ...] = ()
    nullable: Versions = NO_VERSIONS
    tagged: Versions = NO_VERSIONS
    tag: int | None = None
    default: Any = UNSET
    flexible: Versions | None = None

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        """The type of one element for arrays, the type itself otherwise."""
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        """A struct or an array of structs (the element type is not primitive)."""
        return self.element_type not in PRIMITIVE_TYPES

    def default_value(self) -> Any:
        """The value this field has when a message does not carry it."""
        if self.default is not UNSET:
            return self.default
        if self.is_array:
            return []
        if self.is_struct:
            return None  # replaced by a default struct by the codec
        return _ZERO[self.type]


_ZERO: dict[str, Any] = {
    "bool": False,
    "int8": 0,
    "int16": 0,
    "uint16": 0,
    "int32": 0,
    "uint32": 0,
    "int64": 0,
    "float64": 0.0,
    "string": "",
    "bytes": b"",
    "records": None,
    "uuid": ZERO_UUID,
}


def F(
    name: str,
    type: str,
    versions: str,
    *fields: Field,
    nullable: str | None = None,
    tagged: str | None = None,
    tag: int | None = None,
    default: Any = UNSET,
    flexible: str | None = None,
) -> Field:
    """Declare one field (see the module docstring)."""
    f = Field(
        name=name,
        type=type,
        versions=Versions.parse(versions),
        fields=tuple(fields),
        nullable=Versions.parse(nullable),
        tagged=Versions.parse(tagged),
        tag=tag,
        default=default,
        flexible=None if flexible is None else Versions.parse(flexible),
    )
    if f.is_struct and not f.fields:
        raise ValueError(f"field {name!r} of struct type {type!r} declares no fields")
    if not f.is_struct and f.fields:
        raise ValueError(f"field {name!r} of primitive type {type!r} declares nested fields")
    if bool(f.tagged) != (tag is not None):
        raise ValueError(f"field {name!r}: tagged versions and tag go together")
    return f


@dataclass(frozen=True, slots=True)
class Message:
    """One direction of an API (or a header): its versions and fields."""

    name: str
    valid: Versions
    flexible: Versions
    fields: tuple[Field, ...]


@dataclass(frozen=True, slots=True)
class Api:
    """A request/response pair identified by its API key."""

    key: int
    name: str
    request: Message
    response: Message
    notes: str = field(default="", compare=False)

    @property
    def valid(self) -> Versions:
        return self.request.valid

    @property
    def flexible(self) -> Versions:
        return self.request.flexible


def api(
    key: int,
    name: str,
    *,
    valid: str,
    flexible: str,
    request: list[Field] | tuple[Field, ...],
    response: list[Field] | tuple[Field, ...],
) -> Api:
    """Declare an API whose request and response share valid/flexible versions."""
    v, fx = Versions.parse(valid), Versions.parse(flexible)
    return Api(
        key=key,
        name=name,
        request=Message(f"{name}Request", v, fx, tuple(request)),
        response=Message(f"{name}Response", v, fx, tuple(response)),
    )


def message(name: str, *, valid: str, flexible: str, fields: list[Field]) -> Message:
    """Declare a stand-alone message (headers, internal-topic record schemas)."""
    return Message(name, Versions.parse(valid), Versions.parse(flexible), tuple(fields))


_CAMEL_1 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL_2 = re.compile(r"([a-z0-9])([A-Z])")


def snake_case(camel: str) -> str:
    """Kafka's field names (CamelCase) as this project spells them."""
    return _CAMEL_2.sub(r"\1_\2", _CAMEL_1.sub(r"\1_\2", camel)).lower()


def unknown_keys(message: Message, body: Any) -> list[str]:
    """Keys of a message body given as dicts that no version of `message`
    declares, as paths ("topics[].partitions[].eror_code"). The codecs
    encode a missing key as its default, so a misspelled one would silently
    send the default; tests turn this check on to catch it."""
    found: list[str] = []
    _walk_unknown(message.fields, body, "", found)
    return found


def _walk_unknown(fields: tuple[Field, ...], value: Any, path: str, found: list[str]) -> None:
    if isinstance(value, list):
        for item in value:
            _walk_unknown(fields, item, path, found)
        return
    if not isinstance(value, dict):
        return  # a decoded Struct reused as is, a primitive, None
    by_name = {f.name: f for f in fields}
    for key, item in value.items():
        f = by_name.get(key)
        if f is None:
            found.append(f"{path}{key}")
        elif f.is_struct:
            _walk_unknown(f.fields, item, f"{path}{key}{'[]' if f.is_array else ''}.", found)
