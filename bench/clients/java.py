"""Apache Kafka's own perf tools: kafka-producer-perf-test and kafka-consumer-perf-test.

Their own figures are used (they time from their first record, after the JVM
has started), and --print-metrics gives the requests the client sent. They run
with the JVM flags and heap of Kafka's bin/ scripts (-Xmx512M, G1), unless
QUICK is set (make bench-smoke, where only the code path matters).
"""

from __future__ import annotations

import datetime
import math
import re
import subprocess

from bench.clients import ClientError, ClientResult, ConsumeSpec, E2ESpec, ProduceSpec
from tools import kafka_cli

# make bench-smoke: the quick-start JVM flags of tests.
QUICK = False
IDLE_MS = 5000  # how long a consumer waits for one more record before it gives up
MAX_POLL_RECORDS = 500  # the consumer's default max.poll.records
ROUND_ROBIN = "org.apache.kafka.clients.producer.RoundRobinPartitioner"

_PRODUCED = re.compile(
    r"(?P<records>\d+) records sent, (?P<rate>[\d.]+) records/sec .*?"
    r"(?P<p50>[\d.]+) ms 50th, [\d.]+ ms 95th, (?P<p99>[\d.]+) ms 99th, (?P<p999>[\d.]+) ms 99.9th"
)
_METRIC = re.compile(
    r"^(?P<group>[\w-]+):(?P<name>[\w-]+):\{(?P<tags>[^}]*)\}\s*:\s*(?P<value>\S+)"
)
_DATE = "%Y-%m-%d %H:%M:%S:%f"


def _start(tool: str, args: list) -> subprocess.Popen:
    return kafka_cli.popen_tool(tool, *map(str, args), as_shipped=not QUICK)


def _finish(proc: subprocess.Popen, what: str, timeout: float) -> str:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        proc.kill()
        proc.communicate()
        raise ClientError(f"{what}: no result after {timeout:.0f} s") from exc
    if proc.returncode != 0:
        raise ClientError(f"{what}: exit {proc.returncode}\n{out[-1500:]}\n{err[-1500:]}")
    return out


def metric(output: str, group: str, name: str) -> float | None:
    """A client-level metric (not per node or topic) from --print-metrics."""
    for line in output.splitlines():
        m = _METRIC.match(line)
        if m and m["group"] == group and m["name"] == name and "node-id" not in m["tags"]:
            return float(m["value"])
    return None


def parse_produced(output: str) -> ClientResult:
    m = _PRODUCED.search(output)
    if m is None:
        raise ClientError(f"kafka-producer-perf-test printed no summary:\n{output[-1500:]}")
    records = int(m["records"])
    requests = metric(output, "producer-metrics", "request-total")
    return ClientResult(
        records=records,
        bytes=0,  # set by the caller, who knows the record size
        seconds=records / float(m["rate"]),
        requests=int(requests) if requests is not None else None,
        latency_ms={"p50": float(m["p50"]), "p99": float(m["p99"]), "p999": float(m["p999"])},
    )


def produce(bootstrap: str, spec: ProduceSpec, timeout: float) -> ClientResult:
    props = [
        f"acks={'all' if spec.acks in ('all', '-1') else spec.acks}",
        f"enable.idempotence={'true' if spec.idempotent else 'false'}",
        f"linger.ms={spec.linger_ms}",
        f"batch.size={spec.batch_bytes}",
        f"compression.type={spec.codec}",
    ]
    if spec.partitions:
        props.append(f"partitioner.class={ROUND_ROBIN}")
    share = math.ceil(spec.records / spec.clients)
    args = ["--bootstrap-server", bootstrap, "--topic", spec.topic, "--num-records", share]
    args += ["--record-size", spec.record_size, "--throughput", -1, "--print-metrics"]
    args += ["--command-property", *props]
    procs = [_start("kafka-producer-perf-test", args) for _ in range(spec.clients)]
    results = [parse_produced(_finish(p, "kafka-producer-perf-test", timeout)) for p in procs]
    records = sum(r.records for r in results)
    requests = [r.requests for r in results]
    return ClientResult(
        records=records,
        bytes=records * spec.record_size,
        # Concurrent producers: the slowest one's time is the load's.
        seconds=max(r.seconds for r in results),
        requests=None if None in requests else sum(requests),
        latency_ms={k: max(r.latency_ms[k] for r in results) for k in ("p50", "p99", "p999")},
    )


def parse_consumed(output: str) -> dict:
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("start.time"):
            continue
        names = [n.strip() for n in line.split(",")]
        # A WARNING line may come between the header and the values.
        for values_line in lines[i + 1 :]:
            values = [v.strip() for v in values_line.split(",")]
            if len(values) != len(names):
                continue
            row = dict(zip(names, values, strict=True))
            requests = metric(output, "consumer-metrics", "request-total")
            return {
                "start": datetime.datetime.strptime(row["start.time"], _DATE),
                "end": datetime.datetime.strptime(row["end.time"], _DATE),
                "records": int(row["data.consumed.in.nMsg"]),
                "requests": int(requests) if requests is not None else None,
            }
    raise ClientError(f"kafka-consumer-perf-test printed no summary:\n{output[-1500:]}")


def consume(bootstrap: str, spec: ConsumeSpec, timeout: float) -> ClientResult:
    """One consumer, or a group of `members` tools started together: the group's time
    runs from the first one's start to the last one's end.

    Each tool reads until it has its own count, in polls of up to max.poll.records, so
    a member may read up to a poll more than its share. The first to join has every
    partition until the next rebalance; what it read is committed when it leaves and
    the others read the rest. So the shares leave room for that overshoot, lest a
    member wait IDLE_MS for records nobody will write; the group's figure counts what
    the members read (the topic's records, less at most a poll per member)."""
    members = spec.members if spec.group else 1
    share = spec.records
    if members > 1:
        share = max(1, (spec.records - (members - 1) * MAX_POLL_RECORDS) // members)
    args = ["--bootstrap-server", bootstrap, "--topic", spec.topic, "--num-records", share]
    args += ["--print-metrics", "--timeout", IDLE_MS]
    if spec.group:
        args += ["--group", spec.group]
    procs = [_start("kafka-consumer-perf-test", args) for _ in range(members)]
    rows = [parse_consumed(_finish(p, "kafka-consumer-perf-test", timeout)) for p in procs]
    read = sum(r["records"] for r in rows)
    if read < share * members:
        raise ClientError(f"kafka-consumer-perf-test read {read} of {share * members} records")
    # A member that came short waited IDLE_MS for more before it ended.
    idle = datetime.timedelta(milliseconds=IDLE_MS)
    ends = [r["end"] - idle if r["records"] < share else r["end"] for r in rows]
    seconds = (max(ends) - min(r["start"] for r in rows)).total_seconds()
    requests = [r["requests"] for r in rows]
    return ClientResult(
        records=min(read, spec.records),
        bytes=min(read, spec.records) * spec.record_size,
        seconds=seconds,
        requests=None if None in requests else sum(requests),
    )


def e2e(bootstrap: str, spec: E2ESpec, timeout: float) -> ClientResult:
    raise ClientError("the Java tools have no steady-rate end-to-end latency test")
