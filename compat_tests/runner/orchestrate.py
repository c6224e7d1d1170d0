"""Running the suites against each target: `pytest compat_tests` once per broker
(in parallel by default), each writing JUnit XML and a JSON-lines result file
under .cache/compat/, then the clients' own suites (suites/)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import COMPAT_DIR, OUT_DIR, REPO, suites

PYTEST_TIMEOUT = 900  # seconds for one target's whole suite


@dataclass
class TargetRun:
    name: str
    bootstrap: str
    results_path: Path
    junit_path: Path
    log_path: Path
    # The broker's SASL_PLAINTEXT listener (compat_tests/test_security.py), if known.
    sasl_bootstrap: str | None = None
    # The broker's SSL listener and the directory of the run's certificates
    # (compat_tests/test_tls.py), if known.
    ssl_bootstrap: str | None = None
    tls_dir: Path | None = None
    returncode: int | None = None
    seconds: float = 0.0
    results: dict[str, dict] = field(default_factory=dict)


def target_run(
    name: str,
    bootstrap: str,
    sasl_bootstrap: str | None = None,
    ssl_bootstrap: str | None = None,
    tls_dir: Path | None = None,
) -> TargetRun:
    """A run against `name` whose files are .cache/compat/<name>.{jsonl,junit.xml,log}."""
    return TargetRun(
        name,
        bootstrap,
        OUT_DIR / f"{name}.jsonl",
        OUT_DIR / f"{name}.junit.xml",
        OUT_DIR / f"{name}.log",
        sasl_bootstrap,
        ssl_bootstrap,
        tls_dir,
    )


def each(runs: list, work: Callable, sequential: bool) -> None:
    """work(run) for every run: one after the other, or each in a thread of its own."""
    if sequential:
        for run in runs:
            work(run)
        return
    threads = [threading.Thread(target=work, args=(run,)) for run in runs]
    for th in threads:
        th.start()
    for th in threads:
        th.join()


def run_pytest(run: TargetRun, pytest_args: list[str]) -> None:
    for p in (run.results_path, run.junit_path):
        p.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(COMPAT_DIR),
        "--bootstrap-servers",
        run.bootstrap,
        "--compat-results",
        str(run.results_path),
        # compat_tests/cluster/ starts three nodes of the target's kind beside it.
        "--cluster-kind",
        run.name,
        *(["--sasl-bootstrap", run.sasl_bootstrap] if run.sasl_bootstrap else []),
        *(["--ssl-bootstrap", run.ssl_bootstrap] if run.ssl_bootstrap else []),
        *(["--tls-dir", str(run.tls_dir)] if run.tls_dir else []),
        f"--junitxml={run.junit_path}",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore::DeprecationWarning",
        "-q",
        "-rN",
        *pytest_args,
    ]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("COMPAT_BOOTSTRAP_SERVERS", None)
    env.pop("COMPAT_SASL_BOOTSTRAP", None)
    env.pop("COMPAT_SSL_BOOTSTRAP", None)
    env.pop("COMPAT_TLS_DIR", None)
    t0 = time.monotonic()
    with open(run.log_path, "w") as log:
        log.write(" ".join(cmd) + "\n\n")
        log.flush()
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env, stdin=subprocess.DEVNULL
        )
        try:
            run.returncode = proc.wait(PYTEST_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            run.returncode = proc.wait()
            log.write(f"\ncompat/run.py: killed after {PYTEST_TIMEOUT}s\n")
    run.seconds = time.monotonic() - t0
    if run.results_path.exists():
        for line in run.results_path.read_text().splitlines():
            row = json.loads(line)
            if row.pop("collected", False):
                # Collected but not (yet) reported: no outcome, "did not run".
                run.results.setdefault(row["id"], {**row, "outcome": None})
            else:
                run.results[row["id"]] = row


def run_real_suites(
    runs: list[TargetRun], sequential: bool, info: dict[str, str], kafka_version: str
) -> list[suites.SuitesRun]:
    """The clients' own suites against each target that the compat suite ran on."""
    t0 = time.monotonic()
    try:
        suites.prepare()
    except (suites.SuiteUnavailable, OSError, subprocess.SubprocessError) as exc:
        # Each target's run then reports the suite that cannot be had as an error.
        print(f"compat: real suites: {exc}", file=sys.stderr)
    info["real suites prepared"] = f"{time.monotonic() - t0:.0f} s (download and build, cached)"
    print(
        f"compat: running the real suites against {', '.join(r.name for r in runs)}"
        f"{' one after the other' if sequential else ' in parallel'}",
        flush=True,
    )
    done: dict[str, suites.SuitesRun] = {}

    def one(run: TargetRun) -> None:
        done[run.name] = suites.run_suites(run.name, run.bootstrap, OUT_DIR, kafka_version)

    each(runs, one, sequential)
    info["real suites run"] = f"{time.monotonic() - t0:.0f} s"
    return [done[r.name] for r in runs if r.name in done]


def build_rows(runs: list[TargetRun]) -> dict[str, dict]:
    """test id -> {target name: its result row, or None where it has none}, in run order."""
    ids: list[str] = []
    for run in runs:
        for nodeid in run.results:
            if nodeid not in ids:
                ids.append(nodeid)
    rows = {}
    for nodeid in ids:
        rows[nodeid] = {run.name: run.results.get(nodeid) for run in runs}
    return rows
