"""Followers copy their leaders' logs: one fetcher task per leader broker.

A follower fetches exactly as Kafka's ReplicaFetcherThread does: ordinary
Fetch requests carrying its replica id (ReplicaState) and, per partition,
the current leader epoch, the fetch offset (its log end), its log start
offset and the epoch of its last fetched batch. The leader answers with
records, its high watermark and log start offset, or a diverging epoch
(KIP-320/595) when the follower's tail is not the leader's: the follower then
truncates to where they agree and fetches on from there, so divergent
records are never kept and never acknowledged twice.

Errors: NOT_LEADER_OR_FOLLOWER or a fenced/unknown epoch means the metadata
has moved on (the partition is dropped here until the next metadata change
says whom to follow); OFFSET_OUT_OF_RANGE below the leader's log start makes
the follower start over at the leader's log start; a broken connection is
retried after `replica.fetch.backoff.ms`.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass

import trio

from broker.broker_client import BrokerConnection, BrokerConnectionError
from broker.metadata.image import MetadataImage
from broker.partition import Partition, TopicPartition
from broker.security.login import SaslLogin
from logstore import LogError
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

log = logging.getLogger("gregor.fetcher")

FETCH_VERSION = 17


@dataclass(frozen=True)
class FetcherSettings:
    """Kafka's replica.fetch.* settings and the listener followers use."""

    listener: str
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 1048576
    response_max_bytes: int = 10485760
    backoff_ms: int = 1000
    socket_timeout_ms: int = 30000
    # The broker's credentials when the listener is a SASL one, and its
    # client side of TLS when it is a TLS one.
    login: SaslLogin | None = None
    tls: ssl.SSLContext | None = None


