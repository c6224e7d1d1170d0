"""wire.api_keys against Kafka's JSON message specs (read from ../shared when present)."""

import json
import re
from pathlib import Path

import pytest

from wire.api_keys import ApiKey

REPO_ROOT = Path(__file__).resolve().parents[2]
SPECS = REPO_ROOT.parent / "shared" / "kafka-protocol" / "message"


def _request_specs() -> dict[int, str]:
    """apiKey -> spec name without "Request", from every *Request.json."""
    files = sorted(SPECS.glob("*Request.json")) if SPECS.is_dir() else []
    if not files:
        pytest.skip(f"Kafka's message specs are not at {SPECS}")
    specs = {}
    for path in files:
        # The specs are JSON with // comment lines (the licence header).
        text = re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.MULTILINE)
        spec = json.loads(text)
        specs[spec["apiKey"]] = spec["name"].removesuffix("Request")
    return specs


def _upper_snake(camel: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).upper()


# Keys Kafka renamed after 4.0 (the specs at hand), named as Kafka 4.3 does.
RENAMED_SINCE_4_0 = {74: "ListConfigResources"}  # KIP-1142


def test_every_api_key_in_the_specs_has_a_member_named_after_it():
    for key, name in _request_specs().items():
        name = RENAMED_SINCE_4_0.get(key, name)
        member = ApiKey(key)
        assert member.name == _upper_snake(name), key
        assert member.display_name == name, key


def test_every_member_is_an_api_key_in_the_specs():
    specs = _request_specs()
    assert {int(member) for member in ApiKey} == set(specs)


def test_keys_are_unique():
    assert len(ApiKey.__members__) == len(list(ApiKey))


def test_keys_run_without_gaps_from_produce():
    assert sorted(int(member) for member in ApiKey) == list(range(len(ApiKey)))


@pytest.mark.parametrize(
    ("key", "member", "display_name"),
    [
        (0, ApiKey.PRODUCE, "Produce"),
        (1, ApiKey.FETCH, "Fetch"),
        (3, ApiKey.METADATA, "Metadata"),
        (18, ApiKey.API_VERSIONS, "ApiVersions"),
        (22, ApiKey.INIT_PRODUCER_ID, "InitProducerId"),
        (23, ApiKey.OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpoch"),
        (50, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "DescribeUserScramCredentials"),
        (75, ApiKey.DESCRIBE_TOPIC_PARTITIONS, "DescribeTopicPartitions"),
        (87, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, "ReadShareGroupStateSummary"),
    ],
)
def test_well_known_key_has_kafkas_number_and_name(key, member, display_name):
    assert member == key
    assert ApiKey(key) is member
    assert member.display_name == display_name
