"""The broker's own cost of a Produce request, without a client process.

    .venv/bin/python bench/produce_path.py            # every shape, 5 runs each
    .venv/bin/python bench/produce_path.py --shape partitions --profile 25

Gregor runs in this process (a `Broker` on a loopback port); one thread sends
the same encoded Produce request (acks=1) again and again, waiting for each
answer as a producer with one request in flight does, and checks that every
partition of the first and last answers was appended. Printed per shape, per
request and per partition, as the median and range of the runs: the
process's CPU time (user + system: the broker's event loop and the sending
thread, whose `sendall` is the kernel's copy), and the event-loop thread's
alone (the broker's own work and system calls).

`bench/run.py` measures Gregor beside Kafka with real clients, and on two
cores its produce figures are bound by those clients and move by a quarter
from one round to the next. This measures what a change to the produce path
itself does: run it on two checkouts (a `git worktree` of the commit before),
one after the other, a few times. The data directory defaults to tmpfs
(`/dev/shm`), so that the disk's writeback does not stall the runs; `--dir`
puts it on a disk. `--profile N` prints cProfile's top N functions of the
broker's thread (cProfile slows Python code several times, not C: read
shares, not times).
"""

from __future__ import annotations

import os
import sys

# Run as a script, bench/ comes first on sys.path, and its profile.py would
# shadow the standard library's, which cProfile imports: the repository's
# root takes its place.
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if sys.path and os.path.abspath(sys.path[0]) == os.path.join(REPO, "bench"):
    sys.path[0] = REPO
else:
    sys.path.insert(0, REPO)

import argparse  # noqa: E402
import cProfile  # noqa: E402
import dataclasses  # noqa: E402
import logging  # noqa: E402
import pstats  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import trio  # noqa: E402

from broker.config import BrokerConfig  # noqa: E402
from broker.server import Broker  # noqa: E402
from wire.api_keys import ApiKey  # noqa: E402
from wire.error_codes import ErrorCode  # noqa: E402
from wire.framing import FrameSplitter, encode_frame  # noqa: E402
from wire.protocol import decode_response, encode_request  # noqa: E402
from wire.records import RecordInput, build_batch  # noqa: E402

TOPIC = "produce-path"
PRODUCE_VERSION = 9


@dataclasses.dataclass(frozen=True)
class Shape:
    name: str
    partitions: int
    records: int  # a partition's batch
    record_bytes: int
    requests: int
    compression: int = 0  # wire.records codec id
    what: str = ""


SHAPES = {
    s.name: s
    for s in (
        Shape("batches", 6, 64, 1024, 2000, 0, "franz-go's workload 1: 6 x 64 KiB"),
        Shape("lz4", 6, 64, 1024, 2000, 3, "the same, lz4"),
        Shape("partitions", 1000, 11, 1024, 30, 0, "franz-go's workload 6: 1,000 x 11 KiB"),
        Shape("small", 1, 10, 100, 20000, 0, "ten 100-byte records in one partition"),
    )
}


