"""A full disk: KAFKA_STORAGE_ERROR for the partitions on it, everything else keeps serving.

The main test mounts a REAL tiny tmpfs as the second of two `log.dirs` (it
needs root: mount(2)), places one partition on each dir, fills the tmpfs
and checks what Kafka promises: Produce to the partition on the full dir
answers KAFKA_STORAGE_ERROR (56), the other dir's partitions, Metadata,
Fetch and a real producer carry on, every acknowledged record stays readable
(also after a restart), and once space is freed the partition takes
appends again.

tmpfs never fails an fsync, so the failed-fsync path (the logstore takes the
log offline, LogOfflineError) is tested in-process with an injected EIO.
"""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import time
from pathlib import Path

import pytest
import trio
from confluent_kafka import Producer

import logstore.local_log
import logstore.unified_log
from broker.config import BrokerConfig
from broker.server import Broker
from logstore.logdir import had_clean_shutdown
from tests.support.gregor import GregorNode, assert_no_traceback
from tests.support.raw import (
    Closed,
    RawClient,
    assert_serves_requests,
    batch,
    fetch_body,
    fetch_values,
    latest_offset,
    produce,
)
from tests.support.topics import ensure_topic
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

# Slow (tmpfs mounts, broker restarts on a full disk): make unit leaves the module out.
pytestmark = pytest.mark.slow

TINY_SIZE = "4m"
BATCH_RECORDS = 16
RECORD_BYTES = 1000


@pytest.fixture
def tiny_disk(tmp_path):
    """A 4 MiB tmpfs mounted for the test; unmounted afterwards, whatever happens."""
    if os.geteuid() != 0:
        pytest.skip(
            "!!! NOT ROOT: THE REAL FULL-DISK TEST IS SKIPPED. It mounts a tiny tmpfs as a "
            "log dir and needs root (mount -t tmpfs). Run it as root to test a full disk. !!!"
        )
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TINY_SIZE}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        pytest.skip(
            "!!! CANNOT MOUNT A TMPFS (no CAP_SYS_ADMIN in this container?): THE REAL "
            f"FULL-DISK TEST IS SKIPPED: {result.stderr.strip()} !!!"
        )
    try:
        yield mount_point
    finally:
        for args in (["umount", str(mount_point)], ["umount", "-l", str(mount_point)]):
            if subprocess.run(args, capture_output=True).returncode == 0:
                break


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill(path: Path, leave: int, name: str = "filler") -> Path:
    """A filler file that leaves about `leave` bytes free on the file system
    (with leave=0: until the file system refuses another byte)."""
    filler = path / name
    with open(filler, "wb", buffering=0) as f:
        try:
            f.write(b"\0" * max(free_bytes(path) - leave, 0))
            while leave == 0:
                f.write(b"\0" * 4096)
        except OSError as e:
            if leave != 0 or e.errno != errno.ENOSPC:
                raise
    return filler


def values_of(n: int, tag: str) -> list[bytes]:
    return [f"{tag}-{i}-".encode().ljust(RECORD_BYTES, b"x") for i in range(n)]


def assert_confluent_producer_works(port: int, topic: str) -> None:
    """confluent-kafka appends to `topic`; its records read back.

    (No confluent Consumer here: it needs a group.id, and librdkafka then looks
    for a group coordinator, which may create __consumer_offsets partitions on
    the full dir: test_topic_created_on_a_full_log_dir.)"""
    mine = [f"confluent-{time.monotonic_ns()}-{i}".encode() for i in range(3)]
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "enable.idempotence": True})
    for value in mine:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(15) == 0
    with RawClient(port) as client:
        assert fetch_values(client, topic)[-3:] == mine


