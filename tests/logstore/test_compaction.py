"""Log compaction (Kafka's log cleaner) over real segment files."""

from __future__ import annotations

import os
import re

from logstore import LogCleaner
from logstore.checkpoint import read_offset_checkpoint
from logstore.files import CLEANER_OFFSET_CHECKPOINT
from wire.records import (
    DELETE_HORIZON_MASK,
    GZIP,
    LOG_APPEND_TIME,
    RecordInput,
    build_batch,
    iter_batches,
    iter_records,
)

from .compaction_helpers import (
    TP,
    clean,
    compact_config,
    kv_batch,
    latest_per_key,
    records_of,
    timestamps_of,
)
from .helpers import T0, FakeClock, open_log, read_all

DAY = 24 * 60 * 60 * 1000


def _fill(log, n: int, keys: int = 5, *, timestamp: int = T0) -> None:
    for i in range(n):
        log.append(kv_batch([(f"k{i % keys}", f"v{i}")], timestamp=timestamp + i), 0)


def _expected_after_clean(before, first_uncleanable: int):
    """Below the first uncleanable offset only each key's last record stays
    (keyless records go); from it on, everything stays."""
    below = [r for r in before if r[0] < first_uncleanable]
    latest = {key: offset for offset, key, _ in below if key is not None}
    kept = [r for r in below if r[1] is not None and latest[r[1]] == r[0]]
    return kept + [r for r in before if r[0] >= first_uncleanable]


def test_latest_value_per_key_survives_at_its_offset_and_keyless_records_go(tmp_path):
    log = open_log(tmp_path / "compacted-0", compact_config())
    _fill(log, 40)
    log.append(kv_batch([(None, "no key"), ("k1", "v-last")]), 0)
    _fill(log, 20)
    before = records_of(log)
    active_base = log.active_segment.base_offset
    timestamps = timestamps_of(log)
    leo = log.log_end_offset

    cleaned = clean(log, tmp_path)

    assert cleaned is not None and cleaned.result.end_offset == active_base
    after = records_of(log)
    assert after == _expected_after_clean(before, active_base)
    assert (40, None, "no key") not in after
    # Offsets, values and timestamps are the originals.
    assert all(timestamps_of(log)[o] == timestamps[o] for o, _, _ in after)
    assert log.log_end_offset == leo and log.log_start_offset == 0
    # Each key once below the active segment.
    below = [k for o, k, _ in after if o < active_base]
    assert len(below) == len(set(below)) == 5
    # The latest value of every key is what a consumer reads.
    assert latest_per_key(after) == latest_per_key(before)


def test_active_segment_is_never_cleaned(tmp_path):
    log = open_log(tmp_path / "compacted-0", compact_config(segment_bytes=100_000))
    _fill(log, 30)
    before = records_of(log)
    assert len(log.segments) == 1

    assert clean(log, tmp_path) is None
    assert records_of(log) == before


def test_records_newer_than_min_compaction_lag_stay(tmp_path):
    clock = FakeClock(T0 + 1000)
    cfg = compact_config(min_compaction_lag_ms=60_000)
    log = open_log(tmp_path / "compacted-0", cfg, clock)
    _fill(log, 30, timestamp=T0 - 120_000)  # old enough
    lag_start = log.log_end_offset
    _fill(log, 30, timestamp=T0)  # within the lag
    before = records_of(log)

    cleaned = clean(log, tmp_path)

    first_young = next(
        s.base_offset
        for s in log.segments
        if s.base_offset >= lag_start - 10 and s.largest_timestamp() > T0 - 60_000
    )
    assert cleaned is not None and cleaned.result.end_offset <= first_young
    after = records_of(log)
    assert [r for r in after if r[0] >= first_young] == [r for r in before if r[0] >= first_young]
    assert after == _expected_after_clean(before, cleaned.result.end_offset)

    # Once the lag has passed, they are cleaned too.
    clock.advance(120_000)
    again = clean(log, tmp_path)
    assert again is not None and again.result.end_offset == log.active_segment.base_offset


