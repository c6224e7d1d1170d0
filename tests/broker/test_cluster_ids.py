"""Cluster ids as Kafka makes them: 22 base64url characters, never a leading "-".

An id starting with "-" is read as an option by Kafka's command-line tools
(`kafka-storage format -t <id>`), so Kafka's `Uuid.randomUuid` never makes
one; one in 64 random uuids would.
"""

import base64

from confluent_kafka.admin import AdminClient

from broker.metadata.image import new_cluster_id
from tests.support.gregor import GregorNode
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


def _cluster_id_clients_see(data, setting: str) -> str:
    """Start a node on `data` with gregor.cluster.id `setting`: the cluster
    id its Metadata answers carry."""
    node = GregorNode(data, {"gregor.cluster.id": setting}).start()
    try:
        admin = AdminClient({"bootstrap.servers": node.bootstrap})
        return admin.list_topics(timeout=10).cluster_id
    finally:
        node.stop()


def test_gregor_cluster_id_names_a_new_cluster_and_a_stored_one_keeps_its_own(tmp_path):
    """gregor.cluster.id (what kafka-storage format -t sets for Kafka) is
    the id a new node's metadata gets, and what clients then see; a node
    whose metadata is stored keeps that id whatever the setting says."""
    chosen = new_cluster_id()
    assert _cluster_id_clients_see(tmp_path / "data", chosen) == chosen
    assert _cluster_id_clients_see(tmp_path / "data", new_cluster_id()) == chosen
