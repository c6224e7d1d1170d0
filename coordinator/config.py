"""The coordinator's settings, with Kafka's names and defaults (GroupCoordinatorConfig)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    # group.min.session.timeout.ms / group.max.session.timeout.ms
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    # group.initial.rebalance.delay.ms
    group_initial_rebalance_delay_ms: int = 3000
    # group.max.size
    group_max_size: int = INT32_MAX
    # offsets.topic.num.partitions
    offsets_topic_num_partitions: int = 50
    # offsets.retention.minutes, in ms
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000
    # offsets.retention.check.interval.ms
    offsets_retention_check_interval_ms: int = 600_000
    # offset.metadata.max.bytes (compared with the metadata's length in UTF-16 units)
    offset_metadata_max_bytes: int = 4096
    # Not a broker setting in Kafka (group.classic.new.member.join.timeout.ms is
    # internal): how long a new member's JoinGroup may stay parked.
    new_member_join_timeout_ms: int = 5 * 60 * 1000

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> CoordinatorConfig:
        """From broker properties under Kafka's names (missing keys keep defaults)."""
        d = cls()

        def get(key: str, default: int) -> int:
            return int(props[key]) if key in props and props[key] is not None else default

        return cls(
            group_min_session_timeout_ms=get(
                "group.min.session.timeout.ms", d.group_min_session_timeout_ms
            ),
            group_max_session_timeout_ms=get(
                "group.max.session.timeout.ms", d.group_max_session_timeout_ms
            ),
            group_initial_rebalance_delay_ms=get(
                "group.initial.rebalance.delay.ms", d.group_initial_rebalance_delay_ms
            ),
            group_max_size=get("group.max.size", d.group_max_size),
            offsets_topic_num_partitions=get(
                "offsets.topic.num.partitions", d.offsets_topic_num_partitions
            ),
            offsets_retention_ms=get("offsets.retention.minutes", d.offsets_retention_ms // 60_000)
            * 60_000,
            offsets_retention_check_interval_ms=get(
                "offsets.retention.check.interval.ms", d.offsets_retention_check_interval_ms
            ),
            offset_metadata_max_bytes=get("offset.metadata.max.bytes", d.offset_metadata_max_bytes),
        )
