"""A cluster's metadata in ZooKeeper, in the model Kafka used for a decade.

The layout is Kafka's ZooKeeper-era one (under the chroot of
`zookeeper.connect`, if any):

    /cluster/id                                  the cluster id
    /controller                   (ephemeral)   {"brokerid": N, ...}: the active controller
    /controller_epoch                            bumped by each new controller
    /brokers/ids/N                (ephemeral)   a live broker: every listener's endpoint, rack
    /brokers/topics/T                            {"partitions": {"0": [1, 2, 3]}, "topic_id": ...}
    /brokers/topics/T/partitions/P/state         {"leader", "leader_epoch", "isr", ...};
                                                 its znode version is the partition epoch
    /config/topics/T, /config/brokers/<default>|N   config overrides
    /config/users/U                              a user's configs: its SCRAM credentials
    /latest_producer_id_block                    the last producer-id block handed out

Every broker follows it: one task re-reads the whole layout whenever a watch
set by the previous read fires (reads are coalesced: changes arriving during a
read cause one more), builds the metadata image and publishes it to the
broker's MetadataCache. Any broker makes the changes a request asks for, each
as one ZooKeeper transaction that fails as a whole when its preconditions do
not hold: a topic is created with its assignment, partition states and
configs together (the first live replica leads), an ISR changes only by a
write conditional on the partition epoch the leader knows, checked first
against ZooKeeper's own state (AlterPartition's rule: a refusal is final, a
change already there is a success), producer-id blocks by a write
conditional on the previous block.

One broker wins the ephemeral /controller node and is the controller: it
watches brokers come and go and applies Kafka's election rules
(broker/controller/elections.py) to the partition states, with the same
conditional writes, so it never overwrites a change it has not seen. When it
dies another broker takes over. A stopping broker hands its leaderships over
itself (a controlled shutdown, with the same rules and writes) before it
deregisters.

kazoo is the client; its calls block, so they run in worker threads, and its
watches (which run on kazoo's own thread) only wake the trio task.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace

import trio
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError
from kazoo.retry import KazooRetry

from broker.controller import elections
from broker.controller.api import (
    ControllerError,
    ProducerIdBlock,
    TopicPartition,
    apply_config_changes,
)
from broker.metadata.image import (
    NO_LEADER,
    BrokerRegistration,
    Endpoint,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    new_cluster_id,
    random_uuid,
)
from broker.metadata.publisher import MetadataCache
from wire.error_codes import ErrorCode

log = logging.getLogger("gregor.zookeeper")

PRODUCER_ID_BLOCK_SIZE = 1000


class ZooKeeperUnavailable(ConnectionError):
    """The broker could not reach ZooKeeper at start."""


def reconnect_retry() -> KazooRetry:
    """How often a broker tries to reach ZooKeeper again after losing it: at
    most a second apart, as ZooKeeper's Java client (Kafka's) does. kazoo's
    default doubles the wait after every refused attempt, up to an hour, so
    a broker came back seconds after ZooKeeper did (5.9 s after a 20 s
    outage in one trial) or, after a long outage, minutes: its session had
    expired by then (a restarted ZooKeeper restores sessions, each for one
    session timeout), and it served from a stale image until it was back."""
    return KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=1.0)


def _json(value) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


def _topic_id_text(topic_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()


def _topic_id(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def registration_json(reg: BrokerRegistration) -> bytes:
    """A broker's /brokers/ids/N node, as Kafka writes it (version 5)."""
    return _json(
        {
            "version": 5,
            "host": reg.endpoints[0].host,
            "port": reg.endpoints[0].port,
            "endpoints": [f"{e.listener}://{e.host}:{e.port}" for e in reg.endpoints],
            "listener_security_protocol_map": {
                e.listener: e.security_protocol for e in reg.endpoints
            },
            "rack": reg.rack,
            "jmx_port": -1,
            "timestamp": str(int(time.time() * 1000)),
            "features": {},
        }
    )


def state_path(topic: str, index: int) -> str:
    return f"/brokers/topics/{topic}/partitions/{index}/state"


def _state_json(reg: PartitionRegistration, controller_epoch: int) -> bytes:
    return _json(
        {
            "version": 1,
            "controller_epoch": controller_epoch,
            "leader": reg.leader,
            "leader_epoch": reg.leader_epoch,
            "isr": list(reg.isr),
        }
    )


