"""LogConfig: Kafka's names and defaults."""

from __future__ import annotations

import pytest

from logstore import LogConfig

from .helpers import batch, open_log


def test_defaults_are_kafkas():
    cfg = LogConfig()
    assert cfg.segment_bytes == 1073741824
    assert cfg.segment_ms == 604800000
    assert cfg.segment_index_bytes == 10485760
    assert cfg.index_interval_bytes == 4096
    assert cfg.retention_ms == 604800000 and cfg.retention_bytes == -1
    assert cfg.flush_interval_messages == cfg.flush_interval_ms == 2**63 - 1
    assert cfg.delete_enabled


def test_topic_config_overrides_defaults_and_ignores_other_keys():
    base = LogConfig(retention_ms=1000)
    cfg = LogConfig.from_topic_config(
        {"segment.bytes": "2048", "cleanup.policy": "compact", "min.insync.replicas": "2"}, base
    )
    assert (cfg.segment_bytes, cfg.retention_ms, cfg.cleanup_policy) == (2048, 1000, "compact")
    assert not cfg.delete_enabled


def test_broker_config_time_precedence_is_ms_then_minutes_then_hours():
    cfg = LogConfig.from_broker_config({"log.retention.hours": "1", "log.retention.minutes": "2"})
    assert cfg.retention_ms == 120_000
    cfg = LogConfig.from_broker_config({"log.retention.hours": "-1", "log.roll.hours": "2"})
    assert cfg.retention_ms == -1 and cfg.segment_ms == 7_200_000
    cfg = LogConfig.from_broker_config(
        {"log.segment.bytes": 4096, "log.flush.interval.messages": 1}
    )
    assert cfg.segment_bytes == 4096 and cfg.flush_interval_messages == 1


@pytest.mark.parametrize(
    "changes",
    [{"segment_bytes": 10}, {"segment_index_bytes": 8}, {"cleanup_policy": "keep"}],
)
def test_invalid_settings_are_rejected(changes):
    with pytest.raises(ValueError):
        LogConfig(**changes)


def test_roll_on_demand(tmp_path):
    log = open_log(tmp_path / "t-0")
    assert log.roll() is log.active_segment  # empty: nothing to roll
    log.append(batch(2), 0)
    new = log.roll()
    assert new.base_offset == 2 and [s.base_offset for s in log.segments] == [0, 2]
