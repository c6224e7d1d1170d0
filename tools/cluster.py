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
import subprocess
import sys
import time
from pathlib import Path

try:
    from . import zookeeper
except ImportError:  # run as a plain script
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import zookeeper  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parent.parent


def broker_command(
    node_id: int, port: int, data: Path, connect: str, replication: int
) -> list[str]:
    settings = {
        "node.id": node_id,
        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "log.dirs": data / f"broker-{node_id}",
        "zookeeper.connect": f"{connect}/gregor",
        "default.replication.factor": replication,
        "offsets.topic.replication.factor": replication,
        "min.insync.replicas": min(2, replication),
        "zookeeper.session.timeout.ms": 6000,
    }
    cmd = [sys.executable, "-m", "broker", "serve"]
    for key, value in settings.items():
        cmd += ["--override", f"{key}={value}"]
    return cmd


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
    brokers: dict[int, subprocess.Popen] = {}
    logs = []
    try:
        for i in range(args.brokers):
            node_id, port = i + 1, args.base_port + i
            log = open(data / f"broker-{node_id}.log", "a")
            logs.append(log)
            brokers[node_id] = subprocess.Popen(
                broker_command(node_id, port, data, zk.connect, replication),
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        bootstrap = ",".join(f"127.0.0.1:{args.base_port + i}" for i in range(args.brokers))
        for node_id in brokers:
            _wait_listening(args.base_port + node_id - 1, brokers[node_id], data, node_id)
        for node_id, proc in brokers.items():
            print(
                f"broker {node_id}: 127.0.0.1:{args.base_port + node_id - 1}, pid {proc.pid}, "
                f"log {data / f'broker-{node_id}.log'}",
                flush=True,
            )
        print(f"bootstrap servers: {bootstrap}", flush=True)
        print("Ctrl-C stops the cluster; kill -9 a broker's pid to watch a failover.", flush=True)
        while True:
            signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        for proc in brokers.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in brokers.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        zk.stop()
        for log in logs:
            log.close()
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _wait_listening(port: int, proc: subprocess.Popen, data: Path, node_id: int) -> None:
    import socket

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(
                f"broker {node_id} exited {proc.returncode}; see {data / f'broker-{node_id}.log'}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"broker {node_id} did not listen on {port} within 60 s")


if __name__ == "__main__":
    sys.exit(main())
