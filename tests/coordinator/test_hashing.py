"""coordinator_partition agrees with Kafka's Utils.abs(groupId.hashCode()) % n.

Expected values were printed by Java 21 with Kafka 4.3.1's
org.apache.kafka.common.utils.Utils on the classpath.
"""

import pytest

from coordinator.hashing import coordinator_partition, java_string_hashcode, kafka_abs


@pytest.mark.parametrize(
    "s, expected",
    [
        ("hello", 99162322),
        ("", 0),
        ("my-group", -1906497762),  # negative: int32 overflow
        ("console-consumer-12345", 158455506),
        ("polygenelubricants", -(2**31)),  # Integer.MIN_VALUE
        ("\U0001f600", 1772899),  # one code point, two UTF-16 code units
        ("Ünïcödé-grüppe", -1838758580),
    ],
)
def test_java_string_hashcode_matches_java(s, expected):
    assert java_string_hashcode(s) == expected


def test_kafka_abs_maps_int_min_to_zero_not_to_itself():
    assert kafka_abs(-(2**31)) == 0
    assert kafka_abs(-5) == 5
    assert kafka_abs(7) == 7


@pytest.mark.parametrize(
    "group_id, partition",
    [
        ("hello", 22),
        ("my-group", 12),
        ("console-consumer-12345", 6),
        ("spark-kafka-source", 12),
        ("test", 48),
        ("group", 47),
        ("polygenelubricants", 0),
        ("\U0001f600", 49),
        ("Ünïcödé-grüppe", 30),
    ],
)
def test_coordinator_partition_for_50_partitions_matches_kafka(group_id, partition):
    assert coordinator_partition(group_id, 50) == partition


def test_coordinator_partition_rejects_zero_partitions():
    with pytest.raises(ValueError):
        coordinator_partition("g", 0)