def test_tombstones_stay_until_delete_retention_after_the_cleaning_that_kept_them(tmp_path):
    clock = FakeClock()
    cfg = compact_config(delete_retention_ms=DAY)
    log = open_log(tmp_path / "compacted-0", cfg, clock)
    _fill(log, 20)
    tombstone = log.append(kv_batch([("k2", None)]), 0).first_offset
    _fill(log, 20, keys=2)  # k0 and k1 only: k2's tombstone stays the latest
    log.roll()

    assert clean(log, tmp_path) is not None
    assert (tombstone, "k2", None) in records_of(log)
    data = read_all(log)
    holder = next(h for _, h in iter_batches(data) if h.base_offset == tombstone)
    assert holder.attributes & DELETE_HORIZON_MASK
    assert holder.base_timestamp == clock.now + DAY
    assert log.latest_delete_horizon == clock.now + DAY

    # Before the horizon, cleaning again keeps it.
    clock.advance(DAY - 1)
    clean(log, tmp_path)
    assert (tombstone, "k2", None) in records_of(log)

    # At the horizon the cleaner comes back for it, with nothing dirty.
    clock.advance(1)
    again = clean(log, tmp_path)
    assert again is not None
    assert all(key != "k2" for _, key, _ in records_of(log))
    assert log.latest_delete_horizon == -1


def test_dirty_ratio_must_exceed_min_cleanable_dirty_ratio(tmp_path):
    cfg = compact_config(min_cleanable_dirty_ratio=0.5)
    log = open_log(tmp_path / "compacted-0", cfg)
    _fill(log, 60, keys=60)
    log.roll()
    cleaner = LogCleaner()
    assert clean(log, tmp_path, cleaner) is not None  # everything dirty: ratio 1
    before = records_of(log)
    plan = log.log_to_clean(cleaner.checkpoints(str(tmp_path))[TP])
    assert plan.cleanable_bytes == 0

    # A little dirt on a compacted log: below the ratio, nothing happens.
    _fill(log, 4, keys=60)
    log.roll()
    plan = log.log_to_clean(cleaner.checkpoints(str(tmp_path))[TP])
    assert 0 < plan.cleanable_ratio <= 0.5
    assert clean(log, tmp_path, cleaner) is None
    assert records_of(log)[: len(before)] == before

    # Enough dirt: cleaned.
    _fill(log, 80, keys=60)
    log.roll()
    assert log.log_to_clean(cleaner.checkpoints(str(tmp_path))[TP]).cleanable_ratio > 0.5
    assert clean(log, tmp_path, cleaner) is not None
    assert len(records_of(log)) == 60


def test_max_compaction_lag_forces_a_cleaning_below_the_ratio(tmp_path):
    clock = FakeClock(T0)
    cfg = compact_config(min_cleanable_dirty_ratio=0.99, max_compaction_lag_ms=60_000)
    log = open_log(tmp_path / "compacted-0", cfg, clock)
    cleaner = LogCleaner()
    _fill(log, 60)
    log.roll()
    clean(log, tmp_path, cleaner)
    _fill(log, 4, timestamp=T0 + 100)
    log.roll()
    assert clean(log, tmp_path, cleaner) is None
    clock.advance(120_000)
    assert clean(log, tmp_path, cleaner) is not None


def test_cleaner_checkpoint_survives_reopen(tmp_path):
    log = open_log(tmp_path / "compacted-0", compact_config())
    _fill(log, 50)
    cleaned = clean(log, tmp_path)
    end = cleaned.result.end_offset
    log.close()

    path = tmp_path / CLEANER_OFFSET_CHECKPOINT
    assert path.read_text() == f"0\n1\ncompacted 0 {end}\n"
    assert read_offset_checkpoint(str(path)) == {TP: end}

    reopened = open_log(tmp_path / "compacted-0", compact_config(), clean_shutdown=True)
    fresh = LogCleaner()
    assert fresh.checkpoints(str(tmp_path)) == {TP: end}
    plan = reopened.log_to_clean(fresh.checkpoints(str(tmp_path))[TP])
    assert plan.first_dirty_offset == end and plan.cleanable_bytes == 0


