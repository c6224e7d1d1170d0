#!/usr/bin/env python3
"""Run the compatibility suite against Apache Kafka and Gregor side by side (`make compat`).

    python compat_tests/run.py                 # start both brokers, run, write REPORT.md
    python compat_tests/run.py -k fetch        # only some compat tests (the real suites still run)
    python compat_tests/run.py --target kafka=127.0.0.1:9092 --target gregor=127.0.0.1:9093
                                               # brokers that already run (none is started)
    python compat_tests/run.py --sequential    # one target after the other (slower)
    python compat_tests/run.py -- -x -vv       # extra pytest arguments after --
    python compat_tests/run.py --no-real-suites
                                               # skip the clients' own suites

It starts a single-node Apache Kafka (tools/run_kafka.py) and a Gregor
(`gregor serve`) with the same settings (BROKER_SETTINGS), builds the franz-go
client, runs `pytest compat_tests` against each broker (in parallel by default;
each writes JUnit XML and a JSON-lines result file under .cache/compat/), then
prints the matrix test x target and writes it to compat_tests/REPORT.md.
Then, with the brokers still up, it runs parts of real clients' own test
suites (franz-go's pkg/kgo and kafka-python's integration tests, see
compat_tests/real_suites.py) against each target and adds the section "Real
suites written by others"; a test of those that passes on Kafka and fails on
Gregor counts as a difference too (ids `realsuite:<suite>/<test>`).

Exit status: 0 when every test passes on Apache Kafka and on Gregor, except the
tests listed in compat_tests/KNOWN_DIFFERENCES (reported as known differences);
1 when a test fails on Kafka (the test is wrong), passes on Kafka and fails
on Gregor (a difference), or has no outcome on a broker (its pytest run died:
any pytest exit status but 0 and 1 fails the run); 2 when a broker cannot be
started.
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tools"))

import real_suites  # noqa: E402  (compat_tests/real_suites.py)
import run_kafka  # noqa: E402  (tools/run_kafka.py)
from compatlib import franz  # noqa: E402

KNOWN_DIFFERENCES = HERE / "KNOWN_DIFFERENCES"
REPORT = HERE / "REPORT.md"
OUT_DIR = REPO / ".cache" / "compat"
PYTEST_TIMEOUT = 900  # seconds for one target's whole suite

# Settings the suite relies on, given to both brokers.
BROKER_SETTINGS = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "auto.create.topics.enable": "true",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "log.retention.check.interval.ms": "1000",
    # kafka-python's integration suite (real_suites.py) runs groups with 3 s
    # sessions; its own test broker allows them the same way.
    "group.min.session.timeout.ms": "1000",
}
# Kafka only: retention checks start 30 s after startup unless told otherwise.
KAFKA_ONLY = {"log.initial.task.delay.ms": "0"}

ORDER = ["kafka", "gregor"]


# --- brokers ------------------------------------------------------------------------------


class GregorNode:
    """`gregor serve` on a free port with BROKER_SETTINGS (and `overrides`, which win);
    its output goes to a log file."""

    def __init__(self, workdir: Path, overrides: dict[str, str] | None = None):
        self.dir = workdir
        self.port = run_kafka.free_port()
        self.overrides = dict(overrides or {})
        self.proc: subprocess.Popen | None = None
        self.log_path = workdir / "gregor.log"
        self.start_seconds: float | None = None
        # time.monotonic() just before the process is spawned (benchmarks time start-up from it)
        self.spawned_at: float | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        exe = shutil.which("gregor", path=str(Path(sys.executable).parent)) or shutil.which(
            "gregor"
        )
        cmd = [exe] if exe else [sys.executable, "-m", "broker.cli"]
        settings = {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            # As tools/run_kafka.py gives Kafka: the same static setting on both sides
            # (kafka-python's suite checks its DescribeConfigs source).
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.dir / "data"),
            "node.id": "1",
            **BROKER_SETTINGS,
            **self.overrides,
        }
        cmd.append("serve")
        for k, v in settings.items():
            cmd += ["--override", f"{k}={v}"]
        return cmd

    def start(self) -> GregorNode:
        t0 = time.monotonic()
        self.dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "w")
        self.spawned_at = time.monotonic()
        self.proc = subprocess.Popen(
            self.command(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=REPO,
            start_new_session=True,
        )
        log.close()
        try:
            run_kafka.wait_until_ready(
                "127.0.0.1", self.port, node_id=1, timeout=60, proc=self.proc
            )
        except (TimeoutError, run_kafka.KafkaStartError) as exc:
            self.stop()
            raise run_kafka.KafkaStartError(
                f"Gregor did not start: {exc}\n--- log ---\n{self.tail()}"
            ) from exc
        self.start_seconds = time.monotonic() - t0
        return self

    def tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --- running the suite ----------------------------------------------------------------------


@dataclass
class TargetRun:
    name: str
    bootstrap: str
    results_path: Path
    junit_path: Path
    log_path: Path
    returncode: int | None = None
    seconds: float = 0.0
    results: dict[str, dict] = field(default_factory=dict)


def run_pytest(run: TargetRun, pytest_args: list[str]) -> None:
    for p in (run.results_path, run.junit_path):
        p.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(HERE),
        "--bootstrap-servers",
        run.bootstrap,
        "--compat-results",
        str(run.results_path),
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


def run_real_suites(runs: list[TargetRun], sequential: bool, info: dict[str, str]):
    """The clients' own suites against each target that the compat suite ran on."""
    t0 = time.monotonic()
    try:
        real_suites.prepare()
    except (real_suites.SuiteUnavailable, OSError, subprocess.SubprocessError) as exc:
        # Each target's run then reports the suite that cannot be had as an error.
        print(f"compat: real suites: {exc}", file=sys.stderr)
    info["real suites prepared"] = f"{time.monotonic() - t0:.0f} s (download and build, cached)"
    print(
        f"compat: running the real suites against {', '.join(r.name for r in runs)}"
        f"{' one after the other' if sequential else ' in parallel'}",
        flush=True,
    )
    suite_runs: list[real_suites.SuitesRun | None] = [None] * len(runs)

    def one(i: int, run: TargetRun) -> None:
        suite_runs[i] = real_suites.run_suites(
            run.name, run.bootstrap, OUT_DIR, run_kafka.KAFKA_VERSION
        )

    if sequential:
        for i, run in enumerate(runs):
            one(i, run)
    else:
        threads = [threading.Thread(target=one, args=(i, r)) for i, r in enumerate(runs)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    info["real suites run"] = f"{time.monotonic() - t0:.0f} s"
    return [r for r in suite_runs if r is not None]


# --- known differences and the report -------------------------------------------------------


def load_known(path: Path = KNOWN_DIFFERENCES) -> list[tuple[str, str]]:
    """(pattern, reason) pairs: `<test id or fnmatch pattern>  <reason>`, # comments."""
    entries = []
    if not path.exists():
        return entries
    for raw_line in path.read_text().splitlines():
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        entries.append((parts[0], parts[1].strip() if len(parts) > 1 else "(no reason given)"))
    return entries


def short_id(nodeid: str) -> str:
    return nodeid.removeprefix("compat_tests/")


def known_reason(nodeid: str, known: list[tuple[str, str]]) -> str | None:
    sid = short_id(nodeid)
    for pattern, reason in known:
        if fnmatch.fnmatchcase(sid, pattern) or fnmatch.fnmatchcase(nodeid, pattern):
            return reason
    return None


CELL = {"passed": "pass", "failed": "FAIL", "error": "ERROR", "skipped": "skip", None: "-"}


def verdict(row: dict[str, dict | None], known: str | None) -> tuple[str, bool]:
    """(verdict text, counts as a failure of the run)."""
    kafka = (row.get("kafka") or {}).get("outcome")
    gregor = (row.get("gregor") or {}).get("outcome")
    if any(cell is None or cell.get("outcome") is None for cell in row.values()):
        return "DID NOT RUN", True
    if "kafka" in row and kafka != "passed":
        if known:
            return "known difference", False
        return "BROKEN ON KAFKA", True
    if "gregor" in row and gregor != "passed":
        if known:
            return "known difference", False
        return "GREGOR DIFFERS", True
    if known:
        return "known difference (now passes)", False
    return "ok", False


def build_rows(runs: list[TargetRun]) -> dict[str, dict]:
    ids: list[str] = []
    for run in runs:
        for nodeid in run.results:
            if nodeid not in ids:
                ids.append(nodeid)
    rows = {}
    for nodeid in ids:
        rows[nodeid] = {run.name: run.results.get(nodeid) for run in runs}
    return rows


def meta_of(cells: dict) -> tuple[str, str]:
    for cell in cells.values():
        if cell:
            return cell.get("client") or "?", ", ".join(cell.get("api") or [])
    return "?", ""


def render(runs, rows, known, info) -> tuple[str, str, list[str]]:
    """(terminal text, markdown report, one line per unexpected result)."""
    names = [r.name for r in runs]
    table = []
    problems = []
    known_rows = []
    counts: dict[str, int] = {}
    for nodeid, cells in rows.items():
        reason = known_reason(nodeid, known)
        text, bad = verdict(cells, reason)
        counts[text] = counts.get(text, 0) + 1
        client, api = meta_of(cells)
        outcomes = [CELL[(cells.get(n) or {}).get("outcome")] for n in names]
        table.append((short_id(nodeid), client, api, outcomes, text))
        if bad:
            problems.append((nodeid, cells, text))
        elif reason:
            known_rows.append((nodeid, cells, reason, text))

    # terminal
    width = min(max((len(t[0]) for t in table), default=10), 90)
    term = []
    term.append(
        f"{'test':<{width}}  {'client':<15} " + " ".join(f"{n:<6}" for n in names) + "  verdict"
    )
    for sid, client, _api, outcomes, text in table:
        sid_shown = sid if len(sid) <= width else sid[: width - 1] + "…"
        term.append(
            f"{sid_shown:<{width}}  {client:<15} "
            + " ".join(f"{o:<6}" for o in outcomes)
            + f"  {text}"
        )
    term.append("")
    for nodeid, cells, text in problems:
        term.append(f"{text}: {short_id(nodeid)}")
        for n in names:
            cell = cells.get(n)
            if cell and cell["outcome"] != "passed":
                msg = cell.get("message", "").replace("\n", "\n        ")
                term.append(f"    [{n}] {cell['outcome']}: {msg}")
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    term.append("")
    term.append(f"{len(rows)} tests: {summary}")
    for run in runs:
        term.append(
            f"  {run.name}: {run.bootstrap}, pytest exit {run.returncode}, "
            f"{run.seconds:.0f}s, log {run.log_path}"
        )

    # markdown
    md = []
    md.append("# Compatibility report: Apache Kafka vs Gregor")
    md.append("")
    md.append("Generated by `compat_tests/run.py` (`make compat`); do not edit by hand.")
    md.append("")
    for k, v in info.items():
        md.append(f"- {k}: {v}")
    for run in runs:
        md.append(f"- {run.name}: pytest exit {run.returncode}, {run.seconds:.0f} s")
    md.append(f"- result: {len(rows)} tests; {summary}")
    md.append("")
    md.append(
        "Verdicts: **ok** = passes on both; **GREGOR DIFFERS** = passes on Apache Kafka, "
        "fails on Gregor; **BROKEN ON KAFKA** = the test itself is wrong; **DID NOT RUN** = "
        "collected but no outcome on a broker (its pytest run died or was killed); "
        "**known difference** = listed in `compat_tests/KNOWN_DIFFERENCES`."
    )
    md.append("")
    if problems:
        md.append("## Unexpected results")
        md.append("")
        for nodeid, cells, text in problems:
            client, api = meta_of(cells)
            md.append(f"### {text}: `{short_id(nodeid)}`")
            md.append("")
            md.append(f"Client: {client}; API: {api}")
            md.append("")
            for n in names:
                cell = cells.get(n)
                if cell and cell["outcome"] != "passed":
                    md.append(f"{n} ({cell['outcome']}):")
                    md.append("")
                    md.append("```")
                    md.append(cell.get("message", "").strip() or "(no message)")
                    md.append("```")
                    md.append("")
    if known_rows:
        md.append("## Known differences")
        md.append("")
        md.append("| test | client | reason | " + " | ".join(names) + " |")
        md.append("|---|---|---|" + "---|" * len(names))
        for nodeid, cells, reason, text in known_rows:
            client, _ = meta_of(cells)
            outs = [CELL[(cells.get(n) or {}).get("outcome")] for n in names]
            note = " (passes now: remove it from KNOWN_DIFFERENCES)" if "now passes" in text else ""
            md.append(
                f"| `{short_id(nodeid)}` | {client} | {reason}{note} | " + " | ".join(outs) + " |"
            )
        md.append("")
    md.append("## Matrix")
    md.append("")
    md.append("| test | client | API / behaviour | " + " | ".join(names) + " | verdict |")
    md.append("|---|---|---|" + "---|" * len(names) + "---|")
    for sid, client, api, outcomes, text in table:
        md.append(f"| `{sid}` | {client} | {api} | " + " | ".join(outcomes) + f" | {text} |")
    md.append("")
    return "\n".join(term), "\n".join(md), [f"{text}: {short_id(n)}" for n, _c, text in problems]


# --- main -------------------------------------------------------------------------------------


def git_describe() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="NAME=HOST:PORT",
        help="use a running broker instead of starting one (kafka=..., gregor=...)",
    )
    ap.add_argument(
        "--only", choices=ORDER, action="append", help="run against this target only (repeatable)"
    )
    ap.add_argument("--sequential", action="store_true", help="one target after the other")
    ap.add_argument("-k", dest="keyword", help="pytest -k expression")
    ap.add_argument("--report", default=str(REPORT), help="markdown report path")
    ap.add_argument("--keep", action="store_true", help="keep the brokers' directories")
    ap.add_argument(
        "--no-real-suites",
        action="store_true",
        help="skip the clients' own test suites (franz-go, kafka-python)",
    )
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    t_start = time.monotonic()
    given = {}
    for item in args.target:
        name, sep, addr = item.partition("=")
        if not sep or name not in ORDER:
            print(
                f"compat: --target needs kafka=HOST:PORT or gregor=HOST:PORT, got {item!r}",
                file=sys.stderr,
            )
            return 2
        given[name] = addr
    targets = args.only or ORDER

    try:
        franz.build()
    except franz.FranzBuildError as exc:
        print(f"compat: {exc}", file=sys.stderr)
        return 2

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="compat-"))
    kafka = gregor = None
    suite_runs: list[real_suites.SuitesRun] = []
    info: dict[str, str] = {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "Apache Kafka": run_kafka.KAFKA_VERSION,
        "Gregor": git_describe(),
        "broker settings (both)": ", ".join(f"`{k}={v}`" for k, v in BROKER_SETTINGS.items()),
        "logs": f"`{os.path.relpath(OUT_DIR, REPO)}/` (pytest output per target, broker logs)",
    }
    errors: list[str] = []

    def start_kafka():
        nonlocal kafka
        try:
            kafka = run_kafka.KafkaNode(
                overrides={**BROKER_SETTINGS, **KAFKA_ONLY}, directory=workdir / "kafka"
            ).start()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(f"Apache Kafka: {exc}")

    def start_gregor():
        nonlocal gregor
        try:
            gregor = GregorNode(workdir / "gregor").start()
        except Exception as exc:  # noqa: BLE001
            errors.append(f"Gregor: {exc}")

    starters = []
    if "kafka" in targets and "kafka" not in given:
        starters.append(threading.Thread(target=start_kafka))
    if "gregor" in targets and "gregor" not in given:
        starters.append(threading.Thread(target=start_gregor))
    for th in starters:
        th.start()
    for th in starters:
        th.join()
    try:
        if errors:
            for e in errors:
                print(f"compat: cannot start {e}", file=sys.stderr)
            return 2
        if kafka is not None:
            info["Kafka start"] = (
                f"{kafka.start_seconds:.1f} s (format {kafka.format_seconds:.1f} s)"
            )
            print(
                f"compat: Apache Kafka {run_kafka.KAFKA_VERSION} at {kafka.bootstrap} "
                f"(ready in {kafka.start_seconds:.1f}s)",
                flush=True,
            )
        if gregor is not None:
            info["Gregor start"] = f"{gregor.start_seconds:.1f} s"
            print(
                f"compat: Gregor at {gregor.bootstrap} (ready in {gregor.start_seconds:.1f}s)",
                flush=True,
            )
        addresses = dict(given)
        if kafka is not None:
            addresses["kafka"] = kafka.bootstrap
        if gregor is not None:
            addresses["gregor"] = gregor.bootstrap

        pytest_args = list(args.pytest_args)
        if args.keyword:
            pytest_args += ["-k", args.keyword]
        runs = [
            TargetRun(
                name,
                addresses[name],
                OUT_DIR / f"{name}.jsonl",
                OUT_DIR / f"{name}.junit.xml",
                OUT_DIR / f"{name}.log",
            )
            for name in ORDER
            if name in targets
        ]
        print(
            f"compat: running the suite against {', '.join(r.name for r in runs)}"
            f"{' one after the other' if args.sequential else ' in parallel'}; "
            f"logs in {OUT_DIR}",
            flush=True,
        )
        if args.sequential:
            for run in runs:
                run_pytest(run, pytest_args)
        else:
            threads = [threading.Thread(target=run_pytest, args=(r, pytest_args)) for r in runs]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        for run in runs:
            if not run.results:
                print(f"compat: no results from {run.name}; see {run.log_path}:", file=sys.stderr)
                print(run.log_path.read_text()[-3000:], file=sys.stderr)
        if not args.no_real_suites:
            suite_runs = run_real_suites(runs, args.sequential, info)
    finally:
        if gregor is not None:
            gregor.stop()
            shutil.copy(gregor.log_path, OUT_DIR / "gregor-broker.log")
        if kafka is not None:
            kafka.stop()
            shutil.copy(kafka.log_path, OUT_DIR / "kafka-broker.log")
        if args.keep:
            print(f"compat: broker directories kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    info["total time"] = f"{time.monotonic() - t_start:.0f} s"
    rows = build_rows(runs)
    known = load_known()
    term, md, problems = render(runs, rows, known, info)
    for run in runs:
        # 0: all passed, 1: some failed (the matrix says which); anything else
        # (interrupted, internal error, usage) means results may be missing.
        if run.returncode not in (0, 1):
            problems.append(
                f"pytest against {run.name} exited {run.returncode}; see {run.log_path}"
            )
    if suite_runs:
        suite_term, suite_md, suite_problems = real_suites.render(suite_runs, known)
        term += "\n" + suite_term
        md += "\n" + suite_md
        problems += suite_problems
    print(term)
    Path(args.report).write_text(md)
    print(f"compat: report written to {os.path.relpath(args.report, os.getcwd())}")
    if not rows:
        print("compat: FAILED: no test produced a result", file=sys.stderr)
        return 1
    if problems:
        # Repeated last, so that the tail of a CI log names what failed the run.
        print(f"compat: FAILED: {len(problems)} unexpected results:", file=sys.stderr)
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
