"""Where a new partition's replicas go: Kafka's placement (AdminUtils.assignReplicasToBrokers).

Without racks: partition p's first replica is broker (start + p) of the
sorted live brokers, from a random start, and the others follow at a shift
that itself moves on after each full round of brokers, so leaders and
followers spread evenly and no two partitions' replica lists line up.

With racks (every live broker has `broker.rack`): brokers are first
interleaved by rack (rack A's first, rack B's first, ..., rack A's second,
...) and each further replica skips a broker whose rack, or itself, already
holds a replica of the partition, while racks remain that do not; so a
partition with as many replicas as racks has one replica in each.
"""

from __future__ import annotations

import random
from collections.abc import Sequence


class PlacementError(ValueError):
    """Some brokers have a rack and others do not (Kafka refuses this too)."""


def assign_replicas(
    brokers: Sequence[tuple[int, str | None]],
    partitions: int,
    replication_factor: int,
    start_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """{partition: replicas} for `partitions` new partitions numbered from
    `start_partition`, over `brokers` given as (id, rack)."""
    rng = rng or random.Random()
    racks = [rack for _, rack in brokers]
    if all(rack is None for rack in racks):
        ids = sorted(b for b, _ in brokers)
        return _without_racks(ids, partitions, replication_factor, start_partition, rng)
    if any(rack is None for rack in racks):
        raise PlacementError(
            "Not all brokers have rack information for replica rack aware assignment."
        )
    return _with_racks(dict(brokers), partitions, replication_factor, start_partition, rng)


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def _without_racks(ids, partitions, rf, start_partition, rng):
    n = len(ids)
    start_index = rng.randrange(n)
    shift = rng.randrange(n)
    result = {}
    current = max(0, start_partition)
    for _ in range(partitions):
        if current > 0 and current % n == 0:
            shift += 1
        first = (current + start_index) % n
        replicas = [ids[first]]
        for j in range(rf - 1):
            replicas.append(ids[_replica_index(first, shift, j, n)])
        result[current] = replicas
        current += 1
    return result


def _rack_alternated(rack_of: dict[int, str]) -> list[int]:
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(rack_of):
        by_rack.setdefault(rack_of[broker], []).append(broker)
    iterators = [iter(by_rack[rack]) for rack in sorted(by_rack)]
    ordered: list[int] = []
    while len(ordered) < len(rack_of):
        for it in iterators:
            next_broker = next(it, None)
            if next_broker is not None:
                ordered.append(next_broker)
    return ordered


def _with_racks(rack_of, partitions, rf, start_partition, rng):
    ordered = _rack_alternated(rack_of)
    n = len(ordered)
    rack_count = len(set(rack_of.values()))
    start_index = rng.randrange(n)
    shift = rng.randrange(n)
    result = {}
    current = max(0, start_partition)
    for _ in range(partitions):
        if current > 0 and current % n == 0:
            shift += 1
        first = (current + start_index) % n
        leader = ordered[first]
        replicas = [leader]
        racks_with_replica = {rack_of[leader]}
        brokers_with_replica = {leader}
        k = 0
        for _ in range(rf - 1):
            while True:
                broker = ordered[_replica_index(first, shift * rack_count, k, n)]
                rack = rack_of[broker]
                k += 1
                rack_ok = rack not in racks_with_replica or len(racks_with_replica) == rack_count
                broker_ok = broker not in brokers_with_replica or len(brokers_with_replica) == n
                if rack_ok and broker_ok:
                    replicas.append(broker)
                    racks_with_replica.add(rack)
                    brokers_with_replica.add(broker)
                    break
        result[current] = replicas
        current += 1
    return result