def test_reading_across_cleaned_segments_returns_records_in_order(tmp_path):
    log = open_log(tmp_path / "compacted-0", compact_config())
    _fill(log, 200, keys=40)
    clean(log, tmp_path)
    # A second pass merges the now small segments.
    _fill(log, 40, keys=40)
    clean(log, tmp_path)
    offsets = [o for o, _, _ in records_of(log)]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    # Every offset reads from wherever it is asked: the next retained record.
    for start in range(0, log.log_end_offset, 7):
        result = log.read(start, 1 << 20)
        first = next(iter_batches(result.read_bytes()))[1]
        assert first.last_offset >= start
        assert min(o for o in offsets if o >= start) <= first.last_offset


def test_cleaning_merges_small_segments(tmp_path):
    log = open_log(tmp_path / "compacted-0", compact_config())
    _fill(log, 200, keys=3)
    clean(log, tmp_path)
    _fill(log, 20, keys=3)
    segments_before = len(log.segments)
    clean(log, tmp_path)
    assert len(log.segments) < segments_before
    names = os.listdir(tmp_path / "compacted-0")
    assert not [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))]
    assert sorted(n for n in names if n.endswith(".log")) == [
        os.path.basename(s.log_path) for s in log.segments
    ]


def test_rebuilt_batches_keep_offsets_codec_producer_fields_and_timestamp_type(tmp_path):
    log = open_log(tmp_path / "compacted-0", compact_config())
    # Three records, one of which stays; gzip; LogAppendTime.
    b = bytearray(
        build_batch(
            [
                RecordInput(b"a", b"1", timestamp=T0),
                RecordInput(b"b", b"2", timestamp=T0 + 1),
                RecordInput(b"c", b"3", timestamp=T0 + 2),
            ],
            compression=GZIP,
            timestamp_type=LOG_APPEND_TIME,
            max_timestamp=T0 + 50,
        )
    )
    log.append(b, 4)
    log.append(kv_batch([("a", "new-a"), ("c", "new-c")]), 4)
    log.roll()
    clean(log, tmp_path)
    data = read_all(log)
    (pos, h), *_ = iter_batches(data)
    assert (h.base_offset, h.last_offset, h.records_count) == (0, 2, 1)
    assert h.compression == GZIP and h.is_log_append_time and h.partition_leader_epoch == 4
    (record,) = list(iter_records(data, pos))
    assert (record.offset_delta, record.key, record.value) == (1, b"b", b"2")
    assert timestamps_of(log)[1] == T0 + 50


def test_idempotent_producer_dedupe_survives_cleaning_and_reopen(tmp_path):
    cfg = compact_config()
    log = open_log(tmp_path / "compacted-0", cfg)
    last = None
    for seq in range(30):
        last = kv_batch([("k", f"v{seq}")], producer_id=7, producer_epoch=0, base_sequence=seq)
        log.append(bytearray(last), 0)
    # A non-idempotent write supersedes the producer's last record.
    log.append(kv_batch([("k", "other")]), 0)
    log.roll()
    clean(log, tmp_path)

    data = read_all(log)
    producer_batches = [h for _, h in iter_batches(data) if h.producer_id == 7]
    # Only the producer's last batch stays, emptied: it keeps the last sequence.
    assert [(h.base_offset, h.base_sequence, h.records_count) for h in producer_batches] == [
        (29, 29, 0)
    ]
    assert records_of(log) == [(30, "k", "other")]

    retry = log.append(bytearray(last), 0)
    assert retry.duplicate and retry.first_offset == 29
    log.close()

    reopened = open_log(tmp_path / "compacted-0", cfg, clean_shutdown=True)
    assert reopened.append(bytearray(last), 0).duplicate
    reopened.close()
    # Even without a snapshot the state comes back from the log itself.
    for name in os.listdir(tmp_path / "compacted-0"):
        if name.endswith(".snapshot"):
            os.unlink(tmp_path / "compacted-0" / name)
    rebuilt = open_log(tmp_path / "compacted-0", cfg, clean_shutdown=True)
    assert rebuilt.append(bytearray(last), 0).duplicate
    nxt = kv_batch([("k", "v30")], producer_id=7, producer_epoch=0, base_sequence=30)
    info = rebuilt.append(nxt, 0)
    assert not info.duplicate and info.first_offset == rebuilt.log_end_offset - 1


