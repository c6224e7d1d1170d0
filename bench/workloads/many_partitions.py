"""Workload 6: a topic of 1,000 partitions.

- topic creation: from CreateTopics to the moment Metadata lists every partition
  with a leader;
- Metadata latency: a Metadata v12 request for that topic (the version current
  clients send), sent by hand on one connection one after another, timed from
  the send to the last byte of the response (no client library in the way);
- produce across all of them: 1 KiB records round-robin over every partition
  (acks=1, linger 5 ms, batch 16 KiB), so each request carries many partitions.
"""

from __future__ import annotations

import socket
import struct
import time

from bench import clients
from bench.brokers import read_frame
from bench.clients import ProduceSpec
from bench.figures import LOWER, P50, P99, Figure, load_figures
from bench.workloads import Context

TITLE = "6 many partitions"
# Kafka's default batch.size: a 64 KiB batch for each of 1,000 partitions would want
# twice the Java producer's 32 MiB buffer.memory, and it then waits for memory
# (0.7 MB/s in a trial run), which measures the client, not the broker.
BATCH_BYTES = 16384
METADATA_VERSION = 12


def _compact_string(text: str) -> bytes:
    data = text.encode()
    return _uvarint(len(data) + 1) + data


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def metadata_request(topic: str, correlation_id: int) -> bytes:
    """Metadata v12 for one topic by name: request header v2, then the flexible body."""
    client_id = b"bench"
    header = struct.pack(">hhih", 3, METADATA_VERSION, correlation_id, len(client_id))
    header += client_id + b"\x00"  # no tagged fields
    body = _uvarint(2)  # one topic
    body += bytes(16) + _compact_string(topic) + b"\x00"  # zero topic id, name, no tags
    body += b"\x00\x00\x00"  # no auto-creation, no authorized operations, no tags
    msg = header + body
    return struct.pack(">i", len(msg)) + msg


def metadata_latencies(ctx: Context, topic: str, partitions: int) -> list[float]:
    host, port = ctx.bootstrap.rsplit(":", 1)
    latencies = []
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(ctx.sizes.metadata_requests):
            request = metadata_request(topic, i + 1)
            t0 = time.perf_counter()
            sock.sendall(request)
            frame = read_frame(sock)
            latencies.append((time.perf_counter() - t0) * 1000)
            (correlation_id,) = struct.unpack_from(">i", frame)
            # Each partition takes at least 20 bytes: an answer this short is an error.
            if correlation_id != i + 1 or len(frame) < 20 * partitions:
                raise RuntimeError(f"Metadata answer of {len(frame)} bytes for {partitions}")
    return latencies


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(int(q * len(values)), len(values) - 1)]


def run(ctx: Context) -> list[Figure]:
    partitions = ctx.sizes.partitions
    case = f"{partitions} partitions"
    topic, created = ctx.create_topic("partitions", partitions)
    latencies = metadata_latencies(ctx, topic, partitions)
    ctx.log(
        f"    created in {created:.2f} s; Metadata p50 {percentile(latencies, 0.5):.2f} ms, "
        f"p99 {percentile(latencies, 0.99):.2f} ms"
    )
    figures = [
        Figure(TITLE, case, "-", "create s", created, LOWER),
        Figure(TITLE, case, "-", f"Metadata {P50}", percentile(latencies, 0.5), LOWER),
        Figure(TITLE, case, "-", f"Metadata {P99}", percentile(latencies, 0.99), LOWER),
    ]
    for family in ctx.clients:
        spec = ProduceSpec(
            topic, ctx.sizes.partition_records, partitions=partitions, batch_bytes=BATCH_BYTES
        )
        result, usage = ctx.measure(
            lambda: clients.produce(family, ctx.bootstrap, spec, ctx.sizes.timeout)  # noqa: B023
        )
        ctx.log(f"    produce {family:<9} {result.mb_per_s:7.1f} MB/s")
        figures += load_figures(TITLE, f"produce across {partitions}", family, result, usage)
    ctx.delete_topic(topic)
    return figures
