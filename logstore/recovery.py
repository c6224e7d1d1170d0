"""Opening a partition directory: clean up, load segments, recover.

The log file is the truth. On open:

1. Stray files go: `*.deleted`, `*.cleaned`, `*.tmp` (unfinished atomic
   writes). A `.log.swap` (an interrupted compaction or split, as Kafka leaves
   them) replaces the segments whose offsets it covers; `.swap` files at or
   above the lowest `.cleaned` offset belong to an unfinished split and are
   deleted, as in Kafka's LogLoader. Index files without a `.log` go.
2. Every `.log` file is a segment; its indexes are opened lazily and rebuilt
   when missing or implausible.
3. After an unclean shutdown, every segment from the one holding the recovery
   point to the end is recovered: batch by batch, CRC, sizes and offsets
   checked, indexes rebuilt, and the file cut at the first bad or torn batch;
   the segments after a cut are deleted. After a clean shutdown only segments
   with missing indexes are rebuilt. The transaction indexes of recovered
   segments are rebuilt by the log (unified_log.py), which replays them
   through producer state as Kafka's LogSegment.recover does.
4. An empty directory gets a first segment at the log start offset; a log
   ending below the log start offset (segments deleted behind our back) is
   emptied and restarted there, as Kafka does.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass

from logstore.config import LogConfig
from logstore.errors import LogStorageError
from logstore.files import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIXES,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TMP_SUFFIX,
    TXN_INDEX_SUFFIX,
    file_name,
    parse_file_name,
    unlink_quietly,
)
from logstore.segment import LogSegment
from wire.errors import DecodeError
from wire.records import BATCH_HEADER_SIZE, read_batch_header

log = logging.getLogger(__name__)


@dataclass
class LoadedLog:
    segments: list[LogSegment]
    log_start_offset: int
    recovery_point: int
    # Bytes cut off by recovery (0 when nothing was wrong).
    truncated_bytes: int
    # True when the log was restarted at the log start offset.
    reset: bool
    # Base offset of the first segment recovered (its batches validated and
    # indexes rebuilt), None when none was: the log rebuilds the transaction
    # indexes from there by replaying the batches through producer state.
    recovered_from: int | None = None


def load_log(
    dir: str,
    config: LogConfig,
    *,
    recovery_point: int,
    log_start_offset: int,
    clean_shutdown: bool,
    now_ms: int,
    on_recovered_batch: Callable | None = None,
    fresh: bool = False,
) -> LoadedLog:
    """The segments of the log in `dir`, recovered as the module says.
    `fresh`: the caller found no directory, so there is nothing to list."""
    os.makedirs(dir, exist_ok=True)
    try:
        if not fresh:
            _remove_stray_files(dir)
        bases = [] if fresh else _segment_bases(dir)
        segments = [LogSegment.open(dir, b, config, now_ms) for b in bases]
    except OSError as e:
        raise LogStorageError("load log", dir, e) from e

    truncated = 0
    recovered_from = None
    if segments:
        if clean_shutdown:
            first_unflushed = len(segments)
        else:
            first_unflushed = 0
            for i, seg in enumerate(segments):
                if seg.base_offset <= recovery_point:
                    first_unflushed = i
        # Segments below the recovery point are trusted; rebuild missing indexes.
        for i in range(first_unflushed):
            seg = segments[i]
            if not seg.indexes_exist():
                log.warning("%s: index files missing, rebuilding them", seg.log_path)
                upper = segments[i + 1].base_offset if i + 1 < len(segments) else None
                if recovered_from is None:
                    recovered_from = seg.base_offset
                cut = seg.recover(None, upper)
                if cut:
                    log.warning(
                        "%s: %d corrupt bytes cut below the recovery point", seg.log_path, cut
                    )
                truncated += cut
        # Segments from the recovery point on: validate, and cut at the first bad batch.
        i = first_unflushed
        if i < len(segments) and recovered_from is None:
            recovered_from = segments[i].base_offset
        while i < len(segments):
            seg = segments[i]
            upper = segments[i + 1].base_offset if i + 1 < len(segments) else None
            cut = seg.recover(on_recovered_batch, upper)
            truncated += cut
            if cut:
                for later in segments[i + 1 :]:
                    log.warning("deleting %s after corruption in %s", later.log_path, seg.log_path)
                    later.delete()
                    truncated += later.size
                    later.close_files()
                del segments[i + 1 :]
                break
            i += 1

    reset = False
    if segments:
        log_end = segments[-1].next_offset
        if log_end < log_start_offset:
            log.warning(
                "%s: log end offset %d is below the log start offset %d; restarting the log there",
                dir,
                log_end,
                log_start_offset,
            )
            for seg in segments:
                seg.delete()
                seg.close_files()
            segments = []
            reset = True
    if not segments:
        segments = [LogSegment.create(dir, log_start_offset, config, now_ms)]

    active = segments[-1]
    active.make_active()
    log_end = active.next_offset
    start = max(log_start_offset, segments[0].base_offset)
    if clean_shutdown and not truncated:
        rp = log_end
    else:
        rp = min(recovery_point, log_end)
    if reset:
        recovered_from = None
    return LoadedLog(segments, start, rp, truncated, reset, recovered_from)


def _remove_stray_files(dir: str) -> None:
    names = os.listdir(dir)
    swaps: list[tuple[int, str, str]] = []
    min_cleaned = None
    for name in names:
        path = os.path.join(dir, name)
        if not os.path.isfile(path):
            continue
        if name.endswith(DELETED_SUFFIX) or name.endswith(TMP_SUFFIX):
            log.info("deleting stray file %s", path)
            unlink_quietly(path)
        elif name.endswith(CLEANED_SUFFIX):
            parsed = parse_file_name(name)
            if parsed:
                min_cleaned = parsed[0] if min_cleaned is None else min(min_cleaned, parsed[0])
            log.info("deleting stray file %s", path)
            unlink_quietly(path)
        elif name.endswith(SWAP_SUFFIX):
            parsed = parse_file_name(name)
            if parsed:
                swaps.append((parsed[0], parsed[1], path))
            else:
                unlink_quietly(path)
    txn_swaps = []
    for base, suffix, path in swaps:
        if min_cleaned is not None and base >= min_cleaned:
            # Part of an unfinished split.
            unlink_quietly(path)
            continue
        if suffix == TXN_INDEX_SUFFIX:
            # Replay cannot rebuild it below the recovery point: keep it.
            txn_swaps.append((base, path))
            continue
        if suffix != LOG_SUFFIX:
            # An offset or time index: rebuilt from the log.
            unlink_quietly(path)
            continue
        # The segments it replaces: those from its base to its last batch,
        # and always the one with its own base (an emptied group).
        end = max(_next_offset_of_file(path, base), base + 1)
        for name in os.listdir(dir):
            parsed = parse_file_name(name)
            if parsed and not parsed[2] and base <= parsed[0] < end:
                log.info("deleting %s, replaced by %s", name, os.path.basename(path))
                unlink_quietly(os.path.join(dir, name))
        target = path[: -len(SWAP_SUFFIX)]
        log.info("completing interrupted swap: %s -> %s", path, os.path.basename(target))
        os.replace(path, target)
    for base, path in txn_swaps:
        # The transaction index of a swapped-in segment follows its `.log`.
        if os.path.exists(os.path.join(dir, file_name(base, LOG_SUFFIX))):
            os.replace(path, path[: -len(SWAP_SUFFIX)])
        else:
            unlink_quietly(path)

    # Index files whose segment is gone.
    present = {
        p[0] for p in map(parse_file_name, os.listdir(dir)) if p and p[1] == LOG_SUFFIX and not p[2]
    }
    for name in os.listdir(dir):
        parsed = parse_file_name(name)
        if parsed and parsed[1] in INDEX_SUFFIXES and not parsed[2] and parsed[0] not in present:
            log.info("deleting orphaned index file %s", name)
            unlink_quietly(os.path.join(dir, name))


def _next_offset_of_file(path: str, base: int) -> int:
    """Offset after the last whole batch of a `.log` file (header scan)."""
    nxt = base
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        pos = 0
        while pos + BATCH_HEADER_SIZE <= size:
            f.seek(pos)
            try:
                h = read_batch_header(f.read(BATCH_HEADER_SIZE))
            except DecodeError:
                break
            if pos + h.size > size:
                break
            nxt = h.next_offset
            pos += h.size
    return nxt


def _segment_bases(dir: str) -> list[int]:
    bases = []
    for name in os.listdir(dir):
        parsed = parse_file_name(name)
        if parsed and parsed[1] == LOG_SUFFIX and not parsed[2]:
            bases.append(parsed[0])
    return sorted(bases)