def test_full_log_dir_gives_storage_error_and_the_rest_keeps_serving(tmp_path, tiny_disk):
    roomy_dir = tmp_path / "roomy"
    broker = GregorNode(tmp_path / "unused", {"log.dirs": f"{roomy_dir},{tiny_disk}"})
    broker.start()
    try:
        with RawClient(broker.port) as client:
            # New partitions go to the dir with the fewest, the first on a tie.
            ensure_topic(client, "roomy")
            ensure_topic(client, "cramped")
            assert (roomy_dir / "roomy-0").is_dir()
            assert (tiny_disk / "cramped-0").is_dir()

            acked = {"roomy": [], "cramped": []}

            def append(topic: str, values: list[bytes]):
                r = produce(client, topic, batch(values))
                if r.error_code == ErrorCode.NONE:
                    assert r.base_offset == len(acked[topic])
                    acked[topic] += values
                return r

            for topic in acked:
                assert append(topic, values_of(5, f"{topic}-before")).error_code == 0

            # Fill the tmpfs by producing, after a filler took most of it.
            filler = fill(tiny_disk, leave=300_000)
            failure = None
            for i in range(200):
                r = append("cramped", values_of(BATCH_RECORDS, f"fill{i}"))
                if r.error_code != ErrorCode.NONE:
                    failure = r
                    break
            assert failure is not None, "the tmpfs never filled up"
            assert failure.error_code == ErrorCode.KAFKA_STORAGE_ERROR, failure
            assert "No space left on device" in failure.error_message
            assert len(acked["cramped"]) > 5, "nothing was appended before the disk filled"
            # Whatever no longer fits keeps failing the same way, and never half-appends.
            for _ in range(3):
                r = append("cramped", values_of(BATCH_RECORDS, "still-full"))
                assert r.error_code == ErrorCode.KAFKA_STORAGE_ERROR, r
            assert latest_offset(client, "cramped") == len(acked["cramped"])
            assert fetch_values(client, "cramped") == acked["cramped"]

            # The other dir, Metadata, Fetch and a real client carry on.
            for i in range(5):
                assert append("roomy", values_of(BATCH_RECORDS, f"roomy{i}")).error_code == 0
            assert fetch_values(client, "roomy") == acked["roomy"]
        assert_serves_requests(broker.port)
        assert_confluent_producer_works(broker.port, "roomy")

        # Space comes back: the partition takes appends again.
        filler.unlink()
        with RawClient(broker.port) as client:
            r = append("cramped", values_of(BATCH_RECORDS, "after-free"))
            assert r.error_code == ErrorCode.NONE, (
                f"no recovery after freeing space: {r}\n{broker.log()}"
            )
            assert fetch_values(client, "cramped") == acked["cramped"]
            for topic in acked:
                acked[topic] = fetch_values(client, topic)  # with the confluent records

        assert broker.stop() == 0, broker.log()
        assert "No space left on device" in broker.log()
        assert_no_traceback(broker)

        # Nothing acknowledged is lost across a restart either.
        broker.start()
        with RawClient(broker.port) as client:
            for topic, values in acked.items():
                assert fetch_values(client, topic) == values
            assert produce(client, "cramped", batch([b"restarted"])).error_code == 0
        assert broker.stop() == 0, broker.log()
        assert_no_traceback(broker)
    finally:
        broker.kill()


def test_topic_created_on_a_full_log_dir(tmp_path, tiny_disk):
    roomy_dir = tmp_path / "roomy"
    broker = GregorNode(tmp_path / "unused", {"log.dirs": f"{roomy_dir},{tiny_disk}"})
    broker.start()
    try:
        with RawClient(broker.port) as client:
            ensure_topic(client, "first")  # roomy holds one partition, the tmpfs none
        filler = fill(tiny_disk, leave=0)
        with RawClient(broker.port) as client:
            try:
                response = client.call(
                    ApiKey.METADATA,
                    12,
                    {"topics": [{"name": "late"}], "allow_auto_topic_creation": True},
                )
            except Closed:
                pytest.fail("Metadata closed the connection when the new log could not be made")
            (topic,) = response.topics
            # Kafka marks the partition offline (its log dir failed) rather than
            # pretending it has a leader.
            assert topic.error_code != ErrorCode.NONE or topic.partitions[0].error_code != 0
        filler.unlink()
        with RawClient(broker.port) as client:
            ensure_topic(client, "late")
            r = produce(client, "late", batch([b"v"]))
            assert r.error_code in (ErrorCode.NONE, ErrorCode.KAFKA_STORAGE_ERROR), r
    finally:
        broker.stop()


