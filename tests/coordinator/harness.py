"""A fake broker around a GroupCoordinator, with a clock the test moves.

Requests are built through `wire`'s request codecs (encode, then decode), so
they look exactly like what the broker will pass; every reply is encoded with
the response codec of its request's version, so a malformed reply fails the
test that produced it.

Persists go to `log[partition]` and are reported durable at once, unless
`hold_writes` is set: then they wait in `held` until `complete_writes()`.
"""

from __future__ import annotations

import itertools

from coordinator import (
    CoordinatorConfig,
    GroupCoordinator,
    Persist,
    Reply,
    RequestContext,
)
from coordinator.consumer_protocol import encode_assignment, encode_subscription
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.protocol import request_codec, response_codec

E = ErrorCode

TEST_CONFIG = CoordinatorConfig(
    group_min_session_timeout_ms=1000,
    group_max_session_timeout_ms=600_000,
    group_initial_rebalance_delay_ms=3000,
    offsets_topic_num_partitions=4,
    offsets_retention_ms=24 * 60 * 60 * 1000,
    offsets_retention_check_interval_ms=60_000,
)

SESSION = 10_000
REBALANCE = 30_000


def build_request(api_key: int, version: int, **fields):
    codec = request_codec(api_key, version)
    return codec.decode(codec.encode(fields))


def subscription(*topics: str) -> bytes:
    return encode_subscription(list(topics))


def assignment(**partitions) -> bytes:
    return encode_assignment({t: list(p) for t, p in partitions.items()})


