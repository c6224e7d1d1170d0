"""Hand-built Kafka requests over a plain socket, for what clients never send.

Only a few requests, in their simplest (non-flexible where possible) versions.
Record batches come from kafka-python's DefaultRecordBatchBuilder.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass


def _string(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _compact_string(s: str) -> bytes:
    b = s.encode()
    return _uvarint(len(b) + 1) + b


def _compact_nullable_string(s: str | None) -> bytes:
    return b"\x00" if s is None else _compact_string(s)


def _compact_bytes(b: bytes) -> bytes:
    return _uvarint(len(b) + 1) + b


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        values = struct.unpack(fmt, self.data[self.pos : self.pos + size])
        self.pos += size
        return values if len(values) > 1 else values[0]

    def int8(self):
        return self.take(">b")

    def int16(self):
        return self.take(">h")

    def int32(self):
        return self.take(">i")

    def int64(self):
        return self.take(">q")

    def string(self):
        n = self.int16()
        if n < 0:
            return None
        s = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return s

    def uvarint(self):
        shift = result = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def compact_string(self):
        n = self.uvarint() - 1
        if n < 0:
            return None
        s = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return s

    def skip_tagged_fields(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()

    def remaining(self) -> int:
        return len(self.data) - self.pos


class Connection:
    """One socket to a broker; request() returns the response body (after the header).
    With `tls` (an ssl.SSLContext) the connection is a TLS one, its handshake done
    (for the host name of `bootstrap`) before __init__ returns."""

    def __init__(self, bootstrap: str, timeout: float = 10.0, tls: ssl.SSLContext | None = None):
        host, _, port = bootstrap.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.settimeout(timeout)
        if tls is not None:
            try:
                self.sock = tls.wrap_socket(self.sock, server_hostname=host)
            except BaseException:
                self.sock.close()
                raise
        self.correlation_id = 0

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(
        self,
        api_key: int,
        version: int,
        body: bytes,
        *,
        flexible_header: bool = False,
        client_id: str = "compat-raw",
    ) -> int:
        self.correlation_id += 1
        header = struct.pack(">hhi", api_key, version, self.correlation_id) + _string(client_id)
        if flexible_header:
            header += b"\x00"  # no tagged fields
        msg = header + body
        self.sock.sendall(struct.pack(">i", len(msg)) + msg)
        return self.correlation_id

    def receive(self, correlation_id: int, flexible_header: bool = False) -> Reader:
        size = struct.unpack(">i", self._exact(4))[0]
        r = Reader(self._exact(size))
        got = r.int32()
        assert got == correlation_id, f"correlation id {got}, expected {correlation_id}"
        if flexible_header:
            for _ in range(r.uvarint()):
                r.uvarint()
                r.pos += r.uvarint()
        return r

    def request(
        self,
        api_key: int,
        version: int,
        body: bytes,
        *,
        flexible_header: bool = False,
        response_flexible_header: bool = False,
    ) -> Reader:
        cid = self.send(api_key, version, body, flexible_header=flexible_header)
        return self.receive(cid, response_flexible_header)

    def _exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            buf += chunk
        return bytes(buf)

    def send_frame(self, payload: bytes) -> None:
        """`payload` framed by its size alone, no request header: a SASL token
        after a SaslHandshake v0 (Kafka's unframed SASL)."""
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def receive_frame(self) -> bytes:
        """One size-framed answer as it is (an unframed SASL token's reply)."""
        size = struct.unpack(">i", self._exact(4))[0]
        return self._exact(size)

    def closed_by_broker(self, timeout: float = 10.0) -> bytes:
        """Wait until the broker closes the connection: the bytes it sent
        before (b"" for none); AssertionError if it is still open after `timeout`."""
        deadline = time.monotonic() + timeout
        got = bytearray()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"the broker kept the connection open for {timeout:.0f} s "
                    f"(and sent {bytes(got)!r})"
                )
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                continue
            except ConnectionResetError:
                return bytes(got)
            if not chunk:
                return bytes(got)
            got += chunk


# --- ApiVersions ---------------------------------------------------------------


@dataclass
class ApiVersions:
    error_code: int
    versions: dict[int, tuple[int, int]]


