"""Compaction of one log (Kafka's Cleaner.doClean).

1. Offset map: key -> offset of its latest record, over the dirty section
   [first dirty offset, first uncleanable offset). Keys are kept whole (Kafka
   keeps an MD5 of each), at most `max_map_entries` of them: a full map ends
   the section early, and the next cleaning goes on from there.
2. The segments below the end of the mapped section (clean ones too: their
   keys may have newer values now) are regrouped so that a group fits one
   segment (segment.bytes, int32 relative offsets) and each group is rewritten
   into `<base>.log.cleaned`, keeping a record when it is the latest for its
   key (or past the mapped section) and it has a value, or it is a tombstone
   whose delete horizon has not passed. Keyless records go.
3. Batches keep their base offset, last offset delta, producer id / epoch /
   base sequence, partition leader epoch, codec and timestamp type; a batch
   that keeps every record is copied byte for byte. A batch that keeps a
   tombstone gets a delete horizon (now + delete.retention.ms: base timestamp
   and attribute bit 0x40, KIP-534) the first time it is cleaned; tombstones
   go in the first cleaning after it. An emptied batch that holds the last
   offset of a producer the log still tracks stays as an empty batch header
   (Kafka's RETAIN_EMPTY), so the producer's last sequence survives. Control
   Transactions, as Kafka's cleaner (CleanedTransactionMetadata): the
   cleanable section ends at the first unstable offset (log_to_clean);
   records of aborted transactions (found through the transaction index)
   neither enter the offset map nor survive a cleaning (an emptied batch
   holding an active producer's last offset stays as a header); committed
   transactional batches are compacted like any other, keeping their
   producer and transactional flag. A marker whose transaction has no batch
   left when the cleaning reads it (its data removed by an earlier
   cleaning) is discardable: the first such cleaning gives it a delete
   horizon (now + delete.retention.ms), a cleaning after the horizon removes
   it (keeping an empty header if it is its producer's last batch), and an
   aborted transaction's index entry goes with its marker.
4. Each group is swapped in under the log's lock (`UnifiedLog.replace_segments`):
   `.cleaned` -> `.swap`, old segments -> `.deleted`, `.swap` -> `.log`, old
   files unlinked (reads in flight keep their open descriptors). Recovery
   (recovery.py) finishes or undoes an interrupted swap.

The rewrite reads the old segments' files without the log's lock: appends
only touch the active segment, and a group whose segments changed meanwhile
(retention, truncation) is not swapped in.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from logstore.cleanable import LogToClean
from logstore.files import CLEANED_SUFFIX, fsync_path
from logstore.index import INT32_MAX
from logstore.segment import LogSegment
from logstore.transaction_index import AbortedTxn
from wire.errors import DecodeError
from wire.records import (
    COMPRESSION_MASK,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    DELETE_HORIZON_MASK,
    NO_TIMESTAMP,
    BatchHeader,
    Record,
    compress,
    encode_batch,
    encode_records,
    iter_records,
    parse_control_record,
    read_batch_header,
    record_timestamp,
    validate_batch,
)

if TYPE_CHECKING:
    from logstore.unified_log import UnifiedLog

log = logging.getLogger(__name__)

# Keys one cleaning maps at most (Kafka sizes its map by
# log.cleaner.dedupe.buffer.size; a Python dict entry costs far more than
# Kafka's 24 bytes).
DEFAULT_MAX_MAP_ENTRIES = 1_000_000

# Bytes of cleaned batches buffered before they are written.
WRITE_CHUNK = 1024 * 1024


class OffsetMap:
    """Key -> offset of its latest record in the mapped section."""

    def __init__(self, max_entries: int = DEFAULT_MAX_MAP_ENTRIES):
        self.max_entries = max_entries
        self._offsets: dict[bytes, int] = {}
        # Records above this offset were not mapped and are always kept.
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._offsets)

    def put(self, key: bytes, offset: int) -> bool:
        """Map `key`; False (nothing mapped) when the map is full."""
        if len(self._offsets) >= self.max_entries and key not in self._offsets:
            return False
        self._offsets[key] = offset
        self.latest_offset = offset
        return True

    def get(self, key: bytes) -> int:
        return self._offsets.get(key, -1)


@dataclass
class CleanerStats:
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_removed: int = 0
    groups_swapped: int = 0
    # The largest delete horizon written or kept (-1: no tombstone left).
    latest_delete_horizon: int = NO_TIMESTAMP
    swapped_bases: list[int] = field(default_factory=list)


@dataclass
class CleanResult:
    # The new first dirty offset (the cleaner checkpoint), None when the
    # cleaning was abandoned because the log changed under it.
    end_offset: int | None
    stats: CleanerStats


def clean_log(
    plog: UnifiedLog, to_clean: LogToClean, *, max_map_entries: int = DEFAULT_MAX_MAP_ENTRIES
) -> CleanResult:
    """Compact `plog` as planned by `to_clean` (from `UnifiedLog.log_to_clean`).
    Blocks on the disk: run it in a worker thread. Raises LogStorageError
    when a file cannot be read or written (the log's files are then as before
    the failing group)."""
    config = plog.config
    now = plog.now_ms()
    stats = CleanerStats()
    offset_map = OffsetMap(max_map_entries)
    txns = TxnCleaning(
        plog.collect_aborted_transactions(
            to_clean.segments[0].base_offset if to_clean.segments else 0,
            to_clean.first_uncleanable_offset,
        )
    )
    build_offset_map(
        to_clean.segments,
        to_clean.first_dirty_offset,
        to_clean.first_uncleanable_offset,
        offset_map,
        stats,
        txns.aborted,
    )
    end_offset = offset_map.latest_offset + 1
    active_producers = plog.active_producer_last_offsets()

    targets = [
        _Target(seg, size, *index_sizes)
        for seg, size, index_sizes in zip(
            to_clean.segments, to_clean.sizes, to_clean.index_sizes, strict=True
        )
        if seg.base_offset < end_offset
    ]
    uppers = [t.segment.base_offset for t in targets[1:]] + [to_clean.first_uncleanable_offset]
    for group in group_segments(targets, uppers, config.segment_bytes, config.segment_index_bytes):
        segments = [t.segment for t in group]
        cleaned = clean_segments(
            plog.dir,
            segments,
            offset_map,
            now=now,
            delete_retention_ms=config.delete_retention_ms,
            active_producers=active_producers,
            config=config,
            stats=stats,
            txns=txns,
        )
        if not plog.replace_segments(cleaned, segments, [t.size for t in group]):
            log.info("%s: the log changed while it was cleaned; cleaning stopped", plog.dir)
            _discard(cleaned)
            return CleanResult(None, stats)
        stats.groups_swapped += 1
        stats.swapped_bases.append(cleaned.base_offset)
    plog.latest_delete_horizon = stats.latest_delete_horizon
    log.info(
        "%s: cleaned up to offset %d: %d of %d records removed, %d -> %d bytes",
        plog.dir,
        end_offset,
        stats.records_removed,
        stats.records_read,
        stats.bytes_read,
        stats.bytes_written,
    )
    return CleanResult(end_offset, stats)


class AbortedRanges:
    """Which transactional batches belong to an aborted transaction: those of
    its producer between its first offset and its marker."""

    def __init__(self, aborted: list[AbortedTxn]):
        self._ranges: dict[int, list[tuple[int, int]]] = {}
        for txn in aborted:
            self._ranges.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))

    def holds(self, h: BatchHeader) -> bool:
        if not h.is_transactional or h.is_control:
            return False
        return any(
            first <= h.base_offset <= last for first, last in self._ranges.get(h.producer_id, ())
        )


NO_ABORTED = AbortedRanges([])


class TxnCleaning:
    """The transactions of one cleaning, read in offset order: which data
    batches are aborted, which markers may go, and which aborted
    transactions keep their index entry (Kafka's CleanedTransactionMetadata)."""

    def __init__(self, aborted: list[AbortedTxn]):
        self.aborted = AbortedRanges(aborted)
        self._by_marker = {(txn.producer_id, txn.last_offset): txn for txn in aborted}
        # Producers with a batch of their current transaction read since their last marker.
        self._committed_read: set[int] = set()
        self._aborted_read: set[int] = set()
        # (producer id, marker offset) of the ABORT markers kept.
        self.kept_aborts: set[tuple[int, int]] = set()

    def is_aborted(self, h: BatchHeader) -> bool:
        """A data batch of an aborted transaction (noted as read)."""
        if self.aborted.holds(h):
            self._aborted_read.add(h.producer_id)
            return True
        if h.is_transactional and not h.is_control:
            self._committed_read.add(h.producer_id)
        return False

    def marker_discardable(self, h: BatchHeader, commit: bool) -> bool:
        """Whether the marker's transaction has no batch left (the producer's
        batches since its previous marker were all removed earlier)."""
        read = self._committed_read if commit else self._aborted_read
        discardable = h.producer_id not in read
        read.discard(h.producer_id)
        return discardable

    def keep_abort(self, h: BatchHeader) -> None:
        self.kept_aborts.add((h.producer_id, h.base_offset))

    def index_entries(self, segments) -> list[AbortedTxn]:
        """The index entries of `segments` whose ABORT marker was kept."""
        return [
            txn
            for seg in segments
            for txn in seg.txn_index.entries()
            if (txn.producer_id, txn.last_offset) in self.kept_aborts
        ]


def build_offset_map(
    segments,
    start: int,
    end: int,
    offset_map: OffsetMap,
    stats: CleanerStats,
    aborted: AbortedRanges = NO_ABORTED,
) -> None:
    """Map the keyed records with offsets in [start, end). When the map fills
    up, it covers a prefix of the section (latest_offset says where it ends);
    otherwise latest_offset is end - 1, so that the whole section counts as
    cleaned even when its last records have no key."""
    offset_map.latest_offset = start - 1
    for seg in segments:
        for pos, h in seg.batches():
            if h.last_offset < start or h.is_control or aborted.holds(h):
                continue
            if h.base_offset >= end:
                break
            data = seg.file.pread(h.size, pos)
            for record in iter_records(data):
                offset = h.base_offset + record.offset_delta
                if record.key is None or not start <= offset < end:
                    continue
                if not offset_map.put(record.key, offset):
                    return
    offset_map.latest_offset = max(offset_map.latest_offset, end - 1)


class _Target(NamedTuple):
    segment: LogSegment
    size: int
    index_bytes: int
    time_index_bytes: int


def group_segments(targets: list[_Target], uppers: list[int], max_bytes: int, max_index_bytes: int):
    """Consecutive runs of segments whose `.log` sizes add up to at most
    `max_bytes`, whose offset and time index sizes each add up to at most
    `max_index_bytes`, and whose offsets fit int32 relative to the first base
    (Kafka's groupSegmentsBySize). `uppers[i]` bounds the offsets of
    targets[i]."""
    i = 0
    while i < len(targets):
        group = [targets[i]]
        size, index, time_index = (
            targets[i].size,
            targets[i].index_bytes,
            targets[i].time_index_bytes,
        )
        base = targets[i].segment.base_offset
        i += 1
        while (
            i < len(targets)
            and size + targets[i].size <= max_bytes
            and index + targets[i].index_bytes <= max_index_bytes
            and time_index + targets[i].time_index_bytes <= max_index_bytes
            and uppers[i] - 1 - base <= INT32_MAX
        ):
            group.append(targets[i])
            size += targets[i].size
            index += targets[i].index_bytes
            time_index += targets[i].time_index_bytes
            i += 1
        yield group


def clean_segments(
    dir: str,
    segments: list[LogSegment],
    offset_map: OffsetMap,
    *,
    now: int,
    delete_retention_ms: int,
    active_producers: dict[int, int],
    config,
    stats: CleanerStats,
    txns: TxnCleaning | None = None,
) -> LogSegment:
    """Write the retained batches of `segments` into a new `.cleaned`
    segment named after the first one, indexed, fsynced, with the last old
    segment's modification time (retention by time falls back on it)."""
    cleaned = LogSegment.create(dir, segments[0].base_offset, config, now, suffix=CLEANED_SUFFIX)
    if txns is None:
        txns = TxnCleaning([])
    try:
        pending = bytearray()
        headers: list[tuple[int, BatchHeader]] = []
        for seg in segments:
            for pos, h in seg.batches():
                data = seg.file.pread(h.size, pos)
                # A corrupt batch must not come out of a rewrite with a fresh CRC.
                validate_batch(data)
                stats.bytes_read += h.size
                kept = filter_batch(
                    data,
                    h,
                    offset_map,
                    now=now,
                    delete_retention_ms=delete_retention_ms,
                    active_producers=active_producers,
                    stats=stats,
                    txns=txns,
                )
                if kept is None:
                    continue
                headers.append((len(pending), read_batch_header(kept)))
                pending += kept
                if len(pending) >= WRITE_CHUNK:
                    cleaned.append(pending, headers)
                    pending, headers = bytearray(), []
        if headers:
            cleaned.append(pending, headers)
        # An aborted transaction stays listed as long as its marker stays.
        for txn in txns.index_entries(segments):
            cleaned.update_txn_index(txn)
        stats.bytes_written += cleaned.size
        cleaned.on_become_inactive()
        for path in cleaned.paths:
            fsync_path(path)
        mtime_ns = os.fstat(segments[-1].file.fd).st_mtime_ns
        os.utime(cleaned.log_path, ns=(mtime_ns, mtime_ns))
    except BaseException:
        _discard(cleaned)
        raise
    return cleaned


def filter_batch(
    data: bytes,
    h: BatchHeader,
    offset_map: OffsetMap,
    *,
    now: int,
    delete_retention_ms: int,
    active_producers: dict[int, int],
    stats: CleanerStats,
    txns: TxnCleaning | None = None,
) -> bytes | None:
    """The batch as it stays in the cleaned log (the same bytes, a rebuilt
    batch, an empty batch header), or None when it goes. `txns` follows the
    transactions across the cleaning's batches, in offset order."""
    if txns is None:
        txns = TxnCleaning([])
    if h.is_control:
        return _filter_marker(data, h, now, delete_retention_ms, active_producers, stats, txns)
    if txns.is_aborted(h):
        stats.records_read += h.records_count
        stats.records_removed += h.records_count
        return _emptied(h, active_producers)
    horizon = h.base_timestamp if h.attributes & DELETE_HORIZON_MASK else None
    records = list(iter_records(data))
    stats.records_read += len(records)
    retained = []
    tombstones = False
    for record in records:
        offset = h.base_offset + record.offset_delta
        if _retain(record, offset, offset_map, horizon, now):
            retained.append(record)
            tombstones = tombstones or record.value is None
    stats.records_removed += len(records) - len(retained)
    if retained:
        set_horizon = tombstones and horizon is None
        if set_horizon:
            horizon = now + delete_retention_ms
        if tombstones and horizon is not None:
            stats.latest_delete_horizon = max(stats.latest_delete_horizon, horizon)
        if len(retained) == len(records) and not set_horizon:
            return data
        return _rebuild(h, retained, horizon)
    return _emptied(h, active_producers)


def _filter_marker(
    data: bytes,
    h: BatchHeader,
    now: int,
    delete_retention_ms: int,
    active_producers: dict[int, int],
    stats: CleanerStats,
    txns: TxnCleaning,
) -> bytes | None:
    """A control batch: a transaction marker goes in two cleanings once its
    transaction has no batch left (a delete horizon first, removal after
    it); anything else stays as it is."""
    records = list(iter_records(data))
    if h.producer_id < 0 or len(records) != 1:
        return data  # an emptied marker kept for its producer, or not a marker
    try:
        kind, _ = parse_control_record(records[0])
    except DecodeError:
        return data
    if kind not in (CONTROL_ABORT, CONTROL_COMMIT):
        return data
    commit = kind == CONTROL_COMMIT
    discardable = txns.marker_discardable(h, commit)
    horizon = h.base_timestamp if h.attributes & DELETE_HORIZON_MASK else None
    stats.records_read += 1
    if discardable and horizon is not None and now >= horizon:
        stats.records_removed += 1
        return _emptied(h, active_producers)
    if not commit:
        txns.keep_abort(h)
    if not discardable:
        return data
    if horizon is None:
        horizon = now + delete_retention_ms
        data = _rebuild(h, records, horizon)
    stats.latest_delete_horizon = max(stats.latest_delete_horizon, horizon)
    return data


def _emptied(h: BatchHeader, active_producers: dict[int, int]) -> bytes | None:
    """What stays of a batch whose records all go: an empty header when it
    holds an active producer's last offset (RETAIN_EMPTY), else nothing."""
    if h.producer_id >= 0 and active_producers.get(h.producer_id) == h.last_offset:
        return _empty_batch(h)
    return None


def _retain(record: Record, offset: int, offset_map: OffsetMap, horizon, now: int) -> bool:
    if offset > offset_map.latest_offset:
        return True
    if record.key is None:
        return False
    if offset < offset_map.get(record.key):
        return False
    if record.value is not None:
        return True
    return horizon is None or now < horizon


def _rebuild(h: BatchHeader, retained: list[Record], horizon: int | None) -> bytes:
    """The batch with only `retained`, as Kafka's MemoryRecordsBuilder writes
    it: base timestamp the delete horizon when there is one, else the first
    record's timestamp; max timestamp over the records, starting from
    NO_TIMESTAMP as the builder's does (the append time for LogAppendTime
    batches); the original offset range."""
    stamps = [record_timestamp(h, r) for r in retained]
    base_ts = horizon if horizon is not None else stamps[0]
    max_ts = h.max_timestamp if h.is_log_append_time else max(NO_TIMESTAMP, *stamps)
    records = [
        r._replace(timestamp_delta=ts - base_ts) for r, ts in zip(retained, stamps, strict=True)
    ]
    section = encode_records(records, base_timestamp=base_ts)
    payload = compress(h.compression, section) if h.compression else section
    attributes = h.attributes | (DELETE_HORIZON_MASK if horizon is not None else 0)
    header = h._replace(
        attributes=attributes,
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        records_count=len(records),
    )
    return encode_batch(header, payload)


def _empty_batch(h: BatchHeader) -> bytes:
    """Kafka's DefaultRecordBatch.writeEmptyHeader: no records, no codec, no
    delete horizon, both timestamps the batch's max timestamp."""
    attributes = h.attributes & ~COMPRESSION_MASK & ~DELETE_HORIZON_MASK
    header = h._replace(
        attributes=attributes,
        base_timestamp=h.max_timestamp,
        records_count=0,
    )
    return encode_batch(header, b"")


def _discard(segment: LogSegment) -> None:
    try:
        segment.delete()
    finally:
        segment.close_files()
