"""kafka-python 3.x's generated protocol classes, lined up field by field with
`wire`'s codecs, for the cross-check in test_kafka_python_crosscheck.py.

kafka-python builds its classes from Kafka 4.3's JSON specs; `wire` declares
its own from Kafka 4.0's. For one (message, version) a `Plan` pairs the fields
kafka-python carries with those of `wire`'s codec tree, by the spec's original
CamelCase name (kafka-python renames a few fields through `json_patch`, e.g.
ClusterAuthorizedOperations -> authorized_operations, and retypes them as
"bitfield"), and says which fields exist on one side only.

Values travel in `wire`'s representation (dicts, ints, `uuid.UUID`, bytes);
`to_kafka_python` turns one into a kafka-python object, `compare` walks a
`wire` value and a kafka-python object side by side and reports every
difference, translating kafka-python's conventions on the way:

- uuid: kafka-python reads the zero uuid as None (and writes None as zero);
- bitfield (authorized operations): a set of bit numbers in kafka-python, an
  int32 in `wire`; kafka-python reads {31} (= INT32_MIN, "not requested") as None;
- bytes/records: kafka-python gives bytes, `wire` a memoryview for records;
- a tagged struct field defaults to None in kafka-python, to a struct of
  defaults in `wire`;
- unknown tagged fields: `wire` keeps [(tag, bytes)], kafka-python {"_tag": bytes}.
"""

from __future__ import annotations

import functools
import importlib
import random
import warnings
from dataclasses import dataclass, field
from typing import Any

# kafka-python is a declared test dependency: importing it fails loudly. Its
# spec loader uses importlib.resources.read_text, deprecated since 3.11.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.api_message import ApiMessage
    from kafka.protocol.schemas import load_json
    from kafka.protocol.schemas.fields.array import ArrayField
    from kafka.protocol.schemas.fields.struct import StructField
    from kafka.protocol.schemas.fields.struct_array import StructArrayField

from wire.codec import ArrayCodec, NullableStructCodec, StructCodec
from wire.primitives import Primitive
from wire.schema import ZERO_UUID, snake_case
from wire.values import UNKNOWN_TAGGED, Struct

from .samples import sample_primitive

KAFKA_PYTHON_MODULES = ("admin", "consumer", "metadata", "producer", "sasl")