def api_versions(conn: Connection, version: int) -> ApiVersions:
    """ApiVersions at any version; a body at v3+ carries the client software name."""
    flexible = version >= 3
    body = _compact_string("compat-raw") + _compact_string("1.0") + b"\x00" if flexible else b""
    r = conn.request(18, version, body, flexible_header=flexible)
    # The response header is always v0; an unsupported version is answered in v0 format.
    error = r.int16()
    versions = {}
    if flexible and error != 35:
        n = r.uvarint() - 1
        for _ in range(n):
            key, lo, hi = r.take(">hhh")
            for _ in range(r.uvarint()):
                r.uvarint()
                r.pos += r.uvarint()
            versions[key] = (lo, hi)
    else:
        for _ in range(r.int32()):
            key, lo, hi = r.take(">hhh")
            versions[key] = (lo, hi)
    return ApiVersions(error, versions)


# --- producer ids and Produce ------------------------------------------------------


def init_producer_id(conn: Connection) -> tuple[int, int, int]:
    """InitProducerId v0 without a transactional id: (error, producer id, epoch)."""
    r = conn.request(22, 0, _string(None) + struct.pack(">i", 60000))
    r.int32()  # throttle
    error = r.int16()
    return error, r.int64(), r.int16()


def record_batch(
    values: list[bytes],
    *,
    producer_id: int = -1,
    epoch: int = -1,
    sequence: int = -1,
    timestamp: int | None = None,
    transactional: bool = False,
) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        batch_size=1 << 20,
    )
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    for i, v in enumerate(values):
        builder.append(i, timestamp=ts, key=None, value=v, headers=[])
    return bytes(builder.build())


def lz4_frame_with_a_wrong(data: bytes, where: str | None = None) -> bytes:
    """`data` as one LZ4 frame of independent 4 MiB blocks (franz-go's block
    size) with every optional field: block checksums, the content checksum
    (franz-go sets it) and the content size; the field `where` ("header
    checksum", "block checksum", "content checksum" or "content size") made
    wrong, the header checksum right for a wrong content size."""
    import lz4.frame
    import xxhash

    frame = bytearray(
        lz4.frame.compress(
            data,
            block_linked=False,
            block_size=lz4.frame.BLOCKSIZE_MAX4MB,
            block_checksum=True,
            content_checksum=True,
            store_size=True,
        )
    )
    header_end = 15  # magic, FLG, BD, content size, header checksum
    if where == "header checksum":
        frame[header_end - 1] ^= 1
    elif where == "block checksum":
        (size,) = struct.unpack_from("<I", frame, header_end)
        frame[header_end + 4 + (size & 0x7FFFFFFF)] ^= 1
    elif where == "content checksum":
        frame[-1] ^= 1
    elif where == "content size":
        struct.pack_into("<Q", frame, 6, len(data) + 1)
        frame[header_end - 1] = xxhash.xxh32_intdigest(bytes(frame[4 : header_end - 1])) >> 8 & 0xFF
    elif where is not None:
        raise ValueError(f"no LZ4 frame field {where!r}")
    return bytes(frame)


def with_records_section(batch: bytes, section: bytes, codec: int) -> bytes:
    """`batch` (a v2 batch) with its records section replaced by `section`,
    compressed with `codec` as it is; length and CRC made right."""
    from kafka.record.util import calc_crc32c

    out = bytearray(batch[:61]) + section  # the v2 batch header, then the records
    struct.pack_into(">i", out, 8, len(out) - 12)
    attributes = struct.unpack_from(">h", out, 21)[0] & ~0x07 | codec
    struct.pack_into(">h", out, 21, attributes)
    struct.pack_into(">I", out, 17, calc_crc32c(bytes(out[21:])))
    return bytes(out)


@dataclass
class PartitionResult:
    error_code: int
    base_offset: int
    log_append_time: int
    log_start_offset: int | None = None
    record_errors: list | None = None
    error_message: str | None = None


