"""Kafka's own DumpLogSegments tool reads Gregor's segment files.

Kafka's jars come from `make clients` (tools/kafka_jars.py); the test fails
loudly when they are missing, since `make test` installs them.
"""

from __future__ import annotations

import os
import re

import pytest

from logstore import LogConfig
from tools import kafka_cli

from .helpers import T0, FakeClock, batch, open_log


def dump(*paths: str, extra=()) -> str:
    kafka_cli.check_installed()
    out = kafka_cli.run_tool("kafka-dump-log", *extra, "--files", ",".join(paths), timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.slow
def test_dump_log_segments_reads_batches_indexes_and_snapshots(tmp_path):
    path = tmp_path / "orders-0"
    cfg = LogConfig(segment_bytes=6000, index_interval_bytes=300)
    log = open_log(path, cfg, FakeClock())
    expected = []
    for i in range(60):
        info = log.append(
            batch(
                3,
                timestamp=T0 + i,
                producer_id=7,
                producer_epoch=1,
                base_sequence=3 * i,
                compression=i % 5,
            ),
            2,
        )
        expected.append(
            (info.segment_base_offset, info.first_offset, info.last_offset, info.position)
        )
    log.close()
    first = log.segments[0]

    text = dump(first.log_path, extra=["--deep-iteration"])
    found = [
        (int(m[0]), int(m[1]), int(m[2]))
        for m in re.findall(r"baseOffset: (\d+) lastOffset: (\d+) .*? position: (\d+)", text)
    ]
    assert found == [(b, last, p) for s, b, last, p in expected if s == first.base_offset]
    assert text.count("isvalid: true") == len(found)
    assert "partitionLeaderEpoch: 2" in text and "producerId: 7 producerEpoch: 1" in text
    assert len(re.findall(r"\| offset: \d+ CreateTime:", text)) == 3 * len(found)

    text = dump(first.index_path)
    entries = [(int(o), int(p)) for o, p in re.findall(r"offset: (\d+) position: (\d+)", text)]
    reopened = open_log(path, cfg, FakeClock(), clean_shutdown=True)
    index = reopened.segments[0].offset_index
    assert entries == [tuple(index.entry(n)) for n in range(index.entries)]
    assert entries

    text = dump(first.time_index_path)
    stamps = [(int(t), int(o)) for t, o in re.findall(r"timestamp: (\d+) offset: (\d+)", text)]
    ti = reopened.segments[0].time_index
    assert stamps == [tuple(ti.entry(n)) for n in range(ti.entries)]

    # Kafka's own checks of the indexes against the log: silence means agreement.
    verify = dump(first.index_path, first.time_index_path, extra=["--verify-index-only"])
    assert verify.strip().splitlines() == [
        f"Dumping {first.index_path}",
        f"Dumping {first.time_index_path}",
    ]
    sanity = dump(first.index_path, first.time_index_path, extra=["--index-sanity-check"])
    assert sanity.count("passed sanity check") == 2

    snapshot = os.path.join(path, f"{reopened.log_end_offset:020d}.snapshot")
    text = dump(snapshot)
    rows = re.findall(
        r"producerId: 7 producerEpoch: 1 .*?lastSequence: (\d+) lastOffset: (\d+)", text
    )
    assert [(int(s), int(o)) for s, o in rows] == [(3 * i + 2, 3 * i + 2) for i in range(55, 60)]
