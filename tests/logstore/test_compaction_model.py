"""Property: after cleaning, each key's latest value read back from the log
equals a dict model of the writes."""

from __future__ import annotations

import shutil
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .compaction_helpers import clean, compact_config, kv_batch, records_of
from .helpers import T0, FakeClock, open_log

DAY = 24 * 60 * 60 * 1000

keys = st.sampled_from([f"key-{i}" for i in range(6)])
values = st.one_of(st.none(), st.text(alphabet="abcdef", min_size=0, max_size=12))
batches = st.lists(st.lists(st.tuples(keys, values), min_size=1, max_size=4), max_size=60)


def _latest(records):
    latest = {}
    for _, key, value in records:
        latest[key] = value
    return latest


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(writes=batches, cleanings=st.integers(1, 3))
def test_latest_value_per_key_matches_a_dict_model(writes, cleanings):
    tmp = tempfile.mkdtemp()
    try:
        clock = FakeClock()
        log = open_log(f"{tmp}/compacted-0", compact_config(segment_bytes=300), clock)
        model = {}
        chunk = max(1, len(writes) // cleanings)
        for start in range(0, len(writes), chunk):
            for pairs in writes[start : start + chunk]:
                log.append(kv_batch(pairs, timestamp=T0), 0)
                model.update(pairs)
            clean(log, tmp)
        log.roll()
        clean(log, tmp)
        records = records_of(log)
        # Tombstones are still within delete.retention.ms: they read back as None.
        assert _latest(records) == model
        offsets = [o for o, _, _ in records]
        assert offsets == sorted(set(offsets))
        # Each key at most once: everything is below the (empty) active segment.
        assert len({k for _, k, _ in records}) == len(records)

        # Past the delete horizon the tombstones go, the values stay.
        clock.advance(DAY + 1)
        clean(log, tmp)
        assert _latest(records_of(log)) == {k: v for k, v in model.items() if v is not None}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
