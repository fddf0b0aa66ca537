"""Moved (issue 31): the containers' part to ``sandbox_agent.sandbox.docker.reaper``, the
whole reap (containers and workspaces) to ``sandbox_agent.workspace.reap``. This name
stays only until ``service/hooks.py`` and ``cluster/remote.py`` import ``reap_all``
from there; then it goes, and with it the sandbox layer's last import of a layer above."""

from sandbox_agent.workspace.reap import reap_all

__all__ = ["reap_all"]
