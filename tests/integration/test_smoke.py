"""A real Gregor process answers real clients."""

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient


def test_confluent_kafka_produces_and_consumes(gregor):
    producer = Producer({"bootstrap.servers": gregor.bootstrap, "enable.idempotence": True})
    for i in range(10):
        producer.produce("smoke", key=f"k{i}", value=f"v{i}", partition=0)
    assert producer.flush(10) == 0
    consumer = Consumer(
        {"bootstrap.servers": gregor.bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition("smoke", 0, 0)])
    got = []
    while len(got) < 10:
        msg = consumer.poll(10)
        assert msg is not None, "timed out waiting for records"
        assert msg.error() is None, msg.error()
        got.append((msg.offset(), msg.key(), msg.value()))
    consumer.close()
    assert got == [(i, f"k{i}".encode(), f"v{i}".encode()) for i in range(10)]


def test_admin_client_lists_the_broker_and_topics(gregor):
    admin = AdminClient({"bootstrap.servers": gregor.bootstrap})
    metadata = admin.list_topics(timeout=10)
    assert list(metadata.brokers) == [1]
    assert metadata.brokers[1].port == gregor.port


def test_sigterm_exits_zero(gregor):
    assert gregor.stop() == 0
    assert "stopped: logs flushed and checkpointed" in gregor.log()
