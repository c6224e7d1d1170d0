#!/usr/bin/env python3
"""`make cluster`: ZooKeeper and three Gregor brokers on loopback, data under ./data/cluster.

    python tools/cluster.py                       # brokers on 9092, 9093, 9094; ZooKeeper on 2181
    python tools/cluster.py --brokers 5 --base-port 19092 --zookeeper-port 12181

Prints the bootstrap list and each broker's pid, so one can kill brokers by
hand (`kill -9 <pid>`) and watch the others take over; Ctrl-C stops
everything gracefully. Every topic gets three replicas and
min.insync.replicas=2, as a production cluster would. Data stays under
./data/cluster (one directory per broker, ZooKeeper's too), so a second run
finds the same cluster.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

try:
    from . import run_gregor, zookeeper
except ImportError:  # run as a plain script
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import run_gregor  # type: ignore[no-redef]
    import zookeeper  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--base-port", type=int, default=9092)
    parser.add_argument("--zookeeper-port", type=int, default=2181)
    parser.add_argument("--data", default=str(REPO / "data" / "cluster"))
    args = parser.parse_args(argv)
    data = Path(args.data).resolve()
    data.mkdir(parents=True, exist_ok=True)
    # SIGTERM stops the cluster as Ctrl-C does (also when started with SIGINT ignored).
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    zk = zookeeper.ZooKeeperNode(port=args.zookeeper_port, directory=data / "zookeeper").start()
    print(f"ZooKeeper at {zk.connect} (data {zk.dir})", flush=True)
    replication = min(3, args.brokers)
    cluster = run_gregor.GregorCluster(
        data,
        {
            "default.replication.factor": replication,
            "offsets.topic.replication.factor": replication,
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": min(2, replication),
            "min.insync.replicas": min(2, replication),
            "zookeeper.session.timeout.ms": 6000,
        },
        n=args.brokers,
        zookeeper_node=zk,
        ports=[args.base_port + i for i in range(args.brokers)],
        # Ctrl-C in the terminal reaches only this script, which stops them in order.
        new_session=True,
    )
    try:
        cluster.start()
        for node_id, node in cluster.nodes.items():
            pid = node.proc.pid if node.proc else "-"
            print(f"broker {node_id}: {node.bootstrap}, pid {pid}, log {node.log_path}", flush=True)
        print(f"bootstrap servers: {cluster.bootstrap}", flush=True)
        print("Ctrl-C stops the cluster; kill -9 a broker's pid to watch a failover.", flush=True)
        while True:
            signal.pause()
    except KeyboardInterrupt:
        pass
    except run_gregor.GregorStartError as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 1
    finally:
        # A second Ctrl-C must not cut the controlled shutdowns short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        cluster.stop()
        zk.stop()
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
