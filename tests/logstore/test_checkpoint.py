"""Kafka's checkpoint text files, partition.metadata and the log-dir files."""

from __future__ import annotations

import errno
import os
import resource
import uuid

import pytest

from logstore import logdir
from logstore.checkpoint import (
    EpochEntry,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
    write_leader_epoch_checkpoint,
    write_offset_checkpoint,
)
from logstore.errors import CorruptFileError
from logstore.files import parse_partition_dir_name
from logstore.partition_metadata import (
    read_partition_metadata,
    topic_id_from_string,
    topic_id_to_string,
    write_partition_metadata,
)


def test_offset_checkpoint_round_trips_in_kafka_text_format(tmp_path):
    path = os.fspath(tmp_path / "recovery-point-offset-checkpoint")
    offsets = {("orders", 0): 42, ("orders", 1): 0, ("__consumer_offsets", 12): 7}
    write_offset_checkpoint(path, offsets)
    with open(path) as f:
        assert f.read() == "0\n3\n__consumer_offsets 12 7\norders 0 42\norders 1 0\n"
    assert read_offset_checkpoint(path) == offsets


def test_offset_checkpoint_missing_file_reads_empty_and_empty_file_reads_empty(tmp_path):
    path = os.fspath(tmp_path / "log-start-offset-checkpoint")
    assert read_offset_checkpoint(path) == {}
    with pytest.raises(FileNotFoundError):
        read_offset_checkpoint(path, missing_ok=False)
    open(path, "w").close()
    assert read_offset_checkpoint(path) == {}


@pytest.mark.parametrize(
    "content, reason",
    [
        ("1\n0\n", "unrecognised version 1"),
        ("0\n2\nt 0 5\n", "expected 2 entries but found 1"),
        ("0\n1\nt 0\n", "malformed line 3"),
        ("0\n1\nt x 5\n", "malformed line 3"),
        ("zero\n", "malformed version"),
    ],
)
def test_malformed_offset_checkpoint_names_file_and_problem(tmp_path, content, reason):
    path = os.fspath(tmp_path / "replication-offset-checkpoint")
    with open(path, "w") as f:
        f.write(content)
    with pytest.raises(CorruptFileError) as e:
        read_offset_checkpoint(path)
    assert e.value.path == path and reason in e.value.reason


def test_checkpoint_write_replaces_file_atomically_and_leaves_no_tmp(tmp_path):
    path = os.fspath(tmp_path / "recovery-point-offset-checkpoint")
    write_offset_checkpoint(path, {("a", 0): 1})
    inode = os.stat(path).st_ino
    write_offset_checkpoint(path, {("a", 0): 2})
    # A rename, not an overwrite in place: readers see the old or the new file.
    assert os.stat(path).st_ino != inode
    assert read_offset_checkpoint(path) == {("a", 0): 2}
    assert os.listdir(tmp_path) == ["recovery-point-offset-checkpoint"]


def test_failed_atomic_write_keeps_the_previous_file(tmp_path):
    path = os.fspath(tmp_path / "recovery-point-offset-checkpoint")
    write_offset_checkpoint(path, {("a", 0): 1})
    many = {("topic", p): p for p in range(1000)}
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, hard))  # the kernel refuses bigger files
    try:
        with pytest.raises(OSError) as e:
            write_offset_checkpoint(path, many)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert e.value.errno == errno.EFBIG
    assert read_offset_checkpoint(path) == {("a", 0): 1}
    assert not os.path.exists(path + ".tmp")


def test_checkpoint_refuses_topic_names_with_spaces(tmp_path):
    with pytest.raises(ValueError):
        write_offset_checkpoint(os.fspath(tmp_path / "x"), {("bad topic", 0): 1})


def test_leader_epoch_checkpoint_round_trips(tmp_path):
    path = os.fspath(tmp_path / "leader-epoch-checkpoint")
    write_leader_epoch_checkpoint(path, [EpochEntry(0, 0), EpochEntry(3, 150)])
    with open(path) as f:
        assert f.read() == "0\n2\n0 0\n3 150\n"
    assert read_leader_epoch_checkpoint(path) == [(0, 0), (3, 150)]


def test_topic_id_string_is_kafka_base64url_without_padding():
    tid = uuid.UUID("e3f4c2a1-0b5d-4e6f-8a9b-1c2d3e4f5a6b")
    text = topic_id_to_string(tid)
    assert len(text) == 22 and "=" not in text
    assert text == "4_TCoQtdTm-KmxwtPk9aaw"
    assert topic_id_from_string(text) == tid
    with pytest.raises(ValueError):
        topic_id_from_string("short")


def test_partition_metadata_is_written_exactly_as_kafka_does(tmp_path):
    tid = uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF)
    write_partition_metadata(os.fspath(tmp_path), tid)
    with open(tmp_path / "partition.metadata", "rb") as f:
        assert f.read() == f"version: 0\ntopic_id: {topic_id_to_string(tid)}".encode()
    assert read_partition_metadata(os.fspath(tmp_path)) == tid


def test_partition_metadata_missing_is_none_and_corrupt_is_an_error(tmp_path):
    assert read_partition_metadata(os.fspath(tmp_path)) is None
    (tmp_path / "partition.metadata").write_text("version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    with pytest.raises(CorruptFileError):
        read_partition_metadata(os.fspath(tmp_path))
    (tmp_path / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    with pytest.raises(CorruptFileError, match="zero uuid"):
        read_partition_metadata(os.fspath(tmp_path))


def test_clean_shutdown_marker_lifecycle(tmp_path):
    d = os.fspath(tmp_path)
    assert not logdir.had_clean_shutdown(d)
    logdir.write_clean_shutdown_marker(d, broker_epoch=5)
    assert logdir.had_clean_shutdown(d)
    assert (tmp_path / ".kafka_cleanshutdown").read_text() == (
        '{"version": "0", "broker_epoch": "5"}'
    )
    logdir.remove_clean_shutdown_marker(d)
    assert not logdir.had_clean_shutdown(d)


def test_log_dir_lists_partition_directories_but_not_deleted_or_future_ones(tmp_path):
    for name in ["orders-0", "my-topic-12", "orders-1.abc123-delete", "x-3.def-future", "junk"]:
        (tmp_path / name).mkdir()
    (tmp_path / "file-7").write_text("")
    assert logdir.list_partitions(os.fspath(tmp_path)) == [("my-topic", 12), ("orders", 0)]
    assert parse_partition_dir_name("a-b-c-9") == ("a-b-c", 9)
    assert parse_partition_dir_name("nodash") is None


def test_log_dir_checkpoints_round_trip(tmp_path):
    d = os.fspath(tmp_path)
    logdir.write_recovery_points(d, {("t", 0): 10})
    logdir.write_log_start_offsets(d, {("t", 0): 3})
    logdir.write_high_watermarks(d, {("t", 0): 9})
    assert logdir.read_recovery_points(d) == {("t", 0): 10}
    assert logdir.read_log_start_offsets(d) == {("t", 0): 3}
    assert logdir.read_high_watermarks(d) == {("t", 0): 9}
    assert sorted(os.listdir(d)) == [
        "log-start-offset-checkpoint",
        "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint",
    ]
