"""Codecs derived from declarations: one `construct` tree per (message, version).

`message_codec(message, version)` walks the declaration once, keeps the fields
that exist at that version, picks each field's encoding (classic or compact,
nullable or not, regular or tagged), and returns a `MessageCodec`. The tree is
made of three constructs — `StructCodec`, `ArrayCodec`, `NullableStructCodec` —
over the primitives of `wire.primitives`.

Two forms run the same tree:

- interpreted: each construct's `read`/`write` methods;
- compiled: construct's `compile()`, for which every construct here emits
  straight-line Python that calls the same bounds-checked primitive
  functions (so the compiled form skips no check; tests hold the two forms
  to identical results on valid and hostile input).
"""

from __future__ import annotations

import functools
import struct

import construct

from wire.buffers import Reader, Writer
from wire.errors import DecodeError, EncodeError, UnsupportedVersionError
from wire.primitives import (
    BYTES,
    FIXED,
    PRIMITIVES_IMPORT,
    RECORDS,
    STRINGS,
    read_array_length,
    read_compact_array_length,
    read_compact_nullable_array_length,
    read_int8,
    read_nullable_array_length,
    read_uvarint,
    write_array_length,
    write_compact_array_length,
    write_compact_nullable_array_length,
    write_nullable_array_length,
    write_uvarint,
)
from wire.schema import Field, Message
from wire.values import UNKNOWN_TAGGED, EncodeOnce, Struct

CODEC_IMPORT = (
    "from wire.codec import read_tagged_fields, write_tagged_fields\n"
    "from wire.values import Struct as KStruct"
)

_LITERAL_TYPES = (int, float, bool, str, bytes, type(None))


def _is_literal(obj) -> bool:
    """Whether `repr(obj)` is an expression for an equal value (NaN is not)."""
    return type(obj) in _LITERAL_TYPES and not (isinstance(obj, float) and obj != obj)


def _link(code, obj) -> str:
    """An expression that evaluates to `obj` inside compiled code."""
    if _is_literal(obj):
        return repr(obj)
    code.linkedinstances[id(obj)] = obj
    return f"linkedinstances[{id(obj)}]"


# --- tagged fields ---------------------------------------------------------


def read_tagged_fields(r: Reader, result: Struct, known: dict) -> None:
    """Read a tagged-field section into `result`.

    `known` maps tag -> (field name, codec). Unknown tags are kept, in arrival
    order, as (tag, bytes) pairs under UNKNOWN_TAGGED so they encode back.
    """
    n = read_uvarint(r)
    if n * 2 > r.end - r.pos:
        raise DecodeError(f"{n} tagged fields cannot fit in {r.end - r.pos} bytes")
    for _ in range(n):
        tag = read_uvarint(r)
        size = read_uvarint(r)
        sub = r.sub(size)
        spec = known.get(tag)
        if spec is None:
            result.setdefault(UNKNOWN_TAGGED, []).append((tag, bytes(sub.buf[sub.pos : sub.end])))
            continue
        name, codec = spec
        result[name] = codec.read(sub)
        if sub.pos != sub.end:
            raise DecodeError(
                f"tagged field {name!r} (tag {tag}) has {sub.end - sub.pos} bytes left over"
            )


def write_tagged_fields(w: Writer, obj, tagged: tuple) -> None:
    """Write the tagged-field section: known fields whose value differs from
    their default, and unknown ones carried over from decoding, in tag order."""
    present = []
    get = obj.get
    for tag, name, codec, default in tagged:
        value = get(name, default)
        if value is not default and value != default:
            sub = Writer()
            codec.write(sub, value)
            present.append((tag, sub.getvalue()))
    unknown = get(UNKNOWN_TAGGED)
    if unknown:
        present.extend((int(t), bytes(d)) for t, d in unknown)
        present.sort(key=lambda item: item[0])
    if not present:
        w.buf.append(0)
        return
    write_uvarint(w, len(present))
    for tag, data in present:
        write_uvarint(w, tag)
        write_uvarint(w, len(data))
        w.buf += data


# --- constructs --------------------------------------------------------------