def test_compact_delete_applies_retention_and_compaction(tmp_path):
    clock = FakeClock(T0 + 10 * DAY)
    cfg = compact_config(cleanup_policy="compact,delete", retention_ms=DAY)
    log = open_log(tmp_path / "compacted-0", cfg, clock)
    _fill(log, 40, keys=40, timestamp=T0)  # older than retention
    _fill(log, 40, timestamp=T0 + 10 * DAY)
    log.roll()
    clean(log, tmp_path)
    # Compaction: k0..k4 once (their newer values), k5..k39 once.
    assert sorted(k for _, k, _ in records_of(log)) == sorted(f"k{i}" for i in range(40))
    # Retention: the old records go with their segments.
    assert log.delete_old_segments() > 0
    assert sorted(k for _, k, _ in records_of(log)) == [f"k{i}" for i in range(5)]
    assert log.log_start_offset >= 40


def test_epochs_offsets_and_log_start_unchanged_by_cleaning(tmp_path):
    log = open_log(tmp_path / "compacted-0", compact_config())
    for epoch in range(3):
        log.assign_epoch_start_offset(epoch)
        for i in range(20):
            log.append(kv_batch([(f"k{i % 4}", f"e{epoch}-{i}")]), epoch)
    entries, leo, start = log.epoch_entries(), log.log_end_offset, log.log_start_offset
    clean(log, tmp_path)
    assert (log.epoch_entries(), log.log_end_offset, log.log_start_offset) == (entries, leo, start)
    assert log.end_offset_for_epoch(1) == (1, 40)


def test_a_read_in_flight_keeps_the_replaced_segment_readable(tmp_path):
    log = open_log(tmp_path / "compacted-0", compact_config())
    _fill(log, 60)
    in_flight = log.read(0, 1 << 20)
    expected = bytes(in_flight.read_bytes())
    clean(log, tmp_path)
    # The old file is unlinked but still open for the read that holds it.
    assert not os.path.exists(in_flight.file.path)
    assert in_flight.read_bytes() == expected
    out = tmp_path / "sent"
    with open(out, "wb") as f:
        sent = os.sendfile(f.fileno(), in_flight.fd, in_flight.position, in_flight.size)
    assert sent == in_flight.size and out.read_bytes() == expected


def test_a_cleaning_overtaken_by_retention_is_dropped(tmp_path):
    from logstore.cleaner import clean_log

    log = open_log(tmp_path / "compacted-0", compact_config(cleanup_policy="compact,delete"))
    _fill(log, 60)
    before = records_of(log)
    plan = log.log_to_clean(None)
    log.delete_records_before(plan.segments[1].base_offset)
    result = clean_log(log, plan)
    assert result.end_offset is None
    assert records_of(log) == [r for r in before if r[0] >= plan.segments[1].base_offset]
    names = os.listdir(tmp_path / "compacted-0")
    assert not [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))]


