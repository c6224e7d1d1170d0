"""Topics for tests to work on: created with CreateTopics, or auto-created with
Metadata, and in either case ready (every partition has a leader) on return.

    create_topic(broker.bootstrap, "events", partitions=3, config={"cleanup.policy": "compact"})
    name = create_topic(broker.port, unique_name("fetch"))
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator, Mapping

from tests.support.raw import RawClient
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

READY_TIMEOUT = 10.0


def unique_name(prefix: str) -> str:
    """`<prefix>-<8 hex digits>`: a topic no other test of a shared broker uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(
    broker: RawClient | int | str,
    name: str,
    partitions: int = 1,
    config: Mapping[str, object] | None = None,
) -> str:
    """Create `name` (replication factor 1) with CreateTopics and wait until it is
    ready; its name. `broker` is a connected RawClient, a port on 127.0.0.1 or
    "host:port"."""
    with _connected(broker) as client:
        response = client.call(
            ApiKey.CREATE_TOPICS,
            7,
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": partitions,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [
                            {"name": k, "value": str(v)} for k, v in (config or {}).items()
                        ],
                    }
                ],
                "timeout_ms": 10_000,
                "validate_only": False,
            },
        )
        assert response.topics[0].error_code == ErrorCode.NONE, response
        ensure_topic(client, name)
    return name


def ensure_topic(client: RawClient, name: str) -> None:
    """Have `name` exist, auto-created by Metadata if need be, and wait for its leaders."""
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        response = client.call(
            ApiKey.METADATA, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": True}
        )
        (topic,) = response.topics
        if topic.error_code == ErrorCode.NONE and all(
            p.error_code == ErrorCode.NONE and p.leader_id >= 0 for p in topic.partitions
        ):
            return
        assert time.monotonic() < deadline, f"topic {name} not ready: {topic}"
        time.sleep(0.05)


@contextlib.contextmanager
def _connected(broker: RawClient | int | str) -> Iterator[RawClient]:
    if isinstance(broker, RawClient):
        yield broker
    else:
        with RawClient(broker) as client:
            yield client
