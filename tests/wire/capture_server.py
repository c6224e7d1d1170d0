"""A tiny Kafka "broker" that real producers can send to, for tests.

It speaks just enough of the protocol, through Gregor's own `wire` package,
for confluent-kafka (librdkafka) and kafka-python to produce to it:

- ApiVersions: advertises `api_versions` (by default a small table with the
  versions the clients need; see ADVERTISED). A request above the advertised
  ApiVersions range gets Kafka's answer: a v0 response with
  UNSUPPORTED_VERSION and the table, so the client retries lower.
- Metadata: one broker (this server, node 1), the server's topic with
  `partitions` partitions, all led by node 1.
- InitProducerId: producer id 1000, epoch 0 (for idempotent producers).
- Produce: keeps a copy of every partition's `records` bytes, answers error 0
  with increasing base offsets (none for acks=0).

Anything else is a test failure: it is recorded in `errors` and the
connection is closed. Fetch, FindCoordinator and the group APIs are only
advertised, because librdkafka derives features from the table: MsgVer2 needs
Produce 3 and Fetch 4, ZSTD needs Produce 7 and Fetch 10, LZ4 needs
FindCoordinator 0 (see librdkafka's rdkafka_feature.c).

One thread accepts, one thread serves each connection; sockets poll with a
short timeout so that `stop()` (or leaving the `with` block) ends them all.
"""

from __future__ import annotations

import socket
import threading
import traceback
from collections import defaultdict

from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.errors import DecodeError
from wire.framing import FrameSplitter, encode_frame
from wire.protocol import decode_request, encode_response, peek_request_header
from wire.records import iter_batches

PRODUCER_ID = 1000
PRODUCER_EPOCH = 0
NODE_ID = 1

# (min, max) per API key.
ADVERTISED = {
    ApiKey.PRODUCE: (0, 9),
    ApiKey.FETCH: (0, 12),  # advertised only (librdkafka features)
    ApiKey.METADATA: (0, 9),
    ApiKey.FIND_COORDINATOR: (0, 3),  # advertised only (librdkafka LZ4 feature)
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
}

_POLL = 0.05


