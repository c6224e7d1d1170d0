"""The chart of a bench run (matplotlib, PNG): Gregor beside Kafka, medians with
their min-max as error bars.

Four panels: throughput of every run under load; end-to-end latency
percentiles; broker CPU per GiB of every run under load; memory, start-up and
recovery.

    .venv/bin/python bench/chart.py bench/results/<date>-<commit>.json   # draw it again
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # no display on the machine
import matplotlib.pyplot as plt  # noqa: E402

from bench.figures import CPU_PER_GIB, MB_S, P50, P99, P999  # noqa: E402
from bench.report import Row, aggregate  # noqa: E402

COLORS = {"gregor": "#2a7ab9", "kafka": "#8c8c8c"}
LABELS = {"gregor": "Gregor", "kafka": "Apache Kafka"}


def _label(row: Row, with_measure: bool = False) -> str:
    # The workload's number ("1 produce acks=1" -> "1"), or its last word.
    first = row.workload.split(" ", 1)[0]
    head = first if first.isdigit() else row.workload.split()[-1]
    parts = [head, row.case, row.client if row.client != "-" else ""]
    if with_measure:
        parts.append(row.measure)
    return " · ".join(p for p in parts if p)


def _bars(ax, rows: list[Row], labels: list[str], unit: str, log: bool = False) -> None:
    """Horizontal bars, Gregor and Kafka side by side, with min-max whiskers."""
    height = 0.38
    for i, broker in enumerate(("gregor", "kafka")):
        ys, widths, lo, hi = [], [], [], []
        for j, row in enumerate(rows):
            m, span = row.median(broker), row.span(broker)
            if m is None:
                continue
            ys.append(j + (i - 0.5) * height)
            widths.append(m)
            lo.append(m - span[0])
            hi.append(span[1] - m)
        ax.barh(
            ys,
            widths,
            height=height,
            color=COLORS[broker],
            label=LABELS[broker],
            xerr=[lo, hi],
            error_kw={"elinewidth": 0.8, "capsize": 2},
        )
    for j, row in enumerate(rows):
        if row.ratio is not None:
            ax.annotate(
                f"{row.ratio:.2f}×",
                xy=(1.0, j),
                xycoords=("axes fraction", "data"),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=7,
            )
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(unit)
    if log:
        ax.set_xscale("log")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)


def render(rows: list[Row], meta: dict, path: Path) -> None:
    loaded = [r for r in rows if r.measure == MB_S]
    cpu = [r for r in rows if r.measure == CPU_PER_GIB]
    latency = [r for r in rows if r.measure in (P50, P99, P999) and r.workload.startswith("5 ")]
    other = [
        r
        for r in rows
        if r.workload.startswith("8 ") or r.measure in ("create s", "Metadata p99 ms")
    ]
    tall = max(len(loaded), len(cpu), 8)
    fig = plt.figure(figsize=(17, 4 + 0.22 * tall + 0.22 * max(len(latency), len(other), 6)))
    grid = fig.add_gridspec(2, 2, height_ratios=[tall, max(len(latency), len(other), 6)])
    panels = [
        (grid[0, 0], loaded, "throughput, MB/s (higher is better)", False, False),
        (grid[0, 1], cpu, "broker CPU seconds per GiB (lower is better)", True, False),
        (grid[1, 0], latency, "end-to-end latency, ms (lower is better)", True, True),
        (grid[1, 1], other, "memory MB, start-up ms, recovery s (lower is better)", True, True),
    ]
    for spec, selected, title, log, with_measure in panels:
        ax = fig.add_subplot(spec)
        if not selected:
            ax.set_axis_off()
            continue
        _bars(ax, selected, [_label(r, with_measure) for r in selected], "", log=log)
        ax.set_title(title, fontsize=10)
    fig.suptitle(
        f"Gregor beside Apache Kafka 4.3.1 — {meta['date']}, commit {meta['commit']}, "
        f"{meta['rounds']} rounds (medians, min–max), {meta['machine']['cores']} cores",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0, 0.97, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: bench/chart.py RESULTS.json", file=sys.stderr)
        return 2
    source = Path(argv[0])
    results = json.loads(source.read_text())
    rows = aggregate(results["figures"], results["meta"].get("workloads"))
    render(rows, results["meta"], source.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
