"""Workload 9: transactional produce (issue 13's measure).

1 KiB records to 6 partitions in transactions of 100 and of 10,000 records,
one transaction after the other, with confluent-kafka's transactional
producer (acks=all, linger 5 ms, batch 64 KiB). Throughput is over the whole
run, commits included; the latency figures are the commit latencies
(`commit_transaction()`: EndTxn, the markers to every partition, and the
coordinator's completion), p50/p99/p99.9 over the run's transactions.
"""

from __future__ import annotations

from bench.clients import ProduceSpec
from bench.figures import Figure
from bench.workloads import Context
from bench.workloads.produce import PARTITIONS, produce_runs

TITLE = "9 transactional produce"
SIZES = (100, 10_000)  # records per transaction
# Only confluent-kafka: franz's and Kafka's perf tools are not set up for it here.
FAMILIES = ("confluent",)


def run(ctx: Context) -> list[Figure]:
    """The produce runs of workload 1, each producer transactional; the
    p50/p99 figures are its commit latencies."""

    def spec_for(topic: str, case: str) -> ProduceSpec:
        per_txn = int(case.split()[0])
        size = min(per_txn, ctx.sizes.records // 4) if ctx.smoke else per_txn
        return ProduceSpec(
            topic, ctx.sizes.records, partitions=PARTITIONS, transaction_records=size
        )

    cases = [(f"{n} per txn", family) for n in SIZES for family in ctx.clients]
    return produce_runs(ctx, TITLE, cases, spec_for)