class Client:
    """A blocking socket speaking Kafka frames, one request at a time."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        self.splitter = FrameSplitter(2**31 - 1)

    def call(self, frame: bytes) -> bytearray:
        self.sock.sendall(frame)
        while (answer := self.splitter.next_frame()) is None:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("the broker closed the connection")
            self.splitter.feed(data)
        return answer

    def close(self) -> None:
        self.sock.close()


def _request(correlation_id: int, body: dict) -> bytes:
    return encode_frame(encode_request(ApiKey.PRODUCE, PRODUCE_VERSION, correlation_id, body))


def _check_appended(answer: bytearray, partitions: int) -> None:
    _, response = decode_response(ApiKey.PRODUCE, PRODUCE_VERSION, answer)
    codes = [p.error_code for t in response.responses for p in t.partition_responses]
    if len(codes) != partitions or any(code != ErrorCode.NONE for code in codes):
        raise RuntimeError(f"the broker refused the Produce: {sorted(set(codes))}")


def _create_topic(client: Client, partitions: int) -> None:
    body = {
        "topics": [
            {
                "name": TOPIC,
                "num_partitions": partitions,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout_ms": 30000,
        "validate_only": False,
    }
    answer = client.call(encode_frame(encode_request(ApiKey.CREATE_TOPICS, 7, 1, body)))
    _, response = decode_response(ApiKey.CREATE_TOPICS, 7, answer)
    if response.topics[0].error_code != ErrorCode.NONE:
        raise RuntimeError(f"topic not created: {response.topics[0]}")


def measure(shape: Shape, data_root: str, profile: cProfile.Profile | None) -> Cost:
    """The CPU cost (the process's and the event loop's) of `shape.requests`
    Produce requests (the first, which warms the codecs and opens the
    segments, not counted)."""
    data = tempfile.mkdtemp(prefix="produce-path-", dir=data_root)
    config = BrokerConfig.load(
        None, {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": data, "node.id": 1}
    )
    result: list[Cost] = []

    def send(port: int) -> None:
        now = int(time.time() * 1000)
        # One random payload of upper-case letters for every record, as
        # Kafka's perf tool and bench/run.py's producers send.
        rng = random.Random(shape.record_bytes)
        value = bytes(rng.randint(65, 90) for _ in range(shape.record_bytes))
        batch = build_batch(
            [RecordInput(None, value, timestamp=now) for _ in range(shape.records)],
            compression=shape.compression,
        )
        body = {
            "transactional_id": None,
            "acks": 1,
            "timeout_ms": 30000,
            "topic_data": [
                {
                    "name": TOPIC,
                    "partition_data": [
                        {"index": i, "records": batch} for i in range(shape.partitions)
                    ],
                }
            ],
        }
        frames = [_request(100 + k, body) for k in range(shape.requests)]
        client = Client(port)
        try:
            _create_topic(client, shape.partitions)
            # Leaders are in place once a Produce is answered without errors.
            deadline = time.monotonic() + 30
            while True:
                try:
                    _check_appended(client.call(frames[0]), shape.partitions)
                    break
                except RuntimeError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            if profile is not None:
                trio.from_thread.run_sync(profile.enable)
            loop_before = trio.from_thread.run_sync(time.thread_time)
            before = time.process_time()
            for frame in frames[1:-1]:
                client.call(frame)
            last = client.call(frames[-1])
            after = time.process_time()
            loop_after = trio.from_thread.run_sync(time.thread_time)
            if profile is not None:
                trio.from_thread.run_sync(profile.disable)
            _check_appended(last, shape.partitions)
            result.append(Cost(after - before, loop_after - loop_before))
        finally:
            client.close()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            broker = await nursery.start(Broker(config).serve)
            try:
                await trio.to_thread.run_sync(send, broker.bound[0][2])
            finally:
                await broker.stop()

    try:
        trio.run(main)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    return result[0]


@dataclasses.dataclass(frozen=True)
class Cost:
    """CPU seconds of one run: the whole process's, and the event-loop
    thread's alone (the broker's own work and system calls, without the
    sending thread's)."""

    process: float
    loop: float


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), nargs="+", default=list(SHAPES))
    parser.add_argument("--runs", type=int, default=5)
    default_dir = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    parser.add_argument("--dir", default=default_dir, help="where the data directories go")
    parser.add_argument("--profile", type=int, metavar="N", help="cProfile's top N functions")
    parser.add_argument("--smoke", action="store_true", help="one tiny run of each shape")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    print(
        f"bench/produce_path.py: data in {args.dir}; CPU (user + system) of the process "
        "and of the event-loop thread alone"
    )
    for name in args.shape:
        shape = SHAPES[name]
        runs = args.runs
        if args.smoke:
            shape = dataclasses.replace(shape, partitions=min(shape.partitions, 20), requests=5)
            runs = 1
        profile = cProfile.Profile() if args.profile else None
        costs = [measure(shape, args.dir, profile) for _ in range(runs)]
        counted = shape.requests - 1
        for what, seconds in (
            ("process", [c.process for c in costs]),
            ("loop", [c.loop for c in costs]),
        ):
            per_request = sorted(s / counted * 1e6 for s in seconds)
            per_partition = [us / shape.partitions for us in per_request]
            print(
                f"{shape.name:>10} ({shape.what}), {what:>7}: "
                f"{statistics.median(per_request):,.0f} us a request "
                f"({per_request[0]:,.0f}-{per_request[-1]:,.0f}), "
                f"{statistics.median(per_partition):,.1f} us a partition "
                f"({per_partition[0]:,.1f}-{per_partition[-1]:,.1f}), {runs} runs"
            )
        if profile is not None:
            pstats.Stats(profile).sort_stats("tottime").print_stats(args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
