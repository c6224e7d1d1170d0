"""A leader and its followers as `Partition`s in one process, on trio's autojump clock.

The high watermark rules, acks=all, min.insync.replicas, ISR shrink and
expansion, and reads bounded by who is reading, driven exactly: followers
"fetch" by calling what the Fetch handler calls, and time moves only when
every task waits.
"""

from __future__ import annotations

import trio
import trio.testing

from broker.metadata.image import PartitionRegistration
from broker.partition import ISR_REFUSAL_BACKOFF_MS, Partition, PartitionError
from logstore import LogConfig, UnifiedLog
from tests.logstore.helpers import T0, batch, offsets_of
from wire.error_codes import ErrorCode

LAG_MS = 10_000


def clock_ms() -> int:
    return int(trio.current_time() * 1000)


def leader(tmp_path, replicas=(1, 2, 3), isr=None, min_isr=2, epoch=5) -> Partition:
    log = UnifiedLog.open(str(tmp_path / "t-0"), LogConfig())
    p = Partition(
        ("t", 0), log, 1, clock_ms, min_insync_replicas=min_isr, replica_lag_time_max_ms=LAG_MS
    )
    p.make_leader(
        PartitionRegistration(tuple(replicas), tuple(isr or replicas), 1, leader_epoch=epoch)
    )
    return p


