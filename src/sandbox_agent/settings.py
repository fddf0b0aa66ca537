"""Where sandbox-agent keeps its state on the host, and the project's own folders.

Nothing here touches the disk at import time; callers create folders when they need them.
"""

from __future__ import annotations

import os
from pathlib import Path

STATE_HOME_ENV = "SANDBOX_AGENT_HOME"
"""Overrides the state folder (image record, signing key, ledger, service database)."""

FIXTURES_ENV = "SANDBOX_AGENT_FIXTURES"
"""Overrides the default fixtures folder."""

PROJECT_ROOT = Path(__file__).resolve().parents[2]
"""The source checkout this package runs from (``src/`` layout, editable install)."""


def state_home() -> Path:
    """The folder for host-side state: ``$SANDBOX_AGENT_HOME`` or the XDG state folder."""
    override = os.environ.get(STATE_HOME_ENV)
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "sandbox-agent"


def default_fixtures_dir() -> Path:
    """The project's own fixtures, unless ``$SANDBOX_AGENT_FIXTURES`` names another folder."""
    override = os.environ.get(FIXTURES_ENV)
    return Path(override) if override else PROJECT_ROOT / "fixtures"


def image_record_path() -> Path:
    """The JSON record of the locally built runner image (tag, image ID, inputs hash)."""
    return state_home() / "image.json"