def test_kafka_dump_log_segments_reads_cleaned_segments(tmp_path):
    from .test_kafka_dump_log_segments import dump

    clock = FakeClock()
    log = open_log(tmp_path / "compacted-0", compact_config(segment_bytes=1500), clock)
    for seq in range(40):
        log.append(
            kv_batch(
                [(f"k{seq}", f"v{seq}"), ("t", None if seq % 2 else "x"), ("k0", f"v{seq}")],
                compression=GZIP if seq % 2 else 0,
                producer_id=5,
                producer_epoch=0,
                base_sequence=3 * seq,
            ),
            1,
        )
    log.append(kv_batch([("k0", "final")]), 1)
    log.roll()
    clean(log, tmp_path)
    clean(log, tmp_path)
    expected = [o for o, _, _ in records_of(log)]
    log.close()
    segments = [s for s in log.segments if s.size]
    text = dump(*(s.log_path for s in segments), extra=["--deep-iteration"])
    assert text.count("isvalid: true") == text.count("baseOffset:") > 1
    assert "deleteHorizonMs: OptionalLong[" in text and "compresscodec: gzip" in text
    offsets = [int(o) for o in re.findall(r"\| offset: (\d+)", text)]
    assert offsets == expected
    text = dump(*(s.index_path for s in segments), extra=["--verify-index-only"])
    assert "Mismatches" not in text


def test_a_partition_created_again_does_not_inherit_the_cleaner_progress(tmp_path):
    import shutil

    cleaner = LogCleaner()
    log = open_log(tmp_path / "compacted-0", compact_config())
    _fill(log, 60)
    end = clean(log, tmp_path, cleaner).result.end_offset
    log.delete()
    shutil.rmtree(tmp_path / "compacted-0", ignore_errors=True)

    again = open_log(tmp_path / "compacted-0", compact_config())
    _fill(again, 60)
    before = records_of(again)
    active_base = again.active_segment.base_offset
    assert active_base <= end  # the old progress would cover it all
    cleaned = clean(again, tmp_path, cleaner)
    # Everything is dirty again, so it is compacted from the start.
    assert cleaned is not None and cleaned.result.end_offset == active_base
    assert records_of(again) == _expected_after_clean(before, active_base)


def test_appends_go_on_while_segments_are_rewritten(tmp_path):
    """The rewrite runs without the log's lock: the log takes appends between
    planning and the swap, and the swap keeps them."""
    from logstore.cleaner import CleanerStats, OffsetMap, build_offset_map, clean_segments

    log = open_log(tmp_path / "compacted-0", compact_config())
    _fill(log, 60)
    plan = log.log_to_clean(None)
    offset_map = OffsetMap()
    stats = CleanerStats()
    build_offset_map(
        plan.segments, plan.first_dirty_offset, plan.first_uncleanable_offset, offset_map, stats
    )
    group = list(plan.segments[:3])
    cleaned = clean_segments(
        log.dir,
        group,
        offset_map,
        now=log.now_ms(),
        delete_retention_ms=DAY,
        active_producers={},
        config=log.config,
        stats=stats,
    )
    # Meanwhile producers write, rolling new segments.
    _fill(log, 30, keys=2)
    before = records_of(log)
    assert log.replace_segments(cleaned, group, list(plan.sizes[:3]))
    after = records_of(log)
    assert [r for r in after if r[0] >= 60] == [r for r in before if r[0] >= 60]
    assert len(after) < len(before) and log.log_end_offset == 90


def test_cleaned_log_passes_full_recovery(tmp_path):
    """Every rewritten batch has a valid CRC and offsets: recovering the whole
    log after an unclean stop cuts nothing."""
    clock = FakeClock()
    log = open_log(tmp_path / "compacted-0", compact_config(), clock)
    for i in range(120):
        pairs = [(f"k{i % 7}", f"v{i}"), (None, "x"), (f"k{i % 3}", None if i % 5 else "y")]
        log.append(kv_batch(pairs, compression=i % 5, timestamp=T0 + i), 0)
    clean(log, tmp_path)
    after = records_of(log)
    log.close()
    recovered = open_log(
        tmp_path / "compacted-0", compact_config(), clock, clean_shutdown=False, recovery_point=0
    )
    assert records_of(recovered) == after