def write_once(codec, value: EncodeOnce, w: Writer, write_fresh) -> None:
    """Write `value` as `codec` encodes it, encoding it only the first time
    (`write_fresh(writer, value)` encodes); see `EncodeOnce`."""
    done = value.encoded.get(codec)
    if done is None:
        fresh = Writer()
        write_fresh(fresh, value)
        # EncodeError for a payload that is no bytes (a file range of records).
        done = value.encoded[codec] = fresh.getvalue()
    w.write(done)


class ArrayCodec(construct.Construct):
    """A classic (int32 count) or compact (uvarint count + 1) array."""

    def __init__(self, element, compact: bool, nullable: bool):
        super().__init__()
        self.element = element
        self.compact = compact
        self.nullable = nullable
        self.min_size = 1 if compact else 4
        # Counts are checked against the input before any element is read.
        self.element_min = max(1, element.min_size)
        self._read_length = {
            (False, False): read_array_length,
            (False, True): read_nullable_array_length,
            (True, False): read_compact_array_length,
            (True, True): read_compact_nullable_array_length,
        }[compact, nullable]
        self._write_length = {
            False: write_compact_array_length if compact else write_array_length,
            True: write_compact_nullable_array_length if compact else write_nullable_array_length,
        }[nullable]

    def read(self, r: Reader):
        n = self._read_length(r, self.element_min)
        if n < 0:
            return None
        read = self.element.read
        return [read(r) for _ in range(n)]

    def write(self, w: Writer, value) -> None:
        if type(value) is EncodeOnce:
            write_once(self, value, w, self._write_fresh)
            return
        self._write_fresh(w, value)

    def _write_fresh(self, w: Writer, value) -> None:
        if value is None and not self.nullable:
            raise EncodeError("non-nullable array is None")
        self._write_length(w, value)
        if value:
            write = self.element.write
            for item in value:
                write(w, item)

    def default(self):
        return []

    def _parse(self, stream, context, path):
        return self.read(stream)

    def _build(self, obj, stream, context, path):
        self.write(stream, obj)
        return obj

    def _emitparse(self, code):
        code.append(PRIMITIVES_IMPORT)
        element = self.element._compileparse(code)
        fname = f"parse_array_{code.allocateId()}"
        null = "    if n < 0:\n        return None\n" if self.nullable else ""
        fmt = getattr(self.element, "fmt", None)
        if fmt is not None:
            # The length check above already proved n elements fit.
            body = (
                f"    p = io.pos\n"
                f"    io.pos = p + n * {self.element.min_size}\n"
                f"    return list(unpack_from('>%d{fmt}' % n, io.buf, p))\n"
            )
            code.append("from struct import unpack_from")
        else:
            body = f"    return [{element} for _ in range(n)]\n"
        code.append(
            f"def {fname}(io):\n"
            f"    n = {self._read_length.__name__}(io, {self.element_min})\n"
            f"{null}"
            f"{body}"
        )
        return f"{fname}(io)"

    def _emitbuild(self, code):
        code.append(PRIMITIVES_IMPORT)
        element = self.element._compilebuild(code)
        fname = f"build_array_{code.allocateId()}"
        null_check = (
            ""
            if self.nullable
            else "    if obj is None:\n        raise EncodeError('non-nullable array is None')\n"
        )
        # A compact list of fewer than 127 elements: its length is one byte,
        # written here without the length function and the _fresh call.
        short_list = (
            f"    if type(obj) is list and len(obj) < 127:\n"
            f"        io.buf.append(len(obj) + 1)\n"
            f"        items = obj\n"
            f"        for obj in items:\n"
            f"            {element}\n"
            f"        return\n"
            if self.compact
            else ""
        )
        code.append("from wire.errors import EncodeError")
        code.append("from wire.codec import EncodeOnce, write_once")
        code.append(
            f"def {fname}_fresh(io, obj):\n"
            f"{null_check}"
            f"    {self._write_length.__name__}(io, obj)\n"
            f"    if obj:\n"
            f"        items = obj\n"
            f"        for obj in items:\n"
            f"            {element}\n"
            f"def {fname}(obj, io):\n"
            f"{short_list}"
            f"    if type(obj) is EncodeOnce:\n"
            f"        write_once({_link(code, self)}, obj, io, {fname}_fresh)\n"
            f"    else:\n"
            f"        {fname}_fresh(io, obj)\n"
        )
        if self.compact:
            # An empty list (most error lists) is one byte where it stands.
            return f"(io.buf.append(1) if type(obj) is list and not obj else {fname}(obj, io))"
        return f"{fname}(obj, io)"

    def __repr__(self) -> str:
        return f"<array of {self.element!r}>"


