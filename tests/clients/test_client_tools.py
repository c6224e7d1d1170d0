"""The non-Python Kafka clients are installed and runnable (no broker needed).

These are declared dependencies installed by `make clients` (a prerequisite of
`make test`): Apache Kafka's jars (tools/kafka_jars.py), java and kcat
(tools/install_debian.sh). A missing one FAILS here with the reason; nothing is skipped.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import crc32c
import pytest

from tools import kafka_cli, kafka_jars

# Slow (each test starts a JVM for one of Kafka's tools): make unit leaves the module out.
pytestmark = pytest.mark.slow

KAFKA_VERSION = kafka_jars.KAFKA_VERSION
REPO_ROOT = Path(__file__).resolve().parents[2]
INSTALL_HINT = "run `make clients` (tools/install_debian.sh and tools/kafka_jars.py)"

# How each tool in kafka_cli.TOOLS proves it starts: (args, exit code, stream, text).
# joptsimple tools answer --version with the bare version on stdout and exit 0;
# argparse4j tools have no --version and print --help to stdout, exiting 1 or 0
# depending on the tool.
V = (("--version",), 0, "stdout", KAFKA_VERSION)
EXPECTED_START: dict[str, tuple[tuple[str, ...], int, str, str]] = {
    "kafka-topics": V,
    "kafka-console-producer": V,
    "kafka-console-consumer": V,
    "kafka-configs": V,
    "kafka-get-offsets": V,
    "kafka-delete-records": V,
    "kafka-consumer-groups": V,
    "kafka-dump-log": V,
    "kafka-broker-api-versions": V,
    "kafka-consumer-perf-test": V,
    "kafka-transactions": V,
    "kafka-log-dirs": V,
    "kafka-acls": V,
    "kafka-groups": V,
    "kafka-reassign-partitions": V,
    "kafka-leader-election": V,
    "kafka-server": V,
    "kafka-verifiable-producer": (("--help",), 1, "stdout", "usage: verifiable-producer"),
    "kafka-verifiable-consumer": (("--help",), 1, "stdout", "usage: verifiable-consumer"),
    "transactional-message-copier": (
        ("--help",),
        1,
        "stdout",
        "usage: transactional-message-copier",
    ),
    "kafka-producer-perf-test": (("--help",), 1, "stdout", "usage: kafka-producer-perf-test"),
    "kafka-storage": (("--help",), 0, "stdout", "usage: kafka-storage"),
    "kafka-cluster": (("--help",), 1, "stdout", "usage: kafka-cluster"),
    "kafka-features": (("--help",), 0, "stdout", "usage: kafka-features"),
    "kafka-metadata-quorum": (("--help",), 0, "stdout", "usage: kafka-metadata-quorum"),
    "kafka-e2e-latency": ((), 1, "stderr", "This tool measures end-to-end latency in Kafka"),
}


def _require(ok: bool, what: str) -> None:
    if not ok:
        pytest.fail(f"{what} is missing: {INSTALL_HINT}", pytrace=False)


def test_java_is_17_or_newer():
    _require(kafka_cli.java_available(), "`java`")
    out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    m = re.search(r'version "(\d+)', out.stderr)
    assert m and int(m.group(1)) >= 17, f"Kafka 4.x needs Java 17+: {out.stderr}"


def test_kafka_jars_installed():
    _require(
        kafka_jars.installed(), f"Apache Kafka {KAFKA_VERSION} jars in {kafka_jars.jars_dir()}"
    )
    names = {p.name for p in kafka_jars.jars_dir().glob("*.jar")}
    for jar in (
        f"kafka_2.13-{KAFKA_VERSION}.jar",
        f"kafka-tools-{KAFKA_VERSION}.jar",
        f"kafka-clients-{KAFKA_VERSION}.jar",
        f"kafka-server-common-{KAFKA_VERSION}.jar",
        f"kafka-storage-{KAFKA_VERSION}.jar",
    ):
        assert jar in names, f"{jar} not in {kafka_jars.jars_dir()}"
    assert any(n.startswith("log4j-core-") for n in names)
    assert any(n.startswith("log4j-slf4j-impl-") for n in names)
    # Exactly one kafka-clients: a second version on the classpath would be picked at random.
    assert len([n for n in names if n.startswith("kafka-clients-")]) == 1


def test_kafka_jars_second_run_reuses_the_cache():
    _require(kafka_jars.installed(), f"Apache Kafka {KAFKA_VERSION} jars")
    out = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "kafka_jars.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(kafka_jars.jars_dir())
    assert "resolving" not in out.stderr, "the stamp did not short-circuit Maven"


@pytest.fixture(scope="module")
def jar_classes() -> set[str]:
    _require(kafka_jars.installed(), f"Apache Kafka {KAFKA_VERSION} jars")
    classes: set[str] = set()
    for jar in kafka_jars.jars_dir().glob("kafka*.jar"):
        with zipfile.ZipFile(jar) as zf:
            classes.update(
                n[: -len(".class")].replace("/", ".") for n in zf.namelist() if n.endswith(".class")
            )
    return classes


@pytest.mark.parametrize("tool", sorted(kafka_cli.TOOLS))
def test_main_class_is_in_the_jars(tool, jar_classes):
    assert kafka_cli.TOOLS[tool] in jar_classes


def test_every_tool_has_a_start_check():
    assert set(EXPECTED_START) == set(kafka_cli.TOOLS)


@pytest.mark.parametrize("tool", sorted(EXPECTED_START))
def test_tool_starts(tool):
    args, code, stream, text = EXPECTED_START[tool]
    res = kafka_cli.run_tool(tool, *args, timeout=60)
    out = getattr(res, stream)
    assert res.returncode == code, (
        f"exit {res.returncode}\nstdout: {res.stdout}\nstderr: {res.stderr}"
    )
    assert out.startswith(text) if stream == "stdout" else text in out, out
    if args == ("--version",):
        # log4j2 is bound and configured: no SLF4J/log4j complaints on stderr.
        assert res.stderr == ""


@pytest.mark.parametrize(
    "tool, usage",
    [
        ("kafka-topics", "This tool helps to create, delete, describe, or change a topic."),
        ("kafka-console-producer", "This tool helps to read data from standard input"),
        ("kafka-console-consumer", "This tool helps to read data from Kafka topics"),
        ("kafka-consumer-groups", "This tool helps to list all consumer groups"),
        ("kafka-dump-log", "This tool helps to parse a log file and dump its contents"),
        ("kafka-server", "USAGE: java [options] kafka.Kafka server.properties"),
    ],
)
def test_jopt_tool_help(tool, usage):
    # joptsimple tools print help to stderr and exit 1.
    res = kafka_cli.run_tool(tool, "--help", timeout=60)
    assert res.returncode == 1
    assert usage in res.stderr


def test_storage_tool_random_uuid():
    res = kafka_cli.run_tool("kafka-storage", "random-uuid", timeout=60)
    assert res.returncode == 0, res.stderr
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}\n", res.stdout), res.stdout


def test_kcat_version():
    _require(shutil.which("kcat") is not None, "`kcat`")
    res = kafka_cli.run_kcat("-V")
    assert res.returncode == 0, res.stderr
    assert "kcat - Apache Kafka producer and consumer tool" in res.stdout
    assert re.search(r"librdkafka \d+\.\d+\.\d+", res.stdout), res.stdout


def test_dump_log_segments_on_an_empty_segment(tmp_path):
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(b"")
    res = kafka_cli.run_tool("kafka-dump-log", "--files", str(seg), timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"Dumping {seg}\nLog starting offset: 0\n"


def _varint(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)  # zigzag
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _one_record_batch(key: bytes, value: bytes, ts: int) -> bytes:
    """A v2 record batch at offset 0 with one uncompressed record, encoded by hand."""
    body = b"\x00" + _varint(0) + _varint(0)  # attributes, timestampDelta, offsetDelta
    body += _varint(len(key)) + key + _varint(len(value)) + value + _varint(0)
    record = _varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, 0, ts, ts, -1, -1, -1, 1) + record
    head = struct.pack(">ibI", 0, 2, crc32c.crc32c(after_crc))  # leader epoch, magic, crc
    return struct.pack(">qi", 0, len(head) + len(after_crc)) + head + after_crc


def test_dump_log_segments_reads_a_record_batch(tmp_path):
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(_one_record_batch(b"k", b"hello", 1_700_000_000_000))
    res = kafka_cli.run_tool(
        "kafka-dump-log", "--files", str(seg), "--print-data-log", "--deep-iteration", timeout=60
    )
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.startswith(f"Dumping {seg}\nLog starting offset: 0\n"), out
    assert "baseOffset: 0 lastOffset: 0 count: 1" in out, out
    assert "magic: 2" in out and "compresscodec: none" in out, out
    assert "isvalid: true" in out, out
    assert "key: k payload: hello" in out, out
