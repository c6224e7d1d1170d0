"""Transactions against a real Gregor, beyond the side-by-side suite
(compat_tests/test_transactions.py runs commit, abort, read_committed, fencing,
timeouts and Kafka's tools against Kafka and Gregor alike): a broker that dies
mid-transaction, an open transaction as Kafka's tools show it, Kafka's
DumpLogSegments over Gregor's files, aiokafka, and the partition
verification that prevents hanging transactions.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from compatlib import java as compat_java
from compatlib.transactions import read_isolated, txn_producer, values

from tests.support import raw
from tests.support.clients import TIMEOUT, needs_java
from tests.support.gregor import assert_no_traceback
from tests.support.topics import create_topic, unique_name
from tools import kafka_cli
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.records import RecordInput, build_batch

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_a_broker_restart_mid_transaction_leaves_nothing_open(gregor, how):
    topic = create_topic(gregor.bootstrap, unique_name("txn"), partitions=2)
    txn_id = "txn-" + topic
    p = txn_producer(gregor.bootstrap, txn_id)
    p.begin_transaction()
    p.produce(topic, value=b"committed", partition=0)
    p.commit_transaction(TIMEOUT)
    p.begin_transaction()
    for i in range(2):
        p.produce(topic, value=b"open", partition=i)
    p.flush(TIMEOUT)
    gregor.kill() if how == "kill" else gregor.stop()
    gregor.start()
    # The producer's successor (its application restarted) aborts what was open.
    successor = txn_producer(gregor.bootstrap, txn_id)
    successor.begin_transaction()
    successor.produce(topic, value=b"again", partition=1)
    successor.commit_transaction(TIMEOUT)
    assert sorted(values(read_isolated(gregor.bootstrap, topic, 2, "read_committed", 2))) == [
        b"again",
        b"committed",
    ]
    assert_no_traceback(gregor)


@needs_java
def test_kafka_transactions_tool_lists_describes_and_shows_producers(gregor):
    topic = create_topic(gregor.bootstrap, unique_name("txn"), partitions=1)
    open_ = txn_producer(gregor.bootstrap, "open-" + topic)
    open_.begin_transaction()
    open_.produce(topic, value=b"x")
    open_.flush(TIMEOUT)
    done = txn_producer(gregor.bootstrap, "done-" + topic)
    done.begin_transaction()
    done.produce(topic, value=b"y")
    done.commit_transaction(TIMEOUT)

    def tool(*args: str) -> list[dict[str, str]]:
        out = kafka_cli.run_tool(
            "kafka-transactions", "--bootstrap-server", gregor.bootstrap, *args, check=True
        )
        return compat_java.table(out.stdout)

    states = {row["TransactionalId"]: row["TransactionState"] for row in tool("list")}
    assert states["open-" + topic] == "Ongoing"
    assert states["done-" + topic] == "CompleteCommit"
    [described] = tool("describe", "--transactional-id", "open-" + topic)
    assert described["TopicPartitions"] == f"{topic}-0"
    assert described["CoordinatorId"] == "1"
    producers = tool("describe-producers", "--topic", topic, "--partition", "0")
    starts = sorted(row["CurrentTransactionStartOffset"] for row in producers)
    assert starts == ["0", "None"]  # the open transaction began at offset 0
    open_.abort_transaction(TIMEOUT)


@needs_java
def test_kafka_dump_log_reads_markers_the_transaction_index_and_the_state_log(gregor):
    topic = create_topic(gregor.bootstrap, unique_name("txn"), partitions=1)
    p = txn_producer(gregor.bootstrap, "dump-" + topic)
    p.begin_transaction()
    p.produce(topic, value=b"aborted")
    p.flush(TIMEOUT)
    p.abort_transaction(TIMEOUT)
    p.begin_transaction()
    p.produce(topic, value=b"committed")
    p.commit_transaction(TIMEOUT)
    gregor.stop()  # everything flushed, as Kafka's tool reads files
    data = gregor.data_dir / f"{topic}-0"

    def dump(*files: Path, decoder: str | None = None) -> str:
        args = ["--files", ",".join(str(f) for f in files), "--print-data-log"]
        if decoder:
            args.append(decoder)
        return kafka_cli.run_tool("kafka-dump-log", *args, check=True).stdout

    out = dump(data / "00000000000000000000.log", data / "00000000000000000000.txnindex")
    assert "endTxnMarker: ABORT" in out and "endTxnMarker: COMMIT" in out
    assert "firstOffset: 0 lastOffset: 1 lastStableOffset: 2" in out  # the aborted one
    state_logs = [
        d / "00000000000000000000.log"
        for d in gregor.data_dir.glob("__transaction_state-*")
        if (d / "00000000000000000000.log").stat().st_size
    ]
    out = dump(*state_logs, decoder="--transaction-log-decoder")
    assert f'"transactionalId":"dump-{topic}"' in out
    assert '"transactionStatus":4' in out  # CompleteCommit


# --- other client families -------------------------------------------------------------


def test_aiokafka_transactional_producer(gregor):
    """aiokafka's own transactional producer, an aborted and a committed
    transaction, read back by its read_committed consumer (kafka-python's is in
    the side-by-side suite)."""
    import aiokafka

    topic = create_topic(gregor.bootstrap, unique_name("txn"), partitions=1)

    async def aio() -> list[bytes]:
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=gregor.bootstrap, transactional_id="aio-" + topic
        )
        await producer.start()
        try:
            for name, commit in (("aio-aborted", False), ("aio-committed", True)):
                await producer.begin_transaction()
                await producer.send_and_wait(topic, name.encode())
                if commit:
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(
            topic,
            bootstrap_servers=gregor.bootstrap,
            isolation_level="read_committed",
            auto_offset_reset="earliest",
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(TIMEOUT):
                while not got:
                    batch = await consumer.getmany(timeout_ms=200)
                    got += [m.value for msgs in batch.values() for m in msgs]
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(aio()) == [b"aio-committed"]


# --- partition verification (KIP-890 part 1) ---------------------------------------------


def test_a_transactional_batch_needs_its_partition_in_the_transaction(gregor):
    """A batch for a partition the coordinator never added, or one arriving
    after its transaction ended (a produce delayed past an abort), is refused:
    it would open a transaction nothing ever closes, and read_committed
    consumers would wait behind it forever."""
    topic = create_topic(gregor.bootstrap, unique_name("txn"), partitions=1)
    txn_id = "raw-" + topic

    def txn_batch(pid: int, epoch: int, seq: int) -> bytes:
        now = int(time.time() * 1000)
        return build_batch(
            [RecordInput(None, b"v", timestamp=now)],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            is_transactional=True,
        )

    with raw.RawClient(gregor.bootstrap) as client:

        def call(api_key, version, **body):
            return client.call(api_key, version, body)

        pid, epoch = raw.init_transactional_producer(client, txn_id)

        def produce(seq: int) -> int:
            body = raw.produce_body(topic, txn_batch(pid, epoch, seq))
            body["transactional_id"] = txn_id
            response = client.call(ApiKey.PRODUCE, 9, body)
            return response.responses[0].partition_responses[0].error_code

        assert produce(0) == ErrorCode.INVALID_TXN_STATE  # never added
        added = call(
            ApiKey.ADD_PARTITIONS_TO_TXN,
            3,
            v3_and_below_transactional_id=txn_id,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[{"name": topic, "partitions": [0]}],
        )
        assert (
            added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        )
        assert produce(0) == ErrorCode.NONE
        ended = call(
            ApiKey.END_TXN,
            3,
            transactional_id=txn_id,
            producer_id=pid,
            producer_epoch=epoch,
            committed=False,
        )
        assert ended.error_code == 0
        deadline = time.monotonic() + TIMEOUT
        while (
            call(ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=[txn_id])
            .transaction_states[0]
            .transaction_state
            != "CompleteAbort"
        ):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # The producer's next batch, delayed past the abort: refused.
        assert produce(1) == ErrorCode.INVALID_TXN_STATE
    assert read_isolated(gregor.bootstrap, topic, 1, "read_committed", 0) == []
