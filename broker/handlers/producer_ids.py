"""InitProducerId (key 22), versions 0-5: ids and epochs for idempotent producers.

Without a transactional id: a fresh producer id at epoch 0, or (v3+, KIP-360)
the same id with its epoch bumped when the producer gives its current id and
epoch, so it can reset its sequences after an error. Transactional ids need
the transaction coordinator, which Gregor does not have yet.
"""

from __future__ import annotations

from broker.producer_id_manager import ProducerIdManager
from broker.registry import handles
from broker.request_context import RequestContext
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

MAX_EPOCH = 32767


class ProducerIdsHandler:
    def __init__(self, producer_ids: ProducerIdManager):
        self.producer_ids = producer_ids

    @handles(ApiKey.INIT_PRODUCER_ID, "0-5")
    async def init_producer_id(self, ctx: RequestContext, request):
        if request.transactional_id is not None:
            return {
                "throttle_time_ms": 0,
                "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "producer_id": -1,
                "producer_epoch": -1,
            }
        if request.producer_id >= 0 and 0 <= request.producer_epoch < MAX_EPOCH - 1:
            pid, epoch = request.producer_id, request.producer_epoch + 1
        else:
            pid, epoch = await self.producer_ids.next_id(), 0
        return _answer(pid, epoch)


def _answer(pid: int, epoch: int) -> dict:
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "producer_id": pid,
        "producer_epoch": epoch,
    }
