"""sendOffsetsToTransaction on a real broker, with raw requests (AddOffsetsToTxn,
TxnOffsetCommit, EndTxn) so each step can be checked between: the offsets stay
pending (OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT,
without it the previous commit) until the transaction's marker reaches the
offsets partition, and a broker restarted in the middle of the transaction
and after its end rebuilds both states from the log (the transactional batch,
then the marker)."""

from __future__ import annotations

import time

import pytest

from tests.support.clients import TIMEOUT
from tests.support.gregor import assert_no_traceback
from tests.support.raw import RawClient
from tests.support.topics import create_topic, unique_name
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode as E

pytestmark = pytest.mark.timeout(120)

# A coordinator still loading its partition, or not elected yet: ask again.
RETRIABLE = {E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR}


def until_answered(request):
    """`request()`'s (error, response) once its error is not a retriable one."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        error, response = request()
        if error not in RETRIABLE:
            return error, response
        assert time.monotonic() < deadline, f"still {E(error).name}"
        time.sleep(0.05)


def fetch(port: int, group: str, topic: str, require_stable: bool) -> tuple[int, int]:
    """(error, offset) of partition 0 by OffsetFetch v8, as a consumer asks."""

    def request():
        with RawClient(port) as client:
            client.call(ApiKey.FIND_COORDINATOR, 1, {"key": group, "key_type": 0})
            r = client.call(
                ApiKey.OFFSET_FETCH,
                8,
                {
                    "groups": [
                        {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}
                    ],
                    "require_stable": require_stable,
                },
            )
        [g] = r.groups
        return g.error_code, g

    error, group_response = until_answered(request)
    assert error == E.NONE
    [p] = group_response.topics[0].partitions
    return p.error_code, p.committed_offset


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_transactional_offsets_are_pending_until_the_marker_and_survive_restarts(gregor, commit):
    topic = create_topic(gregor.bootstrap, unique_name("in"))
    group = unique_name("group")
    txn_id = unique_name("txn")

    with RawClient(gregor.port) as client:

        def call(api_key, version, **body):
            return client.call(api_key, version, body)

        def txn_call(api_key, version, **body):
            def request():
                call(ApiKey.FIND_COORDINATOR, 1, key=txn_id, key_type=1)
                r = call(api_key, version, **body)
                return r.error_code, r

            return until_answered(request)

        def offset_commit(offset: int) -> int:
            def request():
                call(ApiKey.FIND_COORDINATOR, 1, key=group, key_type=0)
                r = call(
                    ApiKey.OFFSET_COMMIT,
                    8,
                    group_id=group,
                    generation_id_or_member_epoch=-1,
                    member_id="",
                    group_instance_id=None,
                    topics=[
                        {
                            "name": topic,
                            "partitions": [{"partition_index": 0, "committed_offset": offset}],
                        }
                    ],
                )
                return r.topics[0].partitions[0].error_code, r

            return until_answered(request)[0]

        assert offset_commit(5) == E.NONE  # what the group had before the transaction
        error, init = txn_call(
            ApiKey.INIT_PRODUCER_ID,
            3,
            transactional_id=txn_id,
            transaction_timeout_ms=60000,
            producer_id=-1,
            producer_epoch=-1,
        )
        assert error == E.NONE
        pid, epoch = init.producer_id, init.producer_epoch
        error, _ = txn_call(
            ApiKey.ADD_OFFSETS_TO_TXN,
            3,
            transactional_id=txn_id,
            producer_id=pid,
            producer_epoch=epoch,
            group_id=group,
        )
        assert error == E.NONE
        r = call(
            ApiKey.TXN_OFFSET_COMMIT,
            3,
            transactional_id=txn_id,
            group_id=group,
            producer_id=pid,
            producer_epoch=epoch,
            generation_id=-1,
            member_id="",
            group_instance_id=None,
            topics=[
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": 0, "committed_offset": 42, "committed_metadata": ""}
                    ],
                }
            ],
        )
        assert r.topics[0].partitions[0].error_code == E.NONE

    port = gregor.port
    pending = {True: (E.UNSTABLE_OFFSET_COMMIT, -1), False: (E.NONE, 5)}
    assert {s: fetch(port, group, topic, s) for s in (True, False)} == pending

    gregor.stop()
    gregor.start()  # mid-transaction: the transactional batch is replayed, pending again
    assert {s: fetch(port, group, topic, s) for s in (True, False)} == pending

    with RawClient(gregor.port) as client:

        def call(api_key, version, **body):
            return client.call(api_key, version, body)

        def ended():
            call(ApiKey.FIND_COORDINATOR, 1, key=txn_id, key_type=1)
            r = call(
                ApiKey.END_TXN,
                3,
                transactional_id=txn_id,
                producer_id=pid,
                producer_epoch=epoch,
                committed=commit,
            )
            return r.error_code, r

        assert until_answered(ended)[0] == E.NONE
        # EndTxn answers once the outcome is durable; the markers follow.
        outcome = "CompleteCommit" if commit else "CompleteAbort"
        deadline = time.monotonic() + TIMEOUT
        while (
            call(ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=[txn_id])
            .transaction_states[0]
            .transaction_state
            != outcome
        ):
            assert time.monotonic() < deadline
            time.sleep(0.05)

    settled = (E.NONE, 42 if commit else 5)
    assert {s: fetch(port, group, topic, s) for s in (True, False)} == {
        True: settled,
        False: settled,
    }
    gregor.stop()
    gregor.start()  # after the marker: batch and marker replayed in log order
    assert {s: fetch(port, group, topic, s) for s in (True, False)} == {
        True: settled,
        False: settled,
    }
    assert_no_traceback(gregor)
