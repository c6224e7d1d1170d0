"""Each of Kafka's three checkpoints is written at its own interval.

`replica.high.watermark.checkpoint.interval.ms` (5 s by default) for the
high watermarks, `log.flush.offset.checkpoint.interval.ms` for the recovery
points and `log.flush.start.offset.checkpoint.interval.ms` for the log start
offsets (60 s each): after a crash a node restarts from its high watermarks
as they were seconds before, not a minute.
"""

from __future__ import annotations

import trio

from broker.config import BrokerConfig
from broker.server import Broker
from logstore.checkpoint import read_offset_checkpoint
from wire.records import RecordInput, build_batch

HOUR_MS = 3_600_000


def test_the_high_watermark_checkpoint_follows_its_own_interval(tmp_path):
    data = tmp_path / "data"
    config = BrokerConfig(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(data),
            "replica.high.watermark.checkpoint.interval.ms": 50,
            "log.flush.offset.checkpoint.interval.ms": HOUR_MS,
            "log.flush.start.offset.checkpoint.interval.ms": HOUR_MS,
        }
    )

    def checkpointed(name: str) -> dict:
        return read_offset_checkpoint(str(data / name))

    async def main():
        async with trio.open_nursery() as nursery:
            broker = await nursery.start(Broker(config).serve)
            await broker.topics.create("t", 1, 1)
            partition = broker.replicas.get("t", 0)
            values = [RecordInput(None, b"v%d" % i) for i in range(3)]
            partition.append_as_leader(bytearray(build_batch(values)))
            assert partition.high_watermark == 3
            with trio.fail_after(10):
                while checkpointed("replication-offset-checkpoint").get(("t", 0)) != 3:
                    await trio.sleep(0.01)
            # The other two wait for their hour: the topic is not in them yet.
            assert ("t", 0) not in checkpointed("recovery-point-offset-checkpoint")
            assert ("t", 0) not in checkpointed("log-start-offset-checkpoint")
            await broker.stop()
            nursery.cancel_scope.cancel()
        # A stop writes all three.
        assert checkpointed("recovery-point-offset-checkpoint")[("t", 0)] == 3
        assert checkpointed("log-start-offset-checkpoint")[("t", 0)] == 0

    trio.run(main)
