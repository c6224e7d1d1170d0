"""Kafka's replica placement: spread without racks, one replica per rack with them."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from broker.replica_placement import PlacementError, assign_replicas


def test_one_broker_gets_every_replica():
    assert assign_replicas([(1, None)], 3, 1) == {0: [1], 1: [1], 2: [1]}


@pytest.mark.parametrize("seed", range(5))
def test_leaders_and_replicas_spread_evenly_over_the_brokers(seed):
    brokers = [(b, None) for b in (1, 2, 3, 4)]
    placed = assign_replicas(brokers, 8, 3, rng=random.Random(seed))
    assert sorted(placed) == list(range(8))
    assert all(len(set(r)) == 3 for r in placed.values())
    assert Counter(r[0] for r in placed.values()) == {1: 2, 2: 2, 3: 2, 4: 2}
    assert Counter(b for r in placed.values() for b in r) == {1: 6, 2: 6, 3: 6, 4: 6}


def test_the_start_is_random_so_topics_do_not_all_lead_on_one_broker():
    brokers = [(b, None) for b in (1, 2, 3)]
    leaders = {assign_replicas(brokers, 1, 1, rng=random.Random(s))[0][0] for s in range(20)}
    assert leaders == {1, 2, 3}


def test_added_partitions_continue_the_numbering():
    placed = assign_replicas([(1, None), (2, None)], 2, 2, start_partition=3)
    assert sorted(placed) == [3, 4]


@pytest.mark.parametrize("seed", range(5))
def test_with_racks_each_partition_has_one_replica_per_rack(seed):
    brokers = [(1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "c"), (6, "c")]
    rack = dict(brokers)
    placed = assign_replicas(brokers, 12, 3, rng=random.Random(seed))
    for replicas in placed.values():
        assert len(set(replicas)) == 3
        assert {rack[b] for b in replicas} == {"a", "b", "c"}
    assert Counter(r[0] for r in placed.values()) == {b: 2 for b in rack}


def test_more_replicas_than_racks_still_uses_every_rack():
    brokers = [(1, "a"), (2, "a"), (3, "b"), (4, "b")]
    placed = assign_replicas(brokers, 4, 3, rng=random.Random(1))
    for replicas in placed.values():
        assert len(set(replicas)) == 3 and {dict(brokers)[b] for b in replicas} == {"a", "b"}


def test_some_brokers_with_racks_and_some_without_is_refused():
    with pytest.raises(PlacementError, match="Not all brokers have rack information"):
        assign_replicas([(1, "a"), (2, None)], 1, 2)
