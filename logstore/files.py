"""File names of Kafka's on-disk layout and small file-system helpers.

A partition lives in `<log dir>/<topic>-<partition>/`. Its segments are named
by their base offset, zero-padded to 20 digits: `00000000000000000000.log`,
`.index`, `.timeindex` (and Kafka's `.txnindex`, which Gregor does not write
yet), producer-state snapshots `%020d.snapshot`. Files in flight carry one more
suffix: `.deleted` (scheduled for deletion), `.cleaned` and `.swap`
(compaction), `.tmp` (an atomic write that did not finish).
"""

from __future__ import annotations

import os
import re

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
TMP_SUFFIX = ".tmp"

INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"

# Per log dir (beside the partition directories).
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"

_OFFSET_NAME = re.compile(r"^(\d{20})(\.[a-z]+)(\.[a-z]+)?$")


def file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def parse_file_name(name: str) -> tuple[int, str, str] | None:
    """`00000000000000000042.index.swap` -> (42, ".index", ".swap"); None for
    names that are not offset-named files."""
    m = _OFFSET_NAME.match(name)
    if m is None:
        return None
    return int(m.group(1)), m.group(2), m.group(3) or ""


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_dir_name(name: str) -> tuple[str, int] | None:
    """`my-topic-3` -> ("my-topic", 3); None for anything else (including
    Kafka's `-delete` and `-future` directories)."""
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isdigit() or "." in part:
        return None
    return topic, int(part)


def fsync_path(path: str) -> None:
    """fsync a file (or directory) by name. A file that no longer exists needs
    no flush and is skipped."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str) -> None:
    fsync_path(path)


def write_atomically(path: str, data: bytes, *, fsync: bool = True) -> None:
    """Replace `path` with `data`: write `path.tmp`, fsync it, rename it over
    `path`, fsync the directory. With fsync=False only the rename is atomic
    (readers see the old or the new file, never a mix); durability is then
    the caller's flush."""
    tmp = path + TMP_SUFFIX
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if fsync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    os.close(fd)
    os.replace(tmp, path)
    if fsync:
        fsync_dir(os.path.dirname(os.path.abspath(path)))


def unlink_quietly(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False
