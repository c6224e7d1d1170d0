"""Dynamic broker configs (AlterConfigs on a broker resource) persist in the
cluster metadata file and are laid over the static configs when the metadata
carrying them reaches the broker (at start, the first image)."""

from __future__ import annotations

import json
import logging

import trio

from broker.config import BrokerConfig, ConfigSource
from broker.controller.local import LocalMetadataStore
from broker.dynamic_broker_config import DynamicBrokerConfig
from broker.metadata.image import MetadataImage
from broker.metadata.publisher import MetadataCache

EMPTY = MetadataImage("abcdefghijklmnopqrstuv", 1)


def test_a_metadata_file_without_broker_configs_still_loads(tmp_path):
    path = tmp_path / "meta.json"
    path.write_text(
        json.dumps(
            {
                "cluster_id": "abcdefghijklmnopqrstuv",
                "controller_id": 1,
                "brokers": {"1": {"node_id": 1, "host": "localhost", "port": 9092, "rack": None}},
                "topics": {},
                "next_producer_id": 0,
            }
        )
    )
    image, next_producer_id = LocalMetadataStore(path).load()
    assert image.broker_config("") == {} and image.broker_config("1") == {}
    # A file from before brokers registered every listener: one PLAINTEXT endpoint.
    assert [(e.listener, e.host, e.port) for e in image.brokers[1].endpoints] == [
        ("PLAINTEXT", "localhost", 9092)
    ]
    assert next_producer_id == 0


def test_broker_configs_are_saved_per_resource_and_reloaded(tmp_path):
    path = tmp_path / "meta.json"
    image = (
        EMPTY.with_broker_configs("", {"log.segment.bytes": "2000000"})
        .with_broker_configs("1", {"log.retention.ms": "60000"})
        .with_broker_configs("2", {})
    )
    LocalMetadataStore(path).save(image, 1000)
    reloaded, next_producer_id = LocalMetadataStore(path).load()
    assert reloaded.broker_config("") == {"log.segment.bytes": "2000000"}
    assert reloaded.broker_config("1") == {"log.retention.ms": "60000"}
    assert "2" not in json.loads(path.read_text())["broker_configs"]
    assert next_producer_id == 1000


def test_stored_dynamic_configs_are_applied_when_the_metadata_arrives(tmp_path, caplog):
    config = BrokerConfig({"log.dirs": str(tmp_path), "node.id": 1})
    image = EMPTY.with_broker_configs(
        "", {"log.segment.bytes": "2000000", "log.cleaner.threads": "2"}
    ).with_broker_configs(
        # A value that no longer validates is skipped, the others still apply.
        "1",
        {"log.retention.ms": "60000", "log.cleaner.threads": "-3"},
    )

    async def publish():
        cache = MetadataCache(EMPTY)
        cache.subscribe(DynamicBrokerConfig(config, 1))
        await cache.publish(image)

    with caplog.at_level(logging.WARNING, logger="gregor.config"):
        trio.run(publish)
    assert config["log.segment.bytes"] == 2000000
    assert config.source("log.segment.bytes") == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    assert config.log_retention_ms == 60000
    assert config.source("log.retention.ms") == ConfigSource.DYNAMIC_BROKER_CONFIG
    assert config["log.cleaner.threads"] == 2
    assert "log.cleaner.threads=-3" in caplog.text


def test_a_removed_dynamic_config_falls_back_to_the_static_value(tmp_path):
    config = BrokerConfig({"log.dirs": str(tmp_path), "node.id": 1, "log.retention.ms": "5000"})
    with_override = EMPTY.with_broker_configs("1", {"log.retention.ms": "60000"})

    async def publish():
        cache = MetadataCache(EMPTY)
        cache.subscribe(DynamicBrokerConfig(config, 1))
        await cache.publish(with_override)
        assert config.log_retention_ms == 60000
        await cache.publish(EMPTY)

    trio.run(publish)
    assert config.log_retention_ms == 5000
    assert config.source("log.retention.ms") == ConfigSource.STATIC_BROKER_CONFIG