def produce(
    conn: Connection, topic: str, partition: int, batch: bytes, acks: int = -1, version: int = 3
) -> PartitionResult:
    """Produce (v3..v8, non-flexible) of one batch to one partition."""
    assert 3 <= version <= 8
    body = (
        _string(None)
        + struct.pack(">hi", acks, 10000)
        + struct.pack(">i", 1)
        + _string(topic)
        + struct.pack(">i", 1)
        + struct.pack(">i", partition)
        + struct.pack(">i", len(batch))
        + batch
    )
    r = conn.request(0, version, body)
    assert r.int32() == 1
    r.string()
    assert r.int32() == 1
    r.int32()
    error = r.int16()
    base = r.int64()
    append_time = r.int64()
    result = PartitionResult(error, base, append_time)
    if version >= 5:
        result.log_start_offset = r.int64()
    if version >= 8:
        result.record_errors = [(r.int32(), r.string()) for _ in range(r.int32())]
        result.error_message = r.string()
    return result


# --- transactions v2, request by request (what a Kafka 4.x Java producer sends) ----------


def init_transactional_producer(
    conn: Connection, transactional_id: str, timeout_ms: int = 60000
) -> tuple[int, int, int]:
    """InitProducerId v5 with a transactional id: (error, producer id, epoch)."""
    body = _compact_string(transactional_id) + struct.pack(">iqh", timeout_ms, -1, -1) + b"\x00"
    r = conn.request(22, 5, body, flexible_header=True, response_flexible_header=True)
    r.int32()  # throttle
    return r.int16(), r.int64(), r.int16()


def _flexible_produce_body(
    transactional_id: str | None, acks: int, topic: bytes, partition: int, batch: bytes
) -> bytes:
    """A flexible (v9+) Produce body of one batch to one partition; `topic` is
    the topic as encoded: a compact string name (v9-12) or a 16-byte id (v13)."""
    return (
        _compact_nullable_string(transactional_id)
        + struct.pack(">hi", acks, 30000)
        + _uvarint(2)  # one topic
        + topic
        + _uvarint(2)  # one partition
        + struct.pack(">i", partition)
        + _compact_bytes(batch)
        + b"\x00"  # the partition's tagged fields
        + b"\x00"  # the topic's
        + b"\x00"  # the request's
    )


def produce_v12(
    conn: Connection,
    topic: str,
    partition: int,
    batch: bytes,
    *,
    transactional_id: str | None = None,
    acks: int = -1,
) -> int:
    """Produce v12 of one batch to one partition (under transactions v2 the
    partition joins the producer's transaction with it): the partition's error."""
    body = _flexible_produce_body(transactional_id, acks, _compact_string(topic), partition, batch)
    r = conn.request(0, 12, body, flexible_header=True, response_flexible_header=True)
    assert r.uvarint() == 2
    r.compact_string()
    assert r.uvarint() == 2
    r.int32()  # partition index
    return r.int16()


def produce_v13(
    conn: Connection, topic_id: bytes, partition: int, batch: bytes, acks: int = -1
) -> tuple[bytes, PartitionResult]:
    """Produce v13 (KIP-516: the topic named by its 16-byte id) of one batch to
    one partition: (the topic id the answer names, the partition's result)."""
    body = _flexible_produce_body(None, acks, topic_id, partition, batch)
    r = conn.request(0, 13, body, flexible_header=True, response_flexible_header=True)
    assert r.uvarint() == 2
    answered_id = r.data[r.pos : r.pos + 16]
    r.pos += 16
    assert r.uvarint() == 2
    r.int32()  # partition index
    result = PartitionResult(r.int16(), r.int64(), r.int64(), r.int64())
    result.record_errors = []
    for _ in range(r.uvarint() - 1):
        index = r.int32()
        result.record_errors.append((index, r.compact_string()))
        r.skip_tagged_fields()
    result.error_message = r.compact_string()
    return answered_id, result


def end_txn_v5(
    conn: Connection, transactional_id: str, producer_id: int, epoch: int, commit: bool
) -> tuple[int, int, int]:
    """EndTxn v5 (transactions v2): (error, producer id, epoch to use next)."""
    body = _compact_string(transactional_id) + struct.pack(">qh?", producer_id, epoch, commit)
    r = conn.request(26, 5, body + b"\x00", flexible_header=True, response_flexible_header=True)
    r.int32()  # throttle
    return r.int16(), r.int64(), r.int16()


