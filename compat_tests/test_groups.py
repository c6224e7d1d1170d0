"""Consumer groups (classic protocol): join, leave, rebalance, static members, commits,
describe, reset offsets, delete.

A broker that does not advertise the group APIs fails these tests at once (the
`group_apis` fixture) instead of letting every client time out.
"""

from __future__ import annotations

import asyncio
import re
import time

import pytest
from compatlib import franz, java, raw
from compatlib.common import ck_produce, unique, wait_until

GROUP_APIS = {
    8: "OffsetCommit",
    9: "OffsetFetch",
    10: "FindCoordinator",
    11: "JoinGroup",
    12: "Heartbeat",
    13: "LeaveGroup",
    14: "SyncGroup",
    15: "DescribeGroups",
    16: "ListGroups",
    42: "DeleteGroups",
}
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69


@pytest.fixture(scope="session")
def _advertised(bootstrap):
    with raw.Connection(bootstrap) as conn:
        return raw.api_versions(conn, 3).versions


@pytest.fixture
def group_apis(_advertised):
    missing = [f"{name}({key})" for key, name in GROUP_APIS.items() if key not in _advertised]
    if missing:
        pytest.fail(
            f"the broker does not advertise the group APIs {', '.join(missing)}", pytrace=False
        )


@pytest.fixture
def filled(bootstrap, topic):
    """A two-partition topic with 20 keyed records."""
    t = topic(partitions=2)
    ck_produce(
        bootstrap, t, [{"key": f"k{i}".encode(), "value": f"v{i}".encode()} for i in range(20)]
    )
    return t


def ck_group_consumer(bootstrap, group, **conf):
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            **conf,
        }
    )


def ck_poll_n(consumer, n, timeout=20):
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        m = consumer.poll(0.3)
        if m is not None and m.error() is None:
            out.append(m)
    assert len(out) == n, f"got {len(out)} of {n} records"
    return out


# --- Java: VerifiableConsumer and kafka-consumer-groups ------------------------------------------


def _verifiable_consumer(bootstrap, t, group, tmp_path, *extra):
    cfg = java.properties_file({"heartbeat.interval.ms": 300}, tmp_path)
    return java.EventStream(
        "kafka-verifiable-consumer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        t,
        "--group-id",
        group,
        "--reset-policy",
        "earliest",
        "--session-timeout",
        6000,
        "--command-config",
        cfg,
        *extra,
    )


def _consumed(stream) -> int:
    return sum(e["count"] for e in stream.named("records_consumed"))


def _assigned(stream) -> list[int] | None:
    events = stream.named("partitions_assigned")
    return sorted(p["partition"] for p in events[-1]["partitions"]) if events else None


@pytest.mark.client("java")
@pytest.mark.api(
    "FindCoordinator",
    "JoinGroup",
    "SyncGroup",
    "Heartbeat",
    "LeaveGroup",
    "OffsetCommit",
    "rebalance",
)
def test_group_rebalance_java_verifiable_consumer(bootstrap, group_apis, filled, tmp_path):
    g = unique("g")
    with _verifiable_consumer(bootstrap, filled, g, tmp_path) as a:
        a.wait_for(lambda s: _consumed(s) >= 20, what="20 records consumed")
        a.wait_for(
            lambda s: (
                s.named("offsets_committed")
                and sum(o["offset"] for o in s.named("offsets_committed")[-1]["offsets"]) == 20
            ),
            what="offsets committed",
        )
        assert all(e["success"] for e in a.named("offsets_committed"))
        assert _assigned(a) == [0, 1]
        with _verifiable_consumer(bootstrap, filled, g, tmp_path) as b:
            b.wait_for(
                lambda s: _assigned(s) is not None and len(_assigned(s)) == 1,
                what="second member assigned",
            )
            a.wait_for(lambda s: len(_assigned(s)) == 1, what="first member rebalanced")
            assert sorted(_assigned(a) + _assigned(b)) == [0, 1]
            assert _consumed(b) == 0  # everything was committed already
            b.stop()
            assert b.named("shutdown_complete")
        a.wait_for(lambda s: _assigned(s) == [0, 1], what="partitions back after leave")
        ck_produce(bootstrap, filled, [{"key": b"k1", "value": b"late"}])
        a.wait_for(lambda s: _consumed(s) == 21, what="new record consumed")
        a.stop()


