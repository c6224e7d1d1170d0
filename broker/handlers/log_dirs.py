"""DescribeLogDirs (key 35), versions 1-5: this broker's log dirs and the
partitions in each.

Per log dir, as Kafka's ReplicaManager.describeLogDirs: its absolute path, an
error code (KAFKA_STORAGE_ERROR for an offline dir, which lists nothing:
a dir is offline once one of its logs is, as Kafka takes a whole dir offline),
each hosted partition's size on disk, offset lag (how far the log end is
behind the high watermark: 0 on a leader) and is_future_key (false: Gregor
never moves replicas between dirs); from v4 the file system's total and
usable bytes (os.statvfs, as Java's FileStore reports them); from v5 whether
the dir is cordoned (KIP-1066), always false: Gregor has no cordoning, and
Kafka answers false for a dir its `cordoned.log.dirs` does not name. topics null
asks for every partition; a list asks for those partitions, and a topic with
none of them in a dir is left out of that dir.
"""

from __future__ import annotations

import os
from collections import defaultdict

import trio

from broker.log_manager import LogManager
from broker.registry import handles
from broker.replica_manager import ReplicaManager
from broker.request_context import RequestContext
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

_LONG_MAX = 2**63 - 1


def _space(path: str) -> tuple[int, int]:
    """(total, usable) bytes of the file system holding `path`."""
    st = os.statvfs(path)
    total, usable = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    return min(total, _LONG_MAX), min(usable, _LONG_MAX)


class LogDirsHandler:
    def __init__(self, logs: LogManager, replicas: ReplicaManager):
        self.logs = logs
        self.replicas = replicas

    @handles(ApiKey.DESCRIBE_LOG_DIRS, "1-5")
    async def describe_log_dirs(self, ctx: RequestContext, request):
        wanted = None
        if request.topics is not None:
            wanted = {(t.topic, p) for t in request.topics for p in t.partitions}
        # Sizes and free space are disk reads: off the event loop.
        return await trio.to_thread.run_sync(self._describe, wanted)

    def _describe(self, wanted) -> dict:
        """Blocking: the answer, from the logs and the file systems."""
        logs = self.logs
        # A dir is offline (Kafka's whole-dir failure) once any of its logs is.
        offline = set(logs.offline_dirs)
        by_dir: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        for (topic, index), plog in sorted(list(logs.logs.items())):
            d = logs.dir_of((topic, index))
            if d is None:
                continue
            if plog.offline:
                offline.add(d)
            if wanted is None or (topic, index) in wanted:
                by_dir[d][topic].append((index, plog))
        results = []
        for d in logs.log_dirs:
            path = os.path.abspath(d)
            if d in offline:
                results.append({"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": path})
                continue
            try:
                total, usable = _space(d)
            except OSError:
                results.append({"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": path})
                continue
            topics = [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": index,
                            "partition_size": plog.size_bytes,
                            "offset_lag": max(plog.high_watermark - plog.log_end_offset, 0),
                            "is_future_key": False,
                        }
                        for index, plog in partitions
                    ],
                }
                for topic, partitions in by_dir[d].items()
            ]
            results.append(
                {
                    "error_code": ErrorCode.NONE,
                    "log_dir": path,
                    "topics": topics,
                    "total_bytes": total,
                    "usable_bytes": usable,
                    "is_cordoned": False,
                }
            )
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results": results}
