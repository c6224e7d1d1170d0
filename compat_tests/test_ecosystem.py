"""Kafka's own ecosystem against the broker, from Maven Central's 4.3.1 jars:
Kafka Connect in distributed mode (FileStream connectors, a worker restart
resuming from its stored offsets) and MirrorMaker 2 (records mirrored in
order, a group's offsets checkpointed and translated to the mirrored topic).
Kafka Streams is in test_streams.py.

MirrorMaker 2 mirrors between two clusters; the suite gives each test one
broker, so both cluster aliases point at it: `a.<topic>` is the mirror of
`<topic>`, which exercises every request MirrorMaker makes of a cluster.
tests/clients/test_mirror_maker.py mirrors Gregor to Apache Kafka and back.
"""

from __future__ import annotations

import pytest
from compatlib.common import ck_consume, ck_watermarks
from compatlib.ecosystem import (
    ConnectWorker,
    log_tail,
    mirror_and_translate,
)

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"


def _lines(path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.client("java")
@pytest.mark.api("Kafka Connect", "groups", "compacted internal topics")
def test_kafka_connect_file_stream_through_a_worker_restart(bootstrap, topic, tmp_path):
    t = topic(partitions=1)
    source, sink = tmp_path / "source.txt", tmp_path / "sink.txt"
    source.write_text("".join(f"line {i}\n" for i in range(50)))
    worker = ConnectWorker(bootstrap, tmp_path)
    try:
        worker.start()
        worker.create("src", {"connector.class": FILE_SOURCE, "file": str(source), "topic": t})
        worker.create("sink", {"connector.class": FILE_SINK, "file": str(sink), "topics": t})
        worker.wait(lambda: _lines(sink) == _lines(source), "the sink file to equal the source")
        worker.stop()
        # More lines while the worker is down; after its restart, exactly those are added.
        with source.open("a") as f:
            f.write("".join(f"line {i}\n" for i in range(50, 80)))
        worker.start()
        worker.wait(lambda: len(_lines(sink)) >= 80, "the new lines in the sink")
        assert _lines(sink) == _lines(source), "the restarted worker repeated or lost lines"
        assert ck_watermarks(bootstrap, t) == (0, 80), "the source connector produced a line twice"
        assert [m.value() for m in ck_consume(bootstrap, t, count=80)] == [
            line.encode() for line in _lines(source)
        ]
    except BaseException:
        print(log_tail(worker.log))
        raise
    finally:
        worker.stop()


@pytest.mark.client("java")
@pytest.mark.api("MirrorMaker 2", "groups", "OffsetCommit")
def test_mirror_maker_2_mirrors_records_and_translates_group_offsets(bootstrap, topic, tmp_path):
    mirror_and_translate(bootstrap, bootstrap, topic(partitions=1), tmp_path)