@pytest.mark.client("java")
@pytest.mark.api("JoinGroup", "static-membership", "DescribeGroups")
def test_static_member_java_verifiable_consumer(bootstrap, admin, group_apis, filled, tmp_path):
    g = unique("g")
    with _verifiable_consumer(bootstrap, filled, g, tmp_path, "--group-instance-id", "i1") as a:
        a.wait_for(lambda s: _consumed(s) >= 20, what="20 records consumed")
        a.wait_for(lambda s: s.named("offsets_committed"), what="offsets committed")
        a.stop()
    # a static member does not leave the group on shutdown
    d = admin.describe_consumer_groups([g])[g].result(15)
    assert [m.group_instance_id for m in d.members] == ["i1"]
    with _verifiable_consumer(bootstrap, filled, g, tmp_path, "--group-instance-id", "i1") as b:
        b.wait_for(lambda s: _assigned(s) == [0, 1], what="static member back")
        ck_produce(bootstrap, filled, [{"key": b"k", "value": b"late"}])
        b.wait_for(lambda s: _consumed(s) == 1, what="only the new record")
        b.stop()


# Two static members subscribing a few milliseconds apart, with no initial rebalance
# delay: the first may form generation 1 alone, or both may share it. Either way the
# group must settle with each member holding half the partitions as soon as both have
# rejoined (about a heartbeat interval), not after a session or rebalance timeout
# (45 s and 60 s here): the wait below is far shorter than either.
STATIC_PAIR_CONF = {"session.timeout.ms": 45000, "max.poll.interval.ms": 60000}
SETTLE_TIMEOUT = 25


@pytest.mark.client("java")
@pytest.mark.api("JoinGroup", "SyncGroup", "static-membership", "rebalance")
def test_two_static_members_joining_together_java(bootstrap, group_apis, filled, tmp_path):
    g = unique("g")
    cfg = java.properties_file({"max.poll.interval.ms": 60000}, tmp_path)

    def member(instance):
        return java.EventStream(
            "kafka-verifiable-consumer",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            filled,
            "--group-id",
            g,
            "--group-instance-id",
            instance,
            "--reset-policy",
            "earliest",
            "--session-timeout",
            45000,
            "--command-config",
            cfg,
        )

    with member("i1") as a, member("i2") as b:
        wait_until(
            lambda: _assigned(a) and _assigned(b) and sorted(_assigned(a) + _assigned(b)) == [0, 1],
            timeout=SETTLE_TIMEOUT,
            interval=0.2,
            message="each static member owns one partition",
        )
        a.wait_for(lambda s: _consumed(s) + _consumed(b) >= 20, what="every record consumed")
        a.stop()
        b.stop()


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("JoinGroup", "SyncGroup", "static-membership", "rebalance")
def test_two_static_members_joining_together_confluent(bootstrap, group_apis, topic):
    import threading

    t = topic(partitions=4)
    g = unique("g")
    members = {
        name: ck_group_consumer(bootstrap, g, **{"group.instance.id": name, **STATIC_PAIR_CONF})
        for name in ("first", "second")
    }
    owned: dict[str, set[int]] = {}
    stop = threading.Event()

    def run(name):
        c = members[name]

        def on_assign(consumer, partitions):
            owned[name] = {p.partition for p in partitions}

        def on_revoke(consumer, partitions):
            owned[name] = set()

        c.subscribe([t], on_assign=on_assign, on_revoke=on_revoke)
        while not stop.is_set():
            c.poll(0.1)

    threads = [threading.Thread(target=run, args=(name,)) for name in members]
    try:
        for thread in threads:
            thread.start()  # the two JoinGroups leave within a few ms of each other

        def settled():
            a, b = owned.get("first", set()), owned.get("second", set())
            return len(a) == 2 and len(b) == 2 and a | b == {0, 1, 2, 3}

        wait_until(settled, timeout=SETTLE_TIMEOUT, message="each static member owns two")
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        for c in members.values():
            c.close()