class ReplicaFetcher:
    """Fetches the partitions this broker follows from one leader broker."""

    def __init__(
        self,
        node_id: int,
        leader_id: int,
        settings: FetcherSettings,
        image: Callable[[], MetadataImage],
    ):
        self.node_id = node_id
        self.leader_id = leader_id
        self.settings = settings
        self._image = image
        self.partitions: dict[TopicPartition, Partition] = {}
        self._changed = trio.Event()
        self._connection: BrokerConnection | None = None
        self._endpoint: tuple[str, int] | None = None
        self.cancel_scope = trio.CancelScope()

    def add(self, partition: Partition) -> None:
        self.partitions[partition.tp] = partition
        self._changed.set()

    def remove(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)

    async def run(self) -> None:
        with self.cancel_scope:
            try:
                while True:
                    if not self.partitions:
                        self._changed = trio.Event()
                        await self._changed.wait()
                        continue
                    try:
                        await self._fetch_once()
                    except BrokerConnectionError as e:
                        log.info("fetching from broker %d: %s", self.leader_id, e)
                        await self._close()
                        await trio.sleep(self.settings.backoff_ms / 1000)
                    except Exception:
                        # A fetcher must never take the broker down: log, back off, go on.
                        log.exception("fetching from broker %d failed", self.leader_id)
                        await self._close()
                        await trio.sleep(self.settings.backoff_ms / 1000)
            finally:
                await self._close()

    async def _close(self) -> None:
        if self._connection is not None:
            await self._connection.close()
            self._connection = None

    def _leader_connection(self) -> BrokerConnection:
        registration = self._image().brokers.get(self.leader_id)
        endpoint = None if registration is None else registration.endpoint(self.settings.listener)
        if endpoint is None:
            raise BrokerConnectionError(
                f"broker {self.leader_id} has no {self.settings.listener} endpoint"
            )
        address = (endpoint.host, endpoint.port)
        if self._connection is None or self._endpoint != address:
            self._connection = BrokerConnection(
                endpoint.host,
                endpoint.port,
                f"replica-fetcher-{self.node_id}",
                self.settings.login,
                self.settings.tls,
            )
            self._endpoint = address
        return self._connection

    async def _fetch_once(self) -> None:
        image = self._image()
        wanted = list(self.partitions.values())
        by_topic: dict[str, list[Partition]] = {}
        for partition in wanted:
            by_topic.setdefault(partition.topic, []).append(partition)
        topics = []
        # What each partition was fetched as (its epoch and log end): the
        # answer applies only while that is still so, as in Kafka's fetcher.
        asked: dict[TopicPartition, tuple[int, int]] = {}
        for name, partitions in by_topic.items():
            topic = image.topic(name)
            if topic is None:
                continue
            for p in partitions:
                asked[p.tp] = (p.leader_epoch, p.log_end_offset)
            topics.append(
                {
                    "topic_id": topic.topic_id,
                    "partitions": [
                        {
                            "partition": p.index,
                            "current_leader_epoch": asked[p.tp][0],
                            "fetch_offset": asked[p.tp][1],
                            "last_fetched_epoch": _last_fetched_epoch(p),
                            "log_start_offset": p.log_start_offset,
                            "partition_max_bytes": self.settings.max_bytes,
                        }
                        for p in partitions
                    ],
                }
            )
        if not topics:
            await trio.sleep(self.settings.backoff_ms / 1000)
            return
        request = {
            "replica_state": {"replica_id": self.node_id, "replica_epoch": -1},
            "max_wait_ms": self.settings.max_wait_ms,
            "min_bytes": self.settings.min_bytes,
            "max_bytes": self.settings.response_max_bytes,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": topics,
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        connection = self._leader_connection()
        response = await connection.request(
            ApiKey.FETCH,
            FETCH_VERSION,
            request,
            # Kafka refuses a socket timeout below the wait the leader may
            # take; here it is stretched to that wait and a second more.
            timeout=max(self.settings.socket_timeout_ms, self.settings.max_wait_ms + 1000) / 1000,
        )
        if response.error_code != ErrorCode.NONE:
            log.info(
                "fetch from broker %d: %s", self.leader_id, ErrorCode(response.error_code).name
            )
            await trio.sleep(self.settings.backoff_ms / 1000)
            return
        names = {t.topic_id: t.name for t in image.topics.values()}
        backoff = False
        for t in response.responses:
            topic_name = names.get(t.topic_id)
            if topic_name is None:
                continue  # deleted while the fetch was out
            for pdata in t.partitions:
                tp = (topic_name, pdata.partition_index)
                fetched = self.partitions.get(tp)
                if fetched is None:
                    continue  # removed while the fetch was out
                if asked.get(tp) != (fetched.leader_epoch, fetched.log_end_offset):
                    # Its epoch or log end moved while the fetch was out (a
                    # truncation still finishing from before a leader change,
                    # a new leadership): records fetched from the old end
                    # would leave a gap, a divergence would be stale. The
                    # next fetch asks again from where the log is now.
                    log.debug("%r changed while its fetch was out: answer dropped", fetched)
                    continue
                backoff |= not await self._process(fetched, pdata)
        if backoff:
            await trio.sleep(self.settings.backoff_ms / 1000)

    async def _process(self, partition: Partition, pdata) -> bool:
        """Apply one partition's answer; False when the fetcher should back off."""
        error = pdata.error_code
        try:
            if error == ErrorCode.NONE:
                diverging = pdata.diverging_epoch
                if diverging is not None and diverging.epoch >= 0:
                    offset = _truncation_offset(partition, diverging.epoch, diverging.end_offset)
                    log.info(
                        "%r diverges from the leader at epoch %d: truncating to %d",
                        partition,
                        diverging.epoch,
                        offset,
                    )
                    await trio.to_thread.run_sync(partition.truncate_to, offset)
                    return True
                records = pdata.records
                if records:
                    partition.append_as_follower(bytearray(records))
                partition.follow_high_watermark(pdata.high_watermark)
                if pdata.log_start_offset > partition.log_start_offset:
                    await trio.to_thread.run_sync(
                        partition.log.delete_records_before,
                        min(pdata.log_start_offset, partition.log_end_offset),
                    )
                    partition.notify()
                return True
            if error == ErrorCode.OFFSET_OUT_OF_RANGE:
                if partition.log_end_offset < pdata.log_start_offset:
                    log.info(
                        "%r is below the leader's log start %d: starting over there",
                        partition,
                        pdata.log_start_offset,
                    )
                    await trio.to_thread.run_sync(
                        partition.truncate_fully_and_start_at, pdata.log_start_offset
                    )
                else:
                    await trio.to_thread.run_sync(partition.truncate_to, pdata.high_watermark)
                return True
        except LogError as e:
            log.warning("%r: applying the leader's answer failed: %s", partition, e)
            self.remove(partition.tp)
            return False
        if error in (
            ErrorCode.NOT_LEADER_OR_FOLLOWER,
            ErrorCode.FENCED_LEADER_EPOCH,
            ErrorCode.UNKNOWN_LEADER_EPOCH,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode.UNKNOWN_TOPIC_ID,
        ):
            # The leader's view differs from ours: fetch on when the metadata
            # catches up (a newer epoch is published to both of us).
            log.debug("%r: leader answered %s", partition, ErrorCode(error).name)
            return False
        log.warning("%r: leader answered %s", partition, ErrorCode(error).name)
        return False


def _last_fetched_epoch(partition: Partition) -> int:
    epoch = partition.log.latest_epoch
    return -1 if epoch is None else epoch


def _truncation_offset(partition: Partition, leader_epoch: int, leader_end: int) -> int:
    """Where a follower cuts its log given the leader's (epoch, end offset) for
    the follower's last fetched epoch (Kafka's getOffsetTruncationState)."""
    local_end = partition.log_end_offset
    epoch, end = partition.log.end_offset_for_epoch(leader_epoch)
    if end < 0:
        return min(leader_end, local_end)
    if epoch != leader_epoch:
        # The follower never had the leader's epoch: cut to the end of the
        # largest epoch it has below it; the next fetch checks again.
        return min(end, local_end)
    return min(end, leader_end, local_end)


class ReplicaFetcherManager:
    """One fetcher per leader broker, started and stopped as partitions move."""

    def __init__(self, node_id: int, settings: FetcherSettings, image: Callable[[], MetadataImage]):
        self.node_id = node_id
        self.settings = settings
        self._image = image
        self._fetchers: dict[int, ReplicaFetcher] = {}
        self._nursery: trio.Nursery | None = None

    def start(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery

    def follow(self, partition: Partition) -> None:
        """Fetch `partition` from its current leader (and from no other)."""
        self.stop_following(partition.tp)
        if partition.leader < 0 or partition.leader == self.node_id or self._nursery is None:
            return
        fetcher = self._fetchers.get(partition.leader)
        if fetcher is None:
            fetcher = ReplicaFetcher(self.node_id, partition.leader, self.settings, self._image)
            self._fetchers[partition.leader] = fetcher
            self._nursery.start_soon(fetcher.run)
        fetcher.add(partition)

    def stop_following(self, tp: TopicPartition) -> None:
        for leader_id, fetcher in list(self._fetchers.items()):
            fetcher.remove(tp)
            if not fetcher.partitions:
                fetcher.cancel_scope.cancel()
                del self._fetchers[leader_id]

    def stop_all(self) -> None:
        for fetcher in self._fetchers.values():
            fetcher.cancel_scope.cancel()
        self._fetchers.clear()