def test_stop_and_restart_with_a_full_log_dir_loses_nothing(tmp_path, tiny_disk):
    """SIGTERM while a log dir is full to the last byte, then a restart: every
    acknowledged record is there."""
    roomy_dir = tmp_path / "roomy"
    broker = GregorNode(tmp_path / "unused", {"log.dirs": f"{roomy_dir},{tiny_disk}"})
    broker.start()
    try:
        acked = {"roomy": [], "cramped": []}
        with RawClient(broker.port) as client:
            for topic in acked:
                ensure_topic(client, topic)
            fill(tiny_disk, leave=100_000)
            for i in range(100):
                values = values_of(BATCH_RECORDS, f"b{i}")
                r = produce(client, "cramped", batch(values))
                if r.error_code != ErrorCode.NONE:
                    break
                acked["cramped"] += values
                assert produce(client, "roomy", batch(values)).error_code == 0
                acked["roomy"] += values
            assert r.error_code == ErrorCode.KAFKA_STORAGE_ERROR, r
            fill(tiny_disk, leave=0, name="last-bytes")
        # A graceful stop with a full log dir is still graceful: the clean-shutdown
        # marker's OSError must not escape (the next start would be an unclean one).
        code = broker.stop()
        assert code == 0, broker.log()[-2000:]
        # The restart on the still-full tmpfs reads the indexes: one read through
        # mmap of a preallocated, untrimmed sparse index would die of SIGBUS there.
        broker.start()
        with RawClient(broker.port) as client:
            for topic, values in acked.items():
                assert fetch_values(client, topic) == values
        assert broker.proc.poll() is None, broker.log()[-2000:]
        broker.stop()
    finally:
        broker.kill()


# --- a failed fsync (injected: tmpfs cannot fail one) ---------------------------------


# The periodic flusher fsyncs every log with unflushed data every 50 ms.
FLUSH_EVERY_50_MS = {"log.flush.interval.ms": 50, "log.flush.scheduler.interval.ms": 50}


def _run_in_process_broker(tmp_path, monkeypatch, scenario, flush_policy=FLUSH_EVERY_50_MS):
    """Run `scenario(broker, port, failing_dirs)` in a thread beside an in-process
    broker with `flush_policy`; paths under `failing_dirs` fail their fsync with
    EIO. Returns the scenario's result and the data dir."""
    data = tmp_path / "data"
    config = BrokerConfig.load(
        None,
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(data),
            "node.id": 1,
            **flush_policy,
        },
    )
    failing_dirs: set[str] = set()
    real_fsync = logstore.local_log.fsync_path

    def fsync_path(path):
        if any(str(path).startswith(d) for d in failing_dirs):
            raise OSError(errno.EIO, "Input/output error (injected)", path)
        return real_fsync(path)

    # Segments are fsynced by the LocalLog, partition.metadata by the UnifiedLog.
    monkeypatch.setattr(logstore.local_log, "fsync_path", fsync_path)
    monkeypatch.setattr(logstore.unified_log, "fsync_path", fsync_path)
    result = []

    async def main():
        async with trio.open_nursery() as nursery:
            broker = await nursery.start(Broker(config).serve)
            port = broker.bound[0][2]
            try:
                result.append(await trio.to_thread.run_sync(scenario, broker, port, failing_dirs))
            finally:
                await broker.stop()

    trio.run(main)
    return result[0], data