class CaptureServer:
    """Use as a context manager; `host`/`port` to connect to."""

    def __init__(
        self,
        topic: str,
        partitions: int = 1,
        api_versions: dict[int, tuple[int, int]] | None = None,
    ):
        self.topic = topic
        self.partitions = partitions
        self.api_versions = dict(ADVERTISED if api_versions is None else api_versions)
        self.host = "127.0.0.1"
        self.port = 0
        # (topic, partition) -> [records bytes of each Produce request, in order]
        self.produced: dict[tuple[str, int], list[bytes]] = defaultdict(list)
        # (api_key, api_version) of every request, in arrival order.
        self.requests: list[tuple[int, int]] = []
        self.client_ids: set[str | None] = set()
        self.errors: list[str] = []
        self._next_offset: dict[tuple[str, int], int] = defaultdict(int)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._listener: socket.socket | None = None

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> CaptureServer:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, 0))
        listener.listen(16)
        listener.settimeout(_POLL)
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._spawn(self._accept_loop, "capture-accept")
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in list(self._threads):
            t.join(timeout=5)
            if t.is_alive():
                self._error(f"thread {t.name} did not stop")
        if self._listener is not None:
            self._listener.close()

    def __enter__(self) -> CaptureServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def batches(self, partition: int = 0) -> list[bytes]:
        """The records blobs produced to `partition`, in arrival order."""
        with self._lock:
            return list(self.produced.get((self.topic, partition), ()))

    # -- threads -------------------------------------------------------------------

    def _spawn(self, target, name, *args) -> None:
        t = threading.Thread(target=target, name=name, args=args, daemon=True)
        with self._lock:
            self._threads.append(t)
        t.start()

    def _error(self, message: str) -> None:
        with self._lock:
            self.errors.append(message)

    def _accept_loop(self) -> None:
        n = 0
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if not self._stop.is_set():
                    self._error(f"accept failed:\n{traceback.format_exc()}")
                return
            n += 1
            self._spawn(self._serve, f"capture-conn-{n}", conn)

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(_POLL)
        splitter = FrameSplitter(max_frame_size=100 * 1024 * 1024)
        try:
            with conn:
                while not self._stop.is_set():
                    try:
                        data = conn.recv(65536)
                    except TimeoutError:
                        continue
                    except OSError:
                        return  # reset by the client
                    if not data:
                        return
                    splitter.feed(data)
                    while (frame := splitter.next_frame()) is not None:
                        answer = self._handle(frame)
                        if answer is not None:
                            conn.sendall(encode_frame(answer))
        except _Unhandled:
            return
        except Exception:
            self._error(f"capture server connection failed:\n{traceback.format_exc()}")

    # -- requests ------------------------------------------------------------------

    def _handle(self, frame: bytes) -> bytes | None:
        api_key, api_version, correlation_id = peek_request_header(frame)
        with self._lock:
            self.requests.append((api_key, api_version))
        if api_key == ApiKey.API_VERSIONS:
            lo, hi = self.api_versions[ApiKey.API_VERSIONS]
            if not lo <= api_version <= hi:
                # Kafka answers an unknown ApiVersions version with v0.
                return encode_response(
                    api_key,
                    0,
                    correlation_id,
                    {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": self._api_keys()},
                )
        advertised = self.api_versions.get(api_key)
        if advertised is None or not advertised[0] <= api_version <= advertised[1]:
            self._error(f"request for api {api_key} v{api_version}, which is not advertised")
            raise _Unhandled
        try:
            header, body = decode_request(frame)
        except DecodeError:
            self._error(f"cannot decode api {api_key} v{api_version}:\n{traceback.format_exc()}")
            raise _Unhandled from None
        with self._lock:
            self.client_ids.add(header.client_id)
        handler = {
            ApiKey.API_VERSIONS: self._api_versions,
            ApiKey.METADATA: self._metadata,
            ApiKey.INIT_PRODUCER_ID: self._init_producer_id,
            ApiKey.PRODUCE: self._produce,
        }.get(api_key)
        if handler is None:
            self._error(f"unexpected request: api {api_key} v{api_version}")
            raise _Unhandled
        response = handler(body, api_version)
        if response is None:
            return None
        return encode_response(api_key, api_version, correlation_id, response)

    def _api_keys(self) -> list[dict]:
        return [
            {"api_key": int(key), "min_version": lo, "max_version": hi}
            for key, (lo, hi) in sorted(self.api_versions.items())
        ]

    def _api_versions(self, body, version) -> dict:
        return {"error_code": 0, "api_keys": self._api_keys(), "throttle_time_ms": 0}

    def _metadata(self, body, version) -> dict:
        requested = body.topics
        if requested is None or (version == 0 and not requested):
            names = [self.topic]
        else:
            names = [t.name for t in requested]
        topics = []
        for name in names:
            if name != self.topic:
                topics.append(
                    {
                        "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        "name": name,
                        "partitions": [],
                    }
                )
                continue
            topics.append(
                {
                    "error_code": 0,
                    "name": name,
                    "is_internal": False,
                    "partitions": [
                        {
                            "error_code": 0,
                            "partition_index": p,
                            "leader_id": NODE_ID,
                            "leader_epoch": 0,
                            "replica_nodes": [NODE_ID],
                            "isr_nodes": [NODE_ID],
                            "offline_replicas": [],
                        }
                        for p in range(self.partitions)
                    ],
                }
            )
        return {
            "throttle_time_ms": 0,
            "brokers": [{"node_id": NODE_ID, "host": self.host, "port": self.port, "rack": None}],
            "cluster_id": "gregor-capture",
            "controller_id": NODE_ID,
            "topics": topics,
        }

    def _init_producer_id(self, body, version) -> dict:
        if body.transactional_id is not None:
            self._error(f"transactional InitProducerId ({body.transactional_id!r})")
        return {
            "throttle_time_ms": 0,
            "error_code": 0,
            "producer_id": PRODUCER_ID,
            "producer_epoch": PRODUCER_EPOCH,
        }

    def _produce(self, body, version) -> dict | None:
        responses = []
        for topic in body.topic_data:
            partition_responses = []
            for pd in topic.partition_data:
                tp = (topic.name, pd.index)
                error = 0
                base_offset = -1
                if topic.name != self.topic or not 0 <= pd.index < self.partitions:
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif pd.records is None:
                    self._error(f"null records for {tp}")
                    error = ErrorCode.CORRUPT_MESSAGE
                else:
                    blob = bytes(pd.records)
                    try:
                        count = sum(h.last_offset_delta + 1 for _, h in iter_batches(blob))
                    except DecodeError:
                        self._error(f"bad batch for {tp}:\n{traceback.format_exc()}")
                        error = ErrorCode.CORRUPT_MESSAGE
                    else:
                        with self._lock:
                            self.produced[tp].append(blob)
                            base_offset = self._next_offset[tp]
                            self._next_offset[tp] += count
                partition_responses.append(
                    {
                        "index": pd.index,
                        "error_code": error,
                        "base_offset": base_offset,
                        "log_append_time_ms": -1,
                        "log_start_offset": 0,
                    }
                )
            responses.append({"name": topic.name, "partition_responses": partition_responses})
        if body.acks == 0:
            return None
        return {"responses": responses, "throttle_time_ms": 0}


class _Unhandled(Exception):
    """Close the connection (the reason is in `errors`)."""
