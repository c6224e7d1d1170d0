"""Gregor's declarations agree with Apache Kafka's JSON message specs.

For every API `wire` declares, the spec's request and response are walked
field by field: names (in snake_case), types, order, versions, nullable and
tagged versions, tags, defaults and per-field flexible versions must match.
The specs are reference material in ../shared/kafka-protocol (or
$GREGOR_KAFKA_SPECS), from Kafka's 4.0 line; without them these tests skip and
say so. A declaration that goes past those versions (DescribeGroups v6, new in
Kafka 4.3) is checked against the newer specs kafka-python 3.x ships, which
must then be installed.
"""

import json
import os
from pathlib import Path

import kafka
import pytest

from wire.apis import ALL_APIS
from wire.headers import REQUEST_HEADER, RESPONSE_HEADER
from wire.schema import PRIMITIVE_TYPES, UNSET, Versions, snake_case

REPO = Path(__file__).resolve().parents[2]
SPEC_DIR = Path(
    os.environ.get("GREGOR_KAFKA_SPECS", REPO.parent / "shared" / "kafka-protocol" / "message")
)

# Kafka 4.3's specs, inside kafka-python 3.x (CLIENTS.md).
NEWER_SPEC_DIR = Path(kafka.__file__).parent / "protocol" / "schemas" / "resources"

pytestmark = pytest.mark.skipif(
    not SPEC_DIR.is_dir(),
    reason=f"Kafka's JSON message specs not found at {SPEC_DIR}: conformance NOT checked",
)


def load_spec(name: str, spec_dir: Path = SPEC_DIR) -> dict:
    text = (spec_dir / f"{name}.json").read_text()
    # The specs carry // line comments (license, notes).
    lines = [line for line in text.splitlines() if not line.strip().startswith("//")]
    return json.loads("\n".join(lines))


def spec_default(field: dict):
    ftype = field["type"]
    nullable = Versions.parse(field.get("nullableVersions"))
    if "default" not in field:
        return UNSET
    raw = field["default"]
    if ftype.startswith("[]") or ftype not in PRIMITIVE_TYPES:
        assert raw == "null"
        return None
    if ftype == "bool":
        return raw if isinstance(raw, bool) else raw == "true"
    if ftype in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return int(str(raw), 0)
    if ftype == "float64":
        return float(raw)
    if raw == "null" and (nullable or ftype in ("bytes", "records")):
        return None
    return raw


def effective_default(field_type: str, default):
    """Our declarations leave out defaults equal to the type's zero value."""
    from wire.schema import _ZERO

    if default is UNSET:
        if field_type.startswith("[]") or field_type not in PRIMITIVE_TYPES:
            return UNSET
        return _ZERO[field_type]
    return default


def compare_fields(ours, spec_fields, common, path):
    names = [f.name for f in ours]
    spec_names = [snake_case(f["name"]) for f in spec_fields]
    assert names == spec_names, f"{path}: field order/names differ"
    for f, s in zip(ours, spec_fields, strict=True):
        where = f"{path}.{f.name}"
        assert f.type == s["type"], where
        assert f.versions == Versions.parse(s["versions"]), f"{where} versions"
        assert f.nullable == Versions.parse(s.get("nullableVersions")), f"{where} nullable"
        assert f.tagged == Versions.parse(s.get("taggedVersions")), f"{where} tagged"
        # One spec writes its tag as a string ("0").
        assert f.tag == (None if s.get("tag") is None else int(s["tag"])), f"{where} tag"
        expected_flexible = s.get("flexibleVersions")
        ours_flexible = None if f.flexible is None else str(f.flexible)
        assert ours_flexible == (
            None if expected_flexible is None else str(Versions.parse(expected_flexible))
        ), f"{where} flexible"
        assert effective_default(f.type, f.default) == effective_default(
            s["type"], spec_default(s)
        ), f"{where} default"
        element = s["type"][2:] if s["type"].startswith("[]") else s["type"]
        if element in PRIMITIVE_TYPES:
            assert not f.fields, where
            continue
        sub = s.get("fields")
        if sub is None:
            sub = common[element]["fields"]
        compare_fields(f.fields, sub, common, where)


def compare_message(ours, spec, *, older_versions_kept: bool = False):
    """`older_versions_kept`: `spec` is the newer one, which dropped old
    versions (Produce 0-2, WriteTxnMarkers 0 in Kafka 4.0) that Gregor still
    declares, for clients such as librdkafka that insist on seeing them."""
    spec_valid = Versions.parse(spec["validVersions"])
    if older_versions_kept:
        assert ours.valid.hi == spec_valid.hi and ours.valid.lo <= spec_valid.lo, ours.name
    else:
        assert ours.valid == spec_valid, ours.name
    assert ours.flexible == Versions.parse(spec["flexibleVersions"]), ours.name
    common = {c["name"]: c for c in spec.get("commonStructs", [])}
    compare_fields(ours.fields, spec["fields"], common, ours.name)


# APIs Kafka renamed after 4.0, which `wire` declares under the newer name:
# the name of their 4.0 spec.
NAME_IN_4_0 = {"ListConfigResources": "ListClientMetricsResources"}  # KIP-1142


def load_4_0_spec(name: str) -> dict:
    """`name`'s spec ("...Request"/"...Response") from ../shared's 4.0 set."""
    for new, old in NAME_IN_4_0.items():
        if name.startswith(new):
            name = old + name.removeprefix(new)
    return load_spec(name)


def spec_covering(name: str, declared: Versions) -> dict:
    """The spec of `name` from ../shared, or the newer one when we declare
    versions past it."""
    spec = load_4_0_spec(name)
    if declared.hi > Versions.parse(spec["validVersions"]).hi:
        newer = NEWER_SPEC_DIR / f"{name}.json"
        assert newer.exists(), f"{name} v{declared.hi} is newer than every spec at hand"
        spec = load_spec(name, NEWER_SPEC_DIR)
    return spec


@pytest.mark.parametrize("api", ALL_APIS, ids=lambda a: a.name)
def test_declaration_matches_kafka_spec(api):
    request = spec_covering(f"{api.name}Request", api.request.valid)
    response = spec_covering(f"{api.name}Response", api.response.valid)
    assert request["apiKey"] == api.key == response["apiKey"]
    older = Versions.parse(load_4_0_spec(f"{api.name}Request")["validVersions"])
    compare_message(api.request, request, older_versions_kept=api.request.valid.lo == older.lo)
    compare_message(api.response, response, older_versions_kept=api.response.valid.lo == older.lo)


def test_headers_match_kafka_spec():
    compare_message(REQUEST_HEADER, load_spec("RequestHeader"))
    compare_message(RESPONSE_HEADER, load_spec("ResponseHeader"))
