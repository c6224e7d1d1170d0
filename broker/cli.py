"""The `gregor` command.

    gregor serve [server.properties] [--override key=value ...]
    gregor add-scram [server.properties] [--override key=value ...] \
        'SCRAM-SHA-256=[name=alice,password=alice-secret]' ...
    gregor api-versions

`serve` without arguments runs the embedded default: node 1 on
localhost:9092, data under ./data. A bad configuration exits with code 2 and
a message naming the key; SIGTERM or SIGINT stops the broker gracefully and
exits 0.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import signal
import sys

import trio


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gregor", description="A Kafka-protocol broker.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run a broker")
    serve.add_argument("config", nargs="?", help="a server.properties file")
    serve.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="set a property"
    )
    serve.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    scram = sub.add_parser(
        "add-scram",
        help="write SCRAM credentials into the cluster's metadata, before brokers run",
    )
    scram.add_argument("config", nargs="?", help="the brokers' server.properties")
    scram.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="set a property"
    )
    scram.add_argument(
        "credentials",
        nargs="+",
        metavar="MECHANISM=[name=...,password=...]",
        help="as kafka-storage --add-scram: SCRAM-SHA-256=[name=alice,password=alice-secret]",
    )
    sub.add_parser("api-versions", help="print the APIs and versions the broker serves")
    args = parser.parse_args(argv)

    if args.command == "add-scram":
        config, credentials = args.config, args.credentials
        if config is not None and "=[" in config:
            # No properties file: the first argument is a credential too.
            config, credentials = None, [config, *credentials]
        return add_scram_command(config, args.override, credentials)

    if args.command == "api-versions":
        from broker.tables import served_versions_markdown

        print(served_versions_markdown())
        return 0
    return serve_command(args.config, args.override, args.log_level)


def add_scram_command(path: str | None, overrides: list[str], specs: list[str]) -> int:
    from broker.add_scram import ScramSpecError, add_scram
    from broker.config import BrokerConfig, ConfigError

    try:
        config = BrokerConfig.load(path, overrides)
        for line in add_scram(config, specs):
            print(line)
    except (ConfigError, ScramSpecError) as e:
        print(f"gregor: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"gregor: {e}", file=sys.stderr)
        return 1
    return 0


def serve_command(path: str | None, overrides: list[str], log_level: str = "INFO") -> int:
    from broker.config import BrokerConfig, ConfigError

    logging.basicConfig(
        level=getattr(logging, log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        config = BrokerConfig.load(path, overrides)
    except ConfigError as e:
        print(f"gregor: configuration error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"gregor: cannot read {path}: {e}", file=sys.stderr)
        return 2
    from broker.allocator import tune_allocator, tune_garbage_collector

    tune_allocator()
    # The broker's modules, loaded before the freeze, which they then stay out of.
    importlib.import_module("broker.server")
    tune_garbage_collector()
    failure: list[BaseException] = []
    interrupted = []
    stopped: list[bool] = []
    try:
        trio.run(_serve, config, stopped)
    except* OSError as group:
        failure.extend(_leaves(group))
    except* KeyboardInterrupt:
        # A second signal while stopping: trio re-raises it on the way out.
        interrupted.append(True)
    if interrupted and not stopped:
        return 130
    if failure:
        print(f"gregor: {failure[0]}", file=sys.stderr)
        return 1
    return 0


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    """The exceptions inside nested groups (trio nurseries nest them)."""
    found: list[BaseException] = []
    for e in group.exceptions:
        found.extend(_leaves(e) if isinstance(e, BaseExceptionGroup) else [e])
    return found


async def _serve(config, stopped: list) -> None:
    from broker.server import Broker

    broker = Broker(config)
    async with trio.open_nursery() as nursery:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            await nursery.start(broker.serve)
            async for _ in signals:
                await broker.stop()
                stopped.append(True)
                break


if __name__ == "__main__":
    sys.exit(main())
