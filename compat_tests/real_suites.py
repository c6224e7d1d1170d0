"""Parts of real clients' own integration test suites, run against one broker.

    prepare()                                   # download + build once (cached)
    run = run_suites("gregor", "127.0.0.1:9093", OUT_DIR)
    run.results["realsuite:franz-go/TestGroupETL"]["outcome"]   # "passed"

Two suites written by the clients' authors, obtained from registries only and
cached under .cache/realsuites/ (git-ignored), so a second run starts at once:

- franz-go's `pkg/kgo` integration tests: the module zip of the franz-go
  version compat_tests/franz/go.mod pins, from the Go module proxy
  (`go mod download`, into Go's module cache), compiled once with
  `go test -c` into .cache/realsuites/. The tests read KGO_SEEDS (bootstrap),
  KGO_TEST_RF (replication factor of the topics they create: 1 on one node) and
  KGO_TEST_RECORDS (records of the ETL tests; 500 000 by default, far too many
  for a few minutes: FRANZ_RECORDS). Only tests that talk to a broker are run
  (FRANZ_TESTS); kgo's unit tests prove nothing about a broker.
- kafka-python's `test/integration` tests: the sdist of the kafka-python
  version installed in the virtualenv, from PyPI (`pip download --no-binary`),
  unpacked into .cache/realsuites/. Its fixtures use an external broker when
  KAFKA_URI=tcp://host:port is set, and KAFKA_VERSION says which broker version
  to expect (the Apache Kafka version the compat run compares with).

Both suites create their topics with explicit partition counts and replication
factor 1 and run on compat_tests/run.py's BROKER_SETTINGS; the one setting
added for them is group.min.session.timeout.ms=1000 (kafka-python's test_group
asks for 3 s sessions, and kafka-python's own test broker allows them the same
way). kafka-python's tests import `kafka` from the unpacked sdist (pytest runs
there), which is the same version as the installed client. Tests deliberately
left out are in NOT_RUN with the reason.

Each test becomes a row `realsuite:<suite>/<test>` with an outcome (passed,
failed, skipped, error), as compat_tests/run.py's rows; `render()` builds the
report section "Real suites written by others".
"""

from __future__ import annotations

import fnmatch
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import go_toolchain  # noqa: E402  (tools/go_toolchain.py)

CACHE = REPO / ".cache" / "realsuites"
FRANZ_GO_MOD = REPO / "compat_tests" / "franz" / "go.mod"
PREFIX = "realsuite:"
SUITE_ROW = "/(suite)"  # the row of a suite that did not run at all

# Seconds one suite may take against one broker before it is stopped; its
# unfinished tests are then reported as errors.
FRANZ_TIMEOUT = 300
KAFKA_PYTHON_TIMEOUT = 420
# Per-test timeout inside kafka-python's suite (pytest-timeout).
KAFKA_PYTHON_TEST_TIMEOUT = 60

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
}

# kafka-python test/integration files that run against an external broker.
KAFKA_PYTHON_FILES = [
    "test_producer_integration.py",
    "test_consumer_integration.py",
    "test_admin_integration.py",
]
KAFKA_PYTHON_DESELECT = "not transactional"

NOT_RUN = [
    (
        "franz-go/TestTxnEtl",
        "transactions (transactional producer, read_committed consumers): "
        "Gregor does not serve transactions yet; InitProducerId with a transactional id answers "
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED and the consumers then wait until the suite's "
        "timeout",
    ),
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
    (
        "kafka-python/test_producer_integration.py::test_transactional_*",
        "transactions: Gregor does not serve them yet (test_transactional_producer_offsets "
        "also hangs on Kafka 4.3.1)",
    ),
    (
        "kafka-python/test_sasl_integration.py, test_ssl_integration.py",
        "they start their own SASL/SSL Kafka and skip for an external broker",
    ),
]


# Why tests of the suites fail on the compat run's Apache Kafka too.
FAILS_ON_KAFKA = {
    "kafka-python/test_admin_integration.py::test_create_partitions": "the test assigns the "
    "new partitions to broker 0; the compat brokers are node 1, which the compat suite expects",
    "kafka-python/test_admin_integration.py::test_create_describe_delete_acls": "needs an "
    "authorizer; the compat brokers run without one",
}


