#!/usr/bin/env python3
"""Run the compatibility suite against Apache Kafka and Gregor side by side (`make compat`).

    python compat_tests/run.py                 # start both brokers, run, write REPORT.md
    python compat_tests/run.py -k fetch        # only some compat tests (the real suites still run)
    python compat_tests/run.py --target kafka=127.0.0.1:9092 --target gregor=127.0.0.1:9093
                                               # brokers that already run (none is started)
    python compat_tests/run.py --target kafka=127.0.0.1:9092 --sasl-target kafka=127.0.0.1:9094 ...
                                               # and their SASL_PLAINTEXT listeners (without
                                               # one, the tests that need it are deselected)
    python compat_tests/run.py --target kafka=127.0.0.1:9092 --ssl-target kafka=127.0.0.1:9095 ...
                               --tls-dir DIR   # and their SSL listeners, whose CA and client
                                               # certificate are in DIR (compatlib/tls.py's TlsFiles)
    python compat_tests/run.py --sequential    # one target after the other (slower)
    python compat_tests/run.py -- -x -vv       # extra pytest arguments after --
    python compat_tests/run.py --no-real-suites
                                               # skip the clients' own suites

It starts a single-node Apache Kafka (tools/run_kafka.py) and a Gregor
(tools/run_gregor.py) with the same settings (runner/launcher.py's
BROKER_SETTINGS, and a SASL_PLAINTEXT listener beside PLAINTEXT with
SASL_SETTINGS, which pytest gets as --sasl-bootstrap, and an SSL listener
with tls_settings() and certificates made for the run by compatlib/tls.py,
which pytest gets as --ssl-bootstrap and --tls-dir), builds the franz-go
client, runs `pytest compat_tests` against each broker (in parallel by default;
each writes JUnit XML and a JSON-lines result file under .cache/compat/), then
prints the matrix test x target and writes it to compat_tests/REPORT.md.
Then, with the brokers still up, it runs parts of real clients' own test
suites (franz-go's pkg/kgo and kafka-python's integration tests, see
compat_tests/runner/suites/) against each target and adds the section "Real
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
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from compatlib import franz, tls  # noqa: E402
from runner import OUT_DIR, REPO, REPORT, launcher, orchestrate, report, suites, verdicts  # noqa: E402
from runner.launcher import run_kafka  # noqa: E402  (tools/run_kafka.py)

ORDER = ["kafka", "gregor"]


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
        "--sasl-target",
        action="append",
        default=[],
        metavar="NAME=HOST:PORT",
        help="the SASL_PLAINTEXT listener of a --target broker (kafka=..., gregor=...)",
    )
    ap.add_argument(
        "--ssl-target",
        action="append",
        default=[],
        metavar="NAME=HOST:PORT",
        help="the SSL listener of a --target broker (kafka=..., gregor=...); needs --tls-dir",
    )
    ap.add_argument(
        "--tls-dir",
        help="the CA (ca.pem) and client certificate of the --ssl-target brokers "
        "(the files compat_tests/compatlib/tls.py's run_pki writes)",
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
    given: dict[str, str] = {}
    given_sasl: dict[str, str] = {}
    given_ssl: dict[str, str] = {}
    for option, items, into in (
        ("--target", args.target, given),
        ("--sasl-target", args.sasl_target, given_sasl),
        ("--ssl-target", args.ssl_target, given_ssl),
    ):
        for item in items:
            name, sep, addr = item.partition("=")
            if not sep or name not in ORDER:
                print(
                    f"compat: {option} needs kafka=HOST:PORT or gregor=HOST:PORT, got {item!r}",
                    file=sys.stderr,
                )
                return 2
            into[name] = addr
    if set(given_sasl) - set(given):
        print("compat: --sasl-target is for a broker given with --target", file=sys.stderr)
        return 2
    if set(given_ssl) - set(given):
        print("compat: --ssl-target is for a broker given with --target", file=sys.stderr)
        return 2
    if given_ssl and not args.tls_dir:
        print(
            "compat: --ssl-target needs --tls-dir (its CA and client certificate)", file=sys.stderr
        )
        return 2
    targets = args.only or ORDER

    try:
        franz.build()
    except franz.FranzBuildError as exc:
        print(f"compat: {exc}", file=sys.stderr)
        return 2

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="compat-"))
    # The run's certificates: the brokers' keystore and truststore, a client's.
    run_tls = tls.run_pki(workdir / "tls")
    brokers = launcher.Brokers(
        workdir, tls=launcher.tls_settings(run_tls.server.pem_keystore, run_tls.ca_pem)
    )
    suite_runs: list[suites.SuitesRun] = []
    info: dict[str, str] = {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "Apache Kafka": run_kafka.KAFKA_VERSION,
        "Gregor": git_describe(),
        "broker settings (both)": ", ".join(
            f"`{k}={v}`" for k, v in launcher.BROKER_SETTINGS.items()
        ),
        "SASL listener (both)": f"`{launcher.SASL_LISTENER}` beside `PLAINTEXT`, "
        + ", ".join(
            f"`{k}={v}`"
            for k, v in launcher.SASL_SETTINGS.items()
            if not k.endswith(".sasl.jaas.config")
        )
        + f", PLAIN users {', '.join(launcher.PLAIN_USERS)}",
        "TLS listener (both)": f"`{launcher.TLS_LISTENER}` beside `PLAINTEXT`, "
        "`ssl.keystore.type=PEM` (key and chain in one file), `ssl.truststore.type=PEM` "
        f"(the run's CA), `ssl.client.auth={launcher.TLS_CLIENT_AUTH}`",
        "logs": f"`{os.path.relpath(OUT_DIR, REPO)}/` (pytest output per target, broker logs)",
    }
    brokers.start(
        kafka="kafka" in targets and "kafka" not in given,
        gregor="gregor" in targets and "gregor" not in given,
    )
    kafka, gregor = brokers.kafka, brokers.gregor
    try:
        if brokers.errors:
            for e in brokers.errors:
                print(f"compat: cannot start {e}", file=sys.stderr)
            return 2
        if kafka is not None:
            info["Kafka start"] = (
                f"{kafka.start_seconds:.1f} s (format {kafka.format_seconds:.1f} s)"
            )
            print(
                f"compat: Apache Kafka {run_kafka.KAFKA_VERSION} at {kafka.bootstrap}, "
                f"SASL at {launcher.sasl_bootstrap(kafka)}, SSL at {launcher.ssl_bootstrap(kafka)} "
                f"(ready in {kafka.start_seconds:.1f}s)",
                flush=True,
            )
        if gregor is not None:
            info["Gregor start"] = f"{gregor.start_seconds:.1f} s"
            print(
                f"compat: Gregor at {gregor.bootstrap}, SASL at {launcher.sasl_bootstrap(gregor)}, "
                f"SSL at {launcher.ssl_bootstrap(gregor)} (ready in {gregor.start_seconds:.1f}s)",
                flush=True,
            )
        addresses = dict(given)
        sasl_addresses: dict[str, str | None] = dict(given_sasl)
        ssl_addresses: dict[str, str | None] = dict(given_ssl)
        tls_dirs = {name: Path(args.tls_dir) for name in given_ssl}
        for name, node in (("kafka", kafka), ("gregor", gregor)):
            if node is not None:
                addresses[name] = node.bootstrap
                sasl_addresses[name] = launcher.sasl_bootstrap(node)
                ssl_addresses[name] = launcher.ssl_bootstrap(node)
                tls_dirs[name] = run_tls.directory

        pytest_args = list(args.pytest_args)
        if args.keyword:
            pytest_args += ["-k", args.keyword]
        runs = [
            orchestrate.target_run(
                name,
                addresses[name],
                sasl_addresses.get(name),
                ssl_addresses.get(name),
                tls_dirs.get(name),
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
        orchestrate.each(
            runs, lambda run: orchestrate.run_pytest(run, pytest_args), args.sequential
        )
        for run in runs:
            if not run.results:
                print(f"compat: no results from {run.name}; see {run.log_path}:", file=sys.stderr)
                print(run.log_path.read_text()[-3000:], file=sys.stderr)
        if not args.no_real_suites:
            suite_runs = orchestrate.run_real_suites(
                runs, args.sequential, info, run_kafka.KAFKA_VERSION
            )
    finally:
        brokers.stop(logs_to=OUT_DIR)
        if args.keep:
            print(f"compat: broker directories kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    info["total time"] = f"{time.monotonic() - t_start:.0f} s"
    rows = orchestrate.build_rows(runs)
    known = verdicts.load_known()
    term, md, problems = report.render_suite(runs, rows, known, info)
    for run in runs:
        # 0: all passed, 1: some failed (the matrix says which); anything else
        # (interrupted, internal error, usage) means results may be missing.
        if run.returncode not in (0, 1):
            problems.append(
                f"pytest against {run.name} exited {run.returncode}; see {run.log_path}"
            )
    if suite_runs:
        suite_term, suite_md, suite_problems = report.render_real_suites(suite_runs, known)
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
