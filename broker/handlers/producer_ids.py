"""InitProducerId (key 22), versions 0-5: ids and epochs for idempotent producers.

Without a transactional id: a fresh producer id at epoch 0, or (v3+, KIP-360)
the same id with its epoch bumped when the producer gives its current id and
epoch, so it can reset its sequences after an error. With a transactional id:
the transaction coordinator's answer (broker/txn_runtime.py), which may need a
new producer id (a new transactional id, or one whose epoch is spent): one is
taken from this broker's block first, as Kafka's coordinator does.
"""

from __future__ import annotations

from broker.producer_id_manager import ProducerIdManager
from broker.registry import handles
from broker.request_context import RequestContext
from broker.txn_runtime import TransactionRuntime
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

MAX_EPOCH = 32767


class ProducerIdsHandler:
    def __init__(self, producer_ids: ProducerIdManager, txns: TransactionRuntime):
        self.producer_ids = producer_ids
        self.txns = txns

    @handles(ApiKey.INIT_PRODUCER_ID, "0-5")
    async def init_producer_id(self, ctx: RequestContext, request):
        if request.transactional_id is not None:
            fresh = await self.producer_ids.next_id()
            coordinator = self.txns.coordinator
            return await self.txns.call(
                ctx, lambda rctx, now: coordinator.init_producer_id(rctx, request, now, fresh)
            )
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
