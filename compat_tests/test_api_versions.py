"""Version negotiation: ApiVersions, including a version above the broker's maximum."""

from __future__ import annotations

import asyncio
import json

import pytest
from compatlib import franz, java, raw

UNSUPPORTED_VERSION = 35
# APIs every client here needs, with the lowest maximum version it must reach.
CORE = {0: 3, 1: 4, 2: 1, 3: 1, 18: 3}


def check_core(versions: dict[int, tuple[int, int]]) -> None:
    for key, needed in CORE.items():
        assert key in versions, f"API {key} not advertised: {sorted(versions)}"
        lo, hi = versions[key]
        assert lo <= needed <= hi, f"API {key}: [{lo}, {hi}] does not include v{needed}"


@pytest.mark.client("raw")
@pytest.mark.api("ApiVersions")
def test_apiversions_unsupported_version_gets_v0_error(bootstrap):
    """ApiVersions v99: a v0-format answer, UNSUPPORTED_VERSION and the single entry for key 18."""
    with raw.Connection(bootstrap) as conn:
        resp = raw.api_versions(conn, 99)
    assert resp.error_code == UNSUPPORTED_VERSION
    assert list(resp.versions) == [18], resp.versions
    lo, hi = resp.versions[18]
    assert lo == 0 and hi >= 3


@pytest.mark.client("raw")
@pytest.mark.api("ApiVersions")
def test_apiversions_connection_survives_unsupported_version(bootstrap):
    """After the UNSUPPORTED_VERSION answer a client retries on the same connection."""
    with raw.Connection(bootstrap) as conn:
        first = raw.api_versions(conn, 99)
        assert first.error_code == UNSUPPORTED_VERSION
        hi = first.versions[18][1]
        again = raw.api_versions(conn, hi)
    assert again.error_code == 0
    check_core(again.versions)


@pytest.mark.client("raw")
@pytest.mark.api("ApiVersions")
@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_apiversions_every_version(bootstrap, version):
    with raw.Connection(bootstrap) as conn:
        resp = raw.api_versions(conn, version)
        v0 = raw.api_versions(conn, 0)
    assert resp.error_code == 0
    check_core(resp.versions)
    assert resp.versions == v0.versions


@pytest.mark.client("java")
@pytest.mark.api("ApiVersions")
def test_apiversions_java_broker_api_versions_tool(bootstrap):
    proc = java.run("kafka-broker-api-versions", "--bootstrap-server", bootstrap)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for api in ("Produce(0)", "Fetch(1)", "ListOffsets(2)", "Metadata(3)", "ApiVersions(18)"):
        line = next((x for x in out.splitlines() if api in x), None)
        assert line is not None, f"{api} missing:\n{out}"
        assert "usable:" in line, line


@pytest.mark.client("franz-go")
@pytest.mark.api("ApiVersions", "Metadata")
def test_apiversions_franz(bootstrap):
    res = franz.run("apiversions", brokers=bootstrap)
    assert res.returncode == 0, res
    head = res.lines[0]
    assert head["error_code"] == 0
    versions = {x["api_key"]: (x["min"], x["max"]) for x in res.lines if "api_key" in x}
    check_core(versions)
    assert res.lines[-1]["brokers"] == 1


@pytest.mark.client("kafka-python")
@pytest.mark.api("ApiVersions")
def test_apiversions_kafka_python(bootstrap):
    from kafka import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        versions = {int(k): tuple(v) for k, v in a.api_versions().items()}
        check_core(versions)
        assert a.list_topics() is not None  # a negotiated Metadata round trip
    finally:
        a.close()


@pytest.mark.client("aiokafka")
@pytest.mark.api("ApiVersions", "Metadata")
def test_apiversions_aiokafka(bootstrap):
    from aiokafka import AIOKafkaClient

    async def main():
        client = AIOKafkaClient(bootstrap_servers=bootstrap)
        await client.bootstrap()
        try:
            node = next(iter(client.cluster.brokers())).nodeId
            conn = await client._get_conn(node)
            assert conn is not None
            check_core(dict(conn._versions))
            md = await client.fetch_all_metadata()
            assert len(md.brokers()) == 1
        finally:
            await client.close()

    asyncio.run(main())


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("ApiVersions", "DescribeCluster")
def test_apiversions_confluent_describe_cluster(admin):
    desc = admin.describe_cluster(request_timeout=10).result(timeout=15)
    assert len(desc.nodes) == 1
    assert desc.controller is not None
    assert desc.cluster_id


@pytest.mark.client("kafka-python")
@pytest.mark.api("DescribeCluster")
def test_describe_cluster_kafka_python(bootstrap):
    """The newest DescribeCluster both sides know (v2 with Kafka 4.3.1, which
    says whether each broker is fenced, KIP-1073)."""
    from kafka import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        described = a.describe_cluster()
    finally:
        a.close()
    host, port = bootstrap.rsplit(":", 1)
    (only,) = described["brokers"]
    assert (only["host"], only["port"], only["is_fenced"]) == (host, int(port), False)
    assert described["controller_id"] == only["broker_id"]
    assert described["cluster_id"]


@pytest.mark.client("kcat")
@pytest.mark.api("ApiVersions", "Metadata")
def test_apiversions_kcat_metadata(bootstrap):
    proc = java.kcat("-b", bootstrap, "-L", "-J", "-m", "10")
    assert proc.returncode == 0, proc.stderr
    md = json.loads(proc.stdout)
    assert [b["name"] for b in md["brokers"]] == [bootstrap]
