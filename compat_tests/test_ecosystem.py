"""Kafka's own ecosystem against the broker, from Maven Central's 4.3.1 jars:
Kafka Connect in distributed mode (FileStream connectors, a worker restart
resuming from its stored offsets) and MirrorMaker 2 (records mirrored in
order, a group's offsets checkpointed and translated to the mirrored topic).
Kafka Streams is in test_streams.py.

MirrorMaker 2 mirrors between two clusters; the suite gives each test one
broker, so both cluster aliases point at it: `a.<topic>` is the mirror of
`<topic>`, which exercises every request MirrorMaker makes of a cluster.
"""

from __future__ import annotations

import pytest
from compatlib import java
from compatlib.common import ck_consume, ck_produce, ck_watermarks, unique
from compatlib.ecosystem import (
    DEADLINE,
    ConnectWorker,
    decode_checkpoint,
    log_tail,
    start_jvm,
    wait_for,
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
def test_mirror_maker_2_mirrors_records_and_translates_group_offsets(
    bootstrap, topic, admin, tmp_path
):
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition

    t = topic(partitions=1)
    mirror = f"a.{t}"
    ck_produce(bootstrap, t, [{"value": b"m%d" % i} for i in range(100)])
    group = unique("mm2-group")
    # The group consumed (and committed) the first 60 records of the source.
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(t, 0, 60)], asynchronous=False)
    c.close()
    props = java.properties_file(
        {
            "clusters": "a, b",
            "a.bootstrap.servers": bootstrap,
            "b.bootstrap.servers": bootstrap,
            "a->b.enabled": "true",
            "a->b.topics": t,
            "a->b.groups": group,
            "b->a.enabled": "false",
            "replication.factor": 1,
            "checkpoints.topic.replication.factor": 1,
            "heartbeats.topic.replication.factor": 1,
            "offset-syncs.topic.replication.factor": 1,
            "offset.storage.replication.factor": 1,
            "status.storage.replication.factor": 1,
            "config.storage.replication.factor": 1,
            "sync.topic.configs.enabled": "false",
            "sync.topic.acls.enabled": "false",
            "emit.checkpoints.interval.seconds": 1,
            "sync.group.offsets.enabled": "true",
            "sync.group.offsets.interval.seconds": 1,
            "offset.lag.max": 0,
            "refresh.topics.interval.seconds": 1,
            "refresh.groups.interval.seconds": 1,
        },
        tmp_path,
    )
    log = tmp_path / "mm2.log"
    mm2 = start_jvm("org.apache.kafka.connect.mirror.MirrorMaker", props, log=log)
    try:
        wait_for(lambda: mirror in admin.list_topics(timeout=5).topics, "the mirrored topic", mm2)
        got = [m.value() for m in ck_consume(bootstrap, mirror, count=100, timeout=DEADLINE)]
        assert got == [b"m%d" % i for i in range(100)]

        def checkpoints():
            _, end = ck_watermarks(bootstrap, "a.checkpoints.internal")
            records = ck_consume(bootstrap, "a.checkpoints.internal", count=end)
            found = [decode_checkpoint(m.key(), m.value()) for m in records]
            return [cp for cp in found if cp.group == group]

        def translated():
            request = ConsumerGroupTopicPartitions(group, [TopicPartition(mirror, 0)])
            offsets = admin.list_consumer_group_offsets([request])[group].result(10)
            return [tp.offset for tp in offsets.topic_partitions if tp.offset >= 0]

        # MirrorMaker translates conservatively, from the sparse offset syncs
        # it wrote: never past the group's real position (that would skip
        # records), at least past the first sync.
        [offset] = wait_for(translated, "the group's offsets on the mirrored topic", mm2)
        assert 1 <= offset <= 60
        # The checkpoint it synced them from: the group's position upstream
        # and the same translation.
        found = wait_for(checkpoints, "a checkpoint of the group", mm2)
        assert {(cp.topic, cp.partition, cp.upstream_offset) for cp in found} == {(mirror, 0, 60)}
        assert offset in {cp.downstream_offset for cp in found}
    except BaseException:
        print(log_tail(log))
        raise
    finally:
        java.stop(mm2, timeout=30)