def _ck_commit_group(bootstrap, t, g, n=20):
    c = ck_group_consumer(bootstrap, g)
    c.subscribe([t])
    ck_poll_n(c, n)
    c.commit(asynchronous=False)
    c.close()


@pytest.mark.client("java")
@pytest.mark.api("ListGroups", "DescribeGroups", "OffsetFetch", "OffsetCommit", "DeleteGroups")
def test_consumer_groups_tool_java(bootstrap, group_apis, filled):
    g = unique("g")
    _ck_commit_group(bootstrap, filled, g)
    base = ("--bootstrap-server", bootstrap)

    p = java.run("kafka-consumer-groups", *base, "--list")
    assert g in p.stdout.split(), p.stdout

    def describe():
        p = java.run("kafka-consumer-groups", *base, "--describe", "--group", g)
        assert p.returncode == 0, p.stderr
        assert f"Consumer group '{g}' has no active members." in p.stderr
        rows = [line.split() for line in p.stdout.splitlines() if line.startswith(g)]
        return {int(r[2]): (int(r[3]), int(r[4]), int(r[5])) for r in rows}

    d = describe()
    assert sorted(d) == [0, 1]
    assert all(cur == end and lag == 0 for cur, end, lag in d.values())
    assert sum(cur for cur, _, _ in d.values()) == 20

    p = java.run(
        "kafka-consumer-groups",
        *base,
        "--reset-offsets",
        "--group",
        g,
        "--topic",
        filled,
        "--to-earliest",
        "--execute",
    )
    assert p.returncode == 0, p.stderr
    assert sorted(re.findall(rf"^{g}\s+{filled}\s+(\d)\s+(\d+)$", p.stdout, re.M)) == [
        ("0", "0"),
        ("1", "0"),
    ]
    assert all(cur == 0 and lag == end for cur, end, lag in describe().values())

    p = java.run("kafka-consumer-groups", *base, "--delete", "--group", g)
    assert p.stdout.strip() == f"Deletion of requested consumer groups ('{g}') was successful."
    p = java.run("kafka-consumer-groups", *base, "--describe", "--group", g)
    assert f"GroupIdNotFoundException: Group {g} not found." in p.stdout


@pytest.mark.client("java")
@pytest.mark.api("ListGroups", "DescribeGroups", "OffsetDelete", "states filter")
def test_consumer_groups_tool_on_an_active_group_java(bootstrap, group_apis, filled):
    g = unique("g")
    base = ("--bootstrap-server", bootstrap)

    def tool(*args):
        p = java.run("kafka-consumer-groups", *base, *args)
        assert p.returncode == 0, p.stderr
        return p

    def rows(p, first):
        return [line.split() for line in p.stdout.splitlines() if line.startswith(first)]

    c = ck_group_consumer(bootstrap, g, **{"client.id": "active-member"})
    try:
        c.subscribe([filled])
        ck_poll_n(c, 20)
        c.commit(asynchronous=False)
        # ListGroups with the states filter (v4+).
        assert g in tool("--list", "--state", "Stable").stdout.split()
        assert g not in tool("--list", "--state", "Empty").stdout.split()
        (member,) = rows(tool("--describe", "--group", g, "--members"), g)
        assert member[1].startswith("active-member-") and member[3:] == ["active-member", "2"]
        (state,) = rows(tool("--describe", "--group", g, "--state"), g)
        assert state[-3:] == ["range", "Stable", "1"]
        # OffsetDelete of a topic the group is subscribed to is refused per partition.
        p = tool("--delete-offsets", "--group", g, "--topic", filled)
        assert "Error: Encountered some partition-level error" in p.stdout
        assert p.stdout.count("GroupSubscribedToTopicException") == 2, p.stdout
    finally:
        c.close()

    (state,) = rows(tool("--describe", "--group", g, "--state"), g)
    assert state[-3:] == ["-", "Empty", "0"]
    assert g in tool("--list", "--state", "Empty").stdout.split()
    p = tool("--delete-offsets", "--group", g, "--topic", f"{filled}:0")
    assert p.stdout.startswith(f"Request succeeded for deleting offsets from group {g}.")
    assert rows(p, filled) == [[filled, "0", "Successful"]]
    # Only partition 1's offset is left, at its log end.
    ((_, _, partition, current, end, lag, *_),) = rows(tool("--describe", "--group", g), g)
    assert (partition, current, lag) == ("1", end, "0")
    p = tool("--delete-offsets", "--group", g, "--topic", unique("nope"))
    assert "UnknownTopicOrPartitionException" in p.stdout


