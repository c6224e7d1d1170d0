"""The figures a workload reports: one number per (workload, case, client, measure).

A round of a workload on a broker yields Figures; bench/report.py puts the
rounds of both brokers side by side. `better` says which way is good, so the
report can tell whether a Gregor/Kafka ratio is a lead or a lag.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from bench.clients import ClientResult
from bench.procstat import Usage

HIGHER = "higher"
LOWER = "lower"

MB_S = "MB/s"
RECORDS_S = "records/s"
P50 = "p50 ms"
P99 = "p99 ms"
P999 = "p99.9 ms"
CPU_PER_GIB = "broker CPU s/GiB"
CPU_PER_MREQ = "broker CPU s/M requests"
CPU_PERCENT = "broker CPU %"
LOOP_BUSY = "event loop busy %"
GIB = 1 << 30


@dataclass(frozen=True)
class Figure:
    workload: str  # e.g. "1 produce acks=1"
    case: str  # e.g. "lz4", "at 10 MB/s"
    client: str  # java, confluent, franz, or "-" for the broker alone
    measure: str  # e.g. "MB/s", "p99 ms"
    value: float
    better: str = HIGHER

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.workload, self.case, self.client, self.measure)

    def to_json(self) -> dict:
        return asdict(self)


def load_figures(
    workload: str,
    case: str,
    client: str,
    result: ClientResult,
    usage: Usage,
    latency: bool = True,
) -> list[Figure]:
    """What one client run under load says: throughput, the client's own latency
    percentiles (for producers: from send to acknowledgement), and what the broker
    spent on it, per GiB and per million requests, and on its event loop."""

    def fig(measure: str, value: float, better: str = HIGHER) -> Figure:
        return Figure(workload, case, client, measure, value, better)

    out = [fig(MB_S, result.mb_per_s), fig(RECORDS_S, result.records_per_s)]
    if latency:
        for name, measure in (("p50", P50), ("p99", P99), ("p999", P999)):
            if name in result.latency_ms:
                out.append(fig(measure, result.latency_ms[name], LOWER))
    out.append(fig(CPU_PER_GIB, usage.cpu_seconds / (result.bytes / GIB), LOWER))
    if result.requests:
        out.append(fig(CPU_PER_MREQ, usage.cpu_seconds / (result.requests / 1e6), LOWER))
    if usage.loop_busy_percent is not None:
        out.append(fig(LOOP_BUSY, usage.loop_busy_percent, LOWER))
    return out
