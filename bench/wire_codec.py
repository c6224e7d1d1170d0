"""Decode/encode time of representative messages, compiled and interpreted.

    make bench          # or: .venv/bin/python bench/wire_codec.py

Prints microseconds per operation for:
- a 1 MiB Produce request (v9) over 16 partitions of one topic,
- a Fetch response (v16) carrying 1 MiB of records over 16 partitions,
- a Metadata response (v12) for 1,000 partitions (10 topics x 100).
Records are opaque to these codecs, so their content does not matter; they
decode as views of the input and encode without being copied into the output.
"""

from __future__ import annotations

import os
import timeit
import uuid

from wire.api_keys import ApiKey
from wire.protocol import request_codec, response_codec

PARTITIONS = 16
RECORDS_PER_PARTITION = os.urandom(1024 * 1024 // PARTITIONS)


def produce_request() -> dict:
    return {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [
            {
                "name": "bench-topic",
                "partition_data": [
                    {"index": p, "records": RECORDS_PER_PARTITION} for p in range(PARTITIONS)
                ],
            }
        ],
    }


def fetch_response() -> dict:
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [
            {
                "topic_id": uuid.uuid4(),
                "partitions": [
                    {
                        "partition_index": p,
                        "error_code": 0,
                        "high_watermark": 1_000_000,
                        "last_stable_offset": 1_000_000,
                        "log_start_offset": 0,
                        "aborted_transactions": None,
                        "preferred_read_replica": -1,
                        "records": RECORDS_PER_PARTITION,
                    }
                    for p in range(PARTITIONS)
                ],
            }
        ],
    }


def metadata_response() -> dict:
    return {
        "throttle_time_ms": 0,
        "brokers": [
            {"node_id": n, "host": f"broker-{n}.local", "port": 9092, "rack": None}
            for n in range(3)
        ],
        "cluster_id": "gregor-bench-cluster",
        "controller_id": 0,
        "topics": [
            {
                "error_code": 0,
                "name": f"topic-{t}",
                "topic_id": uuid.uuid4(),
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": p,
                        "leader_id": p % 3,
                        "leader_epoch": 5,
                        "replica_nodes": [0, 1, 2],
                        "isr_nodes": [0, 1, 2],
                        "offline_replicas": [],
                    }
                    for p in range(100)
                ],
                "topic_authorized_operations": -2147483648,
            }
            for t in range(10)
        ],
    }


CASES = [
    (
        "Produce request v9, 1 MiB / 16 partitions",
        lambda c: request_codec(ApiKey.PRODUCE, 9, c),
        produce_request,
    ),
    (
        "Fetch response v16, 1 MiB / 16 partitions",
        lambda c: response_codec(ApiKey.FETCH, 16, c),
        fetch_response,
    ),
    (
        "Metadata response v12, 1,000 partitions",
        lambda c: response_codec(ApiKey.METADATA, 12, c),
        metadata_response,
    ),
]


def per_op_us(fn) -> float:
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    best = min(timer.repeat(repeat=5, number=number))
    return best / number * 1e6


def main() -> None:
    print(f"{'message':45} {'form':12} {'decode µs':>12} {'encode µs':>12} {'bytes':>10}")
    for label, codec_for, make in CASES:
        value = make()
        for compiled in (True, False):
            codec = codec_for(compiled)
            data = codec.encode(value)
            decode = per_op_us(lambda codec=codec, data=data: codec.decode(data))
            encode = per_op_us(
                lambda codec=codec, value=value: codec.write(
                    __import__("wire.buffers").buffers.Writer(), value
                )
            )
            form = "compiled" if compiled else "interpreted"
            print(f"{label:45} {form:12} {decode:12.1f} {encode:12.1f} {len(data):10d}")


if __name__ == "__main__":
    main()
