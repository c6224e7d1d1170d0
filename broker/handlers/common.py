"""Lookups shared by the partition-addressed handlers."""

from __future__ import annotations

from wire.error_codes import ErrorCode


def leader_partition(ctx, topic, index: int, current_leader_epoch: int = -1):
    """(partition, error code) for a request addressed to the leader of
    `topic` (a TopicInfo or None) partition `index`, with Kafka's errors:
    unknown topic or partition, not the leader, fenced or unknown epoch."""
    if topic is None or index not in topic.partitions:
        return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    partition = ctx.broker.replicas.get(topic.name, index)
    if partition is None or not partition.is_leader:
        return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
    if current_leader_epoch >= 0:
        if current_leader_epoch > partition.leader_epoch:
            return partition, ErrorCode.UNKNOWN_LEADER_EPOCH
        if current_leader_epoch < partition.leader_epoch:
            return partition, ErrorCode.FENCED_LEADER_EPOCH
    return partition, ErrorCode.NONE
