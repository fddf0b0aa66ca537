"""Stopping and removing containers, with every failure reported, never hidden."""

from __future__ import annotations

from typing import Any

from sandbox_agent.sandbox.classify import classify_docker_error

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


def remove(api: Any, container_id: str) -> str:
    """Force-remove the container.

    Returns:
        ``removed`` (also when it was already gone) or ``failed: <why>``: the container
        is then left to the reaper, and the caller must report it.
    """
    try:
        api.remove_container(container_id, force=True, v=True)
    except Exception as error:  # the SDK raises requests and docker errors alike
        if classify_docker_error(str(error)) == "container_missing":
            return "removed"
        return f"failed: {str(error)[:MAX_CLEANUP_TEXT]}"
    return "removed"
