"""The side-by-side table: per figure, each broker's median over the rounds, its
min-max, and Gregor/Kafka; and how that stands against the issue's targets.

    .venv/bin/python bench/report.py bench/results/<date>-<commit>.json   # print it again
    .venv/bin/python bench/report.py --readme bench/results/<...>.json    # the README tables
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import CPU_PER_GIB, CPU_PER_MREQ, LOOP_BUSY, MB_S, P99, RECORDS_S  # noqa: E402
from bench.workloads import latency  # noqa: E402

BROKERS = ("gregor", "kafka")
NAMES = {"gregor": "Gregor", "kafka": "Kafka"}


@dataclass
class Row:
    workload: str
    case: str
    client: str
    measure: str
    better: str
    values: dict[str, list[float]] = field(default_factory=dict)

    def median(self, broker: str) -> float | None:
        v = self.values.get(broker)
        return statistics.median(v) if v else None

    def span(self, broker: str) -> tuple[float, float] | None:
        v = self.values.get(broker)
        return (min(v), max(v)) if v else None

    @property
    def ratio(self) -> float | None:
        g, k = self.median("gregor"), self.median("kafka")
        if g is None or not k:
            return None
        return g / k

    @property
    def gregor_ahead(self) -> bool | None:
        r = self.ratio
        if r is None:
            return None
        return r >= 1 if self.better == "higher" else r <= 1


def aggregate(figures: list[dict], workloads: list[str] | None = None) -> list[Row]:
    """Rows in the order of `workloads` (titles; the order a round runs them), and
    within a workload in the order its figures first appear."""
    rows: dict[tuple, Row] = {}
    for f in figures:
        key = (f["workload"], f["case"], f["client"], f["measure"])
        row = rows.get(key)
        if row is None:
            row = rows[key] = Row(*key, better=f["better"])
        row.values.setdefault(f["broker"], []).append(f["value"])
    order = {title: i for i, title in enumerate(workloads or [])}
    return sorted(rows.values(), key=lambda r: order.get(r.workload, len(order)))


def num(value: float | None) -> str:
    if value is None:
        return "-"
    a = abs(value)
    if a >= 10_000:
        return f"{value:,.0f}"
    if a >= 100:
        return f"{value:.0f}"
    if a >= 10:
        return f"{value:.1f}"
    if a >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def spread(values: list[float]) -> str:
    """The median of a figure's rounds with their min–max ("-" for none)."""
    if not values:
        return "-"
    m, lo, hi = statistics.median(values), min(values), max(values)
    if lo == hi:
        return num(m)
    return f"{num(m)} ({num(lo)}–{num(hi)})"


def cell(row: Row, broker: str) -> str:
    return spread(row.values.get(broker, []))


def ratio_text(row: Row) -> str:
    r = row.ratio
    return "-" if r is None else f"{r:.2f}"


def terminal(rows: list[Row]) -> str:
    out = []
    workload = None
    for row in rows:
        if row.workload != workload:
            workload = row.workload
            out.append(workload)
        mark = {True: "", False: "  <- Kafka ahead", None: ""}[row.gregor_ahead]
        out.append(
            f"  {row.case:<32} {row.client:<9} {row.measure:<36} "
            f"Gregor {cell(row, 'gregor'):<26} Kafka {cell(row, 'kafka'):<26} "
            f"G/K {ratio_text(row)}{mark}"
        )
    return "\n".join(out)


# --- markdown --------------------------------------------------------------------------


def _index(rows: list[Row]) -> dict[tuple, Row]:
    return {(r.workload, r.case, r.client, r.measure): r for r in rows}