def test_the_high_watermark_waits_for_every_in_sync_follower(tmp_path):
    async def main():
        p = leader(tmp_path)
        p.append_as_leader(batch(3), required_acks=-1)
        assert (p.log_end_offset, p.high_watermark) == (3, 0)
        p.update_follower_fetch_state(2, 3, 0)
        assert p.high_watermark == 0  # follower 3 is in the ISR and has nothing
        p.update_follower_fetch_state(3, 2, 0)
        assert p.high_watermark == 2
        p.update_follower_fetch_state(3, 3, 0)
        assert p.high_watermark == 3

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_consumers_read_to_the_high_watermark_and_followers_to_the_log_end(tmp_path):
    async def main():
        p = leader(tmp_path)
        p.append_as_leader(batch(2), required_acks=1)
        p.update_follower_fetch_state(2, 2, 0)
        p.update_follower_fetch_state(3, 1, 0)
        assert p.high_watermark == 1
        consumer = offsets_of(p.read(0, 1 << 20, read_committed=False, min_one=True).read_bytes())
        replica = offsets_of(p.read_for_replica(0, 1 << 20, min_one=True).read_bytes())
        # A consumer gets only whole batches below the high watermark: none here.
        assert consumer == []
        assert replica == [(0, 1)]

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_acks_all_is_refused_before_the_append_when_the_isr_is_too_small(tmp_path):
    async def main():
        p = leader(tmp_path, isr=(1,), min_isr=2)
        try:
            p.append_as_leader(batch(1), required_acks=-1)
        except PartitionError as e:
            assert e.code == ErrorCode.NOT_ENOUGH_REPLICAS
        else:
            raise AssertionError("acks=all under min.insync.replicas was accepted")
        assert p.log_end_offset == 0  # nothing was written
        p.append_as_leader(batch(1), required_acks=1)  # acks=1 does not care
        assert p.log_end_offset == 1

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_transaction_marker_is_refused_before_the_append_when_the_isr_is_too_small(tmp_path):
    """Markers are acks=all writes (Kafka's WriteTxnMarkers): refused, with
    nothing written, while under min ISR, so the coordinator's retry after the
    ISR grows back writes the one marker (a marker appended under min ISR
    would wait at a stuck high watermark and be written again)."""

    async def main():
        p = leader(tmp_path, isr=(1,), min_isr=2)
        txn = {"producer_id": 7, "producer_epoch": 0, "is_transactional": True}
        p.append_as_leader(batch(1, base_sequence=0, **txn), required_acks=1)
        try:
            p.append_transaction_marker(7, 1, commit=True, coordinator_epoch=0)
        except PartitionError as e:
            assert e.code == ErrorCode.NOT_ENOUGH_REPLICAS
        else:
            raise AssertionError("a marker under min.insync.replicas was appended")
        assert p.log_end_offset == 1  # nothing was written
        # The ISR grows back (the controller's new registration, same epoch).
        p.make_leader(PartitionRegistration((1, 2, 3), (1, 2), 1, leader_epoch=5))
        info = p.append_transaction_marker(7, 1, commit=True, coordinator_epoch=0)
        assert (info.first_offset, p.log_end_offset) == (1, 2)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_min_insync_replicas_above_the_replication_factor_is_capped(tmp_path):
    async def main():
        # Kafka's effectiveMinIsr: a one-replica topic with min.insync.replicas=2
        # takes acks=all writes.
        p = leader(tmp_path, replicas=(1,), min_isr=2)
        info = p.append_as_leader(batch(1), required_acks=-1)
        assert p.high_watermark == info.next_offset == 1
        assert p.replication_error(1) == ErrorCode.NONE

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_acks_all_answers_once_the_isr_has_the_append(tmp_path):
    async def main():
        p = leader(tmp_path, replicas=(1, 2), min_isr=2)
        info = p.append_as_leader(batch(2), required_acks=-1)
        assert p.replication_error(info.next_offset) is None  # still waiting
        answered = []

        async def produce():
            while (error := p.replication_error(info.next_offset)) is None:
                await p.wait_for_change()
            answered.append((error, trio.current_time()))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(produce)
            await trio.sleep(1)
            assert not answered
            p.update_follower_fetch_state(2, info.next_offset, 0)
        assert answered == [(ErrorCode.NONE, 1)]

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_follower_that_stops_fetching_leaves_the_isr_after_the_lag_time(tmp_path):
    async def main():
        p = leader(tmp_path, min_isr=2)
        p.append_as_leader(batch(1), required_acks=1)
        p.update_follower_fetch_state(2, 1, 0)
        await trio.sleep(LAG_MS / 1000 / 2)
        assert p.isr_shrink() is None  # both still within the lag time
        p.update_follower_fetch_state(2, 1, 0)  # follower 2 keeps up, 3 is silent
        await trio.sleep(LAG_MS / 1000 / 2 + 0.001)
        assert p.isr_shrink() == (1, 2)
        # The controller accepts: the new registration comes back.
        p.make_leader(PartitionRegistration((1, 2, 3), (1, 2), 1, 5, partition_epoch=1))
        assert p.isr == (1, 2) and p.high_watermark == 1

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_follower_rejoins_the_isr_once_it_reaches_the_high_watermark(tmp_path):
    async def main():
        p = leader(tmp_path, isr=(1, 2), min_isr=2)
        p.append_as_leader(batch(4), required_acks=1)
        p.update_follower_fetch_state(2, 4, 0)
        assert p.high_watermark == 4
        assert p.update_follower_fetch_state(3, 2, 0) is None  # behind the high watermark
        assert p.update_follower_fetch_state(3, 4, 0) == (1, 2, 3)
        assert p.pending_isr == (1, 2, 3)
        # While the change is pending the high watermark already waits for it.
        p.append_as_leader(batch(1), required_acks=1)
        p.update_follower_fetch_state(2, 5, 0)
        assert p.high_watermark == 4

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_after_a_refused_isr_change_the_next_proposal_waits(tmp_path):
    async def main():
        p = leader(tmp_path, isr=(1, 2), min_isr=2)
        p.append_as_leader(batch(4), required_acks=1)
        p.update_follower_fetch_state(2, 4, 0)
        assert p.update_follower_fetch_state(3, 4, 0) == (1, 2, 3)
        p.isr_change_failed()  # the controller refused it
        assert p.pending_isr is None
        assert p.update_follower_fetch_state(3, 4, 0) is None
        await trio.sleep(ISR_REFUSAL_BACKOFF_MS / 1000 - 0.001)
        assert p.update_follower_fetch_state(3, 4, 0) is None
        await trio.sleep(0.001)
        assert p.update_follower_fetch_state(3, 4, 0) == (1, 2, 3)
        # New metadata for the partition ends the wait at once.
        p.isr_change_failed()
        p.make_leader(PartitionRegistration((1, 2, 3), (1, 2), 1, 5, partition_epoch=1))
        assert p.update_follower_fetch_state(3, 4, 0) == (1, 2, 3)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_the_high_watermark_stays_while_the_isr_is_under_min_isr(tmp_path):
    async def main():
        p = leader(tmp_path, isr=(1,), min_isr=2)
        p.append_as_leader(batch(2), required_acks=1)
        assert p.high_watermark == 0
        p.make_leader(PartitionRegistration((1, 2, 3), (1, 2), 1, 5, partition_epoch=1))
        p.update_follower_fetch_state(2, 2, 0)
        assert p.high_watermark == 2

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_new_leader_epoch_starts_at_the_log_end_and_fences_the_old_one(tmp_path):
    async def main():
        p = leader(tmp_path, replicas=(1,), min_isr=1, epoch=5)
        p.append_as_leader(batch(3), required_acks=1)
        p.make_leader(PartitionRegistration((1,), (1,), 1, leader_epoch=7, partition_epoch=2))
        assert p.log.end_offset_for_epoch(5) == (5, 3)
        assert p.check_leader_epoch(6) == ErrorCode.FENCED_LEADER_EPOCH
        assert p.check_leader_epoch(8) == ErrorCode.UNKNOWN_LEADER_EPOCH
        assert p.check_leader_epoch(7) == ErrorCode.NONE

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_follower_copies_the_leaders_batches_as_they_are(tmp_path):
    async def main():
        lead = leader(tmp_path / "a", replicas=(1, 2), min_isr=1)
        lead.append_as_leader(batch(2), required_acks=1)
        lead.append_as_leader(batch(1), required_acks=1)
        flog = UnifiedLog.open(str(tmp_path / "b" / "t-0"), LogConfig())
        follower = Partition(("t", 0), flog, 2, clock_ms)
        follower.make_follower(PartitionRegistration((1, 2), (1, 2), 1, leader_epoch=5))
        assert not follower.is_leader
        try:
            follower.append_as_leader(batch(1))
        except PartitionError as e:
            assert e.code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        else:
            raise AssertionError("a follower took a produce")
        fetched = lead.read_for_replica(0, 1 << 20, min_one=True).read_bytes()
        follower.append_as_follower(bytearray(fetched))
        assert follower.log_end_offset == 3
        lead.update_follower_fetch_state(2, follower.log_end_offset, 0)
        assert lead.high_watermark == 3
        assert follower.log.epoch_entries()[-1][0] == 5

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_read_committed_stops_at_an_open_transaction_and_lists_aborted_ones(tmp_path):
    async def main():
        p = leader(tmp_path, replicas=(1,), min_isr=1)
        txn = dict(producer_id=7, producer_epoch=0, is_transactional=True)
        p.append_as_leader(batch(2, base_sequence=0, **txn), required_acks=1)  # 0..1
        p.append_as_leader(batch(1), required_acks=1)  # 2
        assert (p.high_watermark, p.last_stable_offset) == (3, 0)
        assert p.fetch_limit(read_committed=True) == 0  # ListOffsets LATEST, read_committed
        assert p.read(0, 1 << 20, read_committed=True, min_one=True).size == 0
        p.log.append_transaction_marker(
            7, 0, commit=False, coordinator_epoch=0, leader_epoch=p.leader_epoch, timestamp=T0
        )  # 3
        p.maybe_increment_high_watermark()
        assert p.last_stable_offset == 4
        result = p.read(0, 1 << 20, read_committed=True, min_one=True)
        assert offsets_of(result.read_bytes()) == [(0, 1), (2, 2), (3, 3)]
        assert [(t.producer_id, t.first_offset) for t in p.aborted_transactions(result)] == [(7, 0)]

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
