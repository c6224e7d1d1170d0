#!/usr/bin/env python3
"""`make bench`: Gregor beside Apache Kafka 4.3.1, every workload, brokers alternating.

    .venv/bin/python bench/run.py                          # the full bench (about 40 min)
    .venv/bin/python bench/run.py --scale 0.1 --rounds 1   # a quick partial one
    .venv/bin/python bench/run.py --workloads produce consume --clients java franz
    .venv/bin/python bench/run.py --set recovery_bytes=1073741824 --set latency_seconds=10
    .venv/bin/python bench/run.py --smoke                  # make bench-smoke: all of it, tiny

Each round starts one broker (tools/run_gregor.py's GregorNode, or
tools/run_kafka.py's KafkaNode as Kafka ships: its JVM flags, its 1 GiB heap),
runs every selected workload (bench/workloads/) against it with every client
family (bench/clients/), stops it, and does the same with the other broker;
the next round starts with the other broker. Both get the same settings
(compat_tests/runner/launcher.py's BROKER_SETTINGS: one node, the default flush policy),
on loopback.

Writes bench/results/<date>-<commit>.json (every figure of every round), .md
(the full table) and .png (bench/chart.py), and prints per figure the median
of each broker, its min-max and Gregor/Kafka (bench/report.py). Numbers are
printed, never asserted: --smoke checks only that every workload gave every
figure on both brokers (right shape, finite numbers), and exits 1 otherwise.

`make bench` and `make bench-smoke` run `make install` first, which compiles
Gregor's bytecode. Run directly after editing Gregor, in a shell with
PYTHONDONTWRITEBYTECODE set (this project's machine), Gregor compiles the
edited modules at every start, and its start-up figure counts that (all of
them: 523 ms against 312).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import chart, clients, pagecache, report  # noqa: E402
from bench.brokers import BROKERS, BenchBroker, BrokerError  # noqa: E402
from bench.clients import E2E_FAMILIES, FAMILIES, ClientError  # noqa: E402
from bench.clients import java as java_client  # noqa: E402
from bench.figures import LOOP_BUSY  # noqa: E402
from bench.workloads import Context, Sizes, Workload, all_workloads, transactions  # noqa: E402

RESULTS = REPO / "bench" / "results"
IDLE_SETTLE_SECONDS = 2.0
# Processes per broker with --parallel: Kafka is the slower to start and restart.
PARALLEL_STREAMS = {"gregor": 2, "kafka": 3}
# Workloads that do not run every selected client family.
ONLY_FAMILIES = {
    "latency": E2E_FAMILIES,
    "ceiling": ("franz",),
    "transactions": transactions.FAMILIES,
}


def git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine() -> dict:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    import confluent_kafka

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory GiB": round(mem_kb / (1 << 20), 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "java": java.splitlines()[0] if java else "?",
        "librdkafka": confluent_kafka.libversion()[0],
        "load average at start": os.getloadavg(),
    }


def run_round(
    name: str,
    round_no: int,
    workloads: list[Workload],
    sizes: Sizes,
    families: tuple[str, ...],
    smoke: bool,
    retried: list[dict],
) -> tuple[list[dict], list[dict]]:
    """Start one broker, run the workloads against it, stop it: (figure rows,
    errors). In a smoke run a workload whose client failed is run once more
    (noted in `retried`)."""

    def log(text: str) -> None:
        print(f"[{name} {round_no + 1}] {text}", flush=True)

    rows: list[dict] = []
    errors: list[dict] = []
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
    broker = BenchBroker(name, workdir, quick=smoke)
    ctx: Context | None = None
    try:
        pagecache.settle()  # start-up is measured too
        accepted, answered = broker.start()
        log(f"started: {accepted * 1000:.0f} ms to accept, {answered * 1000:.0f} ms to answer")
        time.sleep(IDLE_SETTLE_SECONDS)
        ctx = Context(
            broker, sizes, families, smoke, log, idle_rss=broker.rss(), settle_runs=not smoke
        )
        for workload in workloads:
            ctx.clients = tuple(f for f in families if f in ONLY_FAMILIES.get(workload.name, f))
            t0 = time.monotonic()
            log(workload.title)
            try:
                try:
                    figures = workload.run(ctx)
                except ClientError as first:
                    if not smoke or not broker.alive():
                        raise
                    # bench-smoke checks that every workload still gives its
                    # figures, on a machine busy with both brokers: a client that
                    # timed out once gets one more try, said loudly in the summary.
                    text = f"{type(first).__name__}: {first}"
                    retried.append({"broker": name, "workload": workload.name, "error": text})
                    log(f"  RETRIED after: {text}")
                    figures = workload.run(ctx)
            except Exception as exc:  # noqa: BLE001 - recorded; the other workloads still run
                text = f"{type(exc).__name__}: {exc}"
                errors.append(
                    {"broker": name, "round": round_no, "workload": workload.name, "error": text}
                )
                log(f"  FAILED: {text}")
                if broker.alive():
                    # What the broker said around the failure, before its
                    # folder (and log) goes at the end of the round.
                    log(f"  the broker's log ends:\n{broker.log_tail()}")
                    continue
                code = broker.exit_code()
                errors[-1]["error"] += f" (the broker exited: {code})"
                log(f"  the broker exited ({code}); its log ends:\n{broker.log_tail()}")
                break
            rows += [{**f.to_json(), "broker": name, "round": round_no} for f in figures]
            log(f"  ({time.monotonic() - t0:.0f} s)")
    except BrokerError as exc:
        errors.append({"broker": name, "round": round_no, "workload": "start", "error": str(exc)})
        log(f"FAILED: {exc}")
    finally:
        if ctx is not None:
            ctx.drop_admin()
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return rows, errors


def smoke_problems(
    rows: list[dict], errors: list[dict], workloads: list[Workload], families: tuple[str, ...]
) -> list[str]:
    """What a smoke run lacks: a workload without figures on a broker, a client family
    missing from a workload, figures one broker has and the other not, or a number
    that is not finite."""
    problems = [f"{e['broker']}: {e['workload']}: {e['error']}" for e in errors]
    for workload in workloads:
        expected = {f for f in families if f in ONLY_FAMILIES.get(workload.name, f)}
        keys = {}
        for broker in BROKERS:
            mine = [r for r in rows if r["workload"] == workload.title and r["broker"] == broker]
            if not mine:
                problems.append(f"{broker}: {workload.name} gave no figures")
                continue
            seen = {r["client"] for r in mine} - {"-"}
            if seen and seen != expected:
                problems.append(
                    f"{broker}: {workload.name} ran {sorted(seen)}, not {sorted(expected)}"
                )
            keys[broker] = {
                (r["case"], r["client"], r["measure"]) for r in mine if r["measure"] != LOOP_BUSY
            }
        if len(keys) == 2 and keys["gregor"] != keys["kafka"]:
            problems.append(
                f"{workload.name}: different figures: {sorted(keys['gregor'] ^ keys['kafka'])}"
            )
    for r in rows:
        if not isinstance(r["value"], int | float) or not math.isfinite(r["value"]):
            problems.append(
                f"{r['broker']}: {r['workload']} {r['case']} {r['measure']}: {r['value']}"
            )
    return problems


def parse_args(argv):
    names = [w.name for w in all_workloads()]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every size (0.1: a tenth)")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SIZE=N",
        help="one size (see bench/workloads/__init__.py Sizes)",
    )
    ap.add_argument("--workloads", nargs="+", choices=names, default=names)
    ap.add_argument("--clients", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    ap.add_argument("--brokers", nargs="+", choices=BROKERS, default=list(BROKERS))
    ap.add_argument("--smoke", action="store_true", help="every workload tiny, one round, checked")
    ap.add_argument(
        "--parallel",
        action="store_true",
        help="brokers at once, several processes each (smoke: the numbers mean nothing)",
    )
    ap.add_argument(
        "--out", help="results folder (default bench/results/; with --smoke a temporary one)"
    )
    ap.add_argument("--note", default="", help="a sentence for the results (e.g. what else ran)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    sizes = Sizes.smoke() if args.smoke else Sizes().scaled(args.scale)
    sizes = sizes.with_overrides(args.set)
    rounds = 1 if args.smoke else args.rounds
    workloads = [w for w in all_workloads() if w.name in args.workloads]
    families = tuple(f for f in FAMILIES if f in args.clients)
    java_client.QUICK = args.smoke
    clients.prepare(list(families))

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    started = datetime.datetime.now()
    stem = f"{started:%Y-%m-%d}-{commit}{'-dirty' if dirty else ''}"
    meta = {
        "date": started.strftime("%Y-%m-%d %H:%M"),
        "commit": commit + (" (with uncommitted changes)" if dirty else ""),
        "command": "bench/run.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "rounds": rounds,
        "sizes": vars(sizes),
        "clients": list(families),
        "workloads": [w.title for w in workloads],
        "machine": machine(),
        "page cache": pagecache.note(pagecache.settle(), every_run=not args.smoke),
        "note": args.note,
    }
    print(f"bench: {meta['command']}; commit {meta['commit']}; sizes {vars(sizes)}", flush=True)

    rows: list[dict] = []
    errors: list[dict] = []
    retried: list[dict] = []
    lock = threading.Lock()

    def one(name: str, round_no: int, selected: list[Workload] = workloads) -> None:
        got, failed = run_round(name, round_no, selected, sizes, families, args.smoke, retried)
        with lock:
            rows.extend(got)
            errors.extend(failed)

    for round_no in range(rounds):
        # Alternate which broker goes first, so that drift of the machine hits both alike.
        order = [b for b in (BROKERS if round_no % 2 == 0 else BROKERS[::-1]) if b in args.brokers]
        if args.parallel:
            # Each broker in several processes at once, dealt the workloads in turn (each
            # keeps their order, so recovery, which kills its broker, stays last).
            streams = [
                (b, workloads[i :: PARALLEL_STREAMS[b]])
                for b in order
                for i in range(PARALLEL_STREAMS[b])
            ]
            threads = [
                threading.Thread(target=one, args=(b, round_no, part))
                for b, part in streams
                if part
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            for name in order:
                one(name, round_no)

    meta["seconds"] = round((datetime.datetime.now() - started).total_seconds())
    meta["machine"]["load average at end"] = os.getloadavg()
    results = {"meta": meta, "figures": rows, "errors": errors, "retried": retried}
    out = (
        Path(args.out)
        if args.out
        else (Path(tempfile.mkdtemp(prefix="bench-smoke-")) if args.smoke else RESULTS)
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(results, indent=1) + "\n")
    table = report.aggregate(rows, meta["workloads"])
    print()
    print(report.terminal(table))
    print()
    print(report.targets_text(table))
    (out / f"{stem}.md").write_text(report.markdown(table, meta, errors))
    chart.render(table, meta, out / f"{stem}.png")
    print(f"\nbench: {len(rows)} figures in {meta['seconds']} s; results in {out}/{stem}.*")
    if errors:
        print(f"bench: {len(errors)} workload runs failed:", file=sys.stderr)
        for e in errors:
            print(
                f"  {e['broker']} round {e['round'] + 1} {e['workload']}: {e['error']}",
                file=sys.stderr,
            )
    for r in retried:
        print(f"bench: RETRIED: {r['broker']} {r['workload']}: {r['error']}", file=sys.stderr)
    if args.smoke:
        problems = smoke_problems(rows, errors, workloads, families)
        if problems:
            print("bench-smoke: FAILED:", file=sys.stderr)
            for p in problems:
                print(f"  {p}", file=sys.stderr)
            return 1
        print(f"bench-smoke: every workload gave its figures on {' and '.join(args.brokers)}")
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)  # the report and chart were drawn: enough
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
