"""Transactions with a real client (confluent-kafka / librdkafka) against a real
Gregor: commit, abort, zombie fencing, the coordinator's timeout, and a broker
that dies in the middle of a transaction.

What a user relies on: a read_committed consumer sees every committed record
once and in order and never an aborted one; a producer replaced by another
with the same transactional id can no longer write; nothing stays blocked
when a producer or the broker disappears mid-transaction.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from tests.support.clients import TIMEOUT, needs_java
from tests.support.gregor import assert_no_traceback
from tests.support.topics import create_topic, unique_name
from tools import kafka_cli
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

pytestmark = pytest.mark.timeout(120)


def producer(bootstrap: str, txn_id: str, **conf) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, **conf})
    p.init_transactions(TIMEOUT)
    return p


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str, expect: int) -> list:
    """Values read from the start of every partition until `expect` records
    came (or, for expect 0, until the consumer reached the end it may read)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": uuid.uuid4().hex,
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list = []
    at_end: set[int] = set()
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                    if len(at_end) == partitions and len(got) >= expect:
                        return got
                    continue
                raise KafkaException(msg.error())
            at_end.discard(msg.partition())
            got.append((msg.partition(), msg.offset(), msg.value()))
        raise AssertionError(f"read {len(got)} of {expect} records: {got}")
    finally:
        consumer.close()


def values(records) -> list[bytes]:
    return [v for _, _, v in sorted(records)]


def test_committed_records_are_read_once_and_aborted_ones_never(gregor):
    topic = create_topic(gregor.bootstrap, unique_name("txn"), partitions=2)
    p = producer(gregor.bootstrap, "txn-" + topic)
    for round_ in range(3):
        p.begin_transaction()
        for i in range(10):
            p.produce(topic, value=b"c%d-%d" % (round_, i), partition=i % 2)
        p.commit_transaction(TIMEOUT)
        p.begin_transaction()
        for i in range(4):
            p.produce(topic, value=b"a%d-%d" % (round_, i), partition=i % 2)
        p.flush(TIMEOUT)  # written to the log, then aborted
        p.abort_transaction(TIMEOUT)
    committed = read_all(gregor.bootstrap, topic, 2, "read_committed", 30)
    assert sorted(values(committed)) == sorted(
        b"c%d-%d" % (r, i) for r in range(3) for i in range(10)
    )
    for part in (0, 1):
        in_order = [v for p_, _, v in sorted(committed) if p_ == part]
        assert in_order == sorted(in_order, key=lambda v: (v[1], int(v.split(b"-")[1])))
    everything = read_all(gregor.bootstrap, topic, 2, "read_uncommitted", 42)
    assert len(everything) == 42  # the aborted records are in the log, markers are not shown
    assert {v for v in values(everything) if v.startswith(b"a")} == {
        b"a%d-%d" % (r, i) for r in range(3) for i in range(4)
    }
    assert_no_traceback(gregor)


def test_an_open_transaction_holds_read_committed_consumers_at_its_first_offset(gregor):
    topic = create_topic(gregor.bootstrap, unique_name("txn"), partitions=1)
    p = producer(gregor.bootstrap, "txn-" + topic)
    p.begin_transaction()
    p.produce(topic, value=b"first")
    p.commit_transaction(TIMEOUT)
    p.begin_transaction()
    p.produce(topic, value=b"open")
    p.flush(TIMEOUT)
    assert values(read_all(gregor.bootstrap, topic, 1, "read_committed", 1)) == [b"first"]
    consumer = Consumer(
        {
            "bootstrap.servers": gregor.bootstrap,
            "group.id": "g",
            "isolation.level": "read_committed",
        }
    )
    try:
        # The last stable offset: the open transaction's first record (offset 2,
        # after "first" and its marker).
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), TIMEOUT)
        assert (low, high) == (0, 2)
    finally:
        consumer.close()
    p.commit_transaction(TIMEOUT)
    assert values(read_all(gregor.bootstrap, topic, 1, "read_committed", 2)) == [
        b"first",
        b"open",
    ]


def test_a_second_producer_with_the_same_id_fences_the_first(gregor):
    topic = create_topic(gregor.bootstrap, unique_name("txn"), partitions=1)
    txn_id = "txn-" + topic
    zombie = producer(gregor.bootstrap, txn_id)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie")
    zombie.flush(TIMEOUT)
    successor = producer(gregor.bootstrap, txn_id)  # aborts the zombie's transaction
    successor.begin_transaction()
    successor.produce(topic, value=b"successor")
    successor.commit_transaction(TIMEOUT)
    with pytest.raises(KafkaException) as raised:
        zombie.produce(topic, value=b"late")
        zombie.commit_transaction(TIMEOUT)
    error = raised.value.args[0]
    assert error.fatal() or error.txn_requires_abort(), error
    assert values(read_all(gregor.bootstrap, topic, 1, "read_committed", 1)) == [b"successor"]


