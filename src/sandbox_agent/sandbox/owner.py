"""Moved to ``sandbox_agent.sandbox.docker.owner`` (issue 31). This name stays only until
``cluster/remote.py`` and the service and cluster tests import from there; then it goes."""

from sandbox_agent.sandbox.docker.owner import LABEL_OWNER, LABEL_SANDBOX, owner_value

__all__ = ["LABEL_OWNER", "LABEL_SANDBOX", "owner_value"]
