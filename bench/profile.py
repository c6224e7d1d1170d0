#!/usr/bin/env python3
"""Where Gregor's event loop spends its time under one workload: py-spy on the broker.

    .venv/bin/python bench/profile.py small --client java          # 100-byte records
    .venv/bin/python bench/profile.py consume --client confluent --scale 0.5
    .venv/bin/python bench/profile.py produce --case lz4 --client franz --top 30

Starts Gregor as bench/run.py does, attaches `py-spy record` to it (aggregated
by function, with native frames: time in a C call such as pwrite or send shows
as that call, not as the Python line around it), runs the workload with one
client family, and writes to bench/results/profiles/:
- <workload>-<client>.txt: the collapsed stacks (flame graph input: speedscope.app
  or flamegraph.pl draw them);
- <workload>-<client>.md: the workload's figures, how busy the event-loop thread
  was, and the functions with the most samples of that thread, by their own time
  (the frame on top) and by their inclusive time (anywhere in the stack).
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import clients  # noqa: E402
from bench.brokers import BenchBroker  # noqa: E402
from bench.clients import FAMILIES  # noqa: E402
from bench.workloads import Context, Sizes, all_workloads  # noqa: E402

OUT = REPO / "bench" / "results" / "profiles"
RATE = 200  # samples per second


def py_spy() -> str:
    exe = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if exe is None:
        raise SystemExit("profile: py-spy is not installed (make install: the test extras)")
    return exe


_UNRESOLVED = re.compile(r"^0x[0-9a-f]+ \((?P<library>[^)]*)\)$")


def frame_name(frame: str) -> str:
    """A native frame without a symbol counts for its library (cramjam, libc...)."""
    m = _UNRESOLVED.match(frame)
    return f"[{m['library']}, no symbol]" if m else frame


def read_stacks(path: Path) -> list[tuple[str, list[str], int]]:
    """(thread id, frames from the outermost, samples) from py-spy's raw format."""
    out = []
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [frame_name(f) for f in stack.split(";")]
        thread = ""
        if frames and frames[0].startswith("process "):
            frames = frames[1:]
        if frames and frames[0].startswith("thread ("):
            thread = frames.pop(0)
        out.append((thread, frames, int(count)))
    return out


def summarize(stacks, seconds: float, rate: int, top: int) -> tuple[str, str]:
    """(markdown tables, one-line busy summary) for the busiest thread: the event loop."""
    per_thread = collections.Counter()
    for thread, _frames, n in stacks:
        per_thread[thread] += n
    if not per_thread:
        return "(no samples)", "no samples"
    loop, busy = per_thread.most_common(1)[0]
    own = collections.Counter()
    inclusive = collections.Counter()
    for thread, frames, n in stacks:
        if thread != loop or not frames:
            continue
        own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    # Native sampling stops the broker for each sample, which py-spy then counts as
    # busy: the share of busy samples says how the time splits, not how much there was.
    line = (
        f"event-loop thread: {busy} samples not idle, in {seconds:.0f} s at {rate}/s; "
        f"other threads: {sum(per_thread.values()) - busy} samples"
    )

    def table(counter: collections.Counter, title: str) -> list[str]:
        rows = [f"| {title} | samples | % of busy |", "|---|---:|---:|"]
        for frame, n in counter.most_common(top):
            rows.append(f"| `{frame}` | {n} | {100 * n / busy:.1f} |")
        return rows

    md = table(own, "own time (top of the stack)") + [""] + table(inclusive, "inclusive time")
    return "\n".join(md), line


def main(argv: list[str] | None = None) -> int:
    names = {w.name: w for w in all_workloads()}
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=[n for n in names if n != "recovery"])
    ap.add_argument("--client", choices=FAMILIES, default="java")
    ap.add_argument("--case", nargs="+", help="only these codecs (produce workloads)")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--set", action="append", default=[], metavar="SIZE=N")
    ap.add_argument("--rate", type=int, default=RATE, help="py-spy samples per second")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument(
        "--nonblocking",
        action="store_true",
        help="sample without pausing the broker, Python frames only (cheaper; in trials it"
        " put C and kernel time on whichever Python frame it caught)",
    )
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    workload = names[args.workload]
    sizes = Sizes().scaled(args.scale).with_overrides(args.set)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "-".join([args.workload, *(args.case or []), args.client])
    raw = out / f"{stem}.txt"
    clients.prepare([args.client])

    workdir = Path(tempfile.mkdtemp(prefix="bench-profile-"))
    broker = BenchBroker("gregor", workdir)
    broker.start()
    spy = None
    try:
        ctx = Context(broker, sizes, (args.client,), log=print, idle_rss=broker.rss())
        ctx.only_cases = tuple(args.case) if args.case else None
        spy = subprocess.Popen(
            [py_spy(), "record", "--pid", str(broker.pid), "--rate", str(args.rate)]
            + ["--format", "raw", "--output", str(raw), "--threads", "--function"]
            + (["--nonblocking"] if args.nonblocking else ["--native"]),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1)  # py-spy attached before the load starts
        t0 = time.monotonic()
        figures = workload.run(ctx)
        seconds = time.monotonic() - t0
        spy.send_signal(signal.SIGINT)  # py-spy writes its output when interrupted
        _, err = spy.communicate(timeout=60)
        spy = None
    finally:
        if spy is not None:
            spy.kill()
            spy.wait()
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    if not raw.exists():
        print(f"profile: py-spy wrote nothing:\n{err}", file=sys.stderr)
        return 1
    tables, busy = summarize(read_stacks(raw), seconds, args.rate, args.top)
    shown = "\n".join(
        f"| {f.case} | {f.client} | {f.measure} | {f.value:.3g} |"
        for f in figures
        if f.client != "-"
    )
    report = (
        f"# py-spy profile of Gregor: {workload.title}, {args.client}\n\n"
        f"`bench/profile.py {' '.join(sys.argv[1:] if argv is None else argv)}`; "
        f"{seconds:.0f} s of load sampled at {args.rate}/s by py-spy "
        f"({'--nonblocking' if args.nonblocking else '--native'} --function; sampling slows "
        f"the broker, so its figures here are lower than bench/run.py's); collapsed stacks "
        f"in `{raw.name}`.\n\n"
        f"{busy}.\n\n| case | client | measure | value |\n|---|---|---|---:|\n{shown}\n\n{tables}\n"
    )
    (out / f"{stem}.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