class SuiteUnavailable(RuntimeError):
    """A suite could not be obtained or built."""


def _log(msg: str) -> None:
    print(f"real suites: {msg}", flush=True)


# --- franz-go ----------------------------------------------------------------------------------


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


def franz_binary() -> Path:
    return CACHE / f"kgo-v{franz_version()}.test"


def prepare_franz() -> Path:
    """The compiled pkg/kgo test binary, built once per franz-go version."""
    binary = franz_binary()
    if binary.exists():
        return binary
    module_dir = franz_module_dir()
    _log(f"compiling franz-go v{franz_version()} pkg/kgo tests (once) into {binary}")
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


def run_franz(bootstrap: str, log_path: Path) -> dict[str, dict]:
    binary = prepare_franz()
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
            log.write(f"\nreal_suites.py: killed after {FRANZ_TIMEOUT + 60}s\n")
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


# --- kafka-python ------------------------------------------------------------------------------


def kafka_python_version() -> str:
    return importlib.metadata.version("kafka-python")


def _ensure_pytest_timeout() -> None:
    # kafka-python's pytest settings (its pyproject.toml addopts) use --timeout.
    if importlib.util.find_spec("pytest_timeout") is not None:
        return
    _log("!!! installing pytest-timeout into this virtualenv (kafka-python's suite needs it)")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "pytest-timeout"],
        check=True,
        timeout=600,
    )


# The sdist leaves out two files of kafka-python's test/ directory that its
# integration fixtures import: test/__init__.py (without it `test` is Python's
# own regression-test package) and test/service.py. For an external broker
# (KAFKA_URI) the fixtures only use ExternalService, a handle with no-op
# open/close/dump_logs; SpawnedService starts a broker, which never happens here.
SDIST_MISSING_TEST_FILES = {
    "__init__.py": "",
    "service.py": """\
# Written by Gregor's compat_tests/real_suites.py: the sdist omits this module.
class ExternalService:
    def __init__(self, host, port):
        self.host = host
        self.port = port

    def open(self):
        pass

    def close(self):
        pass

    def dump_logs(self):
        pass


class SpawnedService:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("spawning a broker is not supported here: set KAFKA_URI")
""",
}


def _complete_sdist_tests(root: Path) -> None:
    for name, text in SDIST_MISSING_TEST_FILES.items():
        path = root / "test" / name
        if not path.exists():
            path.write_text(text)


def prepare_kafka_python() -> Path:
    """The unpacked kafka-python sdist matching the installed version, with its tests."""
    version = kafka_python_version()
    root = CACHE / f"kafka_python-{version}"
    if not (root / "test" / "integration").is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        sdist = CACHE / f"kafka_python-{version}.tar.gz"
        if not sdist.exists():
            _log(f"downloading the kafka-python {version} sdist from PyPI (once)")
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--no-binary",
                    ":all:",
                    "--no-deps",
                    f"kafka-python=={version}",
                    "-d",
                    str(CACHE),
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if proc.returncode != 0 or not sdist.exists():
                raise SuiteUnavailable(
                    f"pip download kafka-python=={version} failed:\n{proc.stdout}{proc.stderr}"
                )
        # Unpacked aside, then renamed into place, so that a run unpacking at
        # the same time never sees a half-written tree.
        staging = Path(tempfile.mkdtemp(prefix="unpacking-", dir=CACHE))
        try:
            with tarfile.open(sdist) as tar:
                tar.extractall(staging, filter="data")
            if not (staging / root.name / "test" / "integration").is_dir():
                raise SuiteUnavailable(f"the kafka-python {version} sdist has no test/integration")
            shutil.rmtree(root, ignore_errors=True)
            try:
                os.replace(staging / root.name, root)
            except OSError:
                if not (root / "test" / "integration").is_dir():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    _complete_sdist_tests(root)
    _ensure_pytest_timeout()
    # Its fixtures check that KAFKA_ROOT (a Kafka distribution) exists even for an
    # external broker, which they never start: an empty directory satisfies them.
    (CACHE / "kafka-python-external-broker").mkdir(exist_ok=True)
    return root