@pytest.mark.client("raw")
@pytest.mark.api("FindCoordinator", "transaction key type")
def test_find_coordinator_for_groups_and_transactions_raw(bootstrap, admin):
    host, port = bootstrap.rsplit(":", 1)
    with raw.Connection(bootstrap) as conn:

        def coordinator(key, key_type):
            # COORDINATOR_NOT_AVAILABLE (15) while the internal topic is created,
            # which clients retry, as here.
            error, *where = raw.find_coordinator(conn, key, key_type)
            return tuple(where) if error == 0 else None

        expected = (1, host, int(port))
        assert wait_until(lambda: coordinator(unique("txn"), 1)) == expected
        assert wait_until(lambda: coordinator(unique("g"), 0)) == expected
        assert raw.find_coordinator(conn, "x", 2)[0] == 42  # INVALID_REQUEST
    # Transactional ids live in the internal topic __transaction_state.
    assert "__transaction_state" in admin.list_topics(timeout=10).topics


# --- confluent-kafka -----------------------------------------------------------------------------


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("JoinGroup", "SyncGroup", "OffsetCommit", "OffsetFetch", "LeaveGroup")
def test_group_commit_and_resume_confluent(bootstrap, group_apis, filled):
    from confluent_kafka import TopicPartition

    g = unique("g")
    c = ck_group_consumer(bootstrap, g, **{"max.poll.interval.ms": 10000})
    c.subscribe([filled])
    first = ck_poll_n(c, 8)
    c.commit(asynchronous=False)
    committed = c.committed([TopicPartition(filled, 0), TopicPartition(filled, 1)], timeout=10)
    seen = {}
    for m in first:
        seen[m.partition()] = max(seen.get(m.partition(), -1), m.offset())
    assert {tp.partition: tp.offset for tp in committed if tp.offset >= 0} == {
        p: o + 1 for p, o in seen.items()
    }
    c.close()
    c = ck_group_consumer(bootstrap, g)
    c.subscribe([filled])
    rest = ck_poll_n(c, 12)
    c.close()
    keys = sorted(m.key() for m in first + rest)
    assert keys == sorted(f"k{i}".encode() for i in range(20))  # nothing twice, nothing lost


