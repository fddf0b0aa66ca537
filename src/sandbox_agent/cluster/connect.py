"""Finding and joining a cluster.

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

from sandbox_agent.errors import SetupError, UsageError

NAMESPACE = "sandbox-agent"
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
            f"no Ray cluster answers at {address} ({one_line(error)}): "
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


def one_line(error: BaseException, limit: int = 300) -> str:
    """An error as one bounded line (its type when it says nothing)."""
    return " ".join(str(error).split())[:limit] or type(error).__name__
