"""What each node of a cluster says about itself, and its housekeeping.

Every node describes itself before it is given runs (``describe_nodes``): its preflight
(``node``), its runner image, the key that signs its runs; a node that cannot take runs
on the runtime asked for gets a ``problem``, named in reports. Describing a node also
removes what dead runs left on its Docker; ``reap_everywhere`` does that on every node.
"""

from __future__ import annotations

import functools
import os
import socket
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.cluster.connect import one_line
from sandbox_agent.cluster.node import NODE_PREFLIGHT_ENV, SLOT_PREFIX, NodePreflight
from sandbox_agent.cluster.remote import as_task
from sandbox_agent.errors import SetupError
from sandbox_agent.sandbox.base import Runtime

DESCRIBE_TIMEOUT_S = 120.0
"""Every node must answer ``describe`` by then (a new worker process on a busy node)."""


class NodeInfo(BaseModel):
    """One node, as Ray lists it and as it described itself."""

    model_config = ConfigDict(extra="forbid")

    node_id: str
    ip: str
    slots: dict[str, float] = Field(default_factory=dict)
    """Sandbox slots advertised, by runtime."""
    preflight: list[NodePreflight] | None = None
    """What the node's preflight found; None for a node not started by sandbox-agent."""
    hostname: str = ""
    version: str = ""
    image_id: str = ""
    signer: str = ""
    """Fingerprint of the node's run-signing key (its runs' evidence names it)."""
    public_key_pem: str = ""
    problem: str = ""
    """Why the node cannot take runs on the runtime asked for ('' when it can)."""

    @property
    def name(self) -> str:
        """How reports name the node: its address and the start of its Ray id."""
        return node_name(self.ip, self.node_id)


def node_name(ip: str, node_id: str) -> str:
    """How records and reports name a node: its address and the start of its Ray id."""
    return f"{ip}/{node_id[:12]}"


def slots_of(resources: dict[str, float]) -> dict[str, float]:
    return {
        name.removeprefix(SLOT_PREFIX): count
        for name, count in resources.items()
        if name.startswith(SLOT_PREFIX)
    }


def describe_nodes(runtime: Runtime, *, timeout_s: float = DESCRIBE_TIMEOUT_S) -> list[NodeInfo]:
    """Every alive node, each having run ``describe`` on itself (in parallel).

    A node that advertises no slot for ``runtime`` gets a ``problem``: its failed
    preflight when it ran one, otherwise that it was not started by sandbox-agent.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    listed: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
    nodes = [entry for entry in listed if entry.get("Alive")]
    refs = {
        entry["NodeID"]: describe_task()
        .options(scheduling_strategy=NodeAffinitySchedulingStrategy(entry["NodeID"], soft=False))
        .remote()
        for entry in nodes
    }
    ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout_s)
    infos = []
    for entry in nodes:
        info = NodeInfo(
            node_id=entry["NodeID"],
            ip=entry["NodeManagerAddress"],
            slots=slots_of(entry.get("Resources", {})),
        )
        ref = refs[entry["NodeID"]]
        if ref in ready:
            try:
                info = info.model_copy(update=ray.get(ref))
            except Exception as error:  # a node that cannot describe itself gets no runs
                info.problem = f"describe failed: {one_line(error)}"
        else:
            info.problem = f"did not answer within {timeout_s:.0f} s"
        info.problem = info.problem or _slot_problem(info, runtime)
        infos.append(info)
    return sorted(infos, key=lambda info: info.ip)


def _slot_problem(info: NodeInfo, runtime: Runtime) -> str:
    if info.slots.get(runtime, 0) > 0:
        return ""
    if info.preflight is None:
        return "not started by 'sandbox-agent cluster node' (no preflight, no sandbox slots)"
    for item in info.preflight:
        if item.runtime == runtime and not item.ok:
            return f"preflight {runtime} failed ({', '.join(item.failed)}): {item.detail}"
    return f"no preflight of {runtime} on this node (started for other runtimes)"


def describe_here() -> dict[str, Any]:
    """This node's own account (runs inside ``describe`` on the node)."""
    import json

    from sandbox_agent import __version__
    from sandbox_agent.evidence.keys import (
        fingerprint,
        load_or_create_signing_key,
    )

    found: dict[str, Any] = {"hostname": socket.gethostname(), "version": __version__}
    raw = os.environ.get(NODE_PREFLIGHT_ENV)
    if raw is not None:
        found["preflight"] = [NodePreflight.model_validate(item) for item in json.loads(raw)]
    try:
        from sandbox_agent.hostsetup.image import current_record

        found["image_id"] = current_record().image_id
    except SetupError:
        found["image_id"] = ""
    try:
        from cryptography.hazmat.primitives import serialization

        public = load_or_create_signing_key().public_key()
        found["signer"] = fingerprint(public)
        found["public_key_pem"] = public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode()
    except SetupError as error:
        found["problem"] = f"signing key: {error}"
    return found


def describe() -> dict[str, Any]:
    """This node's account of itself; it also reaps what dead runs left on its Docker."""
    found = describe_here()
    found["reaped"] = _reap_here()
    return found


def _reap_here() -> list[str]:
    try:
        from sandbox_agent.workspace.reap import reap_all

        removed, _failures = reap_all()
    except Exception:  # a node without Docker has nothing to reap; its preflight says why
        return []
    return removed


def reap() -> list[str]:
    """Remove what dead runs left on this node's Docker (containers, workspaces)."""
    return _reap_here()


@functools.cache
def describe_task() -> Any:
    return as_task(describe)


@functools.cache
def reap_task() -> Any:
    return as_task(reap)


def reap_everywhere(timeout_s: float) -> None:
    """Every alive node removes what dead runs left on its Docker (waited for up to
    ``timeout_s``)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    listed: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
    refs = [
        reap_task()
        .options(scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False))
        .remote()
        for node in listed
        if node.get("Alive")
    ]
    ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