class StructCodec(construct.Construct):
    """The fields of one struct at one version.

    regular: (name, codec, encode_default) in wire order.
    absent:  (name, value, factory) for fields this version does not carry;
             decoding sets them to `factory()` (mutable defaults) or `value`.
    tagged:  (tag, name, codec, default) in tag order (flexible versions only).
    """

    def __init__(self, name: str, regular, absent, tagged, flexible: bool):
        super().__init__()
        self.struct_name = name
        self.regular = tuple(regular)
        self.absent = tuple(absent)
        self.tagged = tuple(sorted(tagged, key=lambda t: t[0]))
        self.flexible = flexible
        self.known_tags = {tag: (fname, codec) for tag, fname, codec, _ in self.tagged}
        # Tagged fields start at their defaults; decoding overwrites those present.
        self.tagged_absent = tuple(
            (fname, default, _factory_for(default)) for _, fname, _, default in self.tagged
        )
        self.min_size = sum(c.min_size for _, c, _ in self.regular) + (1 if flexible else 0)

    def default(self) -> Struct:
        """A fresh struct holding every field's default."""
        result = Struct()
        for name, _, default in self.regular:
            result[name] = _fresh(default)
        for name, value, factory in self.absent:
            result[name] = factory() if factory else value
        for name, value, factory in self.tagged_absent:
            result[name] = factory() if factory else value
        return result

    def read(self, r: Reader) -> Struct:
        result = Struct()
        for name, codec, _ in self.regular:
            result[name] = codec.read(r)
        for name, value, factory in self.absent:
            result[name] = factory() if factory else value
        if self.flexible:
            for name, value, factory in self.tagged_absent:
                result[name] = factory() if factory else value
            read_tagged_fields(r, result, self.known_tags)
        return result

    def write(self, w: Writer, obj) -> None:
        get = obj.get
        for name, codec, default in self.regular:
            codec.write(w, get(name, default))
        if self.flexible:
            write_tagged_fields(w, obj, self.tagged)

    def _parse(self, stream, context, path):
        return self.read(stream)

    def _build(self, obj, stream, context, path):
        self.write(stream, obj)
        return obj

    def _runs(self):
        """Regular fields grouped into runs of fixed-size primitives and singles."""
        runs: list[list] = []
        for item in self.regular:
            fixed = getattr(item[1], "fmt", None) is not None
            if fixed and runs and runs[-1][0] == "fixed":
                runs[-1][1].append(item)
            else:
                runs.append(["fixed" if fixed else "single", [item]])
        return runs

    def _emitparse(self, code):
        code.append(PRIMITIVES_IMPORT)
        code.append(CODEC_IMPORT)
        lines = []
        for kind, items in self._runs():
            if kind == "single":
                name, codec, _ = items[0]
                lines.append(f"    result[{name!r}] = {codec._compileparse(code)}")
                continue
            # One bounds check and one unpack for a run of fixed-size fields.
            fmt = struct.Struct(">" + "".join(c.fmt for _, c, _ in items))
            targets = ", ".join(f"result[{name!r}]" for name, _, _ in items)
            lines.append("    p = io.pos")
            lines.append(f"    if p + {fmt.size} > io.end:")
            lines.append(f"        raise_short(io, {fmt.size})")
            lines.append(f"    {targets}, = {_link(code, fmt)}.unpack_from(io.buf, p)")
            lines.append(f"    io.pos = p + {fmt.size}")
        defaults = self.absent + (self.tagged_absent if self.flexible else ())
        for name, value, factory in defaults:
            expr = f"{_link(code, factory)}()" if factory else _link(code, value)
            lines.append(f"    result[{name!r}] = {expr}")
        if self.flexible:
            # Most tagged sections are empty: a single zero byte.
            lines.append("    p = io.pos")
            lines.append("    if p < io.end and io.buf[p] == 0:")
            lines.append("        io.pos = p + 1")
            lines.append("    else:")
            lines.append(f"        read_tagged_fields(io, result, {_link(code, self.known_tags)})")
        fname = f"parse_struct_{code.allocateId()}"
        code.append(
            f"def {fname}(io):\n    result = KStruct()\n"
            + "\n".join(lines)
            + "\n    return result\n"
        )
        return f"{fname}(io)"

    def _emitbuild(self, code):
        code.append(PRIMITIVES_IMPORT)
        code.append(CODEC_IMPORT)
        lines = ["    get = objdict.get"]
        for kind, items in self._runs():
            if kind == "single":
                name, codec, default = items[0]
                lines.append(f"    obj = get({name!r}, {_link(code, default)})")
                lines.append(f"    {codec._compilebuild(code)}")
                continue
            fmt = struct.Struct(">" + "".join(c.fmt for _, c, _ in items))
            values = ", ".join(f"get({name!r}, {_link(code, d)})" for name, _, d in items)
            lines.append(f"    io.buf += {_link(code, fmt)}.pack({values})")
        if self.flexible:
            # Most tagged sections are empty (every tagged field at its
            # default, nothing unknown carried over): one zero byte, no call.
            # The test is write_tagged_fields' own, by identity for values
            # that are not literals; anything else takes the call.
            empty = [f"{UNKNOWN_TAGGED!r} not in objdict"]
            for _, name, _, default in self.tagged:
                d = _link(code, default)
                empty.append(f"get({name!r}, {d}) {'==' if _is_literal(default) else 'is'} {d}")
            lines.append(f"    if {' and '.join(empty)}:")
            lines.append("        io.buf.append(0)")
            lines.append("    else:")
            lines.append(f"        write_tagged_fields(io, objdict, {_link(code, self.tagged)})")
        fname = f"build_struct_{code.allocateId()}"
        code.append(f"def {fname}(objdict, io):\n" + "\n".join(lines) + "\n")
        return f"{fname}(obj, io)"

    def __repr__(self) -> str:
        return f"<struct {self.struct_name}>"