# --- ListOffsets and Fetch ------------------------------------------------------------

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3


def list_offsets(
    conn: Connection, topic: str, partition: int, timestamp: int, version: int = 7
) -> tuple[int, int, int]:
    """ListOffsets v6-11 (flexible; v7 is the first with MAX_TIMESTAMP, -3) as
    a consumer sends it: (error code, timestamp, offset) for one partition."""
    assert 6 <= version <= 11, version
    body = (
        struct.pack(">ib", -1, 0)
        + _uvarint(2)
        + _compact_string(topic)
        + _uvarint(2)
        + struct.pack(">iiq", partition, -1, timestamp)
        + b"\x00\x00"  # tagged fields: partition, topic
        + (struct.pack(">i", 30_000) if version >= 10 else b"")  # timeout_ms
        + b"\x00"  # tagged fields: request
    )
    r = conn.request(2, version, body, flexible_header=True, response_flexible_header=True)
    r.int32()  # throttle
    assert r.uvarint() == 2
    r.compact_string()
    assert r.uvarint() == 2
    r.int32()
    error, ts, offset = r.take(">hqq")
    return error, ts, offset


@dataclass
class StoredBatch:
    """A record batch's header fields as the broker returns it from its log."""

    base_offset: int
    last_offset: int
    attributes: int
    base_timestamp: int
    max_timestamp: int


def fetch_batches(
    conn: Connection, topic: str, partition: int, offset: int = 0, max_bytes: int = 1 << 20
) -> tuple[int, list[StoredBatch]]:
    """Fetch v4 (no wait) from `offset`: (error code, the whole batches returned)."""
    body = struct.pack(">iiiib", -1, 0, 1, max_bytes, 0) + struct.pack(">i", 1) + _string(topic)
    body += struct.pack(">i", 1) + struct.pack(">iqi", partition, offset, max_bytes)
    r = conn.request(1, 4, body)
    r.int32()  # throttle
    assert r.int32() == 1
    r.string()
    assert r.int32() == 1
    r.int32()
    error = r.int16()
    r.int64()  # high watermark
    r.int64()  # last stable offset
    return error, _read_records(r)


def _read_records(r: Reader) -> list[StoredBatch]:
    """A Fetch answer's partition from its aborted transactions on: the
    whole batches of its records."""
    for _ in range(max(r.int32(), 0)):  # aborted transactions
        r.take(">qq")
    size = max(r.int32(), 0)
    data = r.data[r.pos : r.pos + size]
    r.pos += size
    batches = []
    pos = 0
    while len(data) - pos >= 61:
        base, length = struct.unpack_from(">qi", data, pos)
        if len(data) - pos < 12 + length:
            break  # a partial batch at the end of the byte limit
        attributes, last_delta, base_ts, max_ts = struct.unpack_from(">hiqq", data, pos + 21)
        batches.append(StoredBatch(base, base + last_delta, attributes, base_ts, max_ts))
        pos += 12 + length
    return batches


@dataclass
class SessionFetch:
    """A Fetch v7 answer: its error, session id and, for each partition
    answered, (error code, high watermark, records returned) and its log
    start offset."""

    error_code: int
    session_id: int
    partitions: dict[int, tuple[int, int, int]]
    log_starts: dict[int, int]


def fetch_in_session(conn: Connection, *args, **kwargs) -> SessionFetch:
    """Fetch v7 (no wait) in a fetch session (KIP-227); the arguments are
    `session_fetch_body`'s."""
    return read_session_fetch(conn.request(1, 7, session_fetch_body(*args, **kwargs)))


def session_fetch_body(
    topic: str,
    offsets: dict[int, int],
    session_id: int,
    epoch: int,
    forget: tuple[int, ...] = (),
    max_bytes: int = 1 << 20,
    max_wait_ms: int = 0,
) -> bytes:
    """The body of a Fetch v7 in a fetch session, listing `offsets`
    {partition: fetch offset} of `topic` and forgetting the partitions
    `forget`; with `max_wait_ms` it waits for one byte."""
    min_bytes = 1 if max_wait_ms else 0
    body = struct.pack(">iiiibii", -1, max_wait_ms, min_bytes, max_bytes, 0, session_id, epoch)
    if offsets:
        body += struct.pack(">i", 1) + _string(topic) + struct.pack(">i", len(offsets))
        for partition, offset in offsets.items():
            body += struct.pack(">iqqi", partition, offset, -1, max_bytes)
    else:
        body += struct.pack(">i", 0)
    if forget:
        body += struct.pack(">i", 1) + _string(topic) + struct.pack(">i", len(forget))
        body += b"".join(struct.pack(">i", p) for p in forget)
    else:
        body += struct.pack(">i", 0)
    return body