def test_compaction_settings_have_kafkas_names():
    from logstore import LogConfig

    topic = LogConfig.from_topic_config(
        {
            "cleanup.policy": "compact,delete",
            "min.cleanable.dirty.ratio": "0.2",
            "min.compaction.lag.ms": "1000",
            "max.compaction.lag.ms": "5000",
            "delete.retention.ms": "60000",
        }
    )
    assert (topic.compact_enabled, topic.delete_enabled) == (True, True)
    assert (
        topic.min_cleanable_dirty_ratio,
        topic.min_compaction_lag_ms,
        topic.max_compaction_lag_ms,
        topic.delete_retention_ms,
    ) == (0.2, 1000, 5000, 60000)
    broker = LogConfig.from_broker_config(
        {
            "log.cleaner.min.cleanable.ratio": "0.3",
            "log.cleaner.min.compaction.lag.ms": "7",
            "log.cleaner.max.compaction.lag.ms": "9",
            "log.cleaner.delete.retention.ms": "11",
        }
    )
    assert (
        broker.min_cleanable_dirty_ratio,
        broker.min_compaction_lag_ms,
        broker.max_compaction_lag_ms,
        broker.delete_retention_ms,
    ) == (0.3, 7, 9, 11)
    assert not LogConfig().compact_enabled


def test_groups_are_bounded_by_segment_bytes_and_index_bytes(tmp_path):
    """Kafka's groupSegmentsBySize: a cleaned segment replaces as many old
    ones as fit segment.bytes and, for each index, segment.index.bytes."""

    def cleaned_segment_count(index_bytes: int) -> int:
        path = tmp_path / f"compacted-{index_bytes}"
        log = open_log(path, compact_config(index_interval_bytes=0))
        for i in range(120):  # unique keys: nothing goes, sizes stay
            log.append(kv_batch([(f"k{i}", "v")]), 0)
        log.roll()
        # Every batch but each segment's first has an offset index entry.
        entries = [s.offset_index.entries for s in log.segments[:-1]]
        assert min(entries) > 0
        log.update_config(
            log.config.replace(segment_bytes=100_000, segment_index_bytes=index_bytes)
        )
        clean(log, tmp_path)
        return len(log.segments) - 1

    assert cleaned_segment_count(10 * 1024 * 1024) == 1
    # Room for the time index entries of about two old segments per group.
    assert cleaned_segment_count(2 * 12 * 8) > 3


def test_a_log_with_a_corrupt_batch_is_left_alone_and_marked_uncleanable(tmp_path):
    log = open_log(tmp_path / "compacted-0", compact_config())
    _fill(log, 60)
    first = log.segments[0]
    # Flip a byte of the first batch's last record (its value): the CRC no longer matches.
    with open(first.log_path, "r+b") as f:
        size = next(first.batches())[1].size
        f.seek(size - 2)
        byte = f.read(1)
        f.seek(size - 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    files = sorted(os.listdir(tmp_path / "compacted-0"))
    contents = [open(s.log_path, "rb").read() for s in log.segments]
    cleaner = LogCleaner()

    assert clean(log, tmp_path, cleaner) is None
    assert cleaner.uncleanable == {(str(tmp_path), TP)}
    assert sorted(os.listdir(tmp_path / "compacted-0")) == files
    assert [open(s.log_path, "rb").read() for s in log.segments] == contents
    # Skipped from then on; other logs are still cleaned.
    assert clean(log, tmp_path, cleaner) is None
    other = open_log(tmp_path / "other-0", compact_config())
    _fill(other, 60)
    from logstore import CleanerCandidate

    cleaned = cleaner.clean_filthiest(
        [
            CleanerCandidate(TP, log, str(tmp_path)),
            CleanerCandidate(("other", 0), other, str(tmp_path)),
        ]
    )
    assert cleaned is not None and cleaned.topic_partition == ("other", 0)