class NullableStructCodec(construct.Construct):
    """A struct field that may be null: an int8 marker (-1 null, 1 present) first."""

    def __init__(self, inner: StructCodec):
        super().__init__()
        self.inner = inner
        self.min_size = 1

    def read(self, r: Reader):
        if read_int8(r) < 0:
            return None
        return self.inner.read(r)

    def write(self, w: Writer, value) -> None:
        if value is None:
            w.buf.append(0xFF)
        else:
            w.buf.append(1)
            self.inner.write(w, value)

    def _parse(self, stream, context, path):
        return self.read(stream)

    def _build(self, obj, stream, context, path):
        self.write(stream, obj)
        return obj

    def _emitparse(self, code):
        code.append(PRIMITIVES_IMPORT)
        inner = self.inner._compileparse(code)
        fname = f"parse_nullable_struct_{code.allocateId()}"
        code.append(
            f"def {fname}(io):\n    if read_int8(io) < 0:\n        return None\n    return {inner}\n"
        )
        return f"{fname}(io)"

    def _emitbuild(self, code):
        inner = self.inner._compilebuild(code)
        fname = f"build_nullable_struct_{code.allocateId()}"
        code.append(
            f"def {fname}(obj, io):\n"
            f"    if obj is None:\n        io.buf.append(0xFF)\n        return\n"
            f"    io.buf.append(1)\n    {inner}\n"
        )
        return f"{fname}(obj, io)"


def _factory_for(default):
    """Mutable defaults get a factory so each decoded struct owns its own."""
    if isinstance(default, list):
        return list
    if isinstance(default, Struct):
        return functools.partial(_fresh, default)
    return None


def _fresh(value):
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    if isinstance(value, Struct):
        return Struct({k: _fresh(v) for k, v in value.items()})
    if isinstance(value, tuple):
        return []
    return value


# --- derivation ----------------------------------------------------------------


def _primitive(type_name: str, compact: bool, nullable: bool):
    if type_name == "string":
        return STRINGS[compact, nullable]
    if type_name == "bytes":
        return BYTES[compact, nullable]
    if type_name == "records":
        return RECORDS[compact]
    return FIXED[type_name]