def test_the_coordinator_aborts_a_transaction_past_its_timeout(gregor):
    topic = create_topic(gregor.bootstrap, unique_name("txn"), partitions=1)
    p = producer(gregor.bootstrap, "txn-" + topic, **{"transaction.timeout.ms": 1500})
    p.begin_transaction()
    p.produce(topic, value=b"stalled")
    p.flush(TIMEOUT)
    # Nothing commits it: the coordinator aborts it, and read_committed
    # readers are no longer held at it.
    later = producer(gregor.bootstrap, "other-" + topic)
    later.begin_transaction()
    later.produce(topic, value=b"after")
    later.commit_transaction(TIMEOUT)
    assert values(read_all(gregor.bootstrap, topic, 1, "read_committed", 1)) == [b"after"]
    with pytest.raises(KafkaException):
        p.commit_transaction(TIMEOUT)


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_a_broker_restart_mid_transaction_leaves_nothing_open(gregor, how):
    topic = create_topic(gregor.bootstrap, unique_name("txn"), partitions=2)
    txn_id = "txn-" + topic
    p = producer(gregor.bootstrap, txn_id)
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
    successor = producer(gregor.bootstrap, txn_id)
    successor.begin_transaction()
    successor.produce(topic, value=b"again", partition=1)
    successor.commit_transaction(TIMEOUT)
    assert sorted(values(read_all(gregor.bootstrap, topic, 2, "read_committed", 2))) == [
        b"again",
        b"committed",
    ]
    assert_no_traceback(gregor)


def _table(output: str) -> list[dict[str, str]]:
    """kafka-transactions.sh prints a tab-separated table with a header row."""
    lines = [line for line in output.splitlines() if "\t" in line]
    header = [h.strip() for h in lines[0].split("\t")]
    return [
        dict(zip(header, (c.strip() for c in line.split("\t")), strict=False)) for line in lines[1:]
    ]


@needs_java
def test_kafka_transactions_tool_lists_describes_and_shows_producers(gregor):
    topic = create_topic(gregor.bootstrap, unique_name("txn"), partitions=1)
    open_ = producer(gregor.bootstrap, "open-" + topic)
    open_.begin_transaction()
    open_.produce(topic, value=b"x")
    open_.flush(TIMEOUT)
    done = producer(gregor.bootstrap, "done-" + topic)
    done.begin_transaction()
    done.produce(topic, value=b"y")
    done.commit_transaction(TIMEOUT)

    def tool(*args: str) -> list[dict[str, str]]:
        out = kafka_cli.run_tool(
            "kafka-transactions", "--bootstrap-server", gregor.bootstrap, *args, check=True
        )
        return _table(out.stdout)

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
    p = producer(gregor.bootstrap, "dump-" + topic)
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


def test_kafka_python_and_aiokafka_transactional_producers(gregor):
    """kafka-python's and aiokafka's own transactional producers: a committed
    and an aborted transaction each, read back by their read_committed consumers."""
    import asyncio

    import aiokafka
    import kafka

    topic = create_topic(gregor.bootstrap, unique_name("txn"), partitions=1)
    kp = kafka.KafkaProducer(bootstrap_servers=gregor.bootstrap, transactional_id="kp-" + topic)
    kp.init_transactions()
    for name, commit in (("kp-aborted", False), ("kp-committed", True)):
        kp.begin_transaction()
        kp.send(topic, value=name.encode()).get(TIMEOUT)
        kp.commit_transaction() if commit else kp.abort_transaction()
    kp.close()

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
                while len(got) < 2:
                    batch = await consumer.getmany(timeout_ms=200)
                    got += [m.value for msgs in batch.values() for m in msgs]
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(aio()) == [b"kp-committed", b"aio-committed"]
    consumer = kafka.KafkaConsumer(
        topic,
        bootstrap_servers=gregor.bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        consumer_timeout_ms=3000,
    )
    assert [m.value for m in consumer] == [b"kp-committed", b"aio-committed"]
    consumer.close()


# --- partition verification (KIP-890 part 1) ---------------------------------------------


def test_a_transactional_batch_needs_its_partition_in_the_transaction(gregor):
    """A batch for a partition the coordinator never added, or one arriving
    after its transaction ended (a produce delayed past an abort), is refused:
    it would open a transaction nothing ever closes, and read_committed
    consumers would wait behind it forever."""
    from tests.support import raw
    from wire.records import RecordInput, build_batch

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

        while True:  # the coordinator's partition loads after the first FindCoordinator
            call(ApiKey.FIND_COORDINATOR, 1, key=txn_id, key_type=1)
            init = call(
                ApiKey.INIT_PRODUCER_ID,
                3,
                transactional_id=txn_id,
                transaction_timeout_ms=60000,
                producer_id=-1,
                producer_epoch=-1,
            )
            if init.error_code == 0:
                break
            assert init.error_code in (14, 15), init  # loading, not available yet
            time.sleep(0.1)
        pid, epoch = init.producer_id, init.producer_epoch

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
    assert read_all(gregor.bootstrap, topic, 1, "read_committed", 0) == []
