"""DescribeLogDirs (key 35), versions 1-4: this broker's log dirs and the
partitions in each.

Per log dir, as Kafka's ReplicaManager.describeLogDirs: its absolute path, an
error code (KAFKA_STORAGE_ERROR for an offline dir, which lists nothing:
a dir is offline once one of its logs is, as Kafka takes a whole dir offline),
each hosted partition's size on disk, offset lag (how far the log end is
behind the high watermark: 0 on a leader) and is_future_key (false: Gregor
never moves replicas between dirs); from v4 the file system's total and
usable bytes (os.statvfs, as Java's FileStore reports them). topics null
asks for every partition; a list asks for those partitions, and a topic with
none of them in a dir is left out of that dir.
"""

from __future__ import annotations

import os
from collections import defaultdict

from broker.registry import handles
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

_LONG_MAX = 2**63 - 1


def _space(path: str) -> tuple[int, int]:
    """(total, usable) bytes of the file system holding `path`."""
    st = os.statvfs(path)
    total, usable = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    return min(total, _LONG_MAX), min(usable, _LONG_MAX)


@handles(ApiKey.DESCRIBE_LOG_DIRS, "1-4")
async def describe_log_dirs(ctx, request):
    replicas = ctx.broker.replicas
    wanted = None
    if request.topics is not None:
        wanted = {(t.topic, p) for t in request.topics for p in t.partitions}
    # A dir is offline (Kafka's whole-dir failure) once any of its logs is.
    # ReplicaManager has no public accessor for the dirs it marked offline yet.
    offline = set(replicas._offline_dirs)
    by_dir: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for (topic, index), partition in sorted(replicas.partitions.items()):
        d = replicas.dir_of(topic, index)
        if d is None:
            continue
        if partition.log.offline:
            offline.add(d)
        if wanted is None or (topic, index) in wanted:
            by_dir[d][topic].append(partition)
    results = []
    for d in replicas.log_dirs:
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
                        "partition_index": p.index,
                        "partition_size": p.log.size_bytes,
                        "offset_lag": max(p.high_watermark - p.log_end_offset, 0),
                        "is_future_key": False,
                    }
                    for p in partitions
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
            }
        )
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results": results}
