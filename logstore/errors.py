"""The exceptions `logstore` raises.

Every error is a `LogError` and names the offending values as attributes, so
the broker can answer with the right Kafka error code (`error_code`, the
numeric code of Kafka's protocol) and a message without parsing strings.
"""

from __future__ import annotations

import functools

# Kafka protocol error codes used below (see wire/error_codes.py for the table).
UNKNOWN_SERVER_ERROR = -1
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
RECORD_LIST_TOO_LARGE = 18
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
TRANSACTION_COORDINATOR_FENCED = 52
KAFKA_STORAGE_ERROR = 56
INVALID_RECORD = 87
INCONSISTENT_TOPIC_ID = 103


class LogError(Exception):
    """Base class of every error raised by `logstore`."""

    error_code: int = UNKNOWN_SERVER_ERROR


class LogStorageError(LogError):
    """The file system failed (ENOSPC, EIO, ...) or the log is offline after an
    earlier failure it could not undo. `cause` is the OSError, `path` the file."""

    error_code = KAFKA_STORAGE_ERROR

    def __init__(self, operation: str, path: str | None, cause: BaseException | None):
        self.operation = operation
        self.path = path
        self.cause = cause
        self.errno = getattr(cause, "errno", None)
        where = f" on {path}" if path else ""
        super().__init__(f"{operation} failed{where}: {cause}")


def storage_errors(method):
    """Turn an OSError escaping `method` (of an object with a `dir`) into
    LogStorageError naming the operation and the log directory."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except OSError as e:
            raise LogStorageError(method.__name__, self.dir, e) from e

    return wrapper


class LogOfflineError(LogStorageError):
    """An earlier storage failure left the log in a state it could not repair;
    every later operation raises this until the log is reopened."""

    def __init__(self, dir: str, cause: BaseException | None):
        super().__init__("log is offline after a storage failure", dir, cause)


class LogClosedError(LogError):
    """The log was closed (or deleted); the broker must not use it any more."""

    error_code = KAFKA_STORAGE_ERROR

    def __init__(self, dir: str):
        self.dir = dir
        super().__init__(f"log {dir} is closed")


class OffsetOutOfRange(LogError):
    """A read or lookup asked for an offset outside [log_start, log_end]."""

    error_code = OFFSET_OUT_OF_RANGE

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int, what: str = "read"):
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset
        super().__init__(
            f"{what} at offset {offset} is outside the log [{log_start_offset}, {log_end_offset}]"
        )


class InvalidRecords(LogError):
    """Bytes handed to an append are not a sequence of whole v2 record batches
    with increasing offsets (or fail their CRC on the follower path)."""

    error_code = CORRUPT_MESSAGE

    def __init__(self, reason: str, position: int | None = None):
        self.reason = reason
        self.position = position
        at = f" at byte {position}" if position is not None else ""
        super().__init__(f"invalid records{at}: {reason}")


class RecordBatchTooLarge(LogError):
    """One append (or one batch on the follower path) is larger than a segment."""

    error_code = RECORD_LIST_TOO_LARGE

    def __init__(self, size: int, segment_bytes: int):
        self.size = size
        self.segment_bytes = segment_bytes
        super().__init__(f"{size} bytes of records do not fit a segment of {segment_bytes} bytes")


class UnexpectedAppendOffset(LogError):
    """A follower append starts below the log end offset."""

    def __init__(self, first_offset: int, log_end_offset: int):
        self.first_offset = first_offset
        self.log_end_offset = log_end_offset
        super().__init__(
            f"follower append starts at offset {first_offset}, "
            f"below the log end offset {log_end_offset}"
        )


class OutOfOrderSequence(LogError):
    """An idempotent producer's batch does not continue its sequence."""

    error_code = OUT_OF_ORDER_SEQUENCE_NUMBER

    def __init__(
        self, producer_id: int, producer_epoch: int, first_sequence: int, last_sequence: int | None
    ):
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.first_sequence = first_sequence
        # The last sequence appended for this producer and epoch; None when the
        # batch starts a new epoch with a sequence other than 0.
        self.last_sequence = last_sequence
        if last_sequence is None:
            why = "a new epoch must start at sequence 0"
        else:
            why = f"expected sequence {(last_sequence + 1) & 0x7FFFFFFF}"
        super().__init__(
            f"producer {producer_id} epoch {producer_epoch} sent sequence {first_sequence}: {why}"
        )


class InvalidProducerEpoch(LogError):
    """A batch carries an epoch older than the producer's current one."""

    error_code = INVALID_PRODUCER_EPOCH

    def __init__(self, producer_id: int, producer_epoch: int, current_epoch: int):
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.current_epoch = current_epoch
        super().__init__(
            f"producer {producer_id} sent epoch {producer_epoch}, "
            f"older than its current epoch {current_epoch}"
        )


class InvalidTxnState(LogError):
    """A producer with an open transaction sent a non-transactional batch."""

    error_code = INVALID_TXN_STATE

    def __init__(self, producer_id: int, offset: int, txn_first_offset: int):
        self.producer_id = producer_id
        self.offset = offset
        self.txn_first_offset = txn_first_offset
        super().__init__(
            f"producer {producer_id} sent a non-transactional batch at offset {offset} "
            f"inside its transaction opened at offset {txn_first_offset}"
        )


class TransactionCoordinatorFenced(LogError):
    """A transaction marker from a coordinator older than the last one seen
    for the producer (a zombie coordinator)."""

    error_code = TRANSACTION_COORDINATOR_FENCED

    def __init__(self, producer_id: int, coordinator_epoch: int, current_epoch: int):
        self.producer_id = producer_id
        self.coordinator_epoch = coordinator_epoch
        self.current_epoch = current_epoch
        super().__init__(
            f"marker for producer {producer_id} from coordinator epoch {coordinator_epoch}, "
            f"older than the current coordinator epoch {current_epoch}"
        )


class ControlBatchFromClient(LogError):
    """A producer tried to write a control batch (only coordinators may)."""

    error_code = INVALID_RECORD

    def __init__(self, offset: int):
        self.offset = offset
        super().__init__(f"clients may not write control batches (batch at offset {offset})")


class CorruptFileError(LogError):
    """A checkpoint, metadata or snapshot file cannot be parsed."""

    error_code = KAFKA_STORAGE_ERROR

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class CorruptIndexError(LogError):
    """An index file is inconsistent with its segment (it gets rebuilt)."""

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class InconsistentTopicId(LogError):
    """partition.metadata names another topic id than the one assigned."""

    error_code = INCONSISTENT_TOPIC_ID

    def __init__(self, existing, assigned):
        self.existing = existing
        self.assigned = assigned
        super().__init__(f"log has topic id {existing}, cannot assign {assigned}")
