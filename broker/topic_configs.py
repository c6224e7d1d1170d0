"""Each topic's effective configuration: its overrides laid over the broker's settings.

Computed once per topic and kept while neither the topic's overrides nor the
dynamic broker configs change (this follows the metadata: a publisher, placed
after the dynamic broker config so it sees the new broker values).
"""

from __future__ import annotations

from broker.config import BrokerConfig, ConfigError
from broker.config.topic import TopicConfig, validate_topic_config
from broker.metadata.delta import MetadataDelta
from broker.metadata.image import MetadataImage, TopicImage
from logstore import LogConfig
from logstore.log_validator import TopicLimits


class EffectiveTopicConfigs:
    def __init__(self, broker_config: BrokerConfig):
        self.broker_config = broker_config
        # name -> (the overrides it was computed from, config, limits, log config)
        self._cache: dict[str, tuple[dict, TopicConfig, TopicLimits, LogConfig]] = {}

    def config(self, topic: TopicImage) -> TopicConfig:
        return self._entry(topic)[1]

    def limits(self, topic: TopicImage) -> TopicLimits:
        return self._entry(topic)[2]

    def log_config(self, topic: TopicImage) -> LogConfig:
        return self._entry(topic)[3]

    def validate(self, configs: dict) -> None:
        """ConfigError naming the first bad key of a topic's overrides."""
        validate_topic_config(configs, self.broker_config)

    def _entry(self, topic: TopicImage):
        cached = self._cache.get(topic.name)
        if cached is not None and cached[0] == topic.configs:
            return cached
        cfg = TopicConfig(self.broker_config, dict(topic.configs))
        limits = TopicLimits(
            max_message_bytes=cfg["max.message.bytes"],
            log_append_time=cfg["message.timestamp.type"] == "LogAppendTime",
            compacted=cfg.compact_enabled,
            timestamp_before_max_ms=cfg["message.timestamp.before.max.ms"],
            timestamp_after_max_ms=cfg["message.timestamp.after.max.ms"],
            segment_bytes=cfg.segment_bytes,
            min_insync_replicas=cfg["min.insync.replicas"],
        )
        entry = (dict(topic.configs), cfg, limits, cfg.to_log_config())
        self._cache[topic.name] = entry
        return entry

    async def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        if delta.changed_broker_configs:
            self._cache.clear()
            return
        for topic in delta.deleted_topics:
            self._cache.pop(topic.name, None)


__all__ = ["ConfigError", "EffectiveTopicConfigs"]
