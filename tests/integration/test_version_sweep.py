"""Every API at every version the broker advertises takes a request: the
broker answers with a well-formed response of that version (errors in it are
fine: the requests carry default values), the connection stays usable, and
no handler fails (an exception would be an UNKNOWN_SERVER_ERROR and a
traceback in the log)."""

from __future__ import annotations

import pytest

from tests.support.gregor import GregorNode, assert_no_traceback
from tests.support.raw import RawClient, software
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

# Request fields whose default would make the broker not answer or wait.
NOT_DEFAULT = {
    ApiKey.PRODUCE: {"acks": 1, "timeout_ms": 1000},  # acks=0 gets no answer
    ApiKey.FETCH: {"max_wait_ms": 0},
    ApiKey.JOIN_GROUP: {"group_id": "sweep", "protocol_type": "consumer"},
    ApiKey.API_VERSIONS: software(),
}


@pytest.fixture(scope="module")
def sweep_broker(tmp_path_factory):
    broker = GregorNode(tmp_path_factory.mktemp("sweep") / "data").start()
    with RawClient(broker.port) as client:
        advertised = client.call(ApiKey.API_VERSIONS, 3, software()).api_keys
    yield (
        broker,
        [(k.api_key, v) for k in advertised for v in range(k.min_version, k.max_version + 1)],
    )
    assert broker.stop() == 0, broker.log()


def test_every_advertised_version_is_answered(sweep_broker):
    broker, cases = sweep_broker
    assert len(cases) > 150
    failed = []
    with RawClient(broker.port) as client:
        for api_key, version in cases:
            body = NOT_DEFAULT.get(api_key, {})
            try:
                response = client.call(api_key, version, body)
            except Exception as e:  # noqa: BLE001 - collect them all, then fail once
                failed.append(f"{ApiKey(api_key).display_name} v{version}: {e!r}")
                break  # the connection is gone
            if response.get("error_code") == ErrorCode.UNKNOWN_SERVER_ERROR:
                failed.append(f"{ApiKey(api_key).display_name} v{version}: UNKNOWN_SERVER_ERROR")
    assert not failed, failed
    assert_no_traceback(broker)