def read_session_fetch(r: Reader) -> SessionFetch:
    r.int32()  # throttle
    error, session = r.int16(), r.int32()
    partitions, log_starts = {}, {}
    for _ in range(r.int32()):
        r.string()
        for _ in range(r.int32()):
            index, perror, high_watermark = r.int32(), r.int16(), r.int64()
            r.int64()  # last stable offset
            log_starts[index] = r.int64()
            records = sum(b.last_offset - b.base_offset + 1 for b in _read_records(r))
            partitions[index] = (perror, high_watermark, records)
    return SessionFetch(error, session, partitions, log_starts)


# --- OffsetForLeaderEpoch ---------------------------------------------------------


def offset_for_leader_epoch(
    conn: Connection, topic: str, queries: list[tuple[int, int, int]]
) -> list[tuple[int, int, int, int]]:
    """OffsetForLeaderEpoch v3 as a consumer sends it (replica id -1) for
    (partition, current leader epoch, leader epoch) queries; per partition
    (error code, partition, leader epoch, end offset)."""
    body = (
        struct.pack(">ii", -1, 1)
        + _string(topic)
        + struct.pack(">i", len(queries))
        + b"".join(struct.pack(">iii", *q) for q in queries)
    )
    r = conn.request(23, 3, body)
    r.int32()  # throttle
    assert r.int32() == 1
    r.string()
    return [r.take(">hiiq") for _ in range(r.int32())]


# --- FindCoordinator --------------------------------------------------------------


def find_coordinator(conn: Connection, key: str, key_type: int) -> tuple[int, int, str, int]:
    """FindCoordinator v1 (0 = group, 1 = transaction): (error, node id, host, port)."""
    r = conn.request(10, 1, _string(key) + struct.pack(">b", key_type))
    r.int32()  # throttle
    error = r.int16()
    r.string()  # error message
    return error, r.int32(), r.string(), r.int32()


# --- AlterPartitionReassignments -----------------------------------------------------


def alter_partition_reassignment_v1(
    conn: Connection, topic: str, partition: int, replicas: list[int], allow_rf_change: bool
) -> tuple[bool, int, str | None]:
    """AlterPartitionReassignments v1 (KIP-860) for one partition: (the answer's
    AllowReplicationFactorChange, the partition's error code and message)."""
    body = (
        struct.pack(">ib", 10_000, allow_rf_change)
        + _uvarint(2)
        + _compact_string(topic)
        + _uvarint(2)
        + struct.pack(">i", partition)
        + _uvarint(len(replicas) + 1)
        + b"".join(struct.pack(">i", r) for r in replicas)
        + b"\x00\x00\x00"  # tagged fields: partition, topic, request
    )
    r = conn.request(45, 1, body, flexible_header=True, response_flexible_header=True)
    r.int32()  # throttle
    allowed = bool(r.int8())
    assert r.int16() == 0  # the top-level error
    r.compact_string()
    assert r.uvarint() == 2
    assert r.compact_string() == topic
    assert r.uvarint() == 2
    assert r.int32() == partition
    return allowed, r.int16(), r.compact_string()


# --- SASL: SaslHandshake, SaslAuthenticate, SCRAM credentials --------------------------


def sasl_handshake(conn: Connection, mechanism: str, version: int = 1) -> tuple[int, list[str]]:
    """SaslHandshake v0/v1: (error code, the broker's enabled mechanisms)."""
    r = conn.request(17, version, _string(mechanism))
    error = r.int16()
    return error, [r.string() for _ in range(r.int32())]


