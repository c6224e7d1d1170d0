"""Workloads 1-3: produce throughput.

1. 1 KiB records to 6 partitions, acks=1, linger 5 ms, batch 64 KiB: uncompressed, lz4, zstd;
2. the same with acks=all and the idempotent producer;
3. 100-byte records with linger 0: many small requests, bound by the request rate.
Each run writes a topic of its own, deleted afterwards.
"""

from __future__ import annotations

from bench import clients
from bench.clients import ProduceSpec
from bench.figures import Figure, load_figures
from bench.workloads import Context

ACKS1 = "1 produce acks=1"
IDEMPOTENT = "2 produce acks=all idempotent"
SMALL = "3 produce 100 B linger 0"
CODECS = ("none", "lz4", "zstd")
PARTITIONS = 6


def produce_runs(
    ctx: Context, workload: str, cases: list[tuple[str, str]], spec_for
) -> list[Figure]:
    figures = []
    for case, family in cases:
        topic, _ = ctx.create_topic("produce", PARTITIONS)
        spec = spec_for(topic, case)
        result, usage = ctx.measure(
            lambda: clients.produce(family, ctx.bootstrap, spec, ctx.sizes.timeout)  # noqa: B023
        )
        ctx.log(
            f"    {case:>5} {family:<9} {result.mb_per_s:7.1f} MB/s "
            f"p99 {result.latency_ms.get('p99', float('nan')):6.1f} ms, "
            f"broker CPU {usage.cpu_percent:3.0f}%"
        )
        figures += load_figures(workload, case, family, result, usage)
        if workload == ACKS1 and case == "none":
            ctx.peaks[family] = result.mb_per_s
        ctx.delete_topic(topic)
    return figures


def run_acks1(ctx: Context) -> list[Figure]:
    return produce_runs(
        ctx,
        ACKS1,
        ctx.pairs(CODECS),
        lambda topic, codec: ProduceSpec(topic, ctx.sizes.records, codec=codec, acks="1"),
    )


def run_idempotent(ctx: Context) -> list[Figure]:
    return produce_runs(
        ctx,
        IDEMPOTENT,
        ctx.pairs(CODECS, shift=1),
        lambda topic, codec: ProduceSpec(
            topic, ctx.sizes.records, codec=codec, acks="all", idempotent=True
        ),
    )


def run_small(ctx: Context) -> list[Figure]:
    return produce_runs(
        ctx,
        SMALL,
        ctx.pairs(("none",)),
        lambda topic, codec: ProduceSpec(
            topic, ctx.sizes.small_records, record_size=100, linger_ms=0, codec=codec
        ),
    )