@pytest.mark.client("confluent-kafka")
@pytest.mark.api("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "rebalance")
def test_group_rebalance_confluent(bootstrap, group_apis, topic):
    t = topic(partitions=4)
    g = unique("g")
    c1 = ck_group_consumer(bootstrap, g)
    c2 = ck_group_consumer(bootstrap, g)
    try:
        c1.subscribe([t])
        wait_until(
            lambda: c1.poll(0.2) is None and len(c1.assignment()) == 4,
            timeout=20,
            message="first member owns all partitions",
        )
        c2.subscribe([t])

        def split():
            c1.poll(0.1)
            c2.poll(0.1)
            return len(c1.assignment()) == 2 and len(c2.assignment()) == 2

        wait_until(split, timeout=30, message="partitions split 2/2")
        owned = {tp.partition for tp in c1.assignment()} | {tp.partition for tp in c2.assignment()}
        assert owned == {0, 1, 2, 3}
        c2.close()
        wait_until(
            lambda: c1.poll(0.2) is None and len(c1.assignment()) == 4,
            timeout=30,
            message="partitions back after the other member left",
        )
    finally:
        c1.close()


@pytest.mark.client("confluent-kafka")
@pytest.mark.api(
    "ListGroups",
    "DescribeGroups",
    "OffsetFetch",
    "OffsetCommit",
    "DeleteGroups",
    "static-membership",
)
def test_group_admin_confluent(bootstrap, admin, group_apis, filled):
    from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition

    g = unique("g")
    c = ck_group_consumer(bootstrap, g, **{"group.instance.id": "static-1"})
    c.subscribe([filled])
    ck_poll_n(c, 20)
    c.commit(asynchronous=False)
    d = admin.describe_consumer_groups([g])[g].result(15)
    assert d.state == ConsumerGroupState.STABLE
    assert [m.group_instance_id for m in d.members] == ["static-1"]
    assert sorted(tp.partition for tp in d.members[0].assignment.topic_partitions) == [0, 1]
    listed = {x.group_id: x.state for x in admin.list_consumer_groups().result(15).valid}
    assert listed[g] == ConsumerGroupState.STABLE
    c.close()  # a static member stays in the group until its session times out
    d = admin.describe_consumer_groups([g])[g].result(15)
    assert [m.group_instance_id for m in d.members] == ["static-1"]

    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)])[g].result(15)
    assert sum(tp.offset for tp in offsets.topic_partitions) == 20

    # the static member's session (6 s) must expire before offsets can be altered or deleted
    fut = admin.delete_consumer_groups([g])[g]
    with pytest.raises(Exception) as info:
        fut.result(15)
    assert info.value.args[0].code() == NON_EMPTY_GROUP
    wait_until(
        lambda: admin.describe_consumer_groups([g])[g].result(15).state == ConsumerGroupState.EMPTY,
        timeout=20,
        message="static member expired",
    )
    reset = ConsumerGroupTopicPartitions(
        g, [TopicPartition(filled, 0, 0), TopicPartition(filled, 1, 0)]
    )
    admin.alter_consumer_group_offsets([reset])[g].result(15)
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)])[g].result(15)
    assert [tp.offset for tp in offsets.topic_partitions] == [0, 0]
    admin.delete_consumer_groups([g])[g].result(15)
    assert g not in {x.group_id for x in admin.list_consumer_groups().result(15).valid}


# --- kafka-python ---------------------------------------------------------------------------------


@pytest.mark.client("kafka-python")
@pytest.mark.api(
    "JoinGroup",
    "SyncGroup",
    "OffsetCommit",
    "OffsetFetch",
    "LeaveGroup",
    "DescribeGroups",
    "ListGroups",
    "DeleteGroups",
)
def test_group_kafka_python(bootstrap, group_apis, filled):
    from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition

    g = unique("g")

    def consumer():
        return KafkaConsumer(
            filled,
            bootstrap_servers=bootstrap,
            group_id=g,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            heartbeat_interval_ms=500,
            session_timeout_ms=6000,
        )

    def poll(c, n):
        got = []
        deadline = time.monotonic() + 20
        while len(got) < n and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=300, max_records=n - len(got)).values():
                got += recs
        return got

    c = consumer()
    first = poll(c, 10)
    assert len(first) == 10
    c.commit()
    committed = {p: c.committed(TopicPartition(filled, p)) for p in (0, 1)}
    assert sum(v or 0 for v in committed.values()) == 10
    c.close()
    c = consumer()
    rest = poll(c, 10)
    c.commit()
    c.close()
    assert sorted(r.key for r in first + rest) == sorted(f"k{i}".encode() for i in range(20))

    a = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        listed = {x["group_id"]: x for x in a.list_groups()}
        assert listed[g]["group_state"] == "Empty"
        assert listed[g]["protocol_type"] == "consumer"
        offsets = a.list_group_offsets({g: None})[g]
        assert sum(v.offset for v in offsets.values()) == 20
        desc = a.describe_groups([g])[g]
        assert desc["group_state"] == "Empty" and desc["members"] == []
        a.delete_groups([g])
    finally:
        a.close()


# --- aiokafka ---------------------------------------------------------------------------------------


