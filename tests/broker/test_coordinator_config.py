"""Broker properties reach the group coordinator under Kafka's names and units."""

from __future__ import annotations

from broker.config import BrokerConfig
from broker.group_runtime import coordinator_config
from coordinator.config import CoordinatorConfig


def test_kafkas_defaults_reach_the_coordinator():
    cfg = coordinator_config(BrokerConfig.load(None, {}), None)
    assert cfg.group_min_session_timeout_ms == 6_000
    assert cfg.group_max_session_timeout_ms == 1_800_000
    assert cfg.group_initial_rebalance_delay_ms == 3_000
    assert cfg.group_max_size == 2**31 - 1
    assert cfg.offsets_topic_num_partitions == 50
    assert cfg.offsets_retention_ms == 7 * 24 * 3_600_000  # offsets.retention.minutes=10080
    assert cfg.offsets_retention_check_interval_ms == 600_000
    assert cfg.offset_metadata_max_bytes == 4096


def test_every_group_setting_is_passed_on_with_its_unit():
    config = BrokerConfig.load(
        None,
        {
            "group.min.session.timeout.ms": 1000,
            "group.max.session.timeout.ms": 90_000,
            "group.initial.rebalance.delay.ms": 0,
            "group.max.size": 7,
            "offsets.topic.num.partitions": 3,
            "offsets.retention.minutes": 2,
            "offsets.retention.check.interval.ms": 500,
            "offset.metadata.max.bytes": 64,
        },
    )
    assert coordinator_config(config, None) == CoordinatorConfig(
        group_min_session_timeout_ms=1000,
        group_max_session_timeout_ms=90_000,
        group_initial_rebalance_delay_ms=0,
        group_max_size=7,
        offsets_topic_num_partitions=3,
        offsets_retention_ms=120_000,
        offsets_retention_check_interval_ms=500,
        offset_metadata_max_bytes=64,
    )


def test_an_existing_offsets_topic_keeps_its_partition_count():
    config = BrokerConfig.load(None, {"offsets.topic.num.partitions": 3})
    assert coordinator_config(config, 50).offsets_topic_num_partitions == 50
