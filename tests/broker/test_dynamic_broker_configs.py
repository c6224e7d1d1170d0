"""Dynamic broker configs (AlterConfigs on a broker resource) persist in the
cluster metadata file and are laid over the static configs when a broker starts."""

from __future__ import annotations

import json
import logging

from broker.cluster import ClusterMetadata, LocalMetadataStore
from broker.config import BrokerConfig, ConfigSource
from broker.server import METADATA_FILE, Broker


def test_a_metadata_file_without_broker_configs_still_loads(tmp_path):
    path = tmp_path / "meta.json"
    path.write_text(
        json.dumps(
            {
                "cluster_id": "abcdefghijklmnopqrstuv",
                "controller_id": 1,
                "brokers": {},
                "topics": {},
                "next_producer_id": 0,
            }
        )
    )
    cluster = ClusterMetadata(LocalMetadataStore(path), 1)
    assert cluster.broker_configs("") == {}
    assert cluster.broker_configs("1") == {}


def test_broker_configs_are_saved_per_resource_and_reloaded(tmp_path):
    path = tmp_path / "meta.json"
    cluster = ClusterMetadata(LocalMetadataStore(path), 1)
    cluster.set_broker_configs("", {"log.segment.bytes": "2000000"})
    cluster.set_broker_configs("1", {"log.retention.ms": "60000"})
    cluster.set_broker_configs("2", {})
    reloaded = ClusterMetadata(LocalMetadataStore(path), 1)
    assert reloaded.broker_configs("") == {"log.segment.bytes": "2000000"}
    assert reloaded.broker_configs("1") == {"log.retention.ms": "60000"}
    assert "2" not in json.loads(path.read_text())["broker_configs"]


def test_a_starting_broker_applies_the_stored_dynamic_configs(tmp_path, caplog):
    data = tmp_path / "data"
    data.mkdir()
    cluster = ClusterMetadata(LocalMetadataStore(data / METADATA_FILE), 1)
    cluster.set_broker_configs("", {"log.segment.bytes": "2000000", "log.cleaner.threads": "2"})
    # A value that no longer validates is skipped, the others still apply.
    cluster.set_broker_configs("1", {"log.retention.ms": "60000", "log.cleaner.threads": "-3"})
    config = BrokerConfig({"log.dirs": str(data), "node.id": 1})
    with caplog.at_level(logging.WARNING, logger="gregor.broker"):
        broker = Broker(config)
    assert broker.config["log.segment.bytes"] == 2000000
    assert broker.config.source("log.segment.bytes") == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    assert broker.config.log_retention_ms == 60000
    assert broker.config.source("log.retention.ms") == ConfigSource.DYNAMIC_BROKER_CONFIG
    assert broker.config["log.cleaner.threads"] == 2
    assert "log.cleaner.threads=-3" in caplog.text