@dataclass
class Snapshot:
    """What one read of ZooKeeper found, before it becomes an image."""

    cluster_id: str
    controller_id: int
    brokers: dict[int, BrokerRegistration]
    topics: dict[str, TopicImage]
    broker_configs: dict[str, dict[str, str]]
    user_configs: dict[str, dict[str, str]]


class ZkMetadataBackend:
    """Implements MetadataBackend (broker/controller/api.py) on ZooKeeper."""

    def __init__(
        self,
        connect: str,
        cache: MetadataCache,
        node_id: int,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int = 18000,
        unclean_leader_election: bool = False,
        auto_leader_rebalance: bool = True,
        leader_imbalance_check_interval_s: int = 300,
        leader_imbalance_percentage: int = 10,
        cluster_id: str | None = None,
    ):
        """`cluster_id`: the id this node writes to /cluster/id when it is the
        first of a new cluster (gregor.cluster.id; None: generated); a cluster
        that has one keeps it."""
        self.cache = cache
        self.cluster_id = cluster_id
        self.node_id = node_id
        self.unclean_leader_election = unclean_leader_election
        self.auto_leader_rebalance = auto_leader_rebalance
        self.leader_imbalance_check_interval_s = leader_imbalance_check_interval_s
        self.leader_imbalance_percentage = leader_imbalance_percentage
        self._connection_timeout = connection_timeout_ms / 1000
        self.connect_string = connect
        self.zk = KazooClient(
            hosts=connect,
            timeout=session_timeout_ms / 1000,
            connection_retry=reconnect_retry(),
        )
        self._token: trio.lowlevel.TrioToken | None = None
        self._dirty = trio.Event()
        self._session_lost = trio.Event()
        self._registration: BrokerRegistration | None = None
        self._controller_epoch = 0
        self._is_controller = False
        self._last_live: set[int] | None = None
        self._session_timeout = session_timeout_ms / 1000
        # One read-and-publish at a time, so a newer read is never published
        # before an older one.
        self._reload_lock = trio.Lock()
        self._shutting_down = False
        # Set by close(): reads failing from then on are the client closing.
        self._closing = False

    # --- running ----------------------------------------------------------------------

    async def start(self, registration: BrokerRegistration, nursery: trio.Nursery) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._registration = registration
        await trio.to_thread.run_sync(self._connect)
        self.zk.add_listener(self._on_state)
        await trio.to_thread.run_sync(self._ensure_layout)
        await self._reload()
        await trio.to_thread.run_sync(self._register)
        await self._reload()
        nursery.start_soon(self._follow)
        nursery.start_soon(self._campaign)
        if self.auto_leader_rebalance:
            nursery.start_soon(self._rebalance_leaders)

    def _connect(self) -> None:
        try:
            self._create_chroot()
            self.zk.start(timeout=self._connection_timeout)
        except Exception as e:  # kazoo's timeout error is its own type
            self.zk.stop()
            raise ZooKeeperUnavailable(
                f"cannot reach ZooKeeper at {self.connect_string} within "
                f"{self._connection_timeout:g} s: {e}"
            ) from e

    def _create_chroot(self) -> None:
        create_chroot(self.connect_string, self._connection_timeout)

    def _on_state(self, state) -> None:
        # kazoo's thread: only hand the news to trio.
        if state == KazooState.LOST:
            self._wake(lambda: self._session_lost.set())
        self._wake(self._mark_dirty)

    def _wake(self, fn) -> None:
        if self._token is not None:
            try:
                self._token.run_sync_soon(fn)
            except trio.RunFinishedError:
                pass

    def _mark_dirty(self) -> None:
        self._dirty.set()

    def _watch(self, event) -> None:
        self._wake(self._mark_dirty)

    def _ensure_layout(self) -> None:
        for path in (
            "/brokers/ids",
            "/brokers/topics",
            "/config/topics",
            "/config/brokers",
            "/config/users",
            "/cluster",
        ):
            self.zk.ensure_path(path)
        try:
            self.zk.create(
                "/cluster/id", _json({"version": "1", "id": self.cluster_id or new_cluster_id()})
            )
        except NodeExistsError:
            pass

    def _register(self) -> None:
        """The ephemeral registration; a previous session's node (a quick restart
        after kill -9) is waited out, as Kafka does."""
        reg = self._registration
        assert reg is not None
        data = registration_json(reg)
        deadline = time.monotonic() + self._session_timeout + 10
        path = f"/brokers/ids/{self.node_id}"
        while True:
            try:
                self.zk.create(path, data, ephemeral=True)
                return
            except NodeExistsError:
                stat = self.zk.exists(path)
                if stat is not None and stat.ephemeralOwner == self.zk.client_id[0]:
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"broker {self.node_id} is already registered in ZooKeeper by another "
                        "session (is another broker running with this node.id?)"
                    ) from None
                time.sleep(0.2)

    async def _follow(self) -> None:
        """Re-read ZooKeeper whenever a watch fires, and publish what changed."""
        failures = 0
        while True:
            await self._dirty.wait()
            self._dirty = trio.Event()
            try:
                if self._session_lost.is_set() and self.zk.connected:
                    log.warning("ZooKeeper session was lost: registering again")
                    await trio.to_thread.run_sync(self._register)
                    # Cleared only once registered: a registration cut short by
                    # another connection loss is tried again on the next pass.
                    self._session_lost = trio.Event()
                await self._reload()
            except Exception:
                if self._closing:
                    # The broker is stopping and closed the client under a
                    # read that a last watch started: nothing to follow.
                    return
                # ZooKeeper going away again mid-read is the case this loop is
                # for; the broker keeps serving from its last image meanwhile.
                # The cause once, then a line a minute: an outage is long.
                failures += 1
                if failures == 1:
                    log.exception("following the cluster metadata in ZooKeeper failed")
                elif failures % 60 == 0:
                    log.warning("ZooKeeper still unreadable after %d tries", failures)
                await trio.sleep(1)
                self._dirty.set()
            else:
                if failures:
                    log.info("following ZooKeeper again after %d failed reads", failures)
                failures = 0

    async def _reload(self) -> None:
        async with self._reload_lock:
            await self._reload_locked()

    async def _reload_locked(self) -> None:
        snapshot = await trio.to_thread.run_sync(self._read)
        image = MetadataImage(
            cluster_id=snapshot.cluster_id,
            controller_id=snapshot.controller_id,
            brokers=snapshot.brokers,
            topics=snapshot.topics,
            broker_configs=snapshot.broker_configs,
            user_configs=snapshot.user_configs,
        )
        await self.cache.publish(_share_unchanged(self.cache.image, image))
        if self._is_controller:
            await self._on_controller_image(image)

    def _read(self) -> Snapshot:
        """Blocking: the whole layout, setting a one-shot watch on every node read."""
        zk, watch = self.zk, self._watch
        raw_id, _ = zk.get("/cluster/id")
        cluster_id = json.loads(raw_id)["id"]
        controller_stat = zk.exists("/controller", watch=watch)
        controller_id = -1
        if controller_stat is not None:
            try:
                controller_id = json.loads(zk.get("/controller")[0])["brokerid"]
            except NoNodeError:
                pass
        brokers = {}
        for child in zk.get_children("/brokers/ids", watch=watch):
            try:
                data, _ = zk.get(f"/brokers/ids/{child}")
            except NoNodeError:
                continue
            brokers[int(child)] = _broker_from_json(int(child), json.loads(data))
        topics = {}
        for name in zk.get_children("/brokers/topics", watch=watch):
            try:
                data, _ = zk.get(f"/brokers/topics/{name}", watch=watch)
            except NoNodeError:
                continue
            raw = json.loads(data)
            adding = raw.get("adding_replicas") or {}
            removing = raw.get("removing_replicas") or {}
            partitions = {}
            for index, replicas in raw["partitions"].items():
                try:
                    state, stat = zk.get(state_path(name, int(index)), watch=watch)
                except NoNodeError:
                    continue  # being created or deleted: the next read sees it whole
                s = json.loads(state)
                partitions[int(index)] = PartitionRegistration(
                    replicas=tuple(replicas),
                    isr=tuple(s["isr"]),
                    leader=s["leader"],
                    leader_epoch=s["leader_epoch"],
                    partition_epoch=stat.version,
                    adding_replicas=tuple(adding.get(index, ())),
                    removing_replicas=tuple(removing.get(index, ())),
                )
            configs = {}
            if zk.exists(f"/config/topics/{name}", watch=watch) is not None:
                try:
                    configs = json.loads(zk.get(f"/config/topics/{name}")[0])["config"]
                except NoNodeError:
                    pass
            topics[name] = TopicImage(name, _topic_id(raw["topic_id"]), partitions, configs)
        broker_configs = {
            "" if child == "<default>" else child: configs
            for child, configs in _read_configs(zk, "/config/brokers", watch).items()
        }
        user_configs = {
            user: configs
            for user, configs in _read_configs(zk, "/config/users", watch).items()
            if configs
        }
        return Snapshot(cluster_id, controller_id, brokers, topics, broker_configs, user_configs)

    async def close(self) -> None:
        self._closing = True
        await trio.to_thread.run_sync(self._close)

    def _close(self) -> None:
        try:
            self.zk.stop()
            self.zk.close()
        except Exception:  # closing a client whose server is gone
            log.debug("closing the ZooKeeper client", exc_info=True)

    # --- the active controller ---------------------------------------------------------------

    async def _campaign(self) -> None:
        """Try to become the controller; when /controller goes, try again.
        ZooKeeper being away (a restart, a lost connection) is retried, never
        the end of the broker."""
        while True:
            try:
                await self._campaign_once()
            except Exception:
                log.warning("controller election failed; retrying", exc_info=True)
                self._is_controller = False
                await trio.sleep(1)

    async def _campaign_once(self) -> None:
        while True:
            won = await trio.to_thread.run_sync(self._try_become_controller)
            if won:
                log.info(
                    "broker %d is the controller (epoch %d)", self.node_id, self._controller_epoch
                )
                self._is_controller = True
                self._last_live = None
                await self._on_controller_image(self.cache.image)
                # Keep the role until the node is gone (our session ended).
                while self._is_controller:
                    await self.cache.wait_for_change()
                    if self.cache.image.controller_id != self.node_id:
                        self._is_controller = False
            await self.cache.wait_for_change()

    def _try_become_controller(self) -> bool:
        if self._shutting_down:
            return False
        data = _json(
            {"version": 2, "brokerid": self.node_id, "timestamp": str(int(time.time() * 1000))}
        )
        try:
            self.zk.create("/controller", data, ephemeral=True)
        except NodeExistsError:
            return False
        # A new controller bumps the epoch, so writes of an older one can be told apart.
        while True:
            try:
                raw, stat = self.zk.get("/controller_epoch")
                epoch = int(raw) + 1
                self.zk.set("/controller_epoch", str(epoch).encode(), version=stat.version)
            except NoNodeError:
                epoch = 1
                try:
                    self.zk.create("/controller_epoch", b"1")
                except NodeExistsError:
                    continue
            except BadVersionError:
                continue
            self._controller_epoch = epoch
            return True

    async def _on_controller_image(self, image: MetadataImage) -> None:
        """The controller's duty on each image: brokers that left are fenced,
        brokers that came back may lead, leaderless partitions get a leader."""
        live = set(image.live_broker_ids())
        previous = (
            self._last_live
            if self._last_live is not None
            else set(image.brokers)
            | {r for t in image.topics.values() for p in t.partitions.values() for r in p.replicas}
        )
        self._last_live = live
        changes: dict[TopicPartition, PartitionRegistration] = {}
        working = image
        for gone in sorted(previous - live):
            changes.update(elections.broker_fenced(working, gone, self._unclean))
            working = _apply(working, changes)
        for back in sorted(live):
            found = elections.broker_unfenced(working, back, self._unclean)
            changes.update(found)
            working = _apply(working, found)
        if changes:
            await self._write_states(image, changes)
        finished = elections.finished_reassignments(_apply(image, changes))
        if finished and not changes:
            log.info("reassignments done: %s", sorted(finished))
            await self._write_partitions(image, finished)

    async def _write_partitions(
        self, base: MetadataImage, changes: Mapping[TopicPartition, PartitionRegistration]
    ) -> dict[TopicPartition, bool]:
        """Replica sets (in the topic nodes) and states, per topic one
        transaction conditional on what `base` saw; whether each went in."""
        by_topic: dict[str, dict[int, PartitionRegistration]] = {}
        for (topic, index), reg in changes.items():
            by_topic.setdefault(topic, {})[index] = reg
        done: dict[TopicPartition, bool] = {}
        for topic, regs in by_topic.items():
            ok = await trio.to_thread.run_sync(self._write_topic_sync, base, topic, regs)
            done.update({(topic, i): ok for i in regs})
            if not ok:
                self._dirty.set()
        return done

    def _write_topic_sync(
        self, base: MetadataImage, topic: str, regs: dict[int, PartitionRegistration]
    ) -> bool:
        path = f"/brokers/topics/{topic}"
        try:
            data, stat = self.zk.get(path)
        except NoNodeError:
            return False
        raw = json.loads(data)
        adding = dict(raw.get("adding_replicas") or {})
        removing = dict(raw.get("removing_replicas") or {})
        t = self.zk.transaction()
        for index, reg in regs.items():
            current = base.partition(topic, index)
            stored = list(raw["partitions"].get(str(index), []))
            if current is None or stored != list(current.replicas):
                return False  # the topic changed since `base`
            raw["partitions"][str(index)] = list(reg.replicas)
            for mapping, value in (
                (adding, reg.adding_replicas),
                (removing, reg.removing_replicas),
            ):
                if value:
                    mapping[str(index)] = list(value)
                else:
                    mapping.pop(str(index), None)
            if (reg.leader, reg.isr) != (current.leader, current.isr):
                t.set_data(
                    state_path(topic, index),
                    _state_json(reg, self._controller_epoch),
                    version=current.partition_epoch,
                )
        raw["adding_replicas"], raw["removing_replicas"] = adding, removing
        t.set_data(path, _json(raw), version=stat.version)
        try:
            _commit(t)
        except (BadVersionError, NoNodeError):
            return False
        return True

    async def alter_partition_reassignments(
        self, moves: dict[TopicPartition, list[int] | None]
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        await self._reload()
        image = self.cache.image
        changes = {}
        for tp, target in moves.items():
            reg = image.partition(*tp)
            if reg is None:
                continue
            if target is None:
                changes[tp] = elections.cancel_reassignment(reg, image)
            else:
                changes[tp] = elections.reassign(reg, target)
        done = await self._write_partitions(image, changes)
        await self._reload()
        conflict = (
            ErrorCode.REASSIGNMENT_IN_PROGRESS,
            "The partition changed meanwhile; try again.",
        )
        return {tp: (ErrorCode.NONE, None) if done.get(tp) else conflict for tp in moves}

    async def _rebalance_leaders(self) -> None:
        """auto.leader.rebalance.enable: every leader.imbalance.check.interval.seconds
        the controller gives leadership back to preferred replicas where a
        broker leads too few of its own partitions."""
        while True:
            await trio.sleep(self.leader_imbalance_check_interval_s)
            if not self._is_controller or self._shutting_down:
                continue
            image = self.cache.image
            changes = elections.imbalanced_preferred_leaders(
                image, self.leader_imbalance_percentage
            )
            if changes:
                log.info("rebalancing leadership to preferred replicas: %s", sorted(changes))
                try:
                    await self._write_states(image, changes)
                except Exception:  # ZooKeeper away: the next check tries again
                    log.warning("rebalancing leadership failed", exc_info=True)

    def _unclean(self, topic: str) -> bool:
        configs = self.cache.image.topics.get(topic)
        value = configs.configs.get("unclean.leader.election.enable") if configs else None
        if value is not None:
            return value == "true"
        return self.unclean_leader_election

    async def _write_states(
        self, base: MetadataImage, changes: Mapping[TopicPartition, PartitionRegistration]
    ) -> None:
        """Each change conditional on the partition epoch it was computed from;
        a conflict means someone changed it first: the next image decides again."""
        conflicts = await trio.to_thread.run_sync(self._write_states_sync, base, dict(changes))
        if conflicts:
            log.info("partition states changed meanwhile, deciding again: %s", conflicts)
            self._dirty.set()

    def _write_states_sync(self, base: MetadataImage, changes) -> list[TopicPartition]:
        conflicts = []
        for (topic, index), reg in changes.items():
            current = base.partition(topic, index)
            if current is None:
                continue
            try:
                self.zk.set(
                    state_path(topic, index),
                    _state_json(reg, self._controller_epoch),
                    version=current.partition_epoch,
                )
                if reg.leader != current.leader:
                    log.info(
                        "%s-%d: leader %d -> %d (epoch %d), ISR %s",
                        topic,
                        index,
                        current.leader,
                        reg.leader,
                        reg.leader_epoch,
                        list(reg.isr),
                    )
            except (BadVersionError, NoNodeError):
                conflicts.append((topic, index))
        return conflicts

    async def controlled_shutdown(self) -> None:
        """Hand this broker's leaderships to other in-sync replicas and leave
        the ISRs, retrying on conflicting changes, then stop campaigning."""
        self._shutting_down = True
        for _ in range(5):
            await self._reload()
            changes = elections.controlled_shutdown(self.cache.image, self.node_id)
            if not changes:
                break
            conflicts = await trio.to_thread.run_sync(
                self._write_states_sync, self.cache.image, changes
            )
            if not conflicts:
                await self._reload()
                break
        await trio.to_thread.run_sync(self._deregister)

    def _deregister(self) -> None:
        for path in (f"/brokers/ids/{self.node_id}",):
            try:
                self.zk.delete(path)
            except NoNodeError:
                pass
        if self._is_controller:
            try:
                self.zk.delete("/controller")
            except NoNodeError:
                pass

    # --- changes a request asks for ---------------------------------------------------------

    async def register_broker(self, registration: BrokerRegistration) -> None:
        self._registration = registration
        await trio.to_thread.run_sync(self._register)
        await self._reload()

    async def create_topic(
        self, name: str, assignments: Mapping[int, list[int]], configs: Mapping[str, str]
    ) -> TopicImage:
        image = self.cache.image
        topic_id = random_uuid()
        states = {i: elections.new_partition(list(r), image) for i, r in assignments.items()}

        def write() -> None:
            t = self.zk.transaction()
            t.create(
                f"/brokers/topics/{name}",
                _json(
                    {
                        "version": 3,
                        "topic_id": _topic_id_text(topic_id),
                        "partitions": {str(i): list(r) for i, r in assignments.items()},
                        "adding_replicas": {},
                        "removing_replicas": {},
                    }
                ),
            )
            t.create(f"/brokers/topics/{name}/partitions", b"")
            for i, reg in states.items():
                t.create(f"/brokers/topics/{name}/partitions/{i}", b"")
                t.create(state_path(name, i), _state_json(reg, self._controller_epoch))
            t.create(f"/config/topics/{name}", _json({"version": 1, "config": dict(configs)}))
            _commit(t)

        try:
            await trio.to_thread.run_sync(write)
        except NodeExistsError:
            raise ControllerError(
                ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
            ) from None
        await self._reload()
        topic = self.cache.image.topic(name)
        if topic is None or topic.topic_id != topic_id:
            raise ControllerError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        return topic

    async def delete_topic(self, name: str) -> TopicImage:
        topic = self.cache.image.topic(name)

        def write() -> None:
            children = self.zk.get_children(f"/brokers/topics/{name}/partitions")
            t = self.zk.transaction()
            for index in children:
                t.delete(state_path(name, int(index)))
                t.delete(f"/brokers/topics/{name}/partitions/{index}")
            t.delete(f"/brokers/topics/{name}/partitions")
            t.delete(f"/brokers/topics/{name}")
            t.delete(f"/config/topics/{name}")
            _commit(t)

        try:
            await trio.to_thread.run_sync(write)
        except (NoNodeError, NotEmptyError):
            raise ControllerError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "This server does not host this topic-partition.",
            ) from None
        await self._reload()
        if topic is None:
            raise ControllerError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return topic

    async def create_partitions(
        self, name: str, assignments: Mapping[int, list[int]]
    ) -> TopicImage:
        image = self.cache.image
        states = {i: elections.new_partition(list(r), image) for i, r in assignments.items()}

        def write() -> None:
            data, stat = self.zk.get(f"/brokers/topics/{name}")
            raw = json.loads(data)
            raw["partitions"].update({str(i): list(r) for i, r in assignments.items()})
            t = self.zk.transaction()
            t.set_data(f"/brokers/topics/{name}", _json(raw), version=stat.version)
            for i, reg in states.items():
                t.create(f"/brokers/topics/{name}/partitions/{i}", b"")
                t.create(state_path(name, i), _state_json(reg, self._controller_epoch))
            _commit(t)

        try:
            await trio.to_thread.run_sync(write)
        except NoNodeError:
            raise ControllerError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) from None
        except (BadVersionError, NodeExistsError):
            raise ControllerError(
                ErrorCode.REASSIGNMENT_IN_PROGRESS, "The topic changed meanwhile; try again."
            ) from None
        await self._reload()
        return self.cache.image.topics[name]

    async def alter_topic_configs(self, name: str, configs: Mapping[str, str]) -> None:
        await trio.to_thread.run_sync(self._set_config, f"/config/topics/{name}", dict(configs))
        await self._reload()

    async def alter_broker_configs(self, resource: str, configs: Mapping[str, str]) -> None:
        path = f"/config/brokers/{resource or '<default>'}"
        await trio.to_thread.run_sync(self._set_config, path, dict(configs))
        await self._reload()

    async def alter_user_configs(self, changes: Mapping[str, Mapping[str, str | None]]) -> None:
        await trio.to_thread.run_sync(change_user_configs, self.zk, changes)
        await self._reload()

    def _set_config(self, path: str, configs: dict[str, str]) -> None:
        data = _json({"version": 1, "config": configs})
        try:
            self.zk.set(path, data)
        except NoNodeError:
            try:
                self.zk.create(path, data)
            except NodeExistsError:
                self.zk.set(path, data)

    async def alter_partition(
        self,
        tp: TopicPartition,
        leader_id: int,
        leader_epoch: int,
        partition_epoch: int,
        isr: list[int],
    ) -> PartitionRegistration:
        """AlterPartition, checked against ZooKeeper itself rather than this
        broker's image (which may lag it), so that every refusal is final:

        - the partition's state at another version than `partition_epoch`:
          INVALID_UPDATE_VERSION (the next image shows the change), unless it
          is this very proposal one version on (sent before, its answer lost),
          which is a success;
        - at that version, another leader or epoch: FENCED_LEADER_EPOCH; a
          replica not registered (or not assigned): INELIGIBLE_REPLICA. Nothing
          of this proposal can be in ZooKeeper then;
        - else the write, conditional on that version."""
        known = self.cache.image.partition(*tp)
        if known is None:
            raise ControllerError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        proposed = replace(
            known,
            leader=leader_id,
            leader_epoch=leader_epoch,
            isr=tuple(isr),
            partition_epoch=partition_epoch + 1,
        )

        def attempt() -> ErrorCode:
            path = state_path(*tp)
            try:
                raw, stat = self.zk.get(path)
            except NoNodeError:
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            state = json.loads(raw)
            found = (state["leader"], state["leader_epoch"], list(state["isr"]))
            if stat.version != partition_epoch:
                if stat.version == partition_epoch + 1 and found == (leader_id, leader_epoch, isr):
                    return ErrorCode.NONE
                return ErrorCode.INVALID_UPDATE_VERSION
            if found[:2] != (leader_id, leader_epoch):
                return ErrorCode.FENCED_LEADER_EPOCH
            live = {int(child) for child in self.zk.get_children("/brokers/ids")}
            if (
                not isr
                or leader_id not in isr
                or any(r not in known.replicas or r not in live for r in isr)
            ):
                return ErrorCode.INELIGIBLE_REPLICA
            try:
                self.zk.set(
                    path,
                    _state_json(proposed, state.get("controller_epoch", self._controller_epoch)),
                    version=partition_epoch,
                )
            except BadVersionError:
                return ErrorCode.INVALID_UPDATE_VERSION
            except NoNodeError:
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            return ErrorCode.NONE

        error = await trio.to_thread.run_sync(attempt)
        if error == ErrorCode.INVALID_UPDATE_VERSION:
            self._dirty.set()  # this broker's image is behind: catch up
        if error != ErrorCode.NONE:
            raise ControllerError(error)
        # Written: the change stands even if ZooKeeper goes away before it is
        # read back; the following task publishes it once ZooKeeper answers.
        try:
            await self._reload()
        except Exception:  # kazoo's errors and its handler's timeout alike
            log.info("%s-%d: ISR change written; reading it back failed", *tp, exc_info=True)
            self._dirty.set()
            return proposed
        return self.cache.image.partition(*tp) or proposed

    async def elect_leaders(self, tps, election_type: int):
        await self._reload()
        image = self.cache.image
        changes, answers = elections.requested_elections(
            image,
            tps,
            election_type,
            self._unclean if election_type == elections.PREFERRED else (lambda t: True),
        )
        conflicts = await trio.to_thread.run_sync(self._write_states_sync, image, changes)
        for tp in conflicts:
            answers[tp] = (ErrorCode.NOT_CONTROLLER, "The partition changed meanwhile; try again.")
        await self._reload()
        return answers

    async def allocate_producer_ids(self, broker_id: int) -> ProducerIdBlock:
        def allocate() -> ProducerIdBlock:
            path = "/latest_producer_id_block"
            while True:
                try:
                    data, stat = self.zk.get(path)
                except NoNodeError:
                    block = ProducerIdBlock(broker_id, 0, PRODUCER_ID_BLOCK_SIZE)
                    try:
                        self.zk.create(path, _block_json(block))
                        return block
                    except NodeExistsError:
                        continue
                last = json.loads(data)
                block = ProducerIdBlock(
                    broker_id, int(last["block_end"]) + 1, PRODUCER_ID_BLOCK_SIZE
                )
                try:
                    self.zk.set(path, _block_json(block), version=stat.version)
                    return block
                except BadVersionError:
                    continue

        return await trio.to_thread.run_sync(allocate)


