"""Restarts and recovery: the log file is the truth."""

from __future__ import annotations

import os
import random
import shutil
import uuid

import pytest

from logstore import LogConfig
from wire.records import iter_batches

from .helpers import T0, FakeClock, all_offsets, batch, offsets_of, open_log, read_all

SMALL = LogConfig(segment_bytes=2500, index_interval_bytes=300)


def build_log(path, n=60, config=SMALL, epochs=(0,)):
    """A closed log of n batches of 1..4 records with varied sizes."""
    log = open_log(path, config)
    rng = random.Random(7)
    for i in range(n):
        epoch = epochs[i * len(epochs) // n]
        log.append(batch(rng.randint(1, 4), value_size=rng.randint(5, 120)), epoch)
    log.close()


def layout(path) -> list[tuple[str, int, int, int, int]]:
    """(file name, position, size, base offset, last offset) of every batch."""
    out = []
    for name in sorted(os.listdir(path)):
        if name.endswith(".log"):
            with open(os.path.join(path, name), "rb") as f:
                data = f.read()
            for pos, h in iter_batches(data, check_crc=False):
                out.append((name, pos, h.size, h.base_offset, h.last_offset))
    return out


def offsets_before(batches, stop) -> list[int]:
    """Offsets of the batches before index `stop` of a layout."""
    out = []
    for *_, base, last in batches[:stop]:
        out.extend(range(base, last + 1))
    return out


def test_clean_restart_keeps_everything(tmp_path):
    path = tmp_path / "t-0"
    clock = FakeClock()
    log = open_log(path, SMALL, clock)
    for i in range(40):
        log.append(batch(2, producer_id=9, producer_epoch=0, base_sequence=2 * i), i // 10)
    log.delete_records_before(5)
    log.assign_topic_id(uuid.UUID(int=42))
    data, segments = read_all(log), [s.base_offset for s in log.segments]
    log.close()
    assert log.recovery_point == 80

    log = open_log(path, SMALL, clock, clean_shutdown=True, log_start_offset=5, recovery_point=80)
    assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (5, 80, 80)
    assert read_all(log) == data
    assert [s.base_offset for s in log.segments] == segments
    assert log.epoch_entries() == [(0, 5), (1, 20), (2, 40), (3, 60)]
    assert log.topic_id == uuid.UUID(int=42)
    retry = log.append(batch(2, producer_id=9, producer_epoch=0, base_sequence=78), 3)
    assert retry.duplicate and (retry.first_offset, retry.last_offset) == (78, 79)
    assert log.append(batch(1), 3).first_offset == 80


def test_unclean_restart_rebuilds_identical_indexes(tmp_path):
    path = tmp_path / "t-0"
    build_log(path)
    originals = {
        n: (path / n).read_bytes() for n in os.listdir(path) if n.endswith(("index", "timeindex"))
    }
    data = read_all(open_log(path, SMALL, clean_shutdown=True))
    log = open_log(path, SMALL, clean_shutdown=False, recovery_point=0)
    assert read_all(log) == data
    log.close()
    for name, content in originals.items():
        assert (path / name).read_bytes() == content, name


def test_truncated_tail_keeps_exactly_the_whole_batches_before_the_cut(tmp_path):
    pristine = tmp_path / "pristine"
    build_log(pristine, n=12, config=LogConfig(index_interval_bytes=300))
    batches = layout(pristine)
    name = batches[0][0]
    file_size = (pristine / name).stat().st_size
    cuts = sorted({file_size - 1, file_size - 30, *[p for _, p, *_ in batches[-4:]]})
    cuts += [batches[-3][1] + 5, batches[-3][1] + 61, batches[-3][1] + 12]
    for i, cut in enumerate(cuts):
        path = tmp_path / f"t-{i}"
        shutil.copytree(pristine, path)
        with open(path / name, "r+b") as f:
            f.truncate(cut)
        whole = sum(1 for _, p, size, *_ in batches if p + size <= cut)
        log = open_log(path, LogConfig(index_interval_bytes=300), recovery_point=0)
        assert all_offsets(log) == offsets_before(batches, whole), f"cut at {cut}"
        assert log.log_end_offset == batches[whole - 1][4] + 1
        assert (path / name).stat().st_size == batches[whole - 1][1] + batches[whole - 1][2]
        # The repaired log takes appends right after its last batch.
        assert log.append(batch(1), 0).first_offset == log.log_end_offset - 1
        log.close()


def _overlaps_unchecked_fields(batches, name, start, end) -> bool:
    """Base offset (0-8) and partition leader epoch (12-16) are not covered by
    the CRC: Kafka cannot detect garbage there either."""
    for n, pos, _size, *_ in batches:
        if n != name:
            continue
        for lo, hi in ((pos, pos + 8), (pos + 12, pos + 16)):
            if start < hi and lo < end:
                return True
    return False


def test_garbage_at_random_positions_keeps_exactly_the_batches_before_it(tmp_path):
    pristine = tmp_path / "pristine"
    build_log(pristine, n=60)
    batches = layout(pristine)
    names = sorted({b[0] for b in batches})
    assert len(names) >= 4
    rng = random.Random(2024)
    trials = 0
    while trials < 40:
        name = rng.choice(names)
        file_size = (pristine / name).stat().st_size
        start = rng.randrange(file_size)
        garbage = rng.randbytes(rng.randint(1, 16))
        end = min(file_size, start + len(garbage))
        garbage = garbage[: end - start]
        if _overlaps_unchecked_fields(batches, name, start, end):
            continue
        original = (pristine / name).read_bytes()[start:end]
        if original == garbage:
            continue
        trials += 1
        path = tmp_path / f"trial-{trials}"
        shutil.copytree(pristine, path)
        with open(path / name, "r+b") as f:
            f.seek(start)
            f.write(garbage)
        changed = [start + i for i in range(len(garbage)) if garbage[i] != original[i]]
        first_bad = next(
            i
            for i, (n, pos, size, *_) in enumerate(batches)
            if n == name and pos <= changed[0] < pos + size
        )
        log = open_log(path, SMALL, recovery_point=0)
        survivors = all_offsets(log)
        assert survivors == offsets_before(batches, first_bad), (name, start, garbage.hex())
        # Segments after the corrupt one are gone; the log continues where it stops.
        assert sorted(n for n in os.listdir(path) if n.endswith(".log"))[-1] <= name
        next_offset = survivors[-1] + 1 if survivors else 0
        assert log.append(batch(1), 0).first_offset == next_offset
        log.close()
        reopened = open_log(path, SMALL, recovery_point=0)
        assert all_offsets(reopened) == survivors + [next_offset]
        reopened.close()


def test_zeros_added_at_the_end_by_a_crash_are_cut(tmp_path):
    path = tmp_path / "t-0"
    build_log(path, n=5, config=LogConfig())
    name = "00000000000000000000.log"
    before = (path / name).stat().st_size
    with open(path / name, "ab") as f:
        f.write(b"\x00" * 4096)
    log = open_log(path, recovery_point=0)
    assert (path / name).stat().st_size == before
    assert len(offsets_of(read_all(log))) == 5


def test_batch_with_offsets_going_backwards_is_treated_as_corrupt(tmp_path):
    path = tmp_path / "t-0"
    build_log(path, n=6, config=LogConfig())
    batches = layout(path)
    name, pos = batches[3][0], batches[3][1]
    with open(path / name, "r+b") as f:
        f.seek(pos)
        f.write((1).to_bytes(8, "big"))  # base offset 1: below the previous batch
    log = open_log(path, recovery_point=0)
    assert all_offsets(log) == offsets_before(batches, 3)


def test_segments_below_the_recovery_point_are_trusted(tmp_path):
    path = tmp_path / "t-0"
    build_log(path, n=60)
    batches = layout(path)
    first = batches[0][0]
    with open(path / first, "r+b") as f:
        f.seek(batches[0][1] + 30)
        f.write(b"\xff\xff")
    size = (path / first).stat().st_size
    end = batches[-1][4] + 1
    log = open_log(path, SMALL, recovery_point=end - 1)
    # Only the segment holding the recovery point was validated: the damage in
    # the first segment stays (Kafka does the same; the CRC check at the
    # consumer finds it).
    assert log.log_end_offset == end
    assert (path / first).stat().st_size == size
    assert layout(path)[-1][4] == end - 1


def test_unclean_restart_recovers_the_active_segment_left_preallocated(tmp_path):
    path = tmp_path / "t-0"
    log = open_log(path, SMALL)
    for _ in range(30):
        log.append(batch(2, value_size=50), 0)
    log.flush()
    rp = log.recovery_point
    # No close: the process "died"; the active indexes are still preallocated.
    active = log.active_segment
    assert os.path.getsize(active.index_path) == SMALL.segment_index_bytes
    data = read_all(log)
    crashed = tmp_path / "crashed-0"
    shutil.copytree(path, crashed)  # the files as a crash would leave them
    reopened = open_log(crashed, SMALL, recovery_point=rp)
    assert read_all(reopened) == data
    assert reopened.log_end_offset == 60
    assert reopened.read(59, 1).size > 0


def test_missing_index_files_are_rebuilt(tmp_path):
    path = tmp_path / "t-0"
    build_log(path)
    originals = {n: (path / n).read_bytes() for n in os.listdir(path) if n.endswith("index")}
    for name in originals:
        os.unlink(path / name)
    data = read_all(open_log(path, SMALL, clean_shutdown=True))
    log = open_log(path, SMALL, clean_shutdown=True)
    assert read_all(log) == data
    log.close()
    for name, content in originals.items():
        assert (path / name).read_bytes() == content


def test_implausible_index_is_rebuilt_when_first_used(tmp_path):
    path = tmp_path / "t-0"
    build_log(path)
    batches = layout(path)
    first = batches[0][0].replace(".log", ".index")
    good = (path / first).read_bytes()
    (path / first).write_bytes(b"\x00" * len(good) + b"\x00\x00\x00\x07\x00\x00\x00\x00")
    log = open_log(path, SMALL, clean_shutdown=True)
    assert offsets_of(log.read(3, 1).read_bytes())[0][0] <= 3
    log.close()
    assert (path / first).read_bytes() == good


def test_stray_files_are_cleaned_up_and_swaps_completed(tmp_path):
    path = tmp_path / "t-0"
    build_log(path, n=20)
    batches = layout(path)
    names = sorted({b[0] for b in batches})
    # An interrupted compaction left a .swap replacing the first segment.
    first = names[0]
    replacement = bytearray()
    for name, pos, size, *_ in batches:
        if name == first:
            replacement += (path / name).read_bytes()[pos : pos + size]
    (path / (first + ".swap")).write_bytes(bytes(replacement))
    (path / first).write_bytes(b"stale")
    for stray in [
        "00000000000000000003.log.deleted",
        "00000000000000000099.index.cleaned",
        "leader-epoch-checkpoint.tmp",
        "99999999999999999999.timeindex",
        "00000000000000000003.index.swap",
    ]:
        (path / stray).write_bytes(b"x")
    log = open_log(path, SMALL, recovery_point=0)
    left = sorted(os.listdir(path))
    assert not any(n.endswith((".deleted", ".cleaned", ".tmp", ".swap")) for n in left)
    assert "99999999999999999999.timeindex" not in left
    assert all_offsets(log) == offsets_before(batches, len(batches))


def test_log_ending_below_the_log_start_checkpoint_restarts_there(tmp_path):
    path = tmp_path / "t-0"
    build_log(path, n=5, config=LogConfig())
    log = open_log(path, log_start_offset=1000, clean_shutdown=True)
    assert (log.log_start_offset, log.log_end_offset) == (1000, 1000)
    assert [s.base_offset for s in log.segments] == [1000]
    assert log.append(batch(1), 0).first_offset == 1000


def test_missing_leader_epoch_checkpoint_is_rebuilt_from_batches(tmp_path):
    path = tmp_path / "t-0"
    build_log(path, n=30, epochs=(1, 4, 6))
    expected = open_log(path, SMALL, clean_shutdown=True).epoch_entries()
    assert [e.epoch for e in expected] == [1, 4, 6]
    os.unlink(path / "leader-epoch-checkpoint")
    assert open_log(path, SMALL, clean_shutdown=True).epoch_entries() == expected
    (path / "leader-epoch-checkpoint").write_bytes(b"\x00garbage\xff")
    assert open_log(path, SMALL, clean_shutdown=True).epoch_entries() == expected


def test_a_new_log_has_no_checkpoint_until_its_first_epoch(tmp_path):
    # A new topic's partitions skip writing an empty checkpoint; a log that
    # stops before it has any epoch opens again without one.
    path = tmp_path / "t-0"
    log = open_log(path)
    assert not (path / "leader-epoch-checkpoint").exists()
    log = open_log(path)  # the first never closed, as after kill -9
    assert log.epoch_entries() == []
    log.append(batch(2), 5)
    assert (path / "leader-epoch-checkpoint").read_text() == "0\n1\n5 0\n"
    assert open_log(path).epoch_entries() == [(5, 0)]


def test_recovery_drops_epochs_of_lost_data(tmp_path):
    path = tmp_path / "t-0"
    log = open_log(path)
    log.append(batch(3), 1)
    log.flush()
    log.append(batch(3), 2)
    name = log.active_segment.log_path
    size_before_epoch_2 = log.read(3, 1).position
    log.close()
    with open(name, "r+b") as f:
        f.truncate(size_before_epoch_2 + 20)
    log = open_log(path, recovery_point=3)
    assert log.log_end_offset == 3
    assert log.epoch_entries() == [(1, 0)]
    assert log.end_offset_for_epoch(1) == (1, 3)


def test_producer_state_survives_unclean_restart_by_replaying_batches(tmp_path):
    path = tmp_path / "t-0"
    clock = FakeClock()
    log = open_log(path, SMALL, clock)
    for i in range(30):
        log.append(batch(1, producer_id=5, producer_epoch=2, base_sequence=i), 0)
    # No close, no snapshot at the end: only roll snapshots exist.
    crashed = tmp_path / "crashed-0"
    shutil.copytree(path, crashed)
    reopened = open_log(crashed, SMALL, clock, recovery_point=0)
    dup = reopened.append(batch(1, producer_id=5, producer_epoch=2, base_sequence=27), 0)
    assert dup.duplicate and dup.first_offset == 27
    assert reopened.producers.entry(5).last_seq == 29


@pytest.mark.parametrize("clean", [True, False])
def test_reopen_after_reopen_is_stable(tmp_path, clean):
    path = tmp_path / "t-0"
    build_log(path)
    data = read_all(open_log(path, SMALL, clean_shutdown=True))
    for _ in range(3):
        log = open_log(path, SMALL, clean_shutdown=clean, recovery_point=0)
        assert read_all(log) == data
        log.close()


def test_clock_is_only_used_for_roll_and_retention(tmp_path):
    # Opening a log with a clock far from the batch timestamps changes nothing.
    path = tmp_path / "t-0"
    build_log(path, n=10)
    log = open_log(path, SMALL, FakeClock(T0 + 10**12), clean_shutdown=True)
    assert len(all_offsets(log)) > 10
