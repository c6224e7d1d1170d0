"""Lookups shared by the partition-addressed handlers."""

from __future__ import annotations

from wire.error_codes import ErrorCode


def leader_partition(ctx, topic, index: int, current_leader_epoch: int = -1):
    """(partition, error code) for a request addressed to the leader of
    `topic` (a TopicInfo or None) partition `index`, with Kafka's errors:
    unknown topic or partition, not the leader, an offline log, fenced or
    unknown epoch."""
    if topic is None or index not in topic.partitions:
        return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    partition = ctx.broker.replicas.get(topic.name, index)
    if partition is None or not partition.is_leader:
        return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
    if partition.log.offline:
        # Its log dir failed (a full disk, an I/O error): Kafka's answer for
        # every request addressed to the replica until the broker restarts.
        return None, ErrorCode.KAFKA_STORAGE_ERROR
    if current_leader_epoch >= 0:
        if current_leader_epoch > partition.leader_epoch:
            return partition, ErrorCode.UNKNOWN_LEADER_EPOCH
        if current_leader_epoch < partition.leader_epoch:
            return partition, ErrorCode.FENCED_LEADER_EPOCH
    return partition, ErrorCode.NONE


def node_endpoint(ctx, node_id: int) -> tuple[str, int] | None:
    """(host, port) by which the client of `ctx` reaches broker `node_id`
    (on the listener the request came in on), or None if it is not live."""
    broker = ctx.broker
    if node_id == broker.node_id:
        _, host, port = broker.advertised_endpoint(ctx.listener)
        return host, port
    info = broker.cluster.brokers.get(node_id)
    return None if info is None else (info.host, info.port)