def _wait(predicate, timeout=5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def _offline_scenario(broker, port, failing_dirs):
    seen = {}
    with RawClient(port) as client:
        # "doomed" first: the flusher meets it before "healthy".
        ensure_topic(client, "doomed")
        ensure_topic(client, "healthy")
        doomed = broker.replicas.get("doomed", 0)
        healthy = broker.replicas.get("healthy", 0)
        for topic in ("doomed", "healthy"):
            assert produce(client, topic, batch([b"flushed"])).error_code == 0
        assert _wait(lambda: doomed.log.recovery_point == 1 and healthy.log.recovery_point == 1)
        # Asked before the failure too: Metadata's kept answer must not outlive it.
        seen["doomed metadata before"] = _metadata_partition_error(client, "doomed")

        failing_dirs.add(doomed.log.dir)
        # Acknowledged on append (acks=1 does not wait for the fsync, as in Kafka).
        assert produce(client, "doomed", batch([b"unflushed"])).error_code == 0
        assert _wait(
            lambda: (
                produce(client, "doomed", batch([b"probe"])).error_code
                == ErrorCode.KAFKA_STORAGE_ERROR
            )
        ), "the log did not go offline after a failed fsync"
        seen["doomed produce"] = produce(client, "doomed", batch([b"x"])).error_code
        seen["doomed list offsets"] = _list_offsets_error(client, "doomed")
        seen["doomed metadata"] = _metadata_partition_error(client, "doomed")
        seen["doomed fetch"] = _fetch_error(client, "doomed")

        r = produce(client, "healthy", batch([b"after"]))
        seen["healthy produce"] = r.error_code
        seen["healthy fetch"] = fetch_values(client, "healthy")
        seen["healthy flushed"] = _wait(lambda: healthy.log.recovery_point == 2, timeout=2)
    assert_serves_requests(port)
    return seen


def _flush_inside_append_scenario(broker, port, failing_dirs):
    seen = {}
    with RawClient(port) as client:
        ensure_topic(client, "synced")
        ensure_topic(client, "bystander")
        synced = broker.replicas.get("synced", 0)
        seen["first produce"] = produce(client, "synced", batch([b"one", b"two"])).error_code
        # No periodic flusher runs: only the append itself can have fsynced.
        seen["recovery point when answered"] = synced.log.recovery_point
        failing_dirs.add(synced.log.dir)
        seen["produce on a failing disk"] = produce(client, "synced", batch([b"x"])).error_code
        seen["bystander produce"] = produce(client, "bystander", batch([b"b"])).error_code
        seen["bystander fetch"] = fetch_values(client, "bystander")
    assert_serves_requests(port)
    return seen


def test_flush_messages_fsyncs_inside_the_append_before_answering(tmp_path, monkeypatch):
    """log.flush.interval.messages=1 alone (the flusher never runs): as in Kafka,
    the append fsyncs before the producer is answered, and a failing fsync is
    that produce's KAFKA_STORAGE_ERROR."""
    seen, _ = _run_in_process_broker(
        tmp_path,
        monkeypatch,
        _flush_inside_append_scenario,
        flush_policy={"log.flush.interval.messages": 1},
    )
    assert seen["first produce"] == ErrorCode.NONE
    assert seen["recovery point when answered"] == 2
    assert seen["produce on a failing disk"] == ErrorCode.KAFKA_STORAGE_ERROR
    assert seen["bystander produce"] == ErrorCode.NONE
    assert seen["bystander fetch"] == [b"b"]


def _commit(client, group, topic, offset):
    body = {
        "group_id": group,
        "member_id": "",
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": 0, "committed_offset": offset, "committed_metadata": ""}
                ],
            }
        ],
    }
    response = client.call(ApiKey.OFFSET_COMMIT, 8, body)
    return response.topics[0].partitions[0].error_code


def _commit_once_loaded(client, group, topic, offset):
    """Commit as a client does: FindCoordinator answers as soon as the
    offsets partition has a leader, and until the group coordinator has
    loaded it a commit is COORDINATOR_LOAD_IN_PROGRESS, which clients retry."""
    codes = []
    _wait(
        lambda: (
            codes.append(_commit(client, group, topic, offset))
            or codes[-1] != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        )
    )
    return codes[-1]


