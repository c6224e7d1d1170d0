"""Random interleavings of transactions against a model: the log's first
unstable offset, LSO and aborted transactions stay the model's, through
rolls, high watermark moves and clean or unclean restarts."""

from __future__ import annotations

import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from logstore import LogConfig
from logstore.transaction_index import AbortedTxn

from .helpers import batch, open_log

PRODUCERS = (11, 22, 33)
CONFIG = LogConfig(segment_bytes=500, index_interval_bytes=100)

operations = st.lists(
    st.one_of(
        st.tuples(st.just("send"), st.sampled_from(PRODUCERS), st.integers(1, 3)),
        st.tuples(st.just("end"), st.sampled_from(PRODUCERS), st.booleans()),
        st.tuples(st.just("plain"), st.integers(1, 3)),
        st.tuples(st.just("replicate"), st.integers(0, 100)),
        st.tuples(st.just("roll")),
        st.tuples(st.just("restart"), st.booleans()),
    ),
    max_size=40,
)


class Model:
    def __init__(self) -> None:
        self.open: dict[int, int] = {}  # producer -> first offset
        self.ended: list[tuple[int, int]] = []  # (first offset, marker offset)
        self.all_ended: list[tuple[int, int]] = []
        self.aborted: list[AbortedTxn] = []
        self.seq = dict.fromkeys(PRODUCERS, 0)
        self.hw = 0

    def first_unstable(self) -> int | None:
        firsts = list(self.open.values())
        firsts += [first for first, marker in self.ended if marker >= self.hw]
        return min(firsts) if firsts else None

    def end(self, pid: int, marker: int, commit: bool) -> None:
        first = self.open.pop(pid, None)
        if first is None:
            return
        self.ended.append((first, marker))
        self.all_ended.append((first, marker))
        if not commit:
            others = list(self.open.values())
            lso = min(others) if others else marker + 1
            self.aborted.append(AbortedTxn(pid, first, marker, lso))


@settings(max_examples=100, deadline=None)
@given(operations)
def test_lso_and_aborted_transactions_follow_the_model(ops):
    model = Model()
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/t-0"
        log = open_log(path, CONFIG)
        for op in ops:
            leo = log.log_end_offset
            if op[0] == "send":
                _, pid, n = op
                log.append(
                    batch(
                        n,
                        producer_id=pid,
                        producer_epoch=0,
                        base_sequence=model.seq[pid],
                        is_transactional=True,
                    ),
                    0,
                )
                model.seq[pid] += n
                model.open.setdefault(pid, leo)
            elif op[0] == "end":
                _, pid, commit = op
                log.append_transaction_marker(
                    pid, 0, commit=commit, coordinator_epoch=0, leader_epoch=0
                )
                model.end(pid, leo, commit)
            elif op[0] == "plain":
                log.append(batch(op[1]), 0)
            elif op[0] == "replicate":
                target = model.hw + (leo - model.hw) * op[1] // 100
                log.maybe_increment_high_watermark(target)
                model.hw = max(model.hw, target)
            elif op[0] == "roll":
                log.roll()
            else:
                clean = op[1]
                if clean:
                    log.close()
                # As in Kafka, the snapshot at the log end keeps open
                # transactions but not ended ones awaiting replication; an
                # unclean restart (recovery point 0) replays every marker.
                model.ended = [] if clean else list(model.all_ended)
                log = open_log(
                    path,
                    CONFIG,
                    clean_shutdown=clean,
                    recovery_point=leo if clean else 0,
                    high_watermark=model.hw,
                )
            fu = model.first_unstable()
            assert log.first_unstable_offset == fu
            assert log.last_stable_offset == (fu if fu is not None and fu < model.hw else model.hw)
            end = log.log_end_offset
            assert log.collect_aborted_transactions(0, end) == model.aborted
        log.close()
