"""The controller's election rules (broker/controller/elections.py), on images built by hand."""

from __future__ import annotations

from broker.controller import elections
from broker.metadata.image import (
    BrokerRegistration,
    Endpoint,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    random_uuid,
)
from wire.error_codes import ErrorCode


def image(partitions: dict[int, PartitionRegistration], live=(1, 2, 3)) -> MetadataImage:
    brokers = {
        n: BrokerRegistration(n, (Endpoint("PLAINTEXT", "h", 9000 + n),), fenced=n not in live)
        for n in (1, 2, 3)
    }
    topic = TopicImage("t", random_uuid(), partitions)
    return MetadataImage("c", 1, brokers, {"t": topic})


def reg(replicas, isr, leader, epoch=0) -> PartitionRegistration:
    return PartitionRegistration(tuple(replicas), tuple(isr), leader, epoch, epoch)


def test_a_dead_leader_hands_over_to_the_first_live_isr_member():
    img = image({0: reg([1, 2, 3], [1, 2, 3], 1, 4)}, live=(2, 3))
    (new,) = elections.broker_fenced(img, 1, lambda t: False).values()
    assert (new.leader, new.isr, new.leader_epoch) == (2, (2, 3), 5)


def test_the_last_isr_member_dying_leaves_the_partition_leaderless_with_its_isr():
    img = image({0: reg([1, 2], [1], 1)}, live=(2, 3))
    (new,) = elections.broker_fenced(img, 1, lambda t: False).values()
    assert (new.leader, new.isr) == (-1, (1,))  # the replica that has every acknowledged record


def test_unclean_election_takes_a_live_replica_outside_the_isr():
    img = image({0: reg([1, 2], [1], 1)}, live=(2, 3))
    (new,) = elections.broker_fenced(img, 1, lambda t: True).values()
    assert (new.leader, new.isr) == (2, (2,))


def test_a_returning_isr_member_leads_its_leaderless_partition():
    img = image({0: reg([1, 2], [1], -1)}, live=(1, 2, 3))
    (new,) = elections.broker_unfenced(img, 1, lambda t: False).values()
    assert new.leader == 1


def test_a_controlled_shutdown_moves_leadership_and_leaves_the_isr():
    img = image({0: reg([1, 2, 3], [1, 2, 3], 1), 1: reg([2, 1], [2, 1], 2), 2: reg([1], [1], 1)})
    changes = elections.controlled_shutdown(img, 1)
    assert (changes[("t", 0)].leader, changes[("t", 0)].isr) == (2, (2, 3))
    assert (changes[("t", 1)].leader, changes[("t", 1)].isr) == (2, (2,))
    assert ("t", 2) not in changes  # alone in sync: it keeps leading until it goes


def test_requested_preferred_elections_answer_per_partition():
    img = image({0: reg([1, 2], [1, 2], 2), 1: reg([1, 2], [1, 2], 1), 2: reg([3, 1], [1], 1)})
    changes, answers = elections.requested_elections(img, [("t", 0), ("t", 1), ("t", 2)], 0)
    assert changes[("t", 0)].leader == 1
    assert answers[("t", 0)][0] == ErrorCode.NONE
    assert answers[("t", 1)][0] == ErrorCode.ELECTION_NOT_NEEDED
    assert answers[("t", 2)][0] == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE


def test_leadership_is_rebalanced_only_past_the_allowed_imbalance():
    # Broker 1 prefers 10 partitions and leads 9 of them: 10% elsewhere, allowed.
    parts = {i: reg([1, 2], [1, 2], 1) for i in range(10)}
    parts[0] = reg([1, 2], [1, 2], 2)
    assert elections.imbalanced_preferred_leaders(image(parts), 10) == {}
    parts[1] = reg([1, 2], [1, 2], 2)  # 20%: rebalanced
    changes = elections.imbalanced_preferred_leaders(image(parts), 10)
    assert sorted(changes) == [("t", 0), ("t", 1)]
    assert all(r.leader == 1 for r in changes.values())
