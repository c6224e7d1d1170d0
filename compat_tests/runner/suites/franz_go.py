"""franz-go's `pkg/kgo` integration tests, run against one broker.

The module zip of the franz-go version compat_tests/franz/go.mod pins, from the
Go module proxy (`go mod download`, into Go's module cache), compiled once with
`go test -c` into .cache/realsuites/. The tests read KGO_SEEDS (bootstrap),
KGO_TEST_RF (replication factor of the topics they create: 1 on one node) and
KGO_TEST_RECORDS (records of the ETL tests; 500 000 by default, far too many
for a few minutes: FRANZ_RECORDS). Only tests that talk to a broker are run
(FRANZ_TESTS); kgo's unit tests prove nothing about a broker.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import go_toolchain  # tools/go_toolchain.py

from .. import COMPAT_DIR
from .suite import CACHE, PREFIX, SuiteUnavailable, log

FRANZ_GO_MOD = COMPAT_DIR / "franz" / "go.mod"

# Seconds the suite may take against one broker before it is stopped; its
# unfinished tests are then reported as errors.
FRANZ_TIMEOUT = 300

# Records produced and consumed by franz-go's ETL tests: enough for several
# rebalances of a chain of groups over 7-31 partitions while records flow,
# small enough for about a minute per broker.
FRANZ_RECORDS = 5000

# franz-go pkg/kgo tests that talk to a broker, with what they exercise.
FRANZ_TESTS = {
    "TestGroupETL": "produce 5000 records, chains of consumer groups (range, cooperative-sticky, "
    "static, KIP-848) joining and leaving; no record lost or consumed twice",
    "TestClient_Produce": "produce and read back one partition",
    "TestClient_ProduceLargeMessages": "records over max.message.bytes: MESSAGE_TOO_LARGE",
    "TestIssue769": "cancelled records over a slow connection fail, the others are produced",
    "TestIssue831": "500 produces with cancelled contexts, then the client still produces",
    "TestIssueProduceSyncManualPartitionNegativeDoesNotPanic": "produce to partition -1",
    "TestPing": "Ping: a request round trip to a broker",
    "TestIssue1034": "FindCoordinator v4+ with several keys (batched)",
    "TestAddRemovePartitions": "add and remove consumed partitions while consuming",
    "TestConsumeMaxDecompressBatchBytes": "fetch of a compressed batch above the client's limit",
    "TestConsumeRegex": "consume topics by regular expression (Metadata of all topics)",
    "TestDirectPartitionPurge": "purge a directly assigned partition, consume it again",
    "TestGroupSimple": "join a group, consume, commit (classic and KIP-848)",
    "TestHookPollStart": "consume assigned partitions with PollRecords and PollFetches",
    "TestIssue325": "produce, then consume a topic added after the client started",
    "TestIssue337": "consume only the partition asked for",
    "TestIssue434": "a topic deleted while regex-consuming is no longer fetched",
    "TestIssue523": "regex-subscribed groups (roundrobin, sticky) see new topics",
    "TestIssue648": "consuming an unknown topic reports UNKNOWN_TOPIC_OR_PARTITION",
    "TestIssue810": "consumed topics listed directly and after regex discovery",
    "TestIssue865": "produce 10000 records to two topics while consuming them",
    "TestIssueFetchLargerThanBrokerMaxReadBytes": "a 5 MiB batch is returned even above the fetch byte limits",
    "TestPauseIssue489": "pause one partition, keep consuming the others",
    "TestPauseIssueOct2023": "pause topics, resume, no duplicates",
    "TestPooling": "produce and consume with pooled decompression and record buffers",
    "TestTxnEtl": "consume-transform-produce in transactions (GroupTransactSession, range and "
    "cooperative-sticky, static members) through chains of groups; every record exactly once",
}

NOT_RUN = [
    (
        "franz-go/TestShareGroup*, Test848RegexBrokerResolves, TestConsumeRegexShareSkipsInternal",
        "share groups (KIP-932) and KIP-848-only tests: neither protocol is served by Gregor, "
        "and Kafka 4.3 needs extra settings for share groups",
    ),
    (
        "franz-go/TestIssueProduceBrokerTooOldFailsRecords",
        "skips itself against a broker that advertises Produce v0-2, as Kafka 4.3.1 does (for "
        "librdkafka's version checks) and so does Gregor",
    ),
    (
        "franz-go unit tests (balancers, record formatter, partitioners, sinks with kfake, ...)",
        "never talk to a broker",
    ),
]


def franz_version() -> str:
    match = re.search(r"github\.com/twmb/franz-go v(\S+)", FRANZ_GO_MOD.read_text())
    if not match:
        raise SuiteUnavailable(f"no github.com/twmb/franz-go requirement in {FRANZ_GO_MOD}")
    return match.group(1)


def _go() -> str:
    try:
        return go_toolchain.go_binary()
    except go_toolchain.GoUnavailable as e:
        raise SuiteUnavailable(f"no Go to build franz-go's tests with: {e}") from e


def franz_module_dir() -> Path:
    """franz-go's module from the Go module proxy, in Go's module cache (read-only)."""
    module = f"github.com/twmb/franz-go@v{franz_version()}"
    CACHE.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [_go(), "mod", "download", "-json", module],
        cwd=CACHE,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise SuiteUnavailable(f"go mod download {module} failed:\n{proc.stdout}{proc.stderr}")
    return Path(json.loads(proc.stdout)["Dir"])


def binary_path() -> Path:
    return CACHE / f"kgo-v{franz_version()}.test"


def prepare() -> Path:
    """The compiled pkg/kgo test binary, built once per franz-go version."""
    binary = binary_path()
    if binary.exists():
        return binary
    module_dir = franz_module_dir()
    log(f"compiling franz-go v{franz_version()} pkg/kgo tests (once) into {binary}")
    # Built under a name of its own, then renamed: another run building at the
    # same time never finds a half-written binary.
    partial = binary.with_name(f"{binary.name}.{os.getpid()}.partial")
    proc = subprocess.run(
        [_go(), "test", "-c", "-o", str(partial), "./pkg/kgo"],
        cwd=module_dir,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if proc.returncode != 0:
        partial.unlink(missing_ok=True)
        raise SuiteUnavailable(f"go test -c ./pkg/kgo failed:\n{proc.stdout}{proc.stderr}")
    os.replace(partial, binary)
    return binary


def parse_test2json(lines, suite: str = "franz-go") -> dict[str, dict]:
    """Rows from `go tool test2json` events: one per test and subtest that ended."""
    output: dict[str, list[str]] = {}
    results: dict[str, dict] = {}
    outcome_of = {"pass": "passed", "fail": "failed", "skip": "skipped"}
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        test = event.get("Test")
        if not test:
            continue
        action = event.get("Action")
        if action == "output":
            output.setdefault(test, []).append(event.get("Output", ""))
        elif action in outcome_of:
            top = test.split("/", 1)[0]
            message = ""
            if action != "pass":
                text = "".join(output.get(test, []))
                message = "\n".join(
                    ln
                    for ln in text.splitlines()
                    if ln.strip() and not ln.startswith(("=== ", "--- "))
                )[-2000:]
            results[f"{PREFIX}{suite}/{test}"] = {
                "outcome": outcome_of[action],
                "message": message,
                "client": suite,
                "api": [FRANZ_TESTS.get(top, "")],
                "seconds": event.get("Elapsed"),
            }
    return results


def run(bootstrap: str, log_path: Path) -> dict[str, dict]:
    binary = prepare()
    go = _go()
    pattern = "^(" + "|".join(FRANZ_TESTS) + ")$"
    cmd = [
        go,
        "tool",
        "test2json",
        "-t",
        str(binary),
        "-test.v=test2json",
        "-test.run",
        pattern,
        f"-test.timeout={FRANZ_TIMEOUT}s",
    ]
    env = {
        **os.environ,
        "KGO_SEEDS": bootstrap,
        "KGO_TEST_RF": "1",
        "KGO_TEST_RECORDS": str(FRANZ_RECORDS),
    }
    events_path = log_path.with_suffix(".json")
    with open(events_path, "w") as events, open(log_path, "w") as log:
        log.write(" ".join(cmd) + "\n\n")
        log.flush()
        try:
            # The binary's own -test.timeout panics with the running tests'
            # names; this outer limit only guards against a wedged process.
            subprocess.run(
                cmd,
                stdout=events,
                stderr=log,
                stdin=subprocess.DEVNULL,
                cwd=franz_module_dir() / "pkg" / "kgo",
                env=env,
                timeout=FRANZ_TIMEOUT + 60,
            )
        except subprocess.TimeoutExpired:
            log.write(f"\nreal suites: killed after {FRANZ_TIMEOUT + 60}s\n")
    results = parse_test2json(events_path.read_text().splitlines())
    for name, what in FRANZ_TESTS.items():
        results.setdefault(
            f"{PREFIX}franz-go/{name}",
            {
                "outcome": "error",
                "message": f"no result: the run ended first; see {log_path}",
                "client": "franz-go",
                "api": [what],
            },
        )
    return results
