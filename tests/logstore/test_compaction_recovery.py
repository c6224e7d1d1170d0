"""A crash at each step of the cleaner's segment swap: reopening gives the
log before or after the cleaning, never a retained record less."""

from __future__ import annotations

import os

import pytest

from logstore.cleaner import CleanerStats, OffsetMap, build_offset_map, clean_segments
from logstore.files import DELETED_SUFFIX, SWAP_SUFFIX

from .compaction_helpers import compact_config, kv_batch, records_of
from .helpers import T0, open_log


def _prepare(tmp_path):
    """A closed log of small segments; its records."""
    log = open_log(tmp_path / "compacted-0", compact_config())
    for i in range(80):
        log.append(kv_batch([(f"k{i % 6}", f"v{i}")], timestamp=T0 + i), 0)
    log.append(kv_batch([(None, "keyless")]), 0)
    log.append(kv_batch([("k0", "last")]), 0)
    before = records_of(log)
    log.close()
    return before


def _cleaned(log):
    """The cleaner's `.cleaned` segment for all non-active segments in one group."""
    plan = log.log_to_clean(None)
    offset_map = OffsetMap()
    build_offset_map(
        plan.segments,
        plan.first_dirty_offset,
        plan.first_uncleanable_offset,
        offset_map,
        CleanerStats(),
    )
    old = list(plan.segments)
    cleaned = clean_segments(
        log.dir,
        old,
        offset_map,
        now=log.now_ms(),
        delete_retention_ms=log.config.delete_retention_ms,
        active_producers={},
        config=log.config,
        stats=CleanerStats(),
    )
    return cleaned, old, plan.first_uncleanable_offset


def _after(before, first_uncleanable):
    below = [r for r in before if r[0] < first_uncleanable]
    latest = {k: o for o, k, _ in below if k is not None}
    return [r for r in below if r[1] is not None and latest[r[1]] == r[0]] + [
        r for r in before if r[0] >= first_uncleanable
    ]


STEPS = {
    # step name: (what is on disk when the crash happens, which state comes back)
    "cleaned written": "before",
    "indexes renamed to swap, log still cleaned": "before",
    "swap durable": "after",
    "first old segment renamed to deleted": "after",
    "all old segments renamed to deleted": "after",
    "swap renamed, deleted files left": "after",
}


@pytest.mark.parametrize("step", list(STEPS))
def test_crash_during_swap_recovers_to_before_or_after(tmp_path, step):
    before = _prepare(tmp_path)
    log = open_log(
        tmp_path / "compacted-0", compact_config(segment_bytes=100_000), clean_shutdown=True
    )
    cleaned, old, first_uncleanable = _cleaned(log)
    after = _after(before, first_uncleanable)
    assert len(old) > 2 and after != before

    if step == "indexes renamed to swap, log still cleaned":
        for path in (cleaned.index_path, cleaned.time_index_path):
            os.replace(path, path.replace(".cleaned", SWAP_SUFFIX))
    elif step != "cleaned written":
        cleaned.change_suffix(SWAP_SUFFIX)
        if step == "first old segment renamed to deleted":
            old[0].change_suffix(DELETED_SUFFIX)
        elif step in ("all old segments renamed to deleted", "swap renamed, deleted files left"):
            for seg in old:
                seg.change_suffix(DELETED_SUFFIX)
        if step == "swap renamed, deleted files left":
            cleaned.change_suffix("")
    # The crash: nothing is closed; the next start recovers everything.
    recovered = open_log(
        tmp_path / "compacted-0", compact_config(), clean_shutdown=False, recovery_point=0
    )
    got = records_of(recovered)
    assert got == (before if STEPS[step] == "before" else after)
    assert set(after) <= set(got)
    names = os.listdir(tmp_path / "compacted-0")
    assert not [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))]
    # The recovered log goes on taking writes after the old end.
    assert recovered.append(kv_batch([("k9", "new")]), 0).first_offset == before[-1][0] + 1


def test_crash_after_an_emptied_segment_became_a_swap(tmp_path):
    """A group whose records were all superseded is cleaned into an empty
    segment; a crash after its swap is durable replaces the old segment of
    that base, indexes included, and nothing else."""
    before = _prepare(tmp_path)
    log = open_log(tmp_path / "compacted-0", compact_config(), clean_shutdown=True)
    plan = log.log_to_clean(None)
    offset_map = OffsetMap()
    build_offset_map(
        plan.segments,
        plan.first_dirty_offset,
        plan.first_uncleanable_offset,
        offset_map,
        CleanerStats(),
    )
    first = plan.segments[0]
    cleaned = clean_segments(
        log.dir,
        [first],
        offset_map,
        now=log.now_ms(),
        delete_retention_ms=log.config.delete_retention_ms,
        active_producers={},
        config=log.config,
        stats=CleanerStats(),
    )
    assert cleaned.size == 0
    cleaned.change_suffix(SWAP_SUFFIX)
    second = plan.segments[1].base_offset

    recovered = open_log(
        tmp_path / "compacted-0", compact_config(), clean_shutdown=False, recovery_point=0
    )
    assert records_of(recovered) == [r for r in before if r[0] >= second]
    assert [s.base_offset for s in recovered.segments][:2] == [first.base_offset, second]
    assert recovered.segments[0].size == 0
    assert recovered.read(0, 1 << 20).start_offset == 0
