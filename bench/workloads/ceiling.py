"""The one-thread ceiling: what Gregor moves when its event-loop thread is full.

Several franz-go producers at once (each its own client and connection; Go
clients cost the machine least, so the broker gets most of the two cores)
send 1 KiB and 100-byte records as fast as they can (acks=1, linger 5 ms,
batch 64 KiB, uncompressed) to 6 partitions. Gregor's figures come with the
busy share of its event-loop thread: near 100% means the thread, not the
clients, set the pace. Kafka gets the same client load.
"""

from __future__ import annotations

from bench import clients
from bench.clients import ProduceSpec
from bench.figures import CPU_PERCENT, LOWER, Figure, load_figures
from bench.workloads import Context

TITLE = "one-thread ceiling"
FAMILY = "franz"
PARTITIONS = 6


def run(ctx: Context) -> list[Figure]:
    if FAMILY not in ctx.clients:
        ctx.log(f"    (needs the {FAMILY} client family: skipped)")
        return []
    n = ctx.sizes.ceiling_clients
    figures = []
    loads = ((1024, ctx.sizes.ceiling_records), (100, ctx.sizes.ceiling_small_records))
    for size, records in loads:
        case = f"{size} B x {n} producers"
        topic, _ = ctx.create_topic("ceiling", PARTITIONS)
        spec = ProduceSpec(topic, records, record_size=size, clients=n)
        result, usage = ctx.measure(
            lambda: clients.produce(FAMILY, ctx.bootstrap, spec, ctx.sizes.timeout)  # noqa: B023
        )
        loop = usage.loop_busy_percent
        ctx.log(
            f"    {case:>22} {result.mb_per_s:7.1f} MB/s {result.records_per_s:10,.0f} records/s, "
            f"broker CPU {usage.cpu_percent:3.0f}%"
            + (f", event loop busy {loop:3.0f}%" if loop is not None else "")
        )
        figures += load_figures(TITLE, case, FAMILY, result, usage)
        figures.append(Figure(TITLE, case, FAMILY, CPU_PERCENT, usage.cpu_percent, LOWER))
        ctx.delete_topic(topic)
    return figures