def parse_junit(path: Path, suite: str = "kafka-python") -> dict[str, dict]:
    """Rows from pytest's JUnit XML: `test/integration/test_x.py::test_y[param]`."""
    results: dict[str, dict] = {}
    for case in ET.parse(path).iter("testcase"):
        module = (case.get("classname") or "").rsplit(".", 1)[-1]
        name = case.get("name") or "?"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                text = (child.get("message") or "") + "\n" + (child.text or "")
                message = text.strip()[:2000]
                break
        results[f"{PREFIX}{suite}/{module}.py::{name}"] = {
            "outcome": outcome,
            "message": message,
            "client": suite,
            "api": [module.removeprefix("test_").removesuffix("_integration")],
            "seconds": float(case.get("time") or 0),
        }
    return results


def run_kafka_python(bootstrap: str, log_path: Path, kafka_version: str) -> dict[str, dict]:
    """The chosen kafka-python tests; those that fail are run once more. Some fail
    one run in many on either broker (test_idempotent_producer_max_in_flight: [5]
    on Kafka, [2] on Gregor, whose consumer read nothing for 30 s): a test that
    passes the second time is reported as such, with its first failure kept."""
    root = prepare_kafka_python()
    selection = [f"test/integration/{name}" for name in KAFKA_PYTHON_FILES]
    results = _kafka_python_pytest(root, selection, bootstrap, log_path, kafka_version)
    failed = [
        test_id
        for test_id, row in results.items()
        if row["outcome"] in ("failed", "error") and not test_id.endswith(SUITE_ROW)
    ]
    if not failed:
        return results
    node_ids = [f"test/integration/{t.removeprefix(f'{PREFIX}kafka-python/')}" for t in failed]
    rerun_log = log_path.with_name(log_path.stem + "-rerun.log")
    again = _kafka_python_pytest(root, node_ids, bootstrap, rerun_log, kafka_version)
    for test_id in failed:
        second = again.get(test_id)
        if second is not None and second["outcome"] == "passed":
            results[test_id] = {**second, "first_failure": results[test_id]["message"]}
    return results


