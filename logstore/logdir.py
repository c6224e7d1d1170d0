"""Files of a whole log directory (one entry of `log.dirs`).

Beside the partition directories Kafka keeps:

- `recovery-point-offset-checkpoint`: per partition, the offset below which
  the log is known to be flushed; recovery after a crash starts there;
- `log-start-offset-checkpoint`: per partition, the log start offset (it can
  lie inside the first segment after DeleteRecords);
- `replication-offset-checkpoint`: per partition, the high watermark;
- `cleaner-offset-checkpoint`: per compacted partition, the log cleaner's
  first dirty offset (written by cleaner_manager.LogCleaner);
- `.kafka_cleanshutdown`: present only between a clean shutdown and the next
  start; without it, every log is recovered from its recovery point.

The broker owns the sequence: at start `had_clean_shutdown()`, read the
checkpoints, open every partition with `UnifiedLog.open(...)`, then
`remove_clean_shutdown_marker()`; periodically (in a worker thread) flush and
write the checkpoints; at shutdown close every log, write the checkpoints,
then `write_clean_shutdown_marker()`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from logstore.checkpoint import read_offset_checkpoint, write_offset_checkpoint
from logstore.files import (
    CLEAN_SHUTDOWN_FILE,
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    fsync_dir,
    parse_partition_dir_name,
    partition_dir_name,
    unlink_quietly,
)

Offsets = dict[tuple[str, int], int]


def partition_path(log_dir: str, topic: str, partition: int) -> str:
    return os.path.join(log_dir, partition_dir_name(topic, partition))


def list_partitions(log_dir: str) -> list[tuple[str, int]]:
    """(topic, partition) of every partition directory in `log_dir`, sorted."""
    found = []
    for name in os.listdir(log_dir):
        parsed = parse_partition_dir_name(name)
        if parsed and os.path.isdir(os.path.join(log_dir, name)):
            found.append(parsed)
    return sorted(found)


def had_clean_shutdown(log_dir: str) -> bool:
    return os.path.exists(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))


def write_clean_shutdown_marker(log_dir: str, broker_epoch: int = -1) -> None:
    """Kafka's marker: a JSON object, fsynced (and its directory)."""
    path = os.path.join(log_dir, CLEAN_SHUTDOWN_FILE)
    payload = json.dumps({"version": "0", "broker_epoch": str(broker_epoch)}).encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, payload)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(log_dir)


def remove_clean_shutdown_marker(log_dir: str) -> None:
    if unlink_quietly(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE)):
        fsync_dir(log_dir)


def read_recovery_points(log_dir: str) -> Offsets:
    return read_offset_checkpoint(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT))


def write_recovery_points(log_dir: str, offsets: Mapping[tuple[str, int], int]) -> None:
    write_offset_checkpoint(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT), offsets)


def read_log_start_offsets(log_dir: str) -> Offsets:
    return read_offset_checkpoint(os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT))


def write_log_start_offsets(log_dir: str, offsets: Mapping[tuple[str, int], int]) -> None:
    write_offset_checkpoint(os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT), offsets)


def read_high_watermarks(log_dir: str) -> Offsets:
    return read_offset_checkpoint(os.path.join(log_dir, REPLICATION_OFFSET_CHECKPOINT))


def write_high_watermarks(log_dir: str, offsets: Mapping[tuple[str, int], int]) -> None:
    write_offset_checkpoint(os.path.join(log_dir, REPLICATION_OFFSET_CHECKPOINT), offsets)


def read_cleaner_offsets(log_dir: str) -> Offsets:
    return read_offset_checkpoint(os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT))


def write_cleaner_offsets(log_dir: str, offsets: Mapping[tuple[str, int], int]) -> None:
    write_offset_checkpoint(os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT), offsets)
