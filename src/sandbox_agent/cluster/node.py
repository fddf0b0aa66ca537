"""A cluster node proves itself before it gets work, then becomes ``ray start``.

Ray custom resources are fixed when a node starts, so the proof comes first: the
preflight of every runtime asked for runs on this node (its Docker daemon, its runner
image, a verified probe sandbox), and only runtimes that passed are advertised as
``sandbox-slot-<runtime>`` resources. Every run asks for one slot of its runtime, so
a node whose preflight failed is never given a run. What the preflight found goes to
the node's processes in ``NODE_PREFLIGHT_ENV``, where ``nodes.describe_nodes``
reads it back, so a failed node is named in the report.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.sandbox.base import Runtime

NODE_PREFLIGHT_ENV = "SANDBOX_AGENT_NODE_PREFLIGHT"
"""JSON list of ``NodePreflight``: set by ``start_node`` for the node's Ray processes."""
SLOT_PREFIX = "sandbox-slot-"
DEFAULT_SLOTS = 2
DEFAULT_OBJECT_STORE_BYTES = 80 * 1024 * 1024
"""Plenty for tasks, plans, records and traces; Ray's own default is 30% of memory."""
RAY_QUIET_ENV: dict[str, str] = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_enable_metrics_collection": "0",
}
"""No usage statistics leave the machine; no metrics exporter is started."""


def slot_resource(runtime: Runtime) -> str:
    """The Ray custom resource one run on ``runtime`` asks for."""
    return f"{SLOT_PREFIX}{runtime}"


class NodePreflight(BaseModel):
    """What one runtime's preflight found on a node, as the node advertised it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    runtime: Runtime
    ok: bool
    failed: list[str] = Field(default_factory=list)
    """Names of the failed checks (``daemon``, ``image``, ``runtime``, ``probe``...)."""
    detail: str = ""
    """The first failed check's detail and what to do, bounded."""


def check_runtimes(runtimes: Sequence[Runtime]) -> list[NodePreflight]:
    """Run ``sandbox-agent preflight`` for each runtime, here; never raises for a failure."""
    from sandbox_agent.sandbox.docker.preflight import run_preflight

    found = []
    for runtime in runtimes:
        try:
            report = run_preflight(runtime)
        except Exception as error:  # a check that cannot run is a failed node, not a crash
            found.append(
                NodePreflight(runtime=runtime, ok=False, failed=["preflight"], detail=str(error))
            )
            continue
        failed = [check for check in report.checks if not check.ok]
        detail = f"{failed[0].name}: {failed[0].detail} -> {failed[0].fix}" if failed else ""
        if not report.ok and not failed:
            detail = "not every check ran"
        found.append(
            NodePreflight(
                runtime=runtime,
                ok=report.ok,
                failed=[check.name for check in failed],
                detail=detail[:500],
            )
        )
    return found


def slot_resources(found: Sequence[NodePreflight], slots: int) -> dict[str, float]:
    """The sandbox slots to advertise: ``slots`` for each runtime whose preflight passed."""
    return {slot_resource(item.runtime): float(slots) for item in found if item.ok}


def ray_executable() -> str:
    """The ``ray`` script of the environment this Python runs in."""
    return str(Path(sys.executable).with_name("ray"))


class RayStart(BaseModel):
    """The ``ray start`` of one node (head or worker)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    node_ip: str
    """``--node-ip-address``: what other nodes and drivers reach this node by."""
    head_address: str | None = None
    """``ip:port`` of the head's GCS; None starts a head."""
    port: int = 6379
    """The head's GCS port (heads only)."""
    client_server_port: int | None = None
    """Ray Client (``ray://``) port of a head; Ray's default (10001) when None."""
    dashboard_port: int | None = None
    """A head's (headless) dashboard process port; Ray's default (8265) when None."""
    agent_port: int | None = None
    """The node's dashboard agent HTTP port; Ray's default (52365) when None."""
    temp_dir: Path | None = None
    """Ray's session folder (heads only); Ray's default when None."""
    slots: int = Field(DEFAULT_SLOTS, ge=0, le=256)
    object_store_bytes: int = DEFAULT_OBJECT_STORE_BYTES


def ray_start_argv(start: RayStart, resources: Mapping[str, float]) -> list[str]:
    """``ray start --block`` for ``start``: no dashboard UI, no usage stats, no log monitor."""
    argv = [
        ray_executable(),
        "start",
        "--block",
        "--disable-usage-stats",
        "--include-log-monitor=false",
        f"--node-ip-address={start.node_ip}",
        f"--num-cpus={max(start.slots, 1)}",
        "--num-gpus=0",
        f"--object-store-memory={start.object_store_bytes}",
        f"--resources={json.dumps(dict(resources), sort_keys=True)}",
    ]
    if start.agent_port is not None:
        argv.append(f"--dashboard-agent-listen-port={start.agent_port}")
    if start.head_address is None:
        argv += ["--head", f"--port={start.port}", "--include-dashboard=false"]
        if start.client_server_port is not None:
            argv.append(f"--ray-client-server-port={start.client_server_port}")
        if start.dashboard_port is not None:
            argv.append(f"--dashboard-port={start.dashboard_port}")
        if start.temp_dir is not None:
            argv.append(f"--temp-dir={start.temp_dir}")
    else:
        argv.append(f"--address={start.head_address}")
    return argv


def start_node(start: RayStart, runtimes: Sequence[Runtime]) -> None:
    """Check every runtime here, then replace this process with ``ray start --block``.

    Never returns: the process becomes the node (its pid, and so its process group,
    stay the same, which is how ``local`` stops it).

    Raises:
        SetupError: the ``ray`` script is not installed beside this Python.
    """
    from sandbox_agent.errors import SetupError

    found = check_runtimes(runtimes)
    for item in found:
        mark = "ok" if item.ok else f"FAILED ({', '.join(item.failed)}): {item.detail}"
        print(f"node {start.node_ip}: preflight {item.runtime}: {mark}", flush=True)
    argv = ray_start_argv(start, slot_resources(found, start.slots))
    if not Path(argv[0]).exists():
        raise SetupError(f"{argv[0]} is missing: run 'make venv' (ray is a dependency)")
    env = {
        **os.environ,
        **RAY_QUIET_ENV,
        NODE_PREFLIGHT_ENV: json.dumps([item.model_dump() for item in found]),
    }
    os.execve(argv[0], argv, env)  # noqa: S606 - a fixed argv built above
