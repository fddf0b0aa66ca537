"""Moved to ``sandbox_agent.sandbox.docker.preflight`` (issue 31). This name stays only
until ``service/hooks.py`` and ``cluster/node.py`` import from there; then it goes."""

from sandbox_agent.sandbox.docker.preflight import run_preflight

__all__ = ["run_preflight"]