@dataclass
class SaslAuthenticated:
    """A SaslAuthenticate answer (session_lifetime_ms from v1 on)."""

    error_code: int
    error_message: str | None
    auth_bytes: bytes | None
    session_lifetime_ms: int | None = None


def sasl_authenticate(conn: Connection, auth_bytes: bytes, version: int = 2) -> SaslAuthenticated:
    """SaslAuthenticate v0-v2 (v2 flexible) carrying `auth_bytes`."""
    flexible = version >= 2
    if flexible:
        body = _compact_bytes(auth_bytes) + b"\x00"
    else:
        body = struct.pack(">i", len(auth_bytes)) + auth_bytes
    r = conn.request(36, version, body, flexible_header=flexible, response_flexible_header=flexible)
    error = r.int16()
    if flexible:
        message = r.compact_string()
        n = r.uvarint() - 1
    else:
        message = r.string()
        n = r.int32()
    data = None if n < 0 else r.data[r.pos : r.pos + n]
    r.pos += max(n, 0)
    return SaslAuthenticated(error, message, data, r.int64() if version >= 1 else None)


@dataclass
class ScramUserResult:
    """One user's part of a Describe/AlterUserScramCredentials answer;
    credentials [(mechanism, iterations)] in the broker's order (describe only)."""

    user: str
    error_code: int
    error_message: str | None
    credentials: list[tuple[int, int]] | None = None


def describe_user_scram_credentials(
    conn: Connection, users: list[str] | None
) -> tuple[int, str | None, list[ScramUserResult]]:
    """DescribeUserScramCredentials v0 for `users` (None: all):
    (top-level error code, its message, the results in the broker's order)."""
    if users is None:
        body = b"\x00"
    else:
        body = _uvarint(len(users) + 1) + b"".join(_compact_string(u) + b"\x00" for u in users)
    r = conn.request(50, 0, body + b"\x00", flexible_header=True, response_flexible_header=True)
    r.int32()  # throttle
    error, message = r.int16(), r.compact_string()
    results = []
    for _ in range(r.uvarint() - 1):
        user, user_error, user_message = r.compact_string(), r.int16(), r.compact_string()
        credentials = []
        for _ in range(r.uvarint() - 1):
            mechanism, iterations = r.int8(), r.int32()
            r.skip_tagged_fields()
            credentials.append((mechanism, iterations))
        r.skip_tagged_fields()
        results.append(ScramUserResult(user, user_error, user_message, credentials))
    return error, message, results


def alter_user_scram_credentials(
    conn: Connection,
    deletions: Sequence[tuple[str, int]] = (),
    upsertions: Sequence[tuple[str, int, int, bytes, bytes]] = (),
) -> list[ScramUserResult]:
    """AlterUserScramCredentials v0: deletions (user, mechanism) and upsertions
    (user, mechanism, iterations, salt, salted password); the per-user results
    in the broker's order. Mechanism 1 is SCRAM-SHA-256, 2 SCRAM-SHA-512."""
    body = _uvarint(len(deletions) + 1)
    for user, mechanism in deletions:
        body += _compact_string(user) + struct.pack(">b", mechanism) + b"\x00"
    body += _uvarint(len(upsertions) + 1)
    for user, mechanism, iterations, salt, salted_password in upsertions:
        body += _compact_string(user) + struct.pack(">bi", mechanism, iterations)
        body += _compact_bytes(salt) + _compact_bytes(salted_password) + b"\x00"
    r = conn.request(51, 0, body + b"\x00", flexible_header=True, response_flexible_header=True)
    r.int32()  # throttle
    results = []
    for _ in range(r.uvarint() - 1):
        results.append(ScramUserResult(r.compact_string(), r.int16(), r.compact_string()))
        r.skip_tagged_fields()
    return results


def metadata_v1(conn: Connection) -> tuple[list[tuple[int, str, int]], int, int]:
    """Metadata v1 for no topic: (brokers [(node id, host, port)], controller id,
    the number of topics answered)."""
    r = conn.request(3, 1, struct.pack(">i", 0))
    brokers = []
    for _ in range(r.int32()):
        node_id, host, port = r.int32(), r.string(), r.int32()
        r.string()  # rack
        brokers.append((node_id, host, port))
    return brokers, r.int32(), r.int32()
