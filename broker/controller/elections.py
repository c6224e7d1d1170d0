"""Leader elections: what the controller changes when brokers come and go.

Pure functions from a metadata image to the partition registrations that
change, so every controller implementation (and its tests) applies the same
rules, Kafka's:

- a broker whose session ends leaves every ISR it is in (unless it is the
  last member: the ISR then names the replica that has every acknowledged
  record), and the partitions it led get the first live ISR member in
  replica order as leader, or no leader when none is live — unless the topic
  allows unclean election, which takes any live replica and may lose
  records;
- a broker that comes back leads the leaderless partitions whose ISR it is in;
- a controlled shutdown moves leadership away from the stopping broker first
  (to another ISR member) and takes it out of the ISRs, so producers see one
  quick NOT_LEADER_OR_FOLLOWER instead of a timeout;
- the preferred leader (the first replica) takes leadership back when it is
  live and in sync (auto.leader.rebalance.enable, ElectLeaders PREFERRED).

Every change bumps the partition epoch, and a leader change the leader epoch
(PartitionRegistration.changed).
"""

from __future__ import annotations

from collections.abc import Callable

from broker.metadata.image import NO_LEADER, MetadataImage, PartitionRegistration

TopicPartition = tuple[str, int]
Changes = dict[TopicPartition, PartitionRegistration]


def _partitions(image: MetadataImage):
    for topic in image.topics.values():
        for index, reg in topic.partitions.items():
            yield (topic.name, index), reg


def broker_fenced(
    image: MetadataImage, node_id: int, unclean_allowed: Callable[[str], bool]
) -> Changes:
    """`node_id`'s session ended (it is no longer live in `image`)."""
    live = set(image.live_broker_ids()) - {node_id}
    changes: Changes = {}
    for tp, reg in _partitions(image):
        if node_id not in reg.replicas:
            continue
        isr = tuple(r for r in reg.isr if r != node_id) or reg.isr
        if reg.leader == node_id:
            leader = _first_live(isr, live)
            if leader == NO_LEADER and unclean_allowed(tp[0]):
                leader = _first_live(reg.replicas, live)
                if leader != NO_LEADER:
                    isr = (leader,)
            changes[tp] = reg.changed(leader=leader, isr=isr)
        elif isr != reg.isr:
            changes[tp] = reg.changed(isr=isr)
    return changes


def broker_unfenced(
    image: MetadataImage, node_id: int, unclean_allowed: Callable[[str], bool]
) -> Changes:
    """`node_id` is live again: it leads the leaderless partitions it may lead."""
    changes: Changes = {}
    for tp, reg in _partitions(image):
        if reg.leader != NO_LEADER or node_id not in reg.replicas:
            continue
        if node_id in reg.isr:
            changes[tp] = reg.changed(leader=node_id)
        elif unclean_allowed(tp[0]) and not any(image.is_live(r) for r in reg.isr):
            changes[tp] = reg.changed(leader=node_id, isr=(node_id,))
    return changes


def controlled_shutdown(image: MetadataImage, node_id: int) -> Changes:
    """`node_id` is stopping: leadership moves to another live ISR member and
    it leaves the ISRs (a partition it alone has in sync keeps it)."""
    live = set(image.live_broker_ids()) - {node_id}
    changes: Changes = {}
    for tp, reg in _partitions(image):
        if node_id not in reg.isr:
            continue
        others = tuple(r for r in reg.isr if r != node_id)
        if reg.leader == node_id:
            leader = _first_live(others, live)
            if leader != NO_LEADER:
                changes[tp] = reg.changed(leader=leader, isr=others)
        elif others:
            changes[tp] = reg.changed(isr=others)
    return changes


def preferred_leaders(image: MetadataImage, only: set[TopicPartition] | None = None) -> Changes:
    """Partitions whose first replica is live, in sync and not leading: it leads."""
    changes: Changes = {}
    for tp, reg in _partitions(image):
        if only is not None and tp not in only:
            continue
        preferred = reg.replicas[0] if reg.replicas else NO_LEADER
        if reg.leader != preferred and preferred in reg.isr and image.is_live(preferred):
            changes[tp] = reg.changed(leader=preferred)
    return changes


def new_partition(replicas: list[int], image: MetadataImage) -> PartitionRegistration:
    """A new partition: its live replicas in sync, the first of them leading."""
    live = [r for r in replicas if image.is_live(r)]
    isr = tuple(live) or tuple(replicas)
    return PartitionRegistration(
        replicas=tuple(replicas), isr=isr, leader=live[0] if live else NO_LEADER
    )


def _first_live(candidates, live) -> int:
    for r in candidates:
        if r in live:
            return r
    return NO_LEADER


PREFERRED, UNCLEAN = 0, 1