def _group_flush_scenario(broker, port, failing_dirs):
    seen = {}
    with RawClient(port) as client:
        ensure_topic(client, "committed")
        # The first FindCoordinator creates __consumer_offsets and loads it.
        assert _wait(
            lambda: (
                client.call(ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 0}).error_code
                == ErrorCode.NONE
            )
        )
        offsets = broker.replicas.get("__consumer_offsets", 0)
        seen["commit"] = _commit_once_loaded(client, "g", "committed", 5)
        # No periodic flusher runs: only the commit's own append can have fsynced.
        seen["offsets log unflushed when answered"] = offsets.log.unflushed_messages
        failing_dirs.add(offsets.log.dir)
        seen["commit on a failing disk"] = _commit(client, "g", "committed", 6)
        fetched = client.call(
            ApiKey.OFFSET_FETCH,
            7,
            {"group_id": "g", "topics": [{"name": "committed", "partition_indexes": [0]}]},
        )
        seen["offset fetched"] = fetched.topics[0].partitions[0].committed_offset
        seen["bystander produce"] = produce(client, "committed", batch([b"b"])).error_code
    assert_serves_requests(port)
    return seen


def test_flush_messages_fsyncs_a_group_commit_before_answering(tmp_path, monkeypatch):
    """log.flush.interval.messages=1 applies to __consumer_offsets too: the
    commit is fsynced before it is answered, and a failing fsync fails the
    commit (NOT_COORDINATOR, Kafka 4's answer for a storage error of the
    coordinator's log) without recording it."""
    seen, _ = _run_in_process_broker(
        tmp_path,
        monkeypatch,
        _group_flush_scenario,
        flush_policy={"log.flush.interval.messages": 1, "offsets.topic.num.partitions": 1},
    )
    assert seen == {
        "commit": ErrorCode.NONE,
        "offsets log unflushed when answered": 0,
        "commit on a failing disk": ErrorCode.NOT_COORDINATOR,
        "offset fetched": 5,
        "bystander produce": ErrorCode.NONE,
    }


def _list_offsets_error(client, topic):
    response = client.call(
        ApiKey.LIST_OFFSETS,
        7,
        {"topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]},
    )
    return response.topics[0].partitions[0].error_code


def _fetch_error(client, topic):
    response = client.call(ApiKey.FETCH, 12, fetch_body(topic))
    return response.responses[0].partitions[0].error_code


def _metadata_partition_error(client, topic):
    response = client.call(ApiKey.METADATA, 12, {"topics": [{"name": topic}]})
    return response.topics[0].partitions[0].error_code


def test_failed_fsync_takes_only_that_log_offline(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.INFO)
    seen, _ = _run_in_process_broker(tmp_path, monkeypatch, _offline_scenario)
    assert seen["doomed produce"] == ErrorCode.KAFKA_STORAGE_ERROR
    assert seen["doomed fetch"] == ErrorCode.KAFKA_STORAGE_ERROR
    assert seen["healthy produce"] == ErrorCode.NONE
    assert seen["healthy fetch"] == [b"flushed", b"after"]
    assert "stopped: logs flushed and checkpointed" in caplog.text


def test_failed_fsync_does_not_stop_flushing_the_other_logs(tmp_path, monkeypatch):
    seen, _ = _run_in_process_broker(tmp_path, monkeypatch, _offline_scenario)
    assert seen["healthy flushed"]


def test_offline_log_is_reported_by_metadata_and_list_offsets(tmp_path, monkeypatch):
    seen, _ = _run_in_process_broker(tmp_path, monkeypatch, _offline_scenario)
    assert seen["doomed list offsets"] == ErrorCode.KAFKA_STORAGE_ERROR
    assert seen["doomed metadata before"] == ErrorCode.NONE
    assert seen["doomed metadata"] == ErrorCode.KAFKA_STORAGE_ERROR


def test_offline_log_dir_is_recovered_at_the_next_start(tmp_path, monkeypatch):
    _, data = _run_in_process_broker(tmp_path, monkeypatch, _offline_scenario)
    assert not had_clean_shutdown(str(data))
