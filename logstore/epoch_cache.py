"""The leader epoch cache: which leader epoch started at which offset.

Entries (epoch, start_offset) grow in both fields. The leader adds one when it
first appends in a new epoch (or when it becomes leader, at its log end
offset); followers and recovery add one for each batch whose
partition_leader_epoch is above the latest. `end_offset_for` answers
OffsetForLeaderEpoch with Kafka's semantics, which followers use to find where
their log diverges from the leader's.

Persisted to `leader-epoch-checkpoint` on every change. The write is atomic
(tmp + rename) but not fsynced, so it never blocks the caller on the disk;
`flush_checkpoint()` (called from UnifiedLog.flush, in a worker thread) makes it
durable. A checkpoint lost in a crash is rebuilt from the batch headers.
"""

from __future__ import annotations

import bisect
import logging
import os
from collections.abc import Iterable

from logstore.checkpoint import (
    EpochEntry,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)
from logstore.files import fsync_dir, fsync_path

log = logging.getLogger(__name__)

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    def __init__(self, path: str | None, entries: Iterable[EpochEntry] = ()):
        """`path` None keeps the cache in memory only."""
        self.path = path
        self._epochs: list[int] = []
        self._starts: list[int] = []
        for e in entries:
            self._put(EpochEntry(*e))
        self._dirty = False  # written but not fsynced
        self._unwritten = False  # changed, but the last write failed (a full disk)

    @classmethod
    def load(cls, path: str) -> LeaderEpochCache:
        """Read the checkpoint at `path` (FileNotFoundError / CorruptFileError
        propagate: the log decides to rebuild)."""
        return cls(path, read_leader_epoch_checkpoint(path))

    # --- queries --------------------------------------------------------------------

    def entries(self) -> list[EpochEntry]:
        return [EpochEntry(e, s) for e, s in zip(self._epochs, self._starts, strict=True)]

    def __len__(self) -> int:
        return len(self._epochs)

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    @property
    def latest_entry(self) -> EpochEntry | None:
        return EpochEntry(self._epochs[-1], self._starts[-1]) if self._epochs else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return EpochEntry(self._epochs[0], self._starts[0]) if self._epochs else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range holds `offset`: the latest entry starting at
        or before it (None before the first entry)."""
        i = bisect.bisect_right(self._starts, offset)
        return self._epochs[i - 1] if i else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch:

        - undefined epoch (-1), or an epoch above every known one: (-1, -1);
        - the latest epoch: (epoch, log_end_offset);
        - an epoch below every known one: (requested epoch, start of the first
          known epoch);
        - otherwise: (the largest known epoch <= requested, the start offset of
          the first known epoch above requested).
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._epochs[-1]:
            return requested_epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, requested_epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, self._starts[0]
        return self._epochs[higher - 1], self._starts[higher]

    # --- changes --------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset`, unless the latest entry
        already is that epoch starting at or before it. Entries that would
        break monotonicity (epoch >= epoch, or start >= start_offset) are
        removed first. Returns whether the cache changed."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        if self._epochs and self._epochs[-1] == epoch and self._starts[-1] <= start_offset:
            if self._unwritten:
                self.write(fsync=False)  # the entry is known; the disk refused it before
            return False
        removed = []
        while self._epochs and (self._epochs[-1] >= epoch or self._starts[-1] >= start_offset):
            removed.append((self._epochs.pop(), self._starts.pop()))
        if len(removed) > 1 or (removed and removed[0][1] != start_offset):
            log.warning(
                "%s: assigning epoch %d at %d removed entries %s",
                self.path,
                epoch,
                start_offset,
                removed[::-1],
            )
        self._put(EpochEntry(epoch, start_offset))
        self.write(fsync=False)
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after `end_offset` (the log was truncated to it)."""
        if end_offset < 0 or not self._starts or self._starts[-1] < end_offset:
            return
        i = bisect.bisect_left(self._starts, end_offset)
        del self._epochs[i:]
        del self._starts[i:]
        self.write(fsync=False)

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at `start_offset`: drop entries that start at or
        before it, keeping the latest of them moved to start_offset."""
        i = bisect.bisect_right(self._starts, start_offset)
        if i == 0:
            return
        epoch = self._epochs[i - 1]
        if i == 1 and self._starts[0] == start_offset:
            return
        del self._epochs[:i]
        del self._starts[:i]
        self._epochs.insert(0, epoch)
        self._starts.insert(0, start_offset)
        self.write(fsync=False)

    def clear(self) -> None:
        if self._epochs:
            self._epochs.clear()
            self._starts.clear()
        self.write(fsync=False)

    def _put(self, entry: EpochEntry) -> None:
        if self._epochs and (
            entry.epoch <= self._epochs[-1] or entry.start_offset < self._starts[-1]
        ):
            raise ValueError(f"leader epoch entry {entry} does not follow {self.latest_entry}")
        self._epochs.append(entry.epoch)
        self._starts.append(entry.start_offset)

    # --- persistence ----------------------------------------------------------------

    def write(self, *, fsync: bool) -> None:
        """Write the checkpoint now (fsync=True blocks on the disk)."""
        if self.path is None:
            return
        self._unwritten = True
        write_leader_epoch_checkpoint(self.path, self.entries(), fsync=fsync)
        self._unwritten = False
        self._dirty = not fsync

    @property
    def needs_flush(self) -> bool:
        return self._dirty

    def flush_checkpoint(self) -> None:
        """fsync the last written checkpoint (and its directory)."""
        if self.path is None or not self._dirty:
            return
        self._dirty = False
        fsync_path(self.path)
        fsync_dir(os.path.dirname(os.path.abspath(self.path)))