def _kafka_python_pytest(
    root: Path, selection: list[str], bootstrap: str, log_path: Path, kafka_version: str
) -> dict[str, dict]:
    junit = log_path.with_suffix(".junit.xml")
    junit.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *selection,
        "-k",
        KAFKA_PYTHON_DESELECT,
        "-p",
        "no:cacheprovider",
        "-p",
        "no:hypothesispytest",
        "-o",
        "log_level=DEBUG",  # the client's own account of a failure, in the log
        # signal, not the suite's thread method: a test that times out then
        # fails alone instead of ending the whole run without a report.
        f"--timeout={KAFKA_PYTHON_TEST_TIMEOUT}",
        "--timeout-method=signal",
        "-q",
        "-rA",
        "--tb=short",
        f"--junitxml={junit}",
    ]
    env = {
        **os.environ,
        "KAFKA_URI": f"tcp://{bootstrap}",
        "KAFKA_VERSION": ".".join(kafka_version.split(".")[:2]),
        "KAFKA_ROOT": str(CACHE / "kafka-python-external-broker"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    with open(log_path, "w") as log:
        log.write(" ".join(cmd) + "\n\n")
        log.flush()
        try:
            subprocess.run(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=root,
                env=env,
                timeout=KAFKA_PYTHON_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            log.write(f"\nreal_suites.py: killed after {KAFKA_PYTHON_TIMEOUT}s\n")
    if not junit.exists():
        return {
            f"{PREFIX}kafka-python{SUITE_ROW}": {
                "outcome": "error",
                "message": f"no JUnit report; see {log_path}",
                "client": "kafka-python",
                "api": [],
            }
        }
    return parse_junit(junit)


# --- one target --------------------------------------------------------------------------------


@dataclass
class SuitesRun:
    name: str
    bootstrap: str
    results: dict[str, dict] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    logs: dict[str, Path] = field(default_factory=dict)


def prepare() -> None:
    """Obtain and build both suites (once; later calls find them in .cache/realsuites/)."""
    prepare_franz()
    prepare_kafka_python()


def run_suites(name: str, bootstrap: str, out_dir: Path, kafka_version: str) -> SuitesRun:
    """Run franz-go's and then kafka-python's chosen tests against one broker."""
    run = SuitesRun(name, bootstrap)
    out_dir.mkdir(parents=True, exist_ok=True)
    suites = [
        ("franz-go", lambda log: run_franz(bootstrap, log)),
        ("kafka-python", lambda log: run_kafka_python(bootstrap, log, kafka_version)),
    ]
    for suite, runner in suites:
        log = out_dir / f"{name}-realsuite-{suite}.log"
        t0 = time.monotonic()
        try:
            results = runner(log)
        except (SuiteUnavailable, OSError, subprocess.SubprocessError) as exc:
            results = {
                f"{PREFIX}{suite}{SUITE_ROW}": {
                    "outcome": "error",
                    "message": str(exc)[-2000:],
                    "client": suite,
                    "api": [],
                }
            }
        run.seconds[suite] = time.monotonic() - t0
        run.logs[suite] = log
        run.results.update(results)
    return run


# --- verdicts and the report section -----------------------------------------------------------

CELL = {"passed": "pass", "failed": "FAIL", "error": "ERROR", "skipped": "skip", None: "-"}


def known_reason(test_id: str, known: list[tuple[str, str]]) -> str | None:
    for pattern, reason in known:
        if fnmatch.fnmatchcase(test_id, pattern):
            return reason
    return None


def verdict(cells: dict[str, dict | None], known: str | None) -> tuple[str, bool]:
    """(verdict, counts as a failure of the run). We do not own these tests: one
    that does not pass on Kafka is reported, never a failure of the run."""
    kafka = (cells.get("kafka") or {}).get("outcome")
    gregor = (cells.get("gregor") or {}).get("outcome")
    if "kafka" in cells and kafka != "passed":
        if kafka == "skipped" and gregor in ("skipped", None):
            return "skipped on Kafka", False
        if gregor == "passed":
            return "fails on Kafka, passes on Gregor", False
        return "fails on Kafka too", False
    if "gregor" in cells and gregor != "passed":
        if known:
            return "known difference", False
        return "GREGOR DIFFERS", True
    if known:
        return "known difference (now passes)", False
    flaky = [n for n, c in cells.items() if c and c.get("first_failure")]
    if flaky:
        return f"ok on a rerun ({', '.join(flaky)} failed first)", False
    return "ok", False


def render(runs: list[SuitesRun], known: list[tuple[str, str]]) -> tuple[str, str, list[str]]:
    """(terminal text, markdown section, one line per failure of the run)."""
    names = [r.name for r in runs]
    ids: list[str] = []
    for run in runs:
        ids += [i for i in run.results if i not in ids]
    rows = []
    problems = []
    counts: dict[str, int] = {}
    for test_id in ids:
        cells = {run.name: run.results.get(test_id) for run in runs}
        reason = known_reason(test_id, known)
        if test_id.endswith(SUITE_ROW):
            # The suite could not be obtained or gave no report: its results are
            # missing, which fails the run whichever broker it was.
            text, bad = "SUITE DID NOT RUN", True
        else:
            text, bad = verdict(cells, reason)
        counts[text] = counts.get(text, 0) + 1
        client = next((c["client"] for c in cells.values() if c), "?")
        api = next((", ".join(c.get("api") or []) for c in cells.values() if c), "")
        rows.append((test_id, client, api, cells, text, reason))
        if bad:
            problems.append((test_id, cells, text))
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    timing = "; ".join(
        f"{run.name}: " + ", ".join(f"{s} {sec:.0f} s" for s, sec in run.seconds.items())
        for run in runs
    )

    term = ["", "Real suites written by others (franz-go pkg/kgo, kafka-python test/integration)"]
    width = min(max((len(r[0]) for r in rows), default=10), 100)
    term.append(f"{'test':<{width}}  " + " ".join(f"{n:<6}" for n in names) + "  verdict")
    for test_id, _client, _api, cells, text, _reason in rows:
        shown = test_id if len(test_id) <= width else test_id[: width - 1] + "…"
        outs = [CELL[(cells.get(n) or {}).get("outcome")] for n in names]
        term.append(f"{shown:<{width}}  " + " ".join(f"{o:<6}" for o in outs) + f"  {text}")
    for test_id, cells, text in problems:
        term.append(f"{text}: {test_id}")
        for n in names:
            cell = cells.get(n)
            if cell and cell["outcome"] != "passed":
                msg = (cell.get("message") or "")[-800:].replace("\n", "\n        ")
                term.append(f"    [{n}] {cell['outcome']}: {msg}")
    reruns = [
        (test_id, n, cells[n]["first_failure"])
        for test_id, _client, _api, cells, _text, _reason in rows
        for n in names
        if (cells.get(n) or {}).get("first_failure")
    ]
    for test_id, n, first in reruns:
        first_lines = first.strip().splitlines()
        term.append(f"passed on a rerun on {n}: {test_id}")
        term.append(f"    first failure: {first_lines[0] if first_lines else '?'}")
    term.append(f"{len(rows)} real-suite tests: {summary}")
    term.append(f"  time per broker: {timing}")
    for run in runs:
        for suite, log in run.logs.items():
            term.append(f"  {run.name} {suite}: log {log}")

    md = ["## Real suites written by others", ""]
    md.append(
        f"franz-go v{_safe(franz_version)} `pkg/kgo` integration tests (KGO_SEEDS, "
        f"KGO_TEST_RF=1, KGO_TEST_RECORDS={FRANZ_RECORDS}) and kafka-python "
        f"{_safe(kafka_python_version)} `test/integration` "
        f"({', '.join(KAFKA_PYTHON_FILES)}; KAFKA_URI, KAFKA_VERSION), obtained from the Go "
        "module proxy and PyPI by `compat_tests/real_suites.py`. Verdicts: **ok** = passes "
        "on both; **GREGOR DIFFERS** = passes on Apache Kafka, not on Gregor (a failure of "
        "the run unless listed in `compat_tests/KNOWN_DIFFERENCES`); **fails on Kafka too** "
        "= not ours to fix, reported only. A skip on Gregor where Kafka passes is a difference."
    )
    md.append("")
    md.append(f"- result: {len(rows)} tests; {summary}")
    md.append(f"- time per broker: {timing}")
    md.append("")
    if problems:
        md.append("### Unexpected results")
        md.append("")
        for test_id, cells, text in problems:
            md.append(f"#### {text}: `{test_id}`")
            md.append("")
            for n in names:
                cell = cells.get(n)
                if cell and cell["outcome"] != "passed":
                    md += [
                        f"{n} ({cell['outcome']}):",
                        "",
                        "```",
                        (cell.get("message") or "").strip() or "(no message)",
                        "```",
                        "",
                    ]
    if reruns:
        md.append("### Passed only on a rerun")
        md.append("")
        md.append(
            "kafka-python's failing tests run once more; these failed the first time "
            "(first failure kept below) and passed the second."
        )
        md.append("")
        for test_id, n, first in reruns:
            md += [f"{n}, `{test_id}`:", "", "```", first.strip() or "(no message)", "```", ""]
    md.append("| test | client | exercises | " + " | ".join(names) + " | verdict |")
    md.append("|---|---|---|" + "---|" * len(names) + "---|")
    for test_id, client, api, cells, text, reason in rows:
        outs = [CELL[(cells.get(n) or {}).get("outcome")] for n in names]
        note = f" ({reason})" if reason else ""
        md.append(
            f"| `{test_id.removeprefix(PREFIX)}` | {client} | {api} | "
            + " | ".join(outs)
            + f" | {text}{note} |"
        )
    kafka_failures = [
        (test_id, cells)
        for test_id, _c, _a, cells, text, _r in rows
        if text.startswith("fails on Kafka")
    ]
    if kafka_failures:
        md.append("")
        md.append("Not passing on Apache Kafka either (first line of Kafka's failure):")
        md.append("")
        for test_id, cells in kafka_failures:
            first = ((cells.get("kafka") or {}).get("message") or "").strip().splitlines()
            short = test_id.removeprefix(PREFIX)
            why = FAILS_ON_KAFKA.get(short)
            md.append(f"- `{short}`: {first[0] if first else '?'}" + (f" ({why})" if why else ""))
    md.append("")
    md.append("Not run, and why:")
    md.append("")
    for what, why in NOT_RUN:
        md.append(f"- `{what}`: {why}")
    md.append("")
    return "\n".join(term), "\n".join(md), [f"{text}: {t}" for t, _c, text in problems]


def _safe(fn) -> str:
    try:
        return fn()
    except (SuiteUnavailable, OSError, importlib.metadata.PackageNotFoundError):
        return "?"