def _read_configs(zk: KazooClient, parent: str, watch) -> dict[str, dict[str, str]]:
    """Blocking: the configs of each child of a /config node, watching each."""
    configs = {}
    for child in zk.get_children(parent, watch=watch):
        try:
            data, _ = zk.get(f"{parent}/{child}", watch=watch)
        except NoNodeError:
            continue  # deleted since the listing: the next read sees it gone
        configs[child] = json.loads(data)["config"]
    return configs


def create_chroot(connect_string: str, timeout: float) -> None:
    """Blocking: a chroot that does not exist yet is created, as Kafka does."""
    hosts, slash, chroot = connect_string.partition("/")
    if not slash or not chroot.strip("/"):
        return
    plain = KazooClient(hosts=hosts, timeout=timeout)
    plain.start(timeout=timeout)
    try:
        plain.ensure_path("/" + chroot.strip("/"))
    finally:
        plain.stop()
        plain.close()


def change_user_configs(zk: KazooClient, changes: Mapping[str, Mapping[str, str | None]]) -> None:
    """Blocking: change some keys of users' config nodes in one transaction,
    conditional on the versions read, so that a change made by another broker
    meanwhile is read again rather than overwritten. Also what `gregor
    add-scram` writes before any broker runs."""
    zk.ensure_path("/config/users")
    while True:
        t = zk.transaction()
        for user, change in changes.items():
            path = f"/config/users/{user}"
            try:
                data, stat = zk.get(path)
            except NoNodeError:
                configs = apply_config_changes({}, change)
                t.create(path, _json({"version": 1, "config": configs}))
                continue
            configs = apply_config_changes(json.loads(data)["config"], change)
            t.set_data(path, _json({"version": 1, "config": configs}), version=stat.version)
        try:
            _commit(t)
            return
        except (BadVersionError, NoNodeError, NodeExistsError):
            continue


