"""Kafka's checkpoint text files.

    <version>
    <number of entries>
    <entry>
    ...

one entry per line, fields separated by a space. The per-log-dir
`recovery-point-offset-checkpoint`, `log-start-offset-checkpoint` and
`replication-offset-checkpoint` hold "topic partition offset" entries (version
0); a partition's `leader-epoch-checkpoint` holds "epoch start_offset" entries
(version 0). As Kafka does, an empty file reads as no entries; a wrong version,
a malformed line or a count that does not match is an error naming the file.

Writes replace the file atomically (write `.tmp`, fsync, rename, fsync dir).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple, TypeVar

from logstore.errors import CorruptFileError
from logstore.files import write_atomically

T = TypeVar("T")

OFFSET_CHECKPOINT_VERSION = 0
LEADER_EPOCH_CHECKPOINT_VERSION = 0


def read_checkpoint(path: str, version: int, parse: Callable[[list[str]], T]) -> list[T]:
    """Entries of the checkpoint at `path`. `parse` gets the whitespace-split
    fields of one line and raises ValueError when they are malformed.
    A missing file raises FileNotFoundError."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CorruptFileError(path, "not UTF-8 text") from None
    lines = text.splitlines()
    if not lines:
        return []
    try:
        found = int(lines[0].strip())
    except ValueError:
        raise CorruptFileError(path, f"malformed version line {lines[0]!r}") from None
    if found != version:
        raise CorruptFileError(path, f"unrecognised version {found}, expected {version}")
    if len(lines) == 1:
        return []
    try:
        expected = int(lines[1].strip())
    except ValueError:
        raise CorruptFileError(path, f"malformed entry count {lines[1]!r}") from None
    entries = []
    for n, line in enumerate(lines[2:], start=3):
        try:
            entries.append(parse(line.split()))
        except (ValueError, IndexError):
            raise CorruptFileError(path, f"malformed line {n}: {line!r}") from None
    if len(entries) != expected:
        raise CorruptFileError(path, f"expected {expected} entries but found {len(entries)}")
    return entries


def format_checkpoint(version: int, lines: Iterable[str]) -> bytes:
    lines = list(lines)
    out = [str(version), str(len(lines)), *lines]
    return ("\n".join(out) + "\n").encode("utf-8")


def write_checkpoint(path: str, version: int, lines: Iterable[str], *, fsync: bool = True) -> None:
    write_atomically(path, format_checkpoint(version, lines), fsync=fsync)


# --- "topic partition offset" files -------------------------------------------------


def _parse_offset_entry(fields: list[str]) -> tuple[tuple[str, int], int]:
    if len(fields) != 3:
        raise ValueError("expected 3 fields")
    return (fields[0], int(fields[1])), int(fields[2])


def read_offset_checkpoint(path: str, *, missing_ok: bool = True) -> dict[tuple[str, int], int]:
    """{(topic, partition): offset}; an absent file is empty unless missing_ok=False."""
    try:
        return dict(read_checkpoint(path, OFFSET_CHECKPOINT_VERSION, _parse_offset_entry))
    except FileNotFoundError:
        if missing_ok:
            return {}
        raise


def write_offset_checkpoint(
    path: str, offsets: Mapping[tuple[str, int], int], *, fsync: bool = True
) -> None:
    for (topic, _), _ in offsets.items():
        if not topic or any(c.isspace() for c in topic):
            raise ValueError(f"topic name {topic!r} cannot be written to a checkpoint")
    lines = [f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())]
    write_checkpoint(path, OFFSET_CHECKPOINT_VERSION, lines, fsync=fsync)


# --- leader-epoch-checkpoint ----------------------------------------------------------


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


def _parse_epoch_entry(fields: list[str]) -> EpochEntry:
    if len(fields) != 2:
        raise ValueError("expected 2 fields")
    return EpochEntry(int(fields[0]), int(fields[1]))


def read_leader_epoch_checkpoint(path: str) -> list[EpochEntry]:
    return read_checkpoint(path, LEADER_EPOCH_CHECKPOINT_VERSION, _parse_epoch_entry)


def write_leader_epoch_checkpoint(
    path: str, entries: Iterable[EpochEntry], *, fsync: bool = True
) -> None:
    lines = [f"{e.epoch} {e.start_offset}" for e in entries]
    write_checkpoint(path, LEADER_EPOCH_CHECKPOINT_VERSION, lines, fsync=fsync)
