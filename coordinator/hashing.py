"""Which `__consumer_offsets` partition coordinates a group.

Kafka: `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`, where
`String.hashCode()` is Java's (31 * h + c over UTF-16 code units, int32
overflow) and `Utils.abs` maps Integer.MIN_VALUE to 0 (Math.abs would keep it
negative). Clients never compute this themselves; they ask FindCoordinator, so
the broker only has to agree with itself, but matching Kafka keeps a group on
the same partition number as it would have in a Kafka cluster.
"""

from __future__ import annotations

import functools

_INT32_MIN = -(2**31)


# Every transactional or group request asks for its id's partition, and the
# loop below costs microseconds a character: the ids in use are few.
@functools.lru_cache(maxsize=65536)
def java_string_hashcode(s: str) -> int:
    """Java's `String.hashCode()` of `s`: a signed int32."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's `Utils.abs`: |n|, except Integer.MIN_VALUE, which gives 0."""
    return 0 if n == _INT32_MIN else abs(n)


def coordinator_partition(group_id: str, num_partitions: int) -> int:
    """The `__consumer_offsets` partition whose leader coordinates `group_id`."""
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be at least 1, not {num_partitions}")
    return kafka_abs(java_string_hashcode(group_id)) % num_partitions