def _field_codec(f: Field, version: int, flexible: bool):
    nullable = version in f.nullable
    compact = flexible and (f.flexible is None or version in f.flexible)
    if f.is_array:
        if f.is_struct:
            element = struct_codec(f.element_type, f.fields, version, flexible)
        else:
            element = _primitive(f.element_type, flexible, False)
        return ArrayCodec(element, compact, nullable)
    if f.is_struct:
        inner = struct_codec(f.type, f.fields, version, flexible)
        return NullableStructCodec(inner) if nullable else inner
    return _primitive(f.type, compact, nullable)


def _default(f: Field, version: int, flexible: bool):
    """The field's default value; structs default to a struct of defaults."""
    if f.is_struct and not f.is_array and f.default is not None:
        return struct_codec(f.type, f.fields, version, flexible).default()
    return f.default_value()


def struct_codec(name: str, fields, version: int, flexible: bool) -> StructCodec:
    regular, absent, tagged = [], [], []
    for f in fields:
        default = _default(f, version, flexible)
        if flexible and version in f.tagged:
            tagged.append((f.tag, f.name, _field_codec(f, version, flexible), default))
        elif version in f.versions and version not in f.tagged:
            encode_default = () if isinstance(default, list) else default
            regular.append((f.name, _field_codec(f, version, flexible), encode_default))
        else:
            absent.append((f.name, default, _factory_for(default)))
    return StructCodec(name, regular, absent, tagged, flexible)


class MessageCodec:
    """Encodes and decodes one message at one version."""

    def __init__(self, message: Message, version: int, compiled: bool = True):
        self.message = message
        self.version = version
        self.flexible = version in message.flexible
        self.root = struct_codec(message.name, message.fields, version, self.flexible)
        self.compiled = compiled
        if compiled:
            self._compiled = self.root.compile()
            parsefunc = self._compiled.parsefunc
            buildfunc = self._compiled.buildfunc
            self._read = lambda r: parsefunc(r, None)
            self._write = lambda w, obj: buildfunc(obj, w, None)
        else:
            self._read = self.root.read
            self._write = self.root.write

    @property
    def source(self) -> str | None:
        """The generated Python of the compiled form (for inspection)."""
        return self._compiled.source if self.compiled else None

    def default(self) -> Struct:
        return self.root.default()

    def read(self, r: Reader) -> Struct:
        """Decode from a reader, leaving it after the message."""
        try:
            return self._read(r)
        except DecodeError:
            raise
        except (struct.error, ValueError, OverflowError, IndexError) as e:
            # Defence in depth: the primitives raise DecodeError themselves.
            raise DecodeError(f"{self.message.name} v{self.version}: {e}") from None

    def decode(self, data) -> Struct:
        """Decode a whole buffer; bytes left over are an error."""
        r = data if isinstance(data, Reader) else Reader(data)
        result = self.read(r)
        if r.pos != r.end:
            raise DecodeError(
                f"{self.message.name} v{self.version}: {r.end - r.pos} bytes left over"
            )
        return result

    def write(self, w: Writer, obj) -> None:
        try:
            self._write(w, obj)
        except EncodeError:
            raise
        except (struct.error, TypeError, AttributeError, ValueError, OverflowError) as e:
            raise EncodeError(f"{self.message.name} v{self.version}: {e}") from e

    def encode(self, obj) -> bytes:
        w = Writer()
        self.write(w, obj)
        return w.getvalue()


# Keyed by the message's identity: declarations are module-level constants, and
# hashing a whole declaration on every lookup would cost more than the lookup.
_CODECS: dict[tuple[int, int, bool], MessageCodec] = {}


def message_codec(message: Message, version: int, compiled: bool = True) -> MessageCodec:
    """The codec of `message` at `version`, built on first use."""
    key = (id(message), version, compiled)
    codec = _CODECS.get(key)
    if codec is None:
        if version not in message.valid:
            raise UnsupportedVersionError(-1, version, f"{message.name} has no version {version}")
        codec = _CODECS[key] = MessageCodec(message, version, compiled)
    return codec
