"""Random but valid values for any codec tree, for round-trip tests.

Values are drawn from a `random.Random`, so a seed reproduces a failure, and
hypothesis can drive the same generator through `st.randoms()`.
"""

from __future__ import annotations

import random
import string
import uuid

from wire.codec import ArrayCodec, NullableStructCodec, StructCodec
from wire.primitives import Primitive
from wire.values import Struct

_TEXT = string.ascii_letters + string.digits + "._-é€"

_INTS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}


def _int(rnd: random.Random, lo: int, hi: int) -> int:
    # Mix edges, small numbers and anything in range.
    choice = rnd.random()
    if choice < 0.2:
        return rnd.choice([lo, hi, 0, -1 if lo < 0 else 1])
    if choice < 0.6:
        return max(lo, min(hi, rnd.randint(-300, 300)))
    return rnd.randint(lo, hi)


def sample_primitive(kind: str, rnd: random.Random):
    base = kind.replace("compact_", "").replace("nullable_", "")
    nullable = "nullable" in kind or base == "records"
    if nullable and rnd.random() < 0.25:
        return None
    if base in _INTS:
        return _int(rnd, *_INTS[base])
    if base == "bool":
        return rnd.random() < 0.5
    if base == "float64":
        return rnd.choice([0.0, -1.5, 3.25, 1e300, rnd.random()])
    if base == "uuid":
        return uuid.UUID(int=rnd.getrandbits(128)) if rnd.random() < 0.8 else uuid.UUID(int=0)
    if base == "string":
        return "".join(rnd.choice(_TEXT) for _ in range(rnd.randint(0, 12)))
    if base in ("bytes", "records"):
        return rnd.randbytes(rnd.randint(0, 20))
    if base in ("uvarint",):
        return rnd.randint(0, 2**31 - 1)
    if base in ("varint",):
        return _int(rnd, -(2**31), 2**31 - 1)
    if base in ("varlong",):
        return _int(rnd, -(2**63), 2**63 - 1)
    raise AssertionError(f"no sample for {kind}")


def sample(codec, rnd: random.Random, depth: int = 0):
    """A value `codec` can encode."""
    if isinstance(codec, Primitive):
        return sample_primitive(codec.kind, rnd)
    if isinstance(codec, ArrayCodec):
        if codec.nullable and rnd.random() < 0.2:
            return None
        n = rnd.randint(0, 3 if depth < 3 else 1)
        return [sample(codec.element, rnd, depth + 1) for _ in range(n)]
    if isinstance(codec, NullableStructCodec):
        if rnd.random() < 0.3:
            return None
        return sample(codec.inner, rnd, depth + 1)
    if isinstance(codec, StructCodec):
        value = Struct()
        for name, sub, _ in codec.regular:
            value[name] = sample(sub, rnd, depth + 1)
        for _, name, sub, _ in codec.tagged:
            if rnd.random() < 0.6:
                value[name] = sample(sub, rnd, depth + 1)
        if codec.flexible and rnd.random() < 0.1:
            # An unknown tagged field, with a tag no known field uses.
            tag = max([t for t, *_ in codec.tagged] + [0]) + rnd.randint(1, 100)
            value["unknown_tagged_fields"] = [(tag, rnd.randbytes(rnd.randint(0, 5)))]
        return value
    raise AssertionError(f"no sample for {codec!r}")
