"""Cluster ids as Kafka makes them: 22 base64url characters, never a leading "-".

An id starting with "-" is read as an option by Kafka's command-line tools
(`kafka-storage format -t <id>`), so Kafka's `Uuid.randomUuid` never makes
one; one in 64 random uuids would.
"""

import base64

from broker.metadata.image import new_cluster_id
from tools.run_kafka import random_cluster_id


def _decodes_to_a_uuid(cluster_id: str) -> bool:
    return len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


def test_gregor_cluster_ids_never_start_with_a_dash():
    ids = [new_cluster_id() for _ in range(2000)]
    assert all(len(i) == 22 and _decodes_to_a_uuid(i) for i in ids)
    assert not [i for i in ids if i.startswith("-")]
    assert len(set(ids)) == len(ids)


def test_cluster_ids_for_apache_kafka_nodes_never_start_with_a_dash():
    ids = [random_cluster_id() for _ in range(2000)]
    assert all(len(i) == 22 and _decodes_to_a_uuid(i) for i in ids)
    assert not [i for i in ids if i.startswith("-")]
