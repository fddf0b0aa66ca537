"""``python -m sandbox_agent.cluster node RAYSTART_JSON --runtime R...``: one node's start.

Used by ``local`` to start each node in its own session; ``sandbox-agent cluster node``
is the user-facing form of the same step.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from sandbox_agent.cluster.node import RayStart, start_node
    from sandbox_agent.errors import SetupError

    parser = argparse.ArgumentParser(prog="python -m sandbox_agent.cluster")
    sub = parser.add_subparsers(dest="command", required=True)
    node = sub.add_parser("node")
    node.add_argument("start", help="RayStart as JSON")
    node.add_argument("--runtime", action="append", choices=("runc", "runsc"), default=[])
    args = parser.parse_args(argv)
    try:
        start_node(RayStart.model_validate_json(args.start), args.runtime or ["runc"])
    except SetupError as error:
        print(f"sandbox-agent cluster node: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
