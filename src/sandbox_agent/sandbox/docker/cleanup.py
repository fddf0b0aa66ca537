"""Stopping and removing containers, with every failure reported, never hidden."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sandbox_agent.sandbox.docker import stuck
from sandbox_agent.sandbox.docker.classify import classify_docker_error

MAX_CLEANUP_TEXT = 300


def kill(api: Any, container_id: str) -> str | None:
    """SIGKILL the container; None when done or already stopped, else why it failed."""
    try:
        api.kill(container_id)
    except Exception as error:  # the SDK raises requests and docker errors alike
        if classify_docker_error(str(error)) in ("not_running", "container_missing"):
            return None
        return str(error)[:MAX_CLEANUP_TEXT]
    return None


STUCK_KINDS = ("docker_timeout", "in_progress", "start_failed")
"""Removal failures that mean the runtime's processes may have outlived the container."""


def remove(
    api: Any,
    container_id: str,
    *,
    unstick: Callable[[str], list[int]] = stuck.kill_runtime_processes,
) -> str:
    """Force-remove the container; unstick it once if its runtime processes hang on.

    Returns:
        ``removed`` (also when it was already gone) or ``failed: <why>``: the container
        is then left to the reaper, and the caller must report it.
    """
    failure = _remove_once(api, container_id)
    if (
        failure is not None
        and classify_docker_error(failure) in STUCK_KINDS
        and stuck.CONTAINER_ID.match(container_id)
        and unstick(container_id)
    ):
        failure = _remove_once(api, container_id)
    if failure is None:
        return "removed"
    return f"failed: {failure[:MAX_CLEANUP_TEXT]}"


def _remove_once(api: Any, container_id: str) -> str | None:
    """None when removed (or already gone), else the error text."""
    try:
        api.remove_container(container_id, force=True, v=True)
    except Exception as error:  # the SDK raises requests and docker errors alike
        if classify_docker_error(str(error)) == "container_missing":
            return None
        return str(error)
    return None
