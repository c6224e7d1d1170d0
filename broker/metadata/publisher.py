"""The broker side of the metadata: the newest image, and the parts that follow it.

    cache = MetadataCache(first_image)
    cache.subscribe(replica_manager)      # in the order they must see each change
    cache.subscribe(group_runtime)
    await cache.publish(new_image)        # from the controller side, one at a time

Handlers read `cache.image` once per request and use that one image
throughout. Publishers implement `on_metadata_update(delta, image)`; they run
one after the other for each image, in subscription order (the replica
manager makes a partition leader before the group coordinator loads its
groups from it), and an image is published only after the previous one has
reached every publisher. A publisher that fails is logged and does not stop
the others: the next image reaches it again.
"""

from __future__ import annotations

import logging
from typing import Protocol

import trio

from broker.metadata.delta import MetadataDelta
from broker.metadata.image import MetadataImage

log = logging.getLogger("gregor.metadata")


class MetadataPublisher(Protocol):
    async def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None: ...


class MetadataCache:
    def __init__(self, image: MetadataImage):
        self._image = image
        self._publishers: list[MetadataPublisher] = []
        self._lock = trio.Lock()
        self._changed = trio.Event()

    @property
    def image(self) -> MetadataImage:
        return self._image

    def subscribe(self, publisher: MetadataPublisher) -> None:
        self._publishers.append(publisher)

    async def publish(self, image: MetadataImage) -> MetadataDelta:
        """Make `image` the current one and hand the change to every publisher."""
        async with self._lock:
            delta = MetadataDelta.between(self._image, image)
            self._image = image
            for publisher in self._publishers:
                try:
                    await publisher.on_metadata_update(delta, image)
                except Exception:
                    log.exception("%s failed to apply a metadata change", type(publisher).__name__)
            self._changed.set()
            self._changed = trio.Event()
            return delta

    async def wait_for_change(self) -> None:
        await self._changed.wait()