def requested_elections(
    image: MetadataImage,
    tps: list[TopicPartition],
    election_type: int,
    unclean_allowed: Callable[[str], bool] = lambda topic: True,
) -> tuple[Changes, dict[TopicPartition, tuple[int, str | None]]]:
    """ElectLeaders: the changes to make, and each partition's answer (error
    code, message). PREFERRED moves leadership to the first replica when it is
    live and in sync; UNCLEAN gives a leaderless partition a leader, from the
    ISR if one is live, else any live replica."""
    from wire.error_codes import ErrorCode

    changes: Changes = {}
    answers: dict[TopicPartition, tuple[int, str | None]] = {}
    not_needed = (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
    for tp in tps:
        reg = image.partition(*tp)
        if reg is None:
            continue
        if election_type == PREFERRED:
            preferred = reg.replicas[0]
            if reg.leader == preferred:
                answers[tp] = not_needed
            elif preferred in reg.isr and image.is_live(preferred):
                changes[tp] = reg.changed(leader=preferred)
                answers[tp] = (ErrorCode.NONE, None)
            else:
                answers[tp] = (
                    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                    f"Failed to elect leader for partition {tp[0]}-{tp[1]} under strategy "
                    "PreferredReplicaPartitionLeaderElectionStrategy",
                )
        else:
            if image.is_live(reg.leader):
                answers[tp] = not_needed
                continue
            live_isr = [r for r in reg.isr if image.is_live(r)]
            live = [r for r in reg.replicas if image.is_live(r)]
            if live_isr:
                changes[tp] = reg.changed(leader=live_isr[0])
            elif live and unclean_allowed(tp[0]):
                changes[tp] = reg.changed(leader=live[0], isr=(live[0],))
            else:
                answers[tp] = (
                    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                    f"Failed to elect leader for partition {tp[0]}-{tp[1]} under strategy "
                    "UncleanLeaderElectionStrategy",
                )
                continue
            answers[tp] = (ErrorCode.NONE, None)
    return changes, answers


def imbalanced_preferred_leaders(image: MetadataImage, max_imbalance_percentage: int) -> Changes:
    """auto.leader.rebalance.enable: for each broker whose preferred partitions
    (it is their first replica) are led elsewhere more than the allowed share
    of the time (leader.imbalance.per.broker.percentage), the preferred
    elections that can be made (Kafka's checkAndTriggerAutoLeaderRebalance)."""
    preferred_of: dict[int, list[TopicPartition]] = {}
    leader_of: dict[TopicPartition, int] = {}
    for tp, reg in _partitions(image):
        if reg.replicas:
            preferred_of.setdefault(reg.replicas[0], []).append(tp)
            leader_of[tp] = reg.leader
    chosen: set[TopicPartition] = set()
    for broker, tps in preferred_of.items():
        if not image.is_live(broker):
            continue
        elsewhere = [tp for tp in tps if leader_of[tp] != broker]
        if len(elsewhere) * 100 > max_imbalance_percentage * len(tps):
            chosen.update(elsewhere)
    return preferred_leaders(image, only=chosen) if chosen else {}


# --- reassignments (Kafka's KIP-455 model) ---------------------------------------------


def reassign(reg: PartitionRegistration, target: list[int]) -> PartitionRegistration:
    """Start moving a partition to `target`: replicas become the target plus the
    old ones not in it (adding = new ones, removing = old ones leaving). A
    reassignment already in progress is replaced, from its original replicas."""
    original = tuple(r for r in reg.replicas if r not in reg.adding_replicas)
    adding = tuple(r for r in target if r not in original)
    removing = tuple(r for r in original if r not in target)
    replicas = tuple(target) + removing
    return reg.changed(replicas=replicas, adding_replicas=adding, removing_replicas=removing)


def cancel_reassignment(reg: PartitionRegistration, image: MetadataImage) -> PartitionRegistration:
    """Go back to the original replicas; a leader among the added ones hands over."""
    original = tuple(r for r in reg.replicas if r not in reg.adding_replicas)
    return _settle(reg, original, image)


def finished_reassignments(image: MetadataImage) -> Changes:
    """Reassignments whose target replicas are all in sync: the target becomes
    the replica set, the leaving replicas leave the ISR, and a leaving leader
    hands over to the first in-sync target replica."""
    changes: Changes = {}
    for tp, reg in _partitions(image):
        if not reg.reassigning:
            continue
        target = reg.target_replicas
        if all(r in reg.isr for r in target):
            changes[tp] = _settle(reg, target, image)
    return changes


def _settle(reg: PartitionRegistration, replicas: tuple[int, ...], image) -> PartitionRegistration:
    isr = tuple(r for r in reg.isr if r in replicas)
    leader = reg.leader
    if leader not in replicas:
        leader = _first_live([r for r in replicas if r in isr], set(image.live_broker_ids()))
    return reg.changed(
        replicas=replicas,
        isr=isr or reg.isr,
        leader=leader,
        adding_replicas=(),
        removing_replicas=(),
    )