def kafka_python_messages() -> list[type]:
    """Every request and response class kafka-python generates from a JSON spec."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for module in KAFKA_PYTHON_MODULES:
            importlib.import_module(f"kafka.protocol.{module}")

    def walk(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from walk(sub)

    found = {
        cls
        for cls in walk(ApiMessage)
        # Versioned wrappers (Foo_v3) are subclasses too; keep the primary classes.
        if cls._class_version is None and "_json" in cls.__dict__
    }
    return sorted(found, key=lambda cls: (cls.API_KEY, cls.type))


def kafka_python_versions(cls) -> range:
    """The versions kafka-python encodes and decodes: from 0 (it ignores the
    spec's minimum, leaving version negotiation to ApiVersions) to the spec's
    maximum."""
    return range(cls.min_version, cls.max_version + 1)


# --- plans ---------------------------------------------------------------------


@dataclass
class Slot:
    """One field of a struct at one version, as each side sees it."""

    wire_name: str
    kp_name: str | None  # None: only `wire` carries the field at this version
    kp_field: Any  # kafka-python's field object, or None
    codec: Any  # `wire`'s codec for the field, or None (only kafka-python has it)
    wire_default: Any
    kp_tagged: bool
    wire_tagged: bool
    kp_nullable: bool = False
    wire_nullable: bool = False
    kind: str = "simple"  # simple | array | struct | struct_array
    kp_type: str = ""  # kafka-python's (element) type: int32, uuid, bitfield, ...
    sub: Plan | None = None


@dataclass
class Plan:
    name: str
    codec: StructCodec
    data_class: Any
    slots: list[Slot] = field(default_factory=list)

    @property
    def matched(self) -> list[Slot]:
        return [s for s in self.slots if s.kp_field is not None and s.codec is not None]

    def nullability_differences(self, path: str = "") -> list[str]:
        """Fields whose nullability at this version the two sides disagree on."""
        out = []
        for s in self.matched:
            where = f"{path}.{s.wire_name}" if path else s.wire_name
            if s.kp_nullable != s.wire_nullable:
                out.append(f"{where}: kafka-python {s.kp_nullable}, wire {s.wire_nullable}")
            if s.sub is not None:
                out.extend(s.sub.nullability_differences(where))
        return out

    def one_sided(self, path: str = "") -> list[tuple[str, str]]:
        """(path, side) of every field carried by one side only, recursively."""
        out = []
        for s in self.slots:
            where = f"{path}.{s.wire_name}" if path else s.wire_name
            if s.kp_field is None:
                out.append((where, "wire"))
            elif s.codec is None:
                out.append((where, "kafka-python"))
            elif s.sub is not None:
                out.extend(s.sub.one_sided(where))
        return out


# Fields Kafka renamed without changing their encoding, where `wire` keeps an
# older name: (struct path in kafka-python's spec, its name) -> `wire`'s name.
# None today (`wire` took KIP-1142's ListConfigResources names with its v1).
RENAMED: dict[tuple[str, str], str] = {}


def _struct_of(codec) -> StructCodec | None:
    if isinstance(codec, NullableStructCodec):
        return codec.inner
    if isinstance(codec, ArrayCodec):
        return _struct_of(codec.element)
    return codec if isinstance(codec, StructCodec) else None


def _nullable(codec) -> bool:
    if isinstance(codec, (ArrayCodec, NullableStructCodec)):
        return isinstance(codec, NullableStructCodec) or codec.nullable
    if isinstance(codec, Primitive):
        return "nullable" in codec.kind or codec.kind.endswith("records")
    return False


def build_plan(name, kp_struct, json_fields, codec: StructCodec, version, data_class) -> Plan:
    """Pair kafka-python's fields of `kp_struct` (a StructField) at `version`
    with those of `wire`'s struct codec.

    `json_fields` is the unpatched spec of the same struct, in the same order
    as kafka-python's fields: it gives each field's original name.
    """
    wire_fields = {}
    for fname, sub, default in codec.regular:
        wire_fields[fname] = (sub, default, False)
    for _, fname, sub, default in codec.tagged:
        wire_fields[fname] = (sub, default, True)
    plan = Plan(name, codec, data_class)
    flexible = codec.flexible
    assert len(kp_struct._fields) == len(json_fields), name
    seen = set()
    for kp_field, spec in zip(kp_struct._fields, json_fields, strict=True):
        if not kp_field.for_version_q(version):
            continue
        wire_name = RENAMED.get((name, spec["name"]), snake_case(spec["name"]))
        kp_tagged = flexible and kp_field.tagged_field_q(version)
        if wire_name not in wire_fields:
            plan.slots.append(
                Slot(wire_name, kp_field.name, kp_field, None, None, kp_tagged, False)
            )
            continue
        seen.add(wire_name)
        sub, default, wire_tagged = wire_fields[wire_name]
        slot = Slot(wire_name, kp_field.name, kp_field, sub, default, kp_tagged, wire_tagged)
        slot.kp_nullable = kp_field.nullable_for_version_q(version)
        slot.wire_nullable = _nullable(sub)
        if isinstance(kp_field, StructArrayField):
            slot.kind = "struct_array"
            inner = kp_field.array_of
            slot.sub = build_plan(
                f"{name}.{wire_name}",
                inner,
                spec["fields"],
                _struct_of(sub),
                version,
                kp_field.data_class,
            )
        elif isinstance(kp_field, StructField):
            slot.kind = "struct"
            slot.sub = build_plan(
                f"{name}.{wire_name}",
                kp_field,
                spec["fields"],
                _struct_of(sub),
                version,
                kp_field.data_class,
            )
        elif isinstance(kp_field, ArrayField):
            slot.kind = "array"
            slot.kp_type = kp_field.array_of._type_str
        else:
            slot.kp_type = kp_field._type_str
        plan.slots.append(slot)
    for wire_name, (sub, default, wire_tagged) in wire_fields.items():
        if wire_name not in seen:
            plan.slots.append(Slot(wire_name, None, None, sub, default, False, wire_tagged))
    return plan


@functools.cache
def _unpatched_spec(name: str) -> dict:
    """kafka-python's spec for class `name` before its json_patch, with common
    structs resolved."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return load_json(name)


@functools.cache
def message_plan(cls, codec) -> Plan:
    """The plan of kafka-python's message class `cls` against `wire`'s `codec`."""
    spec = _unpatched_spec(cls.__name__)
    return build_plan(cls.__name__, cls._struct, spec["fields"], codec.root, codec.version, cls)


def missing(plan: Plan, value, path: str = "", in_tagged: bool = False) -> list[str]:
    """Fields both sides carry that `value` leaves out or null, at any depth
    (except tagged fields inside tagged structs, which `prepare` drops)."""
    path = path or plan.name
    out = []
    for slot in plan.matched:
        if in_tagged and slot.wire_tagged:
            continue
        where = f"{path}.{slot.wire_name}"
        v = value.get(slot.wire_name)
        if v is None:
            out.append(where)
        elif slot.kind == "struct_array":
            if not v:
                out.append(f"{where} (empty)")
            for i, item in enumerate(v):
                out += missing(slot.sub, item, f"{where}[{i}]", in_tagged or slot.wire_tagged)
        elif slot.kind == "struct":
            out += missing(slot.sub, v, where, in_tagged or slot.wire_tagged)
        elif slot.kind == "array" and not v:
            out.append(f"{where} (empty)")
    return out


# --- values --------------------------------------------------------------------


def _bits(value: int):
    bits = {i for i in range(32) if (value >> i) & 1}
    return None if bits == {31} else bits


def _from_bits(bits) -> int:
    if bits is None:
        bits = {31}
    value = sum(1 << b for b in bits)
    return value - (1 << 32) if value >= 1 << 31 else value


def _simple_to_kp(kp_type: str, value):
    if kp_type == "uuid":
        return None if value == ZERO_UUID else value
    if kp_type == "bitfield":
        return _bits(value)
    if kp_type in ("bytes", "records"):
        return None if value is None else bytes(value)
    return value


def _simple_from_kp(kp_type: str, value):
    if kp_type == "uuid":
        return ZERO_UUID if value is None else value
    if kp_type == "bitfield":
        return _from_bits(value)
    if kp_type in ("bytes", "records"):
        return None if value is None else bytes(value)
    return value


def _wire_simple(value):
    return bytes(value) if isinstance(value, (memoryview, bytearray)) else value


def to_kafka_python(plan: Plan, value, version: int):
    """The kafka-python object for `wire` value `value` (only matched fields;
    the others stay at kafka-python's defaults)."""
    kwargs = {}
    for slot in plan.matched:
        kwargs[slot.kp_name] = _slot_to_kp(
            slot, value.get(slot.wire_name, slot.wire_default), version
        )
    return plan.data_class(version=version, **kwargs)


def _slot_to_kp(slot: Slot, value, version):
    if slot.kind == "struct_array":
        if value is None:
            return None
        return [to_kafka_python(slot.sub, item, version) for item in value]
    if slot.kind == "struct":
        if value is None or (slot.kp_tagged and value == slot.wire_default):
            return None
        return to_kafka_python(slot.sub, value, version)
    if slot.kind == "array":
        return None if value is None else [_simple_to_kp(slot.kp_type, v) for v in value]
    return _simple_to_kp(slot.kp_type, value)


def prepare(plan: Plan, value, keep_unknown: bool, in_tagged: bool = False) -> Struct:
    """`value` restricted to what both sides can carry.

    Fields only `wire` has are dropped (they encode as their defaults); unknown
    tagged fields are kept only if `keep_unknown`, and never inside a tagged
    struct, whose nested tagged section kafka-python requires to be empty
    when reading and always writes empty (so do known tagged fields there,
    though no spec has any).
    """
    out = Struct()
    for slot in plan.matched:
        if slot.wire_name not in value:
            continue
        if in_tagged and slot.wire_tagged:
            continue
        v = value[slot.wire_name]
        if slot.sub is not None and v is not None:
            nested = in_tagged or slot.wire_tagged
            if slot.kind == "struct_array":
                v = [prepare(slot.sub, item, keep_unknown, nested) for item in v]
            else:
                v = prepare(slot.sub, v, keep_unknown, nested)
        out[slot.wire_name] = v
    if keep_unknown and not in_tagged and value.get(UNKNOWN_TAGGED):
        out[UNKNOWN_TAGGED] = list(value[UNKNOWN_TAGGED])
    return out


def with_nulls(plan: Plan, value) -> Struct:
    """`value` with every field kafka-python declares nullable set to null."""
    out = Struct(value)
    for slot in plan.matched:
        v = out.get(slot.wire_name)
        if slot.kp_nullable:
            out[slot.wire_name] = None
        elif v is not None and slot.kind == "struct_array":
            out[slot.wire_name] = [with_nulls(slot.sub, item) for item in v]
        elif v is not None and slot.kind == "struct":
            out[slot.wire_name] = with_nulls(slot.sub, v)
    return out


def strip_unknown(value):
    """`value` without unknown tagged fields, at any depth."""
    if isinstance(value, dict):
        return Struct({k: strip_unknown(v) for k, v in value.items() if k != UNKNOWN_TAGGED})
    if isinstance(value, list):
        return [strip_unknown(v) for v in value]
    return value


def compare(plan: Plan, wire_value, kp_obj, path: str = "") -> list[str]:
    """Every difference between a `wire` value and a kafka-python object
    (fields absent from `wire_value` count as `wire`'s defaults)."""
    path = path or plan.name
    diffs = []
    if kp_obj is None:
        return [f"{path}: kafka-python has None, wire {wire_value!r}"]
    for slot in plan.slots:
        where = f"{path}.{slot.wire_name}"
        if slot.kp_field is None:
            # Only `wire` has it: it must be at its default on the `wire` side.
            got = wire_value.get(slot.wire_name, slot.wire_default)
            if got != slot.wire_default:
                diffs.append(f"{where}: wire-only field not at default: {got!r}")
            continue
        kp_value = getattr(kp_obj, slot.kp_name)
        if slot.codec is None:
            if kp_value != slot.kp_field.default:
                diffs.append(f"{where}: kafka-python-only field not at default: {kp_value!r}")
            continue
        diffs.extend(
            _compare_slot(slot, wire_value.get(slot.wire_name, slot.wire_default), kp_value, where)
        )
    wire_unknown = {int(t): bytes(d) for t, d in wire_value.get(UNKNOWN_TAGGED) or ()}
    kp_unknown = {int(k[1:]): bytes(v) for k, v in (kp_obj.unknown_tags or {}).items()}
    if wire_unknown != kp_unknown:
        diffs.append(
            f"{path}: unknown tagged fields: wire {wire_unknown!r}, kafka-python {kp_unknown!r}"
        )
    return diffs


def _compare_slot(slot: Slot, wire_value, kp_value, where) -> list[str]:
    if slot.kind == "struct_array":
        if wire_value is None or kp_value is None:
            if wire_value is kp_value:
                return []
            return [f"{where}: wire {wire_value!r}, kafka-python {kp_value!r}"]
        if len(wire_value) != len(kp_value):
            return [f"{where}: {len(wire_value)} elements in wire, {len(kp_value)} in kafka-python"]
        diffs = []
        for i, (w, k) in enumerate(zip(wire_value, kp_value, strict=True)):
            diffs.extend(compare(slot.sub, w, k, f"{where}[{i}]"))
        return diffs
    if slot.kind == "struct":
        if kp_value is None and slot.kp_tagged and wire_value == slot.wire_default:
            return []
        if wire_value is None or kp_value is None:
            if wire_value is kp_value:
                return []
            return [f"{where}: wire {wire_value!r}, kafka-python {kp_value!r}"]
        return compare(slot.sub, wire_value, kp_value, where)
    if slot.kind == "array":
        if kp_value is not None:
            kp_value = [_simple_from_kp(slot.kp_type, v) for v in kp_value]
        if wire_value is not None:
            wire_value = [_wire_simple(v) for v in wire_value]
    else:
        kp_value = _simple_from_kp(slot.kp_type, kp_value)
        wire_value = _wire_simple(wire_value)
    if wire_value != kp_value or type(wire_value) is not type(kp_value):
        return [f"{where}: wire {wire_value!r}, kafka-python {kp_value!r}"]
    return []


# --- dense samples -------------------------------------------------------------


def dense_sample(codec, rnd: random.Random, depth: int = 0, default=None):
    """A value for `codec` in which every field, at every depth, is present,
    non-null and differs from its default; arrays hold 1-3 elements."""
    if isinstance(codec, Primitive):
        for _ in range(100):
            value = sample_primitive(codec.kind, rnd)
            if value is None or value == default:
                continue
            if codec.kind.endswith("uuid") and value == ZERO_UUID:
                continue
            if isinstance(value, (str, bytes)) and not value:
                continue
            return value
        raise AssertionError(f"no non-default value for {codec!r}")
    if isinstance(codec, ArrayCodec):
        n = rnd.randint(1, 3 if depth < 3 else 1)
        return [dense_sample(codec.element, rnd, depth + 1) for _ in range(n)]
    if isinstance(codec, NullableStructCodec):
        return dense_sample(codec.inner, rnd, depth + 1)
    if isinstance(codec, StructCodec):
        value = Struct()
        for name, sub, default in codec.regular:
            value[name] = dense_sample(sub, rnd, depth + 1, default)
        for _, name, sub, default in codec.tagged:
            value[name] = dense_sample(sub, rnd, depth + 1, default)
        return value
    raise AssertionError(f"no sample for {codec!r}")
