"""Workload 4: consume 1 GiB of 1 KiB records from the earliest offset, with one
consumer and with a group of three (each subscribed in a new group).

The data is written once per round (6 partitions, round-robin, so that each of
three members gets the same share), by the lightest producer selected, and
read by every client family; each run is a new consumer group, so each reads
from offset 0. The page cache holds the data on both brokers.
"""

from __future__ import annotations

import uuid

from bench import clients
from bench.clients import ConsumeSpec, ProduceSpec
from bench.figures import Figure, load_figures
from bench.workloads import Context

TITLE = "4 consume from earliest"
ONE = "1 consumer"
GROUP = "group of 3"
PARTITIONS = 6
RECORD_SIZE = 1024
# Who writes the data to read: the producer that costs the machine least.
WRITERS = ("franz", "confluent", "java")


def run(ctx: Context) -> list[Figure]:
    records = ctx.sizes.consume_bytes // RECORD_SIZE
    records -= records % PARTITIONS
    topic, _ = ctx.create_topic("consume", PARTITIONS)
    writer = next(w for w in WRITERS if w in ctx.clients)
    clients.produce(
        writer,
        ctx.bootstrap,
        ProduceSpec(topic, records, record_size=RECORD_SIZE, partitions=PARTITIONS),
        ctx.sizes.timeout,
    )
    records += PARTITIONS  # and the record create_topic wrote to each partition
    figures = []
    for case, family in [(c, f) for c in (ONE, GROUP) for f in ctx.clients]:
        group = f"bench-{uuid.uuid4().hex[:8]}"
        # One consumer subscribes in a group of its own, as the Java tool always does.
        spec = ConsumeSpec(
            topic, records, record_size=RECORD_SIZE, group=group, members=3 if case == GROUP else 1
        )
        result, usage = ctx.measure(
            lambda: clients.consume(family, ctx.bootstrap, spec, ctx.sizes.timeout)  # noqa: B023
        )
        ctx.log(
            f"    {case:>10} {family:<9} {result.mb_per_s:7.1f} MB/s, "
            f"broker CPU {usage.cpu_percent:3.0f}%"
        )
        figures += load_figures(TITLE, case, family, result, usage, latency=False)
    ctx.delete_topic(topic)
    return figures
