"""kafka-python's `test/integration` tests, run against one broker.

The sdist of the kafka-python version installed in the virtualenv, from PyPI
(`pip download --no-binary`), unpacked into .cache/realsuites/. Its fixtures
use an external broker when KAFKA_URI=tcp://host:port is set, and
KAFKA_VERSION says which broker version to expect (the Apache Kafka version
the compat run compares with). Its tests import `kafka` from the unpacked
sdist (pytest runs there), which is the same version as the installed client.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from .suite import CACHE, PREFIX, SUITE_ROW, SuiteUnavailable, log

# Seconds the suite may take against one broker before it is stopped; its
# unfinished tests are then reported as errors.
KAFKA_PYTHON_TIMEOUT = 420
# Per-test timeout inside kafka-python's suite (pytest-timeout).
KAFKA_PYTHON_TEST_TIMEOUT = 60

# kafka-python test/integration files that run against an external broker.
KAFKA_PYTHON_FILES = [
    "test_producer_integration.py",
    "test_consumer_integration.py",
    "test_admin_integration.py",
]
# test_transactional_producer_offsets waits forever on Kafka 4.3.1 too (see NOT_RUN).
KAFKA_PYTHON_DESELECT = "not test_transactional_producer_offsets"

# Why tests of the suite fail on the compat run's Apache Kafka too.
FAILS_ON_KAFKA = {
    "kafka-python/test_admin_integration.py::test_create_partitions": "the test assigns the "
    "new partitions to broker 0; the compat brokers are node 1, which the compat suite expects",
    "kafka-python/test_admin_integration.py::test_create_describe_delete_acls": "needs an "
    "authorizer; the compat brokers run without one",
}

NOT_RUN = [
    (
        "kafka-python/test_producer_integration.py::test_transactional_producer_offsets",
        "it hangs on Kafka 4.3.1 (kafka-python's send_offsets_to_transaction against a broker "
        "of transactions v2)",
    ),
    (
        "kafka-python/test_sasl_integration.py, test_ssl_integration.py",
        "they start their own SASL/SSL Kafka and skip for an external broker",
    ),
]


def kafka_python_version() -> str:
    return importlib.metadata.version("kafka-python")


def _ensure_pytest_timeout() -> None:
    # kafka-python's pytest settings (its pyproject.toml addopts) use --timeout.
    if importlib.util.find_spec("pytest_timeout") is not None:
        return
    log("!!! installing pytest-timeout into this virtualenv (kafka-python's suite needs it)")
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
# Written by Gregor's compat_tests/runner/suites/kafka_python.py: the sdist omits this module.
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


def prepare() -> Path:
    """The unpacked kafka-python sdist matching the installed version, with its tests."""
    version = kafka_python_version()
    root = CACHE / f"kafka_python-{version}"
    if not (root / "test" / "integration").is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        sdist = CACHE / f"kafka_python-{version}.tar.gz"
        if not sdist.exists():
            log(f"downloading the kafka-python {version} sdist from PyPI (once)")
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


def run(bootstrap: str, log_path: Path, kafka_version: str) -> dict[str, dict]:
    """The chosen kafka-python tests; those that fail are run once more. Some fail
    one run in many on either broker (test_idempotent_producer_max_in_flight: [5]
    on Kafka, [2] on Gregor, whose consumer read nothing for 30 s): a test that
    passes the second time is reported as such, with its first failure kept."""
    root = prepare()
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
            log.write(f"\nreal suites: killed after {KAFKA_PYTHON_TIMEOUT}s\n")
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
