"""One partition's durable commit log, in Kafka's own on-disk layout.

    log = UnifiedLog.open("/data/my-topic-0", LogConfig(), recovery_point=..., ...)
    info = log.append(records, leader_epoch=3)        # leader: assigns offsets
    result = log.read(offset, max_bytes, log.fetch_upper_bound(FetchIsolation.HIGH_WATERMARK))
    os.sendfile(sock, result.fd, result.position, result.size)
    await trio.to_thread.run_sync(log.flush)           # fsync off the event loop

Modules: `unified_log` (the UnifiedLog, the log the broker uses), `local_log`
(its segments: append, roll, read, truncate, fsync), `segment` (one .log file
and its indexes), `index` (offset and time indexes), `epoch_cache` (leader
epochs), `producer_state` (idempotent producers and their snapshots),
`transaction_index` (aborted transactions per segment), `recovery` (opening a directory), `checkpoint` / `partition_metadata` /
`logdir` (Kafka's small text files), `config`, `errors`, `results`;
compaction: `cleanable` (what may be cleaned), `cleaner` (cleaning one log),
`cleaner_manager` (choosing the log, checkpoint); `log_validator` (Kafka's
checks of a producer's batch before it is appended).
"""

from logstore.checkpoint import (
    EpochEntry,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
    write_leader_epoch_checkpoint,
    write_offset_checkpoint,
)
from logstore.cleaner_manager import CleanerCandidate, LogCleaner
from logstore.config import LogConfig
from logstore.epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochCache
from logstore.errors import (
    ControlBatchFromClient,
    CorruptFileError,
    InconsistentTopicId,
    InvalidProducerEpoch,
    InvalidRecords,
    InvalidTxnState,
    LogClosedError,
    LogError,
    LogOfflineError,
    LogStorageError,
    OffsetOutOfRange,
    OutOfOrderSequence,
    RecordBatchTooLarge,
    TransactionCoordinatorFenced,
    UnexpectedAppendOffset,
)
from logstore.log_validator import (
    RecordsError,
    TopicLimits,
    check_single_batch,
    first_batch_is_transactional,
    validate_records,
)
from logstore.partition_metadata import (
    read_partition_metadata,
    topic_id_from_string,
    topic_id_to_string,
    write_partition_metadata,
)
from logstore.producer_state import AppendOrigin, CompletedTxn
from logstore.results import AppendInfo, ReadResult, TimestampAndOffset
from logstore.transaction_index import AbortedTxn
from logstore.unified_log import FetchIsolation, UnifiedLog

__all__ = [
    "CleanerCandidate",
    "LogCleaner",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "AbortedTxn",
    "AppendInfo",
    "AppendOrigin",
    "CompletedTxn",
    "ControlBatchFromClient",
    "CorruptFileError",
    "EpochEntry",
    "FetchIsolation",
    "InconsistentTopicId",
    "InvalidProducerEpoch",
    "InvalidRecords",
    "InvalidTxnState",
    "LeaderEpochCache",
    "LogClosedError",
    "LogConfig",
    "LogError",
    "LogOfflineError",
    "LogStorageError",
    "OffsetOutOfRange",
    "OutOfOrderSequence",
    "ReadResult",
    "RecordBatchTooLarge",
    "RecordsError",
    "TimestampAndOffset",
    "TopicLimits",
    "TransactionCoordinatorFenced",
    "UnexpectedAppendOffset",
    "UnifiedLog",
    "check_single_batch",
    "first_batch_is_transactional",
    "read_leader_epoch_checkpoint",
    "read_offset_checkpoint",
    "read_partition_metadata",
    "topic_id_from_string",
    "topic_id_to_string",
    "validate_records",
    "write_leader_epoch_checkpoint",
    "write_offset_checkpoint",
    "write_partition_metadata",
]