def throughput_table(rows: list[Row]) -> str:
    """One line per run under load: MB/s, the client's p99, broker CPU per GiB and
    per million requests, Gregor's event loop."""
    idx = _index(rows)
    lines = [
        "| workload | case | client | Gregor MB/s | Kafka MB/s | G/K | p99 ms G / K "
        "| CPU s/GiB G / K | G/K | CPU s/M req G / K | G/K | Gregor loop busy |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        if row.measure != MB_S:
            continue
        key = (row.workload, row.case, row.client)
        p99 = idx.get((*key, P99))
        gib = idx.get((*key, CPU_PER_GIB))
        mreq = idx.get((*key, CPU_PER_MREQ))
        loop = idx.get((*key, LOOP_BUSY))

        def pair(r: Row | None) -> str:
            if r is None:
                return "-"
            return f"{num(r.median('gregor'))} / {num(r.median('kafka'))}"

        lines.append(
            f"| {row.workload} | {row.case} | {row.client} | {cell(row, 'gregor')} "
            f"| {cell(row, 'kafka')} | **{ratio_text(row)}** | {pair(p99)} "
            f"| {pair(gib)} | {ratio_text(gib) if gib else '-'} "
            f"| {pair(mreq)} | {ratio_text(mreq) if mreq else '-'} "
            f"| {num(loop.median('gregor')) + '%' if loop else '-'} |"
        )
    return "\n".join(lines)


# Measures the throughput table already shows for a run under load.
_IN_THROUGHPUT = {MB_S, RECORDS_S, "p50 ms", P99, "p99.9 ms", CPU_PER_GIB, CPU_PER_MREQ, LOOP_BUSY}


def other_table(rows: list[Row]) -> str:
    """Every figure that is not a run under load: latency, Metadata, memory, start-up."""
    loaded = {(r.workload, r.case, r.client) for r in rows if r.measure == MB_S}
    lines = [
        "| workload | case | client | measure | Gregor | Kafka | G/K |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for row in rows:
        if (row.workload, row.case, row.client) in loaded and row.measure in _IN_THROUGHPUT:
            continue
        lines.append(
            f"| {row.workload} | {row.case} | {row.client} | {row.measure} "
            f"| {cell(row, 'gregor')} | {cell(row, 'kafka')} | {ratio_text(row)} |"
        )
    return "\n".join(lines)


def full_table(rows: list[Row]) -> str:
    lines = [
        "| workload | case | client | measure | better | Gregor | Kafka | G/K |",
        "|---|---|---|---|---|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row.workload} | {row.case} | {row.client} | {row.measure} | {row.better} "
            f"| {cell(row, 'gregor')} | {cell(row, 'kafka')} | {ratio_text(row)} |"
        )
    return "\n".join(lines)


def markdown(rows: list[Row], meta: dict, errors: list[dict]) -> str:
    m = meta["machine"]
    out = [
        f"# make bench: Gregor beside Apache Kafka, {meta['date']}",
        "",
        f"- commit {meta['commit']}; `{meta['command']}`; {meta['rounds']} rounds, "
        f"{meta.get('seconds', '?')} s",
        f"- machine: {m['cpu']}, {m['cores']} cores, {m['memory GiB']} GiB, Linux {m['kernel']}, "
        f"Python {m['python']}, {m['java']}, librdkafka {m['librdkafka']}; load average "
        f"{m['load average at start']} at the start, {m.get('load average at end', '?')} at the end",
        f"- sizes: {meta['sizes']}",
    ]
    if meta.get("page cache"):
        out.append(f"- page cache: {meta['page cache']}")
    if meta.get("note"):
        out.append(f"- note: {meta['note']}")
    out += [
        "",
        "Medians over the rounds, (min–max), G/K = Gregor / Kafka.",
        "",
        "## Runs under load",
        "",
        throughput_table(rows),
        "",
        "## Latency, Metadata, memory, start-up, recovery",
        "",
        other_table(rows),
        "",
        "## Targets of the issue",
        "",
        targets_text(rows, markdown=True),
        "",
        "## Every figure",
        "",
        full_table(rows),
        "",
    ]
    if errors:
        out += ["## Failed runs", ""]
        out += [
            f"- {e['broker']} round {e['round'] + 1} {e['workload']}: {e['error']}" for e in errors
        ]
        out.append("")
    return "\n".join(out)


# --- the targets ----------------------------------------------------------------


def targets(rows: list[Row]) -> list[tuple[str, list[Row], list[Row]]]:
    """(target, rows that meet it, rows that miss it) for each target of the issue."""

    def split(selected: list[Row], ok) -> tuple[list[Row], list[Row]]:
        selected = [r for r in selected if r.ratio is not None]
        return [r for r in selected if ok(r.ratio)], [r for r in selected if not ok(r.ratio)]

    loaded = [r for r in rows if r.measure == MB_S]
    equal_load_p99 = [r for r in rows if r.measure == P99 and r.case in latency.EQUAL_LOADS]
    cpu = [r for r in rows if r.measure in (CPU_PER_GIB, CPU_PER_MREQ)]
    rss = [r for r in rows if r.measure in ("idle RSS MB", "peak RSS MB")]
    start = [r for r in rows if r.case == "start-up"]
    return [
        ("throughput >= 1.0 x Kafka", *split(loaded, lambda x: x >= 1.0)),
        (
            "p99 end-to-end latency <= Kafka's at equal load (10 and 100 MB/s)",
            *split(equal_load_p99, lambda x: x <= 1.0),
        ),
        ("broker CPU per GiB and per M requests <= 0.33 x Kafka", *split(cpu, lambda x: x <= 0.33)),
        ("RSS <= 0.2 x Kafka", *split(rss, lambda x: x <= 0.2)),
        ("start-up <= 0.2 x Kafka", *split(start, lambda x: x <= 0.2)),
    ]


def targets_text(rows: list[Row], markdown: bool = False) -> str:
    out = []
    for name, met, missed in targets(rows):
        out.append(
            f"{'- ' if markdown else ''}{name}: met by {len(met)} of {len(met) + len(missed)}"
        )
        for r in missed:
            what = " ".join(x for x in (r.workload, r.case, r.client, r.measure) if x != "-")
            out.append(f"{'  - ' if markdown else '    '}missed: {what}: {r.ratio:.2f}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", help="a bench/results/*.json")
    ap.add_argument("--readme", action="store_true", help="print the README's tables")
    args = ap.parse_args(argv)
    results = json.loads(Path(args.results).read_text())
    rows = aggregate(results["figures"], results["meta"].get("workloads"))
    if args.readme:
        print(throughput_table(rows))
        print()
        print(other_table(rows))
    else:
        print(terminal(rows))
        print()
        print(targets_text(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
