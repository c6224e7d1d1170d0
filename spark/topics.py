"""The pipeline's topics, created through the admin API of whatever broker is given."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, NewTopic

PURCHASES = "purchases"
PURCHASE_STATS = "purchase-stats"
# One partition per country would be a coincidence of keys; three spread the load
# of three keys and let the stream read in parallel.
PARTITIONS = 3


def ensure_topics(bootstrap: str, names: list[str], partitions: int = PARTITIONS) -> None:
    """Create the topics that do not exist yet (those that do are left as they are)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = set(admin.list_topics(timeout=30).topics)
    wanted = [NewTopic(n, num_partitions=partitions) for n in names if n not in existing]
    if not wanted:
        return
    for name, future in admin.create_topics(wanted, operation_timeout=30).items():
        try:
            future.result(timeout=60)
        except Exception as exc:  # created meanwhile by someone else is fine
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise RuntimeError(f"cannot create topic {name}: {exc}") from exc


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """Each partition's log end offset (the offset the next record will get)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "spark-pipeline-offsets"})
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        ends = {}
        for p in partitions:
            _low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            ends[p] = high
        return ends
    finally:
        consumer.close()
