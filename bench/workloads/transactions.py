"""Workload 9: transactional produce (issue 13's measure).

1 KiB records to 6 partitions in transactions of 100 and of 10,000 records,
one transaction after the other, with confluent-kafka's transactional
producer (acks=all, linger 5 ms, batch 64 KiB). Throughput is over the whole
run, commits included; the latency figures are the commit latencies
(`commit_transaction()`: EndTxn, the markers to every partition, and the
coordinator's completion), p50/p99/p99.9 over the run's transactions.
"""

from __future__ import annotations

from bench import clients
from bench.clients import ProduceSpec
from bench.figures import Figure, load_figures
from bench.workloads import Context

TITLE = "9 transactional produce"
PARTITIONS = 6
SIZES = (100, 10_000)  # records per transaction
# Only confluent-kafka: franz's and Kafka's perf tools are not set up for it here.
FAMILIES = ("confluent",)


def run(ctx: Context) -> list[Figure]:
    figures = []
    for per_txn in SIZES:
        size = min(per_txn, ctx.sizes.records // 4) if ctx.smoke else per_txn
        case = f"{per_txn} per txn"
        for family in ctx.clients:
            topic, _ = ctx.create_topic("txn", PARTITIONS)
            spec = ProduceSpec(
                topic, ctx.sizes.records, partitions=PARTITIONS, transaction_records=size
            )
            result, usage = ctx.measure(
                lambda: clients.produce(family, ctx.bootstrap, spec, ctx.sizes.timeout)  # noqa: B023
            )
            ctx.log(
                f"    {case:>14} {family:<9} {result.mb_per_s:7.1f} MB/s, commit "
                f"p50 {result.latency_ms.get('p50', float('nan')):6.1f} ms "
                f"p99 {result.latency_ms.get('p99', float('nan')):6.1f} ms, "
                f"broker CPU {usage.cpu_percent:3.0f}%"
            )
            figures += load_figures(TITLE, case, family, result, usage)
            ctx.delete_topic(topic)
    return figures
