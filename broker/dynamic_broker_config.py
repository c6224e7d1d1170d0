"""Dynamic broker configs (AlterConfigs on BROKER resources) follow the metadata.

The cluster-wide defaults (resource "") and this broker's own (its node id)
live in the metadata image; when they change, this publisher lays them over
the static configuration, as Kafka's DynamicBrokerConfig does. That is also
how they are applied at start: the first image carries them. A stored value
that no longer validates (an older version wrote it) is skipped with a
warning rather than refusing to start.
"""

from __future__ import annotations

import logging

from broker.config import BrokerConfig, ConfigError
from broker.metadata.delta import MetadataDelta
from broker.metadata.image import MetadataImage

log = logging.getLogger("gregor.config")


class DynamicBrokerConfig:
    def __init__(self, broker_config: BrokerConfig, node_id: int):
        self.config = broker_config
        self.node_id = node_id

    async def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        for resource in sorted(delta.changed_broker_configs):
            if resource == "":
                self._apply(image.broker_config(""), per_broker=False)
            elif resource == str(self.node_id):
                self._apply(image.broker_config(resource), per_broker=True)

    def _apply(self, wanted: dict[str, str], per_broker: bool) -> None:
        current = self.config.dynamic_broker if per_broker else self.config.dynamic_default
        updates: dict[str, str | None] = {k: None for k in current if k not in wanted}
        updates.update({k: v for k, v in wanted.items() if current.get(k) != v})
        if not updates:
            return
        try:
            self.config.alter(updates, per_broker=per_broker)
            return
        except ConfigError:
            pass
        for key, value in updates.items():
            try:
                self.config.alter({key: value}, per_broker=per_broker)
            except ConfigError as e:
                log.warning("ignoring dynamic broker config %s=%s: %s", key, value, e)
