"""Reaping the containers crashed controllers left: those whose owner is dead.

Only sandboxes carrying our owner label are considered, and only those whose owner
process is provably gone from this host (``owner.owner_is_dead``) are removed. Their
workspaces are the workspace layer's to reap (``workspace.reap.reap_all`` does both).
"""

from __future__ import annotations

from typing import Any

from sandbox_agent.errors import DockerUnavailable
from sandbox_agent.sandbox.docker import cleanup
from sandbox_agent.sandbox.docker.owner import LABEL_OWNER, LABEL_SANDBOX, owner_is_dead


def list_sandboxes(api: Any, owner: str | None = None) -> list[dict[str, Any]]:
    """Every sandbox container (any state), or only those of ``owner``."""
    label = f"{LABEL_OWNER}={owner}" if owner else f"{LABEL_SANDBOX}=1"
    result: list[dict[str, Any]] = api.containers(all=True, filters={"label": label})
    return result


def reap_containers(api: Any) -> tuple[list[str], list[str]]:
    """Remove sandbox containers whose owner process is dead.

    Returns:
        ``(removed, failures)``: short container ids removed, and one line per failure.
    """
    removed: list[str] = []
    failures: list[str] = []
    for entry in list_sandboxes(api):
        owner = (entry.get("Labels") or {}).get(LABEL_OWNER, "")
        if not owner_is_dead(owner):
            continue
        container_id = str(entry["Id"])
        outcome = cleanup.remove(api, container_id)
        if outcome == "removed":
            removed.append(container_id[:12])
        else:
            failures.append(f"container {container_id[:12]}: {outcome}")
    return removed, failures


def reap_dead_containers() -> tuple[list[str], list[str]]:
    """Reap the sandbox containers of dead controllers, through Docker (API 1.41).

    Returns:
        ``(removed, failures)``: ``container <id>`` lines, and one line per failure.

    Raises:
        DockerUnavailable: the daemon does not answer.
    """
    import docker

    try:
        client = docker.from_env(version="1.41", timeout=30)
        try:
            containers, failures = reap_containers(client.api)
        finally:
            client.close()
    except docker.errors.DockerException as error:
        raise DockerUnavailable(f"cannot reach Docker ({error}): run 'make setup'") from error
    return [f"container {short}" for short in containers], failures
