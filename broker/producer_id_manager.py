"""Producer ids for InitProducerId, from blocks the controller hands this broker.

Each block is allocated (and persisted) by the controller before any id in
it is used, so no two brokers, and no two incarnations of one broker, hand
out the same id. Kafka's ProducerIdManager does the same with
AllocateProducerIds.
"""

from __future__ import annotations

import trio

from broker.controller.api import Controller


class ProducerIdManager:
    def __init__(self, controller: Controller, node_id: int):
        self.controller = controller
        self.node_id = node_id
        self._ids = range(0)
        self._lock = trio.Lock()

    async def next_id(self) -> int:
        async with self._lock:
            if not self._ids:
                block = await self.controller.allocate_producer_ids(self.node_id)
                self._ids = range(block.first, block.next_after)
            pid = self._ids[0]
            self._ids = self._ids[1:]
            return pid