@pytest.mark.client("aiokafka")
@pytest.mark.api("JoinGroup", "SyncGroup", "OffsetCommit", "OffsetFetch", "LeaveGroup")
def test_group_aiokafka(bootstrap, group_apis, filled):
    from aiokafka import AIOKafkaConsumer, TopicPartition

    g = unique("g")

    async def consume(n):
        c = AIOKafkaConsumer(
            filled,
            bootstrap_servers=bootstrap,
            group_id=g,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            heartbeat_interval_ms=500,
            session_timeout_ms=6000,
        )
        await c.start()
        try:
            got = []
            while len(got) < n:
                batch = await asyncio.wait_for(
                    c.getmany(timeout_ms=300, max_records=n - len(got)), 20
                )
                for recs in batch.values():
                    got += recs
            await c.commit()
            committed = [await c.committed(TopicPartition(filled, p)) for p in (0, 1)]
            return got, committed
        finally:
            await c.stop()

    async def main():
        first, committed = await asyncio.wait_for(consume(10), 40)
        assert sum(x or 0 for x in committed) == 10
        rest, committed = await asyncio.wait_for(consume(10), 40)
        assert sum(committed) == 20
        return first + rest

    got = asyncio.run(main())
    assert sorted(r.key for r in got) == sorted(f"k{i}".encode() for i in range(20))


# --- franz-go ---------------------------------------------------------------------------------------


@pytest.mark.client("franz-go")
@pytest.mark.api(
    "JoinGroup",
    "SyncGroup",
    "OffsetCommit",
    "OffsetFetch",
    "DescribeGroups",
    "DeleteGroups",
    "static-membership",
    "errors",
)
def test_group_franz(bootstrap, group_apis, filled):
    g = unique("g")
    res = franz.run("group", "--group", g, "--topic", filled, "--count", 20, brokers=bootstrap)
    assert res.returncode == 0, res
    assert res.lines[0] == {"assigned": {filled: [0, 1]}}
    assert res.lines[-1] == {"committed": True, "count": 20}
    res = franz.run("admin fetch-offsets", "--group", g, brokers=bootstrap)
    assert sum(x["offset"] for x in res.lines) == 20
    res = franz.run("admin describe-group", "--group", g, brokers=bootstrap)
    assert res.lines[0]["state"] == "Empty" and res.lines[0]["members"] is None
    res = franz.run("admin delete-group", "--group", g, brokers=bootstrap)
    assert res.returncode == 0, res
    res = franz.run("admin describe-group", "--group", g, brokers=bootstrap)
    assert res.lines[0]["state"] == "Dead" and res.lines[0]["code"] == GROUP_ID_NOT_FOUND
    res = franz.run("admin delete-group", "--group", g, brokers=bootstrap)
    assert res.lines[0]["code"] == GROUP_ID_NOT_FOUND

    # a static member stays after it closes: the group is not empty
    s = unique("g")
    res = franz.run(
        "group",
        "--group",
        s,
        "--topic",
        filled,
        "--count",
        20,
        "--instance-id",
        "inst-1",
        brokers=bootstrap,
    )
    assert res.returncode == 0, res
    res = franz.run("admin describe-group", "--group", s, brokers=bootstrap)
    (member,) = res.lines[0]["members"]
    assert member["instance_id"] == "inst-1" and member["member_id"].startswith("inst-1-")
    res = franz.run("admin delete-group", "--group", s, brokers=bootstrap)
    assert res.lines[0]["code"] == NON_EMPTY_GROUP


@pytest.mark.client("franz-go")
@pytest.mark.api("OffsetCommit", "OffsetFetch", "ListGroups")
def test_commit_offsets_without_members_franz(bootstrap, group_apis, filled):
    """An admin client may commit offsets for a group that has no members."""
    g = unique("g")
    res = franz.run(
        "admin commit-offset",
        "--group",
        g,
        "--topic",
        filled,
        "--partition",
        1,
        "--offset",
        7,
        brokers=bootstrap,
    )
    assert res.returncode == 0, res
    res = franz.run("admin fetch-offsets", "--group", g, brokers=bootstrap)
    assert [(x["topic"], x["partition"], x["offset"]) for x in res.lines] == [(filled, 1, 7)]
    res = franz.run("admin list-groups", brokers=bootstrap)
    assert {"group": g, "state": "Empty", "protocol_type": ""} in res.lines
