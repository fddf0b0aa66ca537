"""``sandbox-agent serve``: a concurrent, persistent API and a web page over agent runs.

Public entry points::

    from sandbox_agent.service import ServiceSettings, create_app
    app = create_app(ServiceSettings(token=...), run_fn=run_task)

A deterministic run function with ``run_task``'s signature, for tests without Docker, is
a test double: ``tests/service/fake_run.py``.
"""

from __future__ import annotations

from sandbox_agent.service.app import create_app
from sandbox_agent.service.settings import ServiceSettings

__all__ = ["ServiceSettings", "create_app"]
