"""A real local server for a test module: the cached build and model, a state home of its own.

The cache (built server, model) is the one ``make model`` filled for the caller's
environment; the server folder is the test's (``SANDBOX_AGENT_MODEL_SERVER_DIR``), so the
user's own warm server is never touched, and the test's is stopped at the end.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from sandbox_agent.localmodel import paths, server

ENV = (paths.SERVER_DIR_ENV, paths.CACHE_ENV)


@contextlib.contextmanager
def real_server(folder: Path, settings: server.ServerSettings) -> Iterator[server.ServerRecord]:
    """Start a real server whose record, key and log live in ``folder``; stop it at the end."""
    saved = {name: os.environ.get(name) for name in ENV}
    os.environ[paths.CACHE_ENV] = str(paths.cache_dir())
    os.environ[paths.SERVER_DIR_ENV] = str(folder)
    try:
        yield server.start(settings)
    finally:
        server.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
