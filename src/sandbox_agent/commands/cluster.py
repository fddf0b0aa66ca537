"""`sandbox-agent cluster up|down|status|node`: a Ray cluster for ``eval --ray`` and
``serve --ray`` (docs/CLUSTER.md).

``up`` starts a head and two workers on loopback addresses of this machine and records
them for ``--ray auto``; ``down`` stops exactly those processes. ``node`` is how a real
machine joins a cluster: its preflight first, then ``ray start`` with sandbox slots for
the runtimes that passed.
"""

from __future__ import annotations

import argparse

HELP = "a Ray cluster for eval --ray and serve --ray: up, down, status, node"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``up``/``down``/``status`` for the local cluster; ``node`` for one machine."""
    from sandbox_agent.cluster.node import DEFAULT_SLOTS

    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = sub.add_parser("up", help="start a head and two workers on loopback (make cluster-up)")
    up.add_argument(
        "--slots",
        type=int,
        default=DEFAULT_SLOTS,
        help=f"sandbox slots per node (default {DEFAULT_SLOTS})",
    )
    up.add_argument(
        "--runtime",
        action="append",
        choices=("runc", "runsc"),
        help="runtimes, repeated for several (default: runc)",
    )
    sub.add_parser("down", help="stop the cluster 'up' started (make cluster-down)")
    status = sub.add_parser("status", help="every node of a cluster: slots, preflight")
    status.add_argument(
        "--ray",
        default="auto",
        metavar="ADDRESS",
        help="the cluster: auto ($RAY_ADDRESS, cluster up's, or this machine's), "
        "ray://HOST:PORT or HOST:PORT (default auto)",
    )
    status.add_argument(
        "--runtime",
        choices=("runc", "runsc"),
        default="runc",
        help="the runtime whose preflight each node reports (default runc)",
    )
    status.add_argument("--json", action="store_true", help="print the nodes as JSON")
    node = sub.add_parser("node", help="this machine joins (or heads) a cluster, after preflight")
    where = node.add_mutually_exclusive_group(required=True)
    where.add_argument("--head", action="store_true", help="start the head here")
    where.add_argument("--address", help="the head's HOST:PORT to join (required unless --head)")
    node.add_argument("--node-ip-address", required=True, help="this node's address (required)")
    node.add_argument(
        "--port", type=int, default=6379, help="the head's GCS port, with --head (default 6379)"
    )
    node.add_argument(
        "--slots", type=int, default=DEFAULT_SLOTS, help=f"sandbox slots (default {DEFAULT_SLOTS})"
    )
    node.add_argument(
        "--runtime",
        action="append",
        choices=("runc", "runsc"),
        help="runtimes, repeated for several (default: runc)",
    )


def run(args: argparse.Namespace) -> int:
    """Carry out one action.

    Raises:
        SetupError: a node did not start, or no cluster answers.
        UsageError: a bad flag or an unreadable record.
    """
    action = {"up": _up, "down": _down, "status": _status, "node": _node}[args.action]
    return action(args)


def _up(args: argparse.Namespace) -> int:
    from sandbox_agent.cluster import local

    recorded = local.load()
    if recorded is not None and local.alive(recorded):
        print(f"cluster already running: {recorded.address} ({local.record_path()})")
        return 0
    cluster = local.up(slots=args.slots, runtimes=args.runtime or ["runc"])
    path = local.save(cluster)
    nodes = ", ".join(node.ip for node in cluster.nodes)
    print(f"cluster up: head {cluster.address}, nodes {nodes}; --ray auto finds it ({path})")
    return 0


def _down(args: argparse.Namespace) -> int:
    from sandbox_agent.cluster import local

    recorded = local.load()
    if recorded is None:
        print("no local cluster recorded")
        return 0
    local.down(recorded)
    local.record_path().unlink(missing_ok=True)
    print(f"cluster down: {recorded.address}")
    return 0


def _status(args: argparse.Namespace) -> int:
    import json

    from sandbox_agent.cluster.connect import connected
    from sandbox_agent.cluster.nodes import describe_nodes

    with connected(args.ray) as target:
        nodes = describe_nodes(args.runtime)
    if args.json:
        shown = [node.model_dump(exclude={"public_key_pem"}) for node in nodes]
        print(json.dumps({"address": target.address, "nodes": shown}, indent=1))
    else:
        for node in nodes:
            slots = ", ".join(f"{name} {count:g}" for name, count in sorted(node.slots.items()))
            state = node.problem or "ready"
            print(f"{node.name} {node.hostname}: slots {slots or '-'}; {state}")
    return 0 if any(not node.problem for node in nodes) else 1


def _node(args: argparse.Namespace) -> int:
    from sandbox_agent.cluster.node import RayStart, start_node

    start = RayStart(
        node_ip=args.node_ip_address,
        head_address=args.address,
        port=args.port,
        slots=args.slots,
    )
    start_node(start, args.runtime or ["runc"])
    return 0