class Harness:
    def __init__(
        self,
        config: CoordinatorConfig = TEST_CONFIG,
        *,
        partitions=None,
        now: int = 0,
        load: bool = True,
    ):
        self.config = config
        self.now = now
        self._uuids = itertools.count(1)
        self.coord = GroupCoordinator(config, new_uuid=self._uuid)
        self._tokens = itertools.count(1)
        self.sent: dict[int, tuple[int, int]] = {}  # token -> (api key, version)
        self.replies: dict[int, dict] = {}
        self.log: dict[int, list] = {}
        self.held: list[Persist] = []
        self.hold_writes = False
        self.failed_writes = 0
        self.persists: list[Persist] = []
        if load:
            parts = range(config.offsets_topic_num_partitions) if partitions is None else partitions
            for p in parts:
                self.run(self.coord.load(p, [], self.now))

    def _uuid(self) -> str:
        return f"uuid{next(self._uuids)}"

    # --- driving ------------------------------------------------------------------

    def run(self, actions) -> None:
        for action in actions:
            if isinstance(action, Reply):
                assert action.token not in self.replies, f"token {action.token} answered twice"
                api_key, version = self.sent[action.token]
                response_codec(api_key, version).encode(action.response)
                self.replies[action.token] = action.response
            else:
                assert isinstance(action, Persist)
                self.persists.append(action)
                self.log.setdefault(action.partition, []).extend(action.records)
                if self.hold_writes:
                    self.held.append(action)
                else:
                    self.run(self.coord.persisted(action.write_id, self.now))

    def complete_writes(self, error: int = E.NONE) -> None:
        held, self.held = self.held, []
        for p in held:
            if error != E.NONE:
                self.failed_writes += 1
                # A failed append leaves nothing in the log. Its records are the
                # last of their kind there: an identical earlier record (a
                # tombstone written before) must stay.
                log = self.log[p.partition]
                for rec in p.records:
                    del log[len(log) - 1 - log[::-1].index(rec)]
            self.run(self.coord.persisted(p.write_id, self.now, error))

    def advance(self, ms: int) -> None:
        """Move the clock, firing every timer on the way in order."""
        target = self.now + ms
        while True:
            deadline = self.coord.next_deadline()
            if deadline is None or deadline > target:
                break
            self.now = max(self.now, deadline)
            self.run(self.coord.tick(self.now))
        self.now = target
        self.run(self.coord.tick(self.now))

    def advance_until(self, condition, limit_ms: int = 10 * 60 * 1000) -> None:
        """Fire timers one deadline at a time until `condition()` holds."""
        end = self.now + limit_ms
        while not condition():
            deadline = self.coord.next_deadline()
            assert deadline is not None and deadline <= end, "condition never held"
            self.advance(max(deadline - self.now, 0))

    def send(
        self, api_key: int, version: int, *, client_id="client", client_host="/127.0.0.1", **fields
    ):
        token = next(self._tokens)
        self.sent[token] = (api_key, version)
        req = build_request(api_key, version, **fields)
        ctx = RequestContext(token, version, client_id, client_host)
        self.run(self.coord.handle(api_key, ctx, req, self.now))
        return token

    def reply(self, token: int) -> dict | None:
        return self.replies.get(token)

    def answered(self, token: int) -> bool:
        return token in self.replies

    # --- requests -------------------------------------------------------------------

    def join(
        self,
        group: str,
        member_id: str = "",
        *,
        version: int = 7,
        instance: str | None = None,
        protocols=None,
        topics=("t",),
        protocol_type: str = "consumer",
        session: int = SESSION,
        rebalance: int = REBALANCE,
        client_id: str = "client",
    ) -> int:
        if protocols is None:
            protocols = [("range", subscription(*topics))]
        return self.send(
            ApiKey.JOIN_GROUP,
            version,
            client_id=client_id,
            group_id=group,
            session_timeout_ms=session,
            rebalance_timeout_ms=rebalance,
            member_id=member_id,
            group_instance_id=instance,
            protocol_type=protocol_type,
            protocols=[{"name": n, "metadata": m} for n, m in protocols],
        )

    def sync(
        self,
        group: str,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        version: int = 3,
        instance: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> int:
        return self.send(
            ApiKey.SYNC_GROUP,
            version,
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=[{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()],
        )

    def heartbeat(
        self, group: str, member_id: str, generation: int, *, instance=None, version=3
    ) -> int:
        return self.send(
            ApiKey.HEARTBEAT,
            version,
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance,
        )

    def hb_error(self, group: str, member_id: str, generation: int, **kw) -> int:
        return self.reply(self.heartbeat(group, member_id, generation, **kw))["error_code"]

    def leave(self, group: str, *members, version: int = 4) -> int:
        """members: member ids, or (member id, instance id) pairs."""
        if version < 3:
            (member_id,) = members
            return self.send(ApiKey.LEAVE_GROUP, version, group_id=group, member_id=member_id)
        idents = []
        for m in members:
            mid, iid = (m, None) if isinstance(m, str) else m
            idents.append({"member_id": mid, "group_instance_id": iid})
        return self.send(ApiKey.LEAVE_GROUP, version, group_id=group, members=idents)

    def commit(
        self,
        group: str,
        offsets: dict[tuple[str, int], int],
        *,
        generation: int = -1,
        member_id: str = "",
        instance: str | None = None,
        metadata: str | None = "",
        version: int = 8,
        retention_ms: int = -1,
        leader_epoch: int = -1,
    ) -> int:
        topics: dict[str, list] = {}
        for (topic, part), off in offsets.items():
            topics.setdefault(topic, []).append(
                {
                    "partition_index": part,
                    "committed_offset": off,
                    "committed_leader_epoch": leader_epoch,
                    "committed_metadata": metadata,
                }
            )
        return self.send(
            ApiKey.OFFSET_COMMIT,
            version,
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=instance,
            retention_time_ms=retention_ms,
            topics=[{"name": t, "partitions": ps} for t, ps in topics.items()],
        )

    def commit_errors(self, token: int) -> dict[tuple[str, int], int]:
        r = self.reply(token)
        return {
            (t["name"], p["partition_index"]): p["error_code"]
            for t in r["topics"]
            for p in t["partitions"]
        }

    def fetch(self, group: str, partitions=None, *, version: int = 7, require_stable=False):
        """partitions: {topic: [partition, ...]} or None for all."""
        topics = (
            None
            if partitions is None
            else [{"name": t, "partition_indexes": list(ps)} for t, ps in partitions.items()]
        )
        if version >= 8:
            return self.send(
                ApiKey.OFFSET_FETCH,
                version,
                groups=[{"group_id": group, "topics": topics}],
                require_stable=require_stable,
            )
        return self.send(
            ApiKey.OFFSET_FETCH,
            version,
            group_id=group,
            topics=topics,
            require_stable=require_stable,
        )

    def fetched(self, group: str, partitions=None, **kw) -> dict[tuple[str, int], tuple]:
        """{(topic, partition): (offset, metadata, error)} of an OffsetFetch v7."""
        r = self.reply(self.fetch(group, partitions, **kw))
        assert r["error_code"] == E.NONE, r
        return {
            (t["name"], p["partition_index"]): (
                p["committed_offset"],
                p["metadata"],
                p["error_code"],
            )
            for t in r["topics"]
            for p in t["partitions"]
        }

    def describe(self, *groups: str, version: int = 5) -> list[dict]:
        return self.reply(self.send(ApiKey.DESCRIBE_GROUPS, version, groups=list(groups)))["groups"]

    def state(self, group: str) -> str:
        (g,) = self.describe(group)
        return g["group_state"]

    def list_groups(self, *, version: int = 5, states=(), types=()) -> dict:
        return self.reply(
            self.send(
                ApiKey.LIST_GROUPS, version, states_filter=list(states), types_filter=list(types)
            )
        )

    def delete_groups(self, *groups: str, version: int = 2) -> dict[str, int]:
        r = self.reply(self.send(ApiKey.DELETE_GROUPS, version, groups_names=list(groups)))
        return {x["group_id"]: x["error_code"] for x in r["results"]}

    def offset_delete(self, group: str, partitions: dict[str, list[int]]) -> int:
        return self.send(
            ApiKey.OFFSET_DELETE,
            0,
            group_id=group,
            topics=[
                {"name": t, "partitions": [{"partition_index": p} for p in ps]}
                for t, ps in partitions.items()
            ],
        )

    # --- whole flows -------------------------------------------------------------------

    def join_new_member(self, group: str, **kw) -> str:
        """A v4+ dynamic member's first JoinGroup: returns the member id it is given."""
        r = self.reply(self.join(group, **kw))
        assert r["error_code"] == E.MEMBER_ID_REQUIRED, r
        return r["member_id"]

    def form_group(
        self, group: str, n: int = 2, *, static: bool = False, topics=("t",), version: int = 7
    ) -> tuple[list[str], int]:
        """n members join and sync: returns ([leader, followers...], generation)."""
        tokens = []
        for i in range(n):
            if static:
                tokens.append(
                    self.join(group, instance=f"instance-{i}", topics=topics, version=version)
                )
            else:
                mid = self.join_new_member(group, topics=topics, version=version)
                tokens.append(self.join(group, mid, topics=topics, version=version))
        # Members joining during the initial delay extend it, up to the rebalance timeout.
        self.advance_until(lambda: all(self.answered(t) for t in tokens))
        replies = [self.reply(t) for t in tokens]
        assert all(r is not None and r["error_code"] == E.NONE for r in replies), replies
        generation = replies[0]["generation_id"]
        leader = replies[0]["leader"]
        members = [r["member_id"] for r in replies]
        ordered = [leader] + [m for m in members if m != leader]
        plan = {m: assignment(t=[i]) for i, m in enumerate(ordered)}
        syncs = [self.sync(group, leader, generation, plan)]
        syncs += [self.sync(group, m, generation) for m in ordered[1:]]
        for m, t in zip(ordered, syncs, strict=True):
            r = self.reply(t)
            assert r["error_code"] == E.NONE and r["assignment"] == plan[m], r
        return ordered, generation

    def instance_of(self, group: str, member_id: str) -> str | None:
        return self.coord.group(group).members[member_id].group_instance_id
