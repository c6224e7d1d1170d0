"""Workload 7: 1,000 idle connections, plus one busy producer.

The connections each exchange ApiVersions (so the broker knows them as Kafka
clients) and then stay silent while every client family produces as in
workload 1 (uncompressed). The busy producer's throughput and p99 should hold:
compare with workload 1's row. At the end every idle connection must still
be answered.
"""

from __future__ import annotations

import socket

from bench import clients
from bench.brokers import api_versions_request, read_frame
from bench.clients import ProduceSpec
from bench.figures import LOWER, Figure, load_figures
from bench.workloads import Context

TITLE = "7 idle connections"
PARTITIONS = 6


def open_idle(bootstrap: str, count: int) -> list[socket.socket]:
    host, port = bootstrap.rsplit(":", 1)
    socks = []
    try:
        for _ in range(count):
            sock = socket.create_connection((host, int(port)), timeout=30)
            socks.append(sock)
            sock.sendall(api_versions_request())
            read_frame(sock)
    except BaseException:
        for sock in socks:
            sock.close()
        raise
    return socks


def still_answered(socks: list[socket.socket]) -> int:
    answered = 0
    for i, sock in enumerate(socks):
        try:
            sock.sendall(api_versions_request(i + 2))
            read_frame(sock)
            answered += 1
        except OSError:
            pass
    return answered


def run(ctx: Context) -> list[Figure]:
    count = ctx.sizes.idle_connections
    case = f"with {count} idle connections"
    rss_before = ctx.broker.rss()
    socks = open_idle(ctx.bootstrap, count)
    try:
        rss_idle = ctx.broker.rss()
        ctx.log(f"    {count} idle connections: RSS +{(rss_idle - rss_before) / 1e6:.1f} MB")
        per_connection_kb = (rss_idle - rss_before) / count / 1e3
        figures = [Figure(TITLE, case, "-", "RSS per idle connection KB", per_connection_kb, LOWER)]
        for family in ctx.clients:
            topic, _ = ctx.create_topic("idle", PARTITIONS)
            spec = ProduceSpec(topic, ctx.sizes.records)
            result, usage = ctx.measure(
                lambda: clients.produce(family, ctx.bootstrap, spec, ctx.sizes.timeout)  # noqa: B023
            )
            ctx.log(
                f"    busy {family:<9} {result.mb_per_s:7.1f} MB/s "
                f"p99 {result.latency_ms.get('p99', float('nan')):6.1f} ms"
            )
            figures += load_figures(TITLE, case, family, result, usage)
            ctx.delete_topic(topic)
        answered = still_answered(socks)
        if answered != count:
            raise RuntimeError(f"only {answered} of {count} idle connections still answered")
    finally:
        for sock in socks:
            sock.close()
    return figures
