"""One Kafka request over a fresh socket, for tests that need a field or a
version a client library does not expose (CreateTopics v7's topic id,
DeleteTopics v6 by id, duplicate names in one request)."""

from __future__ import annotations

import itertools
import socket
import struct

from wire.protocol import decode_response, encode_request

_correlation = itertools.count(1)


def kafka_request(bootstrap: str, api_key: int, version: int, body: dict, timeout: float = 20):
    """Send `body` as request (api_key, version); the decoded response body."""
    host, port = bootstrap.rsplit(":", 1)
    correlation_id = next(_correlation)
    frame = encode_request(api_key, version, correlation_id, body)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        reader = sock.makefile("rb")
        (size,) = struct.unpack(">i", reader.read(4))
        got, response = decode_response(api_key, version, reader.read(size))
    assert got == correlation_id
    return response
