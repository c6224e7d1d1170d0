"""Workload 5: end-to-end latency, from produce() to the consumer, at a steady load.

Three loads: 10 MB/s and 100 MB/s, the same on both brokers (the issue's
"equal load"), and half of the peak the same client reached in workload 1
(uncompressed) on this broker this round, which differs between brokers
whenever their peaks do. The
producer (acks=1, linger 5 ms, batch 64 KiB) and the consumer share a process
and its clock; records sent in the first second are not sampled. Kafka's
kafka-e2e-latency sends one record at a time, not a load, so the Java family
is not in this workload.
"""

from __future__ import annotations

from bench import clients
from bench.clients import E2E_FAMILIES, E2ESpec, ProduceSpec
from bench.figures import CPU_PERCENT, LOOP_BUSY, LOWER, P50, P99, P999, Figure
from bench.workloads import Context

TITLE = "5 end-to-end latency"
STEADY = "at 10 MB/s"
LOADED = "at 100 MB/s"
EQUAL_LOADS = (STEADY, LOADED)
HALF_PEAK = "at 50% of peak"
OFFERED = "offered MB/s"
ACHIEVED = "achieved MB/s"
RECORD_SIZE = 1024
PARTITIONS = 6


def peak(ctx: Context, family: str) -> float:
    """Workload 1's figure, or a shorter run of it when workload 1 was not selected."""
    if family not in ctx.peaks:
        topic, _ = ctx.create_topic("peak", PARTITIONS)
        spec = ProduceSpec(topic, max(1000, ctx.sizes.records // 4))
        ctx.peaks[family] = clients.produce(family, ctx.bootstrap, spec, ctx.sizes.timeout).mb_per_s
        ctx.delete_topic(topic)
    return ctx.peaks[family]


def run(ctx: Context) -> list[Figure]:
    figures = []
    for family in [f for f in ctx.clients if f in E2E_FAMILIES]:
        for case, mb_s in ((STEADY, 10.0), (LOADED, 100.0), (HALF_PEAK, peak(ctx, family) / 2)):
            topic, _ = ctx.create_topic("latency", PARTITIONS)
            rate = max(1, int(mb_s * 1e6 / RECORD_SIZE))
            warmup = min(1.0, ctx.sizes.latency_seconds / 3)
            spec = E2ESpec(topic, rate, ctx.sizes.latency_seconds, RECORD_SIZE, warmup)
            result, usage = ctx.measure(
                lambda: clients.e2e(family, ctx.bootstrap, spec, ctx.sizes.timeout)  # noqa: B023
            )
            achieved = result.extra["achieved_rate"] * RECORD_SIZE / 1e6
            lat = result.latency_ms
            ctx.log(
                f"    {case:>15} {family:<9} offered {mb_s:6.1f} achieved {achieved:6.1f} MB/s: "
                f"p50 {lat['p50']:.1f} p99 {lat['p99']:.1f} p99.9 {lat['p999']:.1f} ms"
            )

            def fig(measure: str, value: float, better: str = LOWER) -> Figure:
                return Figure(TITLE, case, family, measure, value, better)  # noqa: B023

            figures += [
                fig(P50, lat["p50"]),
                fig(P99, lat["p99"]),
                fig(P999, lat["p999"]),
                fig(OFFERED, mb_s, "higher"),
                fig(ACHIEVED, achieved, "higher"),
                fig(CPU_PERCENT, usage.cpu_percent),
            ]
            if usage.loop_busy_percent is not None:
                figures.append(fig(LOOP_BUSY, usage.loop_busy_percent))
            ctx.delete_topic(topic)
    return figures
