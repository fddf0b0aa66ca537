"""Finding and joining a cluster, and what each node says about itself.

``--ray auto`` means, in order: ``$RAY_ADDRESS``; the cluster ``make cluster-up``
recorded (``local.record_path()``), joined from the head's own loopback address;
Ray's own discovery of a cluster started on this machine. ``ray://host:port`` joins
through the head's Ray Client server; ``host:port`` joins the head's GCS directly.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import socket
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.cluster.node import NODE_PREFLIGHT_ENV, SLOT_PREFIX, NodePreflight
from sandbox_agent.errors import SetupError, UsageError
from sandbox_agent.sandbox.base import Runtime

NAMESPACE = "sandbox-agent"
DESCRIBE_TIMEOUT_S = 120.0
"""Every node must answer ``describe`` by then (a new worker process on a busy node)."""
CLIENT_ATTEMPTS = 3
"""Tries at joining through Ray Client: the head starts a server process per client, and
on a busy machine its first start can fail (``Starting Ray client server failed``)."""
CLIENT_RETRY_WAIT_S = 3.0
"""Wait before the second try at Ray Client; doubled before each later one."""


class Target(NamedTuple):
    """Where to connect, and from which local address (None: Ray chooses)."""

    address: str
    node_ip: str | None


def resolve(address: str) -> Target:
    """``--ray ADDRESS`` as ``ray.init`` takes it.

    Raises:
        UsageError: ``address`` is empty, or ``auto`` found a recorded cluster that is gone.
    """
    from sandbox_agent.cluster import local

    address = address.strip()
    if not address:
        raise UsageError("--ray needs an address: auto, ray://HOST:PORT or HOST:PORT")
    if address == "auto":
        env = os.environ.get("RAY_ADDRESS", "").strip()
        if env:
            return resolve(env) if env != "auto" else Target("auto", None)
        recorded = local.load()
        if recorded is not None:
            if not local.alive(recorded):
                raise UsageError(
                    f"the cluster recorded in {local.record_path()} is not running: "
                    "run 'make cluster-up' (or give --ray HOST:PORT)"
                )
            return Target(recorded.address, recorded.head_ip)
        return Target("auto", None)
    if address.startswith("ray://"):
        return Target(address, None)
    host = address.rpartition(":")[0] or address
    return Target(address, host if _is_loopback(host) else None)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def gcs_reachable(address: str, timeout_s: float = 2.0) -> bool:
    """True when something accepts a TCP connection at the head's ``host:port``."""
    host, _, port = address.rpartition(":")
    if address.startswith("ray://"):
        host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def connected(address: str) -> Iterator[Target]:
    """Join the cluster for the duration of the block (``ray.shutdown`` after).

    Raises:
        SetupError: no cluster answers at ``address``.
    """
    target = resolve(address)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    kwargs: dict[str, Any] = {
        "address": target.address,
        "namespace": NAMESPACE,
        "log_to_driver": False,
        "logging_level": logging.WARNING,
    }
    if target.node_ip is not None:
        kwargs["_node_ip_address"] = target.node_ip
    try:
        _init(ray, kwargs, client=target.address.startswith("ray://"))
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise SetupError(
            f"no Ray cluster answers at {address} ({_one_line(error)}): "
            "run 'make cluster-up' for a local one, or give --ray HOST:PORT / ray://HOST:PORT"
        ) from None
    try:
        yield target
    finally:
        ray.shutdown()


def _init(ray: Any, kwargs: dict[str, Any], *, client: bool) -> None:
    """``ray.init``; through Ray Client, tried ``CLIENT_ATTEMPTS`` times: a head's client
    server that failed to start for one client usually starts for the next."""
    attempts = CLIENT_ATTEMPTS if client else 1
    wait_s = CLIENT_RETRY_WAIT_S
    for attempt in range(1, attempts + 1):
        try:
            ray.init(**kwargs)
            return
        except (ConnectionError, RuntimeError) as error:
            if attempt == attempts or "client server" not in str(error).lower():
                raise
            ray.shutdown()
            time.sleep(wait_s)
            wait_s *= 2


def _one_line(error: BaseException, limit: int = 300) -> str:
    return " ".join(str(error).split())[:limit] or type(error).__name__


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
        return f"{self.ip}/{self.node_id[:12]}"


def slots_of(resources: dict[str, float]) -> dict[str, float]:
    return {
        name.removeprefix(SLOT_PREFIX): count
        for name, count in resources.items()
        if name.startswith(SLOT_PREFIX)
    }


def describe_nodes(runtime: Runtime, *, timeout_s: float = DESCRIBE_TIMEOUT_S) -> list[NodeInfo]:
    """Every alive node, each having run ``remote.describe`` on itself (in parallel).

    A node that advertises no slot for ``runtime`` gets a ``problem``: its failed
    preflight when it ran one, otherwise that it was not started by sandbox-agent.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from sandbox_agent.cluster.remote import describe_task

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
                info.problem = f"describe failed: {_one_line(error)}"
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
    """This node's own account (runs inside ``remote.describe`` on the node)."""
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
