"""Running uv: found once, run with a fixed environment, bounded in time.

uv resolves, downloads, checks hashes and unpacks wheels; with ``--only-binary :all:``
it builds nothing, so no package code runs on the host. It runs with ``--no-config``
and without the caller's ``UV_*`` variables (but ``UV_CACHE_DIR``), so a resolution
depends on what is passed here only; its own download cache is shared (hash-checked
by uv) so a second environment with the same wheels downloads nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from sandbox_agent.errors import DependencyError

UV_ENV = "SANDBOX_AGENT_UV"
"""Overrides which uv binary is used."""
HTTP_RETRIES = "1"
HTTP_TIMEOUT_S = "30"
KEPT_UV_VARIABLES = ("UV_CACHE_DIR",)


def uv_binary() -> str:
    """The uv binary: ``$SANDBOX_AGENT_UV``, ``uv`` on the PATH, or ``~/.local/bin/uv``.

    Raises:
        DependencyError: ``tool``: none is installed.
    """
    for candidate in (
        os.environ.get(UV_ENV),
        shutil.which("uv"),
        str(Path.home() / ".local" / "bin" / "uv"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise DependencyError(
        "tool", "uv is not installed: 'python3 -m pip install uv' (make venv installs it)"
    )


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_") or k in KEPT_UV_VARIABLES}
    env.update(
        {
            "UV_HTTP_RETRIES": HTTP_RETRIES,
            "UV_HTTP_TIMEOUT": HTTP_TIMEOUT_S,
            "NO_COLOR": "1",
            "UV_NO_PROGRESS": "1",
        }
    )
    return env


def run_uv(
    args: list[str], *, timeout_s: float, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``uv ARGS`` with ``--no-config`` (and, for ``uv pip``, this interpreter to query,
    so no other is searched for); never raises for uv's own failure (the caller
    classifies its stderr).

    Raises:
        DependencyError: ``tool``: uv is missing; ``timeout``: it ran longer than
            ``timeout_s`` (what was left of the phase: ``deadline.Deadline``).
    """
    command = [uv_binary(), *args, "--no-config"]
    if args[:1] == ["pip"]:
        command += ["--python", sys.executable]
    try:
        return subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=cwd,
            env=_environment(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        from sandbox_agent.deps.deadline import TIMEOUT_HINT

        what = " ".join(args[:2])
        raise DependencyError(
            "timeout", f"uv {what} took longer than {timeout_s:g} s ({TIMEOUT_HINT})"
        ) from None