def _block_json(block: ProducerIdBlock) -> bytes:
    return _json(
        {
            "version": 1,
            "broker": block.broker_id,
            "block_start": str(block.first),
            "block_end": str(block.next_after - 1),
        }
    )


def _commit(transaction) -> None:
    """Commit a kazoo transaction; raise the first failure (it failed whole)."""
    results = transaction.commit()
    for result in results:
        if isinstance(result, Exception) and not _is_rolled_back(result):
            raise result


def _is_rolled_back(error: Exception) -> bool:
    return type(error).__name__ == "RolledBackError"


def _broker_from_json(node_id: int, raw: dict) -> BrokerRegistration:
    protocols = raw.get("listener_security_protocol_map") or {}
    endpoints = []
    for entry in raw.get("endpoints", []):
        name, _, address = entry.partition("://")
        host, _, port = address.rpartition(":")
        endpoints.append(Endpoint(name, host, int(port), protocols.get(name, "PLAINTEXT")))
    return BrokerRegistration(node_id, tuple(endpoints), raw.get("rack"))


def _apply(image: MetadataImage, changes) -> MetadataImage:
    for (topic, index), reg in changes.items():
        image = image.with_partitions(topic, {index: reg})
    return image


def _share_unchanged(old: MetadataImage, new: MetadataImage) -> MetadataImage:
    """`new` with the topics that did not change replaced by the old objects,
    so deltas (which skip identical objects) stay cheap."""
    topics = {
        name: (old.topics[name] if old.topics.get(name) == topic else topic)
        for name, topic in new.topics.items()
    }
    return replace(new, topics=topics)


__all__ = ["NO_LEADER", "ZkMetadataBackend", "change_user_configs", "create_chroot"]
