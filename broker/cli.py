"""The `gregor` command."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gregor", description="A Kafka-protocol broker.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run a broker")
    serve.add_argument("config", nargs="?", help="server.properties")
    serve.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    sub.add_parser("api-versions", help="print the API versions wire declares")
    args = parser.parse_args(argv)

    if args.command == "api-versions":
        from wire.tables import api_versions_markdown

        print(api_versions_markdown())
        return 0
    print(
        "gregor serve: the broker is not built yet (wire protocol layer only); "
        "see README.md, 'Not supported yet'",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
