"""Reaping everything crashed controllers left: their sandbox containers and workspaces.

``sandbox-agent reap``, the service and a cluster node call this. The containers are the
sandbox layer's (``sandbox.docker.reaper``), the workspaces this layer's
(``workspace.owner``); this is the one place above both that does the two (issue 31:
the sandbox layer no longer reaches up to the workspace).
"""

from __future__ import annotations

from sandbox_agent.sandbox.docker.reaper import reap_dead_containers
from sandbox_agent.workspace.owner import reap_workspaces


def reap_all() -> tuple[list[str], list[str]]:
    """Reap containers (through Docker) and workspaces of dead controllers.

    Returns:
        ``(removed, failures)``: ``container <id>`` / ``workspace <path>`` lines removed,
        and one line per container not removed.

    Raises:
        DockerUnavailable: the daemon does not answer (no workspace is reaped then).
    """
    removed, failures = reap_dead_containers()
    removed += [f"workspace {path}" for path in reap_workspaces()]
    return removed, failures
